//! [`Grid`]: the grid-wide barrier of a cooperative launch.

use sync_shared::layout::grid::{
    group_counter_line, group_release_line, groups, GRID_GROUP_BLOCKS, GRID_LINE_WORDS,
};
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
/// Below `GRID_TWO_LEVEL_FROM` blocks (`sync_shared::layout::grid`; 1536),
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
/// slower at one block per SM.
///
/// Larger grids arrive in two levels instead: arrivals on one word queue at its L2
/// slice, about 1.6 ns each on an H100, which at 16 blocks per SM made the single
/// counter cost as much as `cg::this_grid().sync()`. Each group of `GRID_GROUP_BLOCKS`
/// (64) blocks adds to a counter of its own; the group's last arrival adds one to the
/// top counter; the last group's writes the phase into every group's release word,
/// which the group's other blocks poll (on its own line, so polls never slow the
/// group's arrivals). That is two hops more than one level (a second add, then the
/// release stores), which cost more than the queue at small grids. Measured on an H100
/// (ns per phase; docs/measurements.md, "`Grid::sync` in two levels at large grids"):
/// one level 990 at 132 blocks, 2277 at 1056, 3195 at 1584, 4187–4274 at 2112; two
/// levels for every grid size 2271 at 132 and 2769–2820 at 1056; the switch as built
/// 2663 at 2112 (2785 at 1584 with the two-level form called out of line). The
/// crossing lies between 1056 and 1584 blocks; nothing between was measured.
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
        // The form is the launch's (`block_count` is the same in every thread), so the
        // branch never diverges. Both forms are inline: the two-level one inside the
        // thread-0 branch cost the one-level loop 200 ns per phase at 132 × 128 on an
        // H100, and out of line (a call in the loop) 47 ns at 132 × 1024.
        if groups(blocks) != 0 {
            return self.sync_in_groups(blocks);
        }
        sync_block();
        if thread_in_block() == 0 {
            let target = self.phase.wrapping_mul(blocks);
            // SAFETY: the launch passes a live, zeroed device word for the whole grid,
            // which only these atomics touch.
            let before = unsafe { Device::fetch_add_u32(self.arrivals, 1, Ordering::Release) };
            if before.wrapping_add(1) != target {
                wait_for(self.arrivals, target);
            }
            // With the relaxed read before it (the poll's or the reply's), an acquire
            // pattern: it synchronizes with every block's release, which that read
            // observed through the chain of atomic adds.
            Device::fence(Ordering::Acquire);
        }
        sync_block();
    }

    /// [`sync`](Self::sync) for a grid of `blocks` blocks that arrives in two levels.
    #[inline(always)]
    fn sync_in_groups(&mut self, blocks: u32) {
        sync_block();
        if thread_in_block() == 0 {
            self.arrive_in_groups(blocks, groups(blocks));
            // With the poll's relaxed read (or the last group's `acq_rel` fence), an
            // acquire pattern over the group's release, which carries every block's.
            Device::fence(Ordering::Acquire);
        }
        sync_block();
    }

    /// Two levels: the block's arrival on its group's counter; the group's last
    /// arrival on the top counter; the last group's release of every group.
    ///
    /// Memory ordering: each link of the chain is an acquire pattern over the arrivals
    /// it counts, then a release of everything acquired: a block's release add on its
    /// group counter; the group's last reads the counter's chain of adds and takes an
    /// acquire fence, then adds to the top with release; the last group's reply plus
    /// an `acq_rel` fence acquires every group and releases the relaxed stores of the
    /// phase into the release words, which the waiters poll (then the caller's acquire
    /// fence).
    #[inline(always)]
    fn arrive_in_groups(&self, blocks: u32, groups: u32) {
        let group = block_index() / GRID_GROUP_BLOCKS;
        let members = GRID_GROUP_BLOCKS.min(blocks - group * GRID_GROUP_BLOCKS);
        let release = self.line(group_release_line(group));
        // SAFETY: the launch passes live, zeroed device words for every line of
        // `grid::words(blocks)`, which only this barrier's atomics touch.
        let before = unsafe {
            Device::fetch_add_u32(self.line(group_counter_line(group)), 1, Ordering::Release)
        };
        if before.wrapping_add(1) == self.phase.wrapping_mul(members) {
            Device::fence(Ordering::Acquire);
            // SAFETY: as above.
            let top = unsafe { Device::fetch_add_u32(self.arrivals, 1, Ordering::Release) };
            if top.wrapping_add(1) == self.phase.wrapping_mul(groups) {
                Device::fence(Ordering::AcqRel);
                for group in 0..groups {
                    let word = self.line(group_release_line(group));
                    // SAFETY: as above.
                    unsafe { Device::store_u32(word, self.phase, Ordering::Relaxed) };
                }
                return;
            }
        }
        wait_for(release, self.phase);
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

/// Polls `word` with relaxed loads until it reaches `target`. Wrapping comparison: the
/// counters wrap after 2³² arrivals, and no block is more than one phase ahead of
/// another.
#[inline(always)]
fn wait_for(word: *mut u32, target: u32) {
    // SAFETY: a live barrier word of the launch (see the callers).
    while (unsafe { Device::load_u32(word, Ordering::Relaxed) }.wrapping_sub(target) as i32) < 0 {}
}
