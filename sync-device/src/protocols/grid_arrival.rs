//! A block's part of a [`Grid`](crate::Grid) barrier phase, in PTX: the block barrier,
//! the block's arrival, the wait for the grid, the block barrier again.
//!
//! Both forms (one level, two levels) are one `asm` block, so that its branches are the
//! ones written here and not whatever the compiler makes of the surrounding code. The
//! block's whole first warp does the block's part: lane 0 adds the block's arrival
//! (release) and every lane of the warp takes lane 0's reply through a shuffle; the warp polls with relaxed loads
//! (one memory request for the warp: its lanes load the same word) and goes by lane
//! 0's value; then one acquire fence. Every branch is therefore the same for the whole
//! warp, so each is a `bra.uni`, which ptxas takes at its word: no convergence
//! bookkeeping around the poll, no `YIELD` in it, no reconvergence before the second
//! block barrier.
//!
//! Why: written in Rust with thread 0 alone in a branch (`thread_in_block() == 0`, the
//! shape `cg::this_grid().sync()` has), ptxas wraps the arrival in warp aggregation (it
//! cannot see that one lane takes the branch), checks for divergence before each
//! `barrier.sync`, keeps a `YIELD` in the poll and puts a reconvergence barrier after
//! it. Whatever else sits in the caller's loop between the barriers counts too: the
//! choice of form is a `bra.uni` inside the block (a Rust branch around two `asm`
//! blocks made ptxas assume a diverged warp), lane 0's test and the counters' targets
//! are worked out where only the first warp runs them, and the lane register is read
//! outside. Figures: docs/measurements.md, "`Grid::sync` by the first warp" and "Design
//! figures behind the rustdoc".
//!
//! The block barriers are `barrier.sync` without `.aligned`, which counts threads, not
//! warps. rustc marks no inline assembly convergent, so the compiler may copy a call
//! into both arms of a branch that splits a warp, which an aligned barrier (what
//! `__syncthreads()` is) does not survive. The `bra.uni`s stay true in any such copy:
//! the first-warp test, lane 0's reply and lane 0's poll are the same for every lane
//! that runs that copy; and from sm_70 on, `shfl.sync` and `bar.warp.sync` no longer
//! require every lane of the mask to run the same instruction (the PTX ISA limits that
//! requirement to sm_6x and below), so lanes in two copies still meet at each.
//!
//! Memory ordering: the arrival is a release at device scope after the first block
//! barrier, so it covers every write of the block before the phase. The warp's relaxed
//! read (lane 0's reply or its poll) observes every block's release through the
//! counter's chain of atomic adds; with the acquire fence after it, an acquire pattern,
//! which the second block barrier passes on to the rest of the block. In two levels,
//! each link is the same pattern (see [`two_level_form`]).
//!
//! The shuffles' member mask is the constant `-1` for a block of a warp or more: with
//! a mask in a register, ptxas checks for divergence before each shuffle and keeps a
//! `YIELD` in the poll. A smaller block takes a copy of its form whose mask names the
//! lanes it has. Labels are named: PTX scopes a label to the `{ }` block that declares
//! it (CUTLASS's inline PTX relies on the same), so each copy of a form, and each
//! inlined copy of the whole block in a kernel, has its own; the `named_asm_labels`
//! lint is for assemblers whose labels are global to the file.

use core::arch::asm;

use sync_shared::layout::grid::{group_release_line, GRID_LINE_WORDS};

use crate::ptx::atomics::acquire_fence_text;
use crate::ptx::geometry::{block_size, thread_in_block};
use crate::ptx::warp::{lane, WARP_LANES};

/// Bytes from one group's release word to the next.
const RELEASE_STRIDE: usize =
    (group_release_line(1) - group_release_line(0)) * GRID_LINE_WORDS * size_of::<u32>();

