//! [`Grid`]: the grid-wide barrier of a cooperative launch.

use sync_shared::layout::grid::{
    group_counter_line, group_release_line, groups, GRID_GROUP_BLOCKS, GRID_LINE_WORDS,
};

use crate::protocols::grid_arrival::{self, Arrival};
use crate::ptx::geometry::{block_count, block_index, global_thread_count, global_thread_index};

/// The grid of a cooperative launch, with its barrier. A kernel gets one only as a
/// parameter filled in by the host's launch
/// (`scoped_sync::cuda::KernelArgs::grid_barrier`), which checks that every block is
/// co-resident: there is no way to build one inside a kernel, so a grid barrier
/// cannot exist in a launch where it would deadlock.
///
/// Below `GRID_TWO_LEVEL_FROM` blocks (`sync_shared::layout::grid`; 1536),
/// [`sync`](Self::sync) is one atomic per block per phase: the block meets at its
/// hardware barrier, its first warp adds the block's arrival to a grid-wide counter
/// (release, lane 0) and, unless the reply says its block was the last, polls the
/// counter with relaxed loads until every block of this phase has arrived, then takes
/// one acquire fence, and the block meets again. The counter only grows (phase `k` is
/// complete when it reaches `k × blocks`), so there is no reset step and no separate
/// "generation" word to flip: the last block's arrival is itself the release of
/// everyone. The block's part is one `asm` block (`grid_arrival`), whose branches are
/// all the same for the whole first warp: written in Rust around a thread-0 branch it
/// cost 8–10 % more (docs/measurements.md, "`Grid::sync` by the first warp").
///
/// Why this shape: the release after the block barrier is the one cost that cannot
/// move; relaxed polls with one acquire fence, and a poll that starts only after the
/// arrival's reply (none in the last block), keep the polls from slowing the arrivals
/// still landing. Larger grids arrive in two levels, because arrivals on one word queue
/// at its L2 slice: each group of `GRID_GROUP_BLOCKS` (64) blocks adds to a counter of
/// its own, the group's last arrival adds to the top counter, and the last group
/// releases every group through a word of the group's own that its blocks poll. What
/// each alternative measured: docs/measurements.md, "Design figures behind the
/// rustdoc".
///
/// Every thread of each block must call `sync` (the block barriers count every
/// thread). They are `barrier.sync` without `.aligned`: a compiler that copies the
/// call into both arms of a branch that splits a warp cannot break it, as it could an
/// aligned barrier (`__syncthreads()`), since rustc marks no inline assembly
/// convergent.
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
    /// The barrier's words (`grid::words(blocks)` of them, zeroed by the launch): the
    /// top counter (block arrivals since the launch began in one level, group
    /// arrivals in two), then the groups' lines.
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
        let blocks = block_count();
        let groups = groups(blocks);
        let group = block_index() / GRID_GROUP_BLOCKS;
        let members = GRID_GROUP_BLOCKS.min(blocks.saturating_sub(group * GRID_GROUP_BLOCKS));
        // Both forms' words: the form is the launch's (`block_count` is the same in
        // every thread) and picked inside `block_phase`, by a branch ptxas knows to be
        // uniform (a Rust branch here would make ptxas treat the whole phase as
        // possibly diverged).
        let at = Arrival {
            counter: self.arrivals,
            blocks,
            groups,
            group_counter: self.line(group_counter_line(group)),
            members,
            first_release: self.line(group_release_line(0)),
            release: self.line(group_release_line(group)),
            phase: self.phase,
        };
        // SAFETY: the launch passes live, zeroed device words for every line of
        // `grid::words(blocks)` (one word in one level: only `counter` is touched
        // then), which only this barrier touches; every thread of the block calls
        // `sync`.
        unsafe { grid_arrival::block_phase(&at) };
    }

    /// The first word of line `line` of the barrier's words.
    #[inline(always)]
    fn line(&self, line: usize) -> *mut u32 {
        self.arrivals.wrapping_add(line * GRID_LINE_WORDS)
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
