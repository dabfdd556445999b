//! [`Grid`]: the grid-wide barrier of a cooperative launch.

use sync_shared::{Device, Ordering};

use crate::block_barrier::sync_block;
use crate::geometry::thread_in_block;
use crate::geometry::{block_count, block_index, global_thread_count, global_thread_index};
use crate::ptx_atomics::PtxScope;

/// The grid of a cooperative launch, with its barrier. A kernel gets one only as a
/// parameter filled in by the host's cooperative launch
/// (`scoped_sync::cuda::Kernel::launch_grid`), which checks that every block is
/// co-resident: there is no way to build one inside a kernel, so a grid barrier
/// cannot exist in a launch where it would deadlock.
///
/// [`sync`](Self::sync) is one atomic per block per phase: the block meets at its
/// hardware barrier, thread 0 adds its arrival to a grid-wide counter (release) and,
/// unless the reply says its block was the last, polls the counter with relaxed loads
/// until every block of this phase has arrived, then takes one acquire fence, and the
/// block meets again. The counter only grows (phase `k` is complete when it reaches
/// `k × blocks`), so there is no reset step and no separate "generation" word to flip:
/// the last block's arrival is itself the release of everyone.
///
/// Why this shape (each measured on an H200 against `cg::this_grid().sync()`, see the
/// README): the release's memory barrier is the largest single cost and cannot move
/// (it must follow the block barrier to cover every thread's writes); relaxed polls
/// plus one `fence.acquire` (an L1 invalidation) beat acquire loads (one invalidation
/// per poll); waiting for the arrival's reply before polling, and skipping the poll
/// in the last block, beat a fire-and-forget reduction, because polls that reach the
/// counter while arrivals are still landing slow those arrivals down — for the same
/// reason more pollers per block, split counters and per-block flags all measured
/// slower.
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
            // SAFETY: the launch passes a live, zeroed device word for the whole grid,
            // which only these atomics touch.
            let before = unsafe { Device::fetch_add_u32(self.arrivals, 1, Ordering::Release) };
            if before.wrapping_add(1) != target {
                // Wrapping comparison: the counter wraps after 2³² arrivals, and no
                // block can be more than one phase (`blocks` arrivals) ahead of another.
                // SAFETY: as above.
                while (unsafe { Device::load_u32(self.arrivals, Ordering::Relaxed) }
                    .wrapping_sub(target) as i32)
                    < 0
                {}
            }
            // With the relaxed read before it (the poll's or the reply's), an acquire
            // pattern: it synchronizes with every block's release, whose arrivals that
            // read observed through the chain of atomic adds.
            Device::fence(Ordering::Acquire);
        }
        sync_block();
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