/// Lane 0's release add of one to `$counter` (an operand's text), its reply shuffled to
/// the warp (member mask `$mask`), and predicate `last` set when that arrival made the
/// counter reach `{phase} × $per_phase`: this phase's last on that counter.
macro_rules! arrival {
    ($counter:literal, $per_phase:literal, $mask:literal) => {
        concat!(
            "mul.lo.u32 target, {phase}, ",
            $per_phase,
            ";\n",
            "@first_lane atom.release.gpu.add.u32 seen, [",
            $counter,
            "], 1;\n",
            "shfl.sync.idx.b32 seen, seen, 0, 31, ",
            $mask,
            ";\n",
            "add.u32 seen, seen, 1;\n",
            "setp.eq.u32 last, seen, target;\n",
        )
    };
}

/// The warp's poll of `$word` (an operand's text) until it reaches `$target` (a
/// register's or operand's text), going by lane 0's load (member mask `$mask`).
/// Wrapping comparison: the counters wrap after 2³² arrivals, and no block is more
/// than one phase ahead of another.
macro_rules! poll {
    ($word:literal, $target:literal, $mask:literal) => {
        concat!(
            "POLL:\n",
            "ld.relaxed.gpu.u32 seen, [",
            $word,
            "];\n",
            "shfl.sync.idx.b32 seen, seen, 0, 31, ",
            $mask,
            ";\n",
            "sub.u32 seen, seen, ",
            $target,
            ";\n",
            "setp.lt.s32 waiting, seen, 0;\n",
            "@waiting bra.uni POLL;\n",
        )
    };
}

/// The first warp's part of a one-level phase, as one `{ }` scope of PTX text, with
/// the shuffles' member mask `$mask` (a constant or an operand's text). Runs between
/// the block barriers, in the first warp only; falls through at its end.
macro_rules! one_level_form {
    ($mask:literal) => {
        concat!(
            "{{\n",
            arrival!("{counter}", "{blocks}", $mask),
            "@last bra.uni ACQUIRE;\n",
            poll!("{counter}", "target", $mask),
            "ACQUIRE:\n",
            acquire_fence_text!("gpu"),
            "}}\n",
        )
    };
}

/// As [`one_level_form`], for two levels: the block's arrival on its group's counter;
/// the group's last block acquires the group and arrives on the top counter; the last
/// group's last block acquires every group and adds one to every group's release word
/// (which so counts the phases completed); every other block polls its group's
/// release word until it reaches the phase, then acquires.
macro_rules! two_level_form {
    ($mask:literal) => {
        concat!(
            "{{\n",
            // Nested ifs, not jumps into the poll from two places, and reductions,
            // not stores, into the release words: with either of the latter ptxas
            // wraps the whole phase in a reconvergence region.
            arrival!("{group_counter}", "{members}", $mask),
            "@!last bra.uni ARRIVED;\n",
            acquire_fence_text!("gpu"),
            arrival!("{counter}", "{groups}", $mask),
            "@!last bra.uni ARRIVED;\n",
            // Lane 0's reply observed every group's release: its acquire fence, then
            // the warp barrier (which orders memory among the lanes) hands that to
            // every lane, and each lane releases its share of the groups (lane `l` of
            // `n`: groups `l`, `l + n`, ...): one lane releasing all in turn was far
            // slower on a crowded grid (docs/measurements.md, `grid_arrival`).
            acquire_fence_text!("gpu"),
            "bar.warp.sync ",
            $mask,
            ";\n",
            "fence.acq_rel.gpu;\n",
            "mov.u32 base, 0;\n",
            "RELEASE:\n",
            "add.u32 group, base, {lane};\n",
            "setp.lt.u32 waiting, group, {groups};\n",
            "mad.wide.u32 word, group, {stride}, {first_release};\n",
            "@waiting red.relaxed.gpu.add.u32 [word], 1;\n",
            "add.u32 base, base, {warp_lanes};\n",
            "setp.lt.u32 waiting, base, {groups};\n",
            "@waiting bra.uni RELEASE;\n",
            "ARRIVED:\n",
            // `last`: this block released every group (and acquired them all).
            "@last bra.uni RELEASED;\n",
            poll!("{release}", "{phase}", $mask),
            acquire_fence_text!("gpu"),
            "RELEASED:\n",
            "}}\n",
        )
    };
}

