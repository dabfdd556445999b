//! [`Grid`]: the grid-wide barrier of a cooperative launch.

use core::arch::asm;

use crate::block_barrier::sync_block;
use crate::geometry::thread_in_block;
use crate::geometry::{block_count, block_index, global_thread_count, global_thread_index};

/// The grid of a cooperative launch, with its barrier. A kernel gets one only as a
/// parameter filled in by the host's cooperative launch
/// (`scoped_sync::cuda::Kernel::launch_grid`), which checks that every block is
/// co-resident: there is no way to build one inside a kernel, so a grid barrier
/// cannot exist in a launch where it would deadlock.
///
/// [`sync`](Self::sync) is one atomic per block per phase: the block meets at its
/// hardware barrier, thread 0 adds its arrival to a grid-wide counter with a release
/// reduction (no reply awaited) and polls the counter with acquire loads until every
/// block of this phase has arrived, and the block meets again. The counter only grows
/// (phase `k` is complete when it reaches `k × blocks`), so there is no reset step and
/// no separate "generation" word to flip: the last block's arrival is itself the
/// release of everyone.
///
/// Counterpart: `cooperative_groups::this_grid().sync()`.
///
/// ```ignore
/// #[no_mangle]
/// pub unsafe extern "gpu-kernel" fn solve(mut grid: Grid, data: *mut f32) {
///     for _step in 0..100 {
///         // ... every thread updates its part of `data` ...
///         grid.sync();
///     }
/// }
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct Grid {
    /// Block arrivals since the launch began; zeroed by the launch.
    arrivals: *mut u32,
    /// Phases this thread has completed.
    phase: u32,
    /// Keeps the parameter's layout explicit (16 bytes, as the host pushes it).
    _reserved: u32,
}

impl Grid {
    /// Waits until every thread of the grid has called `sync` as many times as this
    /// one. Everything written by any thread before its call is visible to every thread
    /// after it. Collective: every thread of the grid must call it.
    #[inline]
    pub fn sync(&mut self) {
        self.phase = self.phase.wrapping_add(1);
        sync_block();
        if thread_in_block() == 0 {
            let target = self.phase.wrapping_mul(block_count());
            // SAFETY: the launch passes a live, zeroed device word for the whole grid.
            unsafe {
                asm!(
                    "red.release.gpu.add.u32 [{a}], 1;",
                    a = in(reg64) self.arrivals as u64,
                    options(nostack),
                )
            };
            // Wrapping comparison: the counter wraps after 2³² arrivals, and no block
            // can be more than one phase (`blocks` arrivals) ahead of another. (Relaxed
            // polls with one acquire fence after them measured slower on an H200.)
            while (self.arrived().wrapping_sub(target) as i32) < 0 {}
        }
        sync_block();
    }

    fn arrived(&self) -> u32 {
        let arrived: u32;
        // SAFETY: as in `sync`.
        unsafe {
            asm!(
                "ld.acquire.gpu.u32 {v}, [{a}];",
                v = out(reg32) arrived,
                a = in(reg64) self.arrivals as u64,
                options(nostack),
            )
        };
        arrived
    }

    /// Phases of the grid barrier this thread has completed.
    pub fn phase(&self) -> u32 {
        self.phase
    }

    /// This thread's index in the grid.
    pub fn thread_rank(&self) -> u32 {
        global_thread_index()
    }

    /// Threads in the grid.
    pub fn size(&self) -> u32 {
        global_thread_count()
    }

    /// This block's index in the grid.
    pub fn block_rank(&self) -> u32 {
        block_index()
    }

    /// Blocks in the grid.
    pub fn num_blocks(&self) -> u32 {
        block_count()
    }
}
