//! [`Grid`]: the grid-wide barrier of a cooperative launch.

use sync_shared::layout::grid::{
    group_counter_line, group_release_line, groups, GRID_GROUP_BLOCKS, GRID_LINE_WORDS,
};

use crate::geometry::{block_count, block_index, global_thread_count, global_thread_index};
use crate::grid_arrival::{self, Arrival};

/// The grid of a cooperative launch, with its barrier. A kernel gets one only as a
/// parameter filled in by the host's cooperative launch
/// (`scoped_sync::cuda::Kernel::launch_grid`), which checks that every block is
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
/// Why this shape (each measured on an H200 against `cg::this_grid().sync()`, see the
/// README): the release's memory barrier is the largest single cost and cannot move
/// (it must follow the block barrier to cover every thread's writes); relaxed polls
/// plus one `fence.acquire` (an L1 invalidation) beat acquire loads (one invalidation
/// per poll); waiting for the arrival's reply before polling, and skipping the poll
/// in the last block, beat a fire-and-forget reduction, because polls that reach the
/// counter while arrivals are still landing slow those arrivals down — for the same
/// reason more pollers per block, split counters and per-block flags all measured
/// slower at one block per SM. Arriving once per cluster through the cluster barrier
/// (`barrier.cluster`, 187 ns for two blocks on its own) cost 1180–1620 ns per phase.
///
/// Larger grids arrive in two levels instead: arrivals on one word queue at its L2
/// slice, about 1.6 ns each on an H100, which at 16 blocks per SM made the single
/// counter cost as much as `cg::this_grid().sync()`. Each group of `GRID_GROUP_BLOCKS`
/// (64) blocks adds to a counter of its own; the group's last arrival adds one to the
/// top counter; the last group's adds one to every group's release word (its first
/// warp's lanes share the groups), which the group's other blocks poll (on its own
/// line, so polls never slow the group's arrivals). That is two hops more than one
/// level (a second add, then the releases), which cost more than the queue at small
/// grids. Measured on an H100 (ns per phase; docs/measurements.md, "`Grid::sync` in
/// two levels at large grids"): one level 990 at 132 blocks, 2277 at 1056, 3195 at
/// 1584, 4187–4274 at 2112; two levels for every grid size 2271 at 132 and 2769–2820
/// at 1056; the switch as built 2663 at 2112 (2785 at 1584 with the two-level form
/// called out of line). The crossing lies between 1056 and 1584 blocks; nothing
/// between was measured.
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