/// Where a block arrives and waits, for either form. The targets the counters must
/// reach are worked out inside the `asm` block, by the first warp alone: every other
/// warp of the block runs only the two block barriers and one branch between them (at
/// 1024 threads, 31 warps whose every instruction there delays the second barrier).
pub(crate) struct Arrival {
    /// The top counter: every block's arrivals since the launch in one level, every
    /// group's in two.
    pub counter: *mut u32,
    /// Blocks in the grid.
    pub blocks: u32,
    /// Groups in the grid in two levels, 0 in one.
    pub groups: u32,
    /// Two levels: the counter of the block's group.
    pub group_counter: *mut u32,
    /// Two levels: blocks in the block's group.
    pub members: u32,
    /// Two levels: group 0's release word; group `g`'s lies `g × RELEASE_STRIDE`
    /// bytes further.
    pub first_release: *mut u32,
    /// Two levels: the block's group's release word.
    pub release: *mut u32,
    /// The phase being completed: one level's counter reaches `phase × blocks`, a
    /// group's `phase × members`, two levels' top counter `phase × groups`, and the
    /// release words `phase`.
    pub phase: u32,
}

/// A block's part of one grid barrier phase: the block barrier, the first warp's part
/// of the form `at.groups` picks (at block sizes from a warp up, or below), the block
/// barrier again.
///
/// # Safety
///
/// The words are live device words that only this barrier touches, laid out as
/// `sync_shared::layout::grid` says; every thread of the block calls this with the
/// same arguments.
#[allow(named_asm_labels)]
#[inline(always)]
pub(crate) unsafe fn block_phase(at: &Arrival) {
    let first_warp = u32::from(thread_in_block() < WARP_LANES);
    // Read outside the `asm` block, where the compiler can hoist it out of the caller's
    // loop: read inside, ptxas schedules the lane register's read after the first
    // block barrier, on the path to the arrival (docs/measurements.md, `grid_arrival`).
    let lane = lane();
    let first_lane = u32::from(lane == 0);
    let threads = block_size();
    // Lanes of the first warp, for blocks smaller than a warp.
    let lanes = 1_u32.checked_shl(threads).map_or(u32::MAX, |bit| bit - 1);
    // SAFETY: per the contract.
    unsafe {
        asm!(
            "{{",
            ".reg .pred first_warp, first_lane, two_levels, small, waiting, last;",
            ".reg .b32 seen, target, base, group;",
            ".reg .b64 word;",
            "setp.ne.u32 first_warp, {first_warp}, 0;",
            "setp.ne.u32 first_lane, {first_lane}, 0;",
            "setp.ne.u32 two_levels, {groups}, 0;",
            "setp.lt.u32 small, {threads}, 32;",
            "barrier.sync 0;",
            "@!first_warp bra.uni GRID_REST;",
            "@two_levels bra.uni GRID_TWO_LEVELS;",
            "@small bra.uni GRID_ONE_LEVEL_SMALL;",
            // The common form runs straight through; the others jump back.
            one_level_form!("-1"),
            "GRID_REST:",
            "barrier.sync 0;",
            "bra.uni GRID_END;",
            "GRID_ONE_LEVEL_SMALL:",
            one_level_form!("{lanes}"),
            "bra.uni GRID_REST;",
            "GRID_TWO_LEVELS:",
            "@small bra.uni GRID_TWO_LEVELS_SMALL;",
            two_level_form!("-1"),
            "bra.uni GRID_REST;",
            "GRID_TWO_LEVELS_SMALL:",
            two_level_form!("{lanes}"),
            "bra.uni GRID_REST;",
            "GRID_END:",
            "}}",
            first_warp = in(reg32) first_warp,
            first_lane = in(reg32) first_lane,
            lane = in(reg32) lane,
            warp_lanes = in(reg32) threads.min(WARP_LANES),
            threads = in(reg32) threads,
            lanes = in(reg32) lanes,
            counter = in(reg64) at.counter,
            blocks = in(reg32) at.blocks,
            groups = in(reg32) at.groups,
            group_counter = in(reg64) at.group_counter,
            members = in(reg32) at.members,
            first_release = in(reg64) at.first_release,
            release = in(reg64) at.release,
            phase = in(reg32) at.phase,
            stride = const RELEASE_STRIDE,
            options(nostack),
        )
    };
}
