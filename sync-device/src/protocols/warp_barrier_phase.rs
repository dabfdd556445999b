//! A portable [`Barrier`](sync_shared::Barrier)'s arrival and wait at device or system
//! scope in PTX, by one warp: a whole block's (the block barrier, the first warp's
//! arrival for the block and its wait, the block barrier again:
//! [`WholeBlock::block_arrive_and_wait`](crate::WholeBlock)), or a whole warp's (every
//! thread's `arrive_and_wait`: lane 0 arrives for the 32 lanes when all of them run it
//! together on one barrier, and each lane arrives alone otherwise).
//!
//! The same shape as [`Grid::sync`](crate::Grid)'s phase (`grid_arrival`, whose module
//! documentation says why it is one `asm` block with `bra.uni` branches), on the
//! barrier's own words: lane 0 adds the arrivals to the state word (release), the warp
//! takes lane 0's reply through a shuffle and decides on it as one; a phase's last
//! arrival reads the expected word and reopens the next phase, the others poll the
//! parity. In PTX both paths beat their Rust forms, whose branches ptxas wraps in
//! convergence bookkeeping (docs/measurements.md, "Design figures behind the
//! rustdoc").
//!
//! The protocol is the unchecked arrival of `sync_shared::barrier` (its module
//! documentation and `portable.rs`), step for step, in the barrier's
//! [`encoding`](sync_shared::barrier::encoding):
//! - an arrival into an open phase that takes more than the phase has left traps (the
//!   release build's panic is a trap too; the checked build keeps the Rust path, which
//!   prints why);
//! - the phase's last arrival acquires the others (one fence) and reopens the next
//!   phase with an add it does not wait for, from the expected word read after the
//!   fence;
//! - an arrival counted before the reopening landed ("early") reopens the phase after
//!   if it is that phase's last (every arrival came early), traps if it is one too
//!   many, and waits for the parity like any other.
//!
//! Memory ordering: the arrival is a release at the barrier's scope after a barrier
//! among the threads it stands for (the block barrier for a whole block, `bar.warp.sync`
//! for a warp: shuffles do not order memory), so it covers their writes before the
//! phase; the relaxed polls see the parity flipped by the chain of adds and one acquire
//! fence follows, which the second block barrier or a second `bar.warp.sync` passes on
//! to every thread the arrival stood for. A lane alone releases and acquires for itself.

use core::arch::asm;

use sync_shared::barrier::encoding::{COUNT, DROPPED, EXPECTED, OPEN, PARITY, UNIT};
use sync_shared::{Device, Scope, System};

use crate::backend::gpu::{FIRST_SLEEP_NS, MAX_SLEEP_NS, POLL_ROUNDS};
use crate::ptx::atomics::acquire_fence_text;
use crate::ptx::geometry::{block_size, thread_in_block};
use crate::ptx::warp::{lane, WARP_LANES};

/// `$reg` takes lane 0's value in every lane of the member mask `$who`; a lane alone
/// (`alone`) keeps its own.
macro_rules! share {
    ($reg:literal, alone) => {
        ""
    };
    ($reg:literal, $mask:literal) => {
        concat!(
            "shfl.sync.idx.b32 ",
            $reg,
            ", ",
            $reg,
            ", 0, 31, ",
            $mask,
            ";\n"
        )
    };
}

/// A branch on shared values: uniform for a warp (`bra.uni`, which ptxas takes at its
/// word), per lane for a lane alone.
macro_rules! branch {
    (alone) => {
        "bra"
    };
    ($mask:literal) => {
        "bra.uni"
    };
}

/// The guard of the leader's instructions: lane 0 of a warp; a lane alone leads itself.
macro_rules! leader {
    (alone) => {
        ""
    };
    ($mask:literal) => {
        "@first_lane "
    };
}

/// Declares `together` and jumps to `WARP_APART` unless all 32 lanes of the warp run
/// this together with the same 64-bit `$address` and the same value in each 32-bit
/// `$operand` (texts). The branches are uniform: `activemask` and `match.all` give
/// every lane the same answer. (`match.all` rather than lane 0's value shuffled and
/// voted on: ptxas drops it where it can prove the operand uniform, a barrier passed
/// as a kernel parameter, and where it cannot it still measured faster;
/// docs/measurements.md, `warp_barrier_phase`.)
macro_rules! warp_together {
    ($address:literal $(, $operand:literal)*) => {
        concat!(
            ".reg .pred together, same;\n",
            ".reg .b32 active, lanes;\n",
            "activemask.b32 active;\n",
            "setp.eq.u32 together, active, -1;\n",
            "@!together bra.uni WARP_APART;\n",
            "match.all.sync.b64 lanes|together, ",
            $address,
            ", -1;\n",
            $(
                "match.all.sync.b32 lanes|same, ",
                $operand,
                ", -1;\n",
                "and.pred together, together, same;\n",
            )*
            "@!together bra.uni WARP_APART;\n",
        )
    };
}

/// The start of a poll loop: declares and zeroes its round count and first sleep,
/// and places the `POLL` label that [`poll_again`] returns to. (Inside a `{ }` scope,
/// with [`poll_again`] after the test of the round.)
macro_rules! poll_start {
    () => {
        concat!(
            ".reg .pred spinning;\n",
            ".reg .b32 polls, pause;\n",
            "mov.u32 polls, 0;\n",
            "mov.u32 pause, {first_sleep};\n",
            "POLL:\n",
        )
    };
}

/// The end of a poll round, where `waiting` says whether to poll again (the same in
/// every lane of a warp, `$who`): at once for the first `POLL_ROUNDS` rounds, then
/// after a `nanosleep` that doubles up to the longest, the schedule of the Rust waits
/// (`gpu::backoff_ns`). Without the sleeps, compute-sanitizer's racecheck never let the
/// warps a block-scope latch still waited for count down while one spun (the
/// conformance kernel hung; docs/sanitizers.md). The asm block binds `poll_rounds`,
/// `first_sleep` and `max_sleep` (`gpu::POLL_ROUNDS`, `FIRST_SLEEP_NS`, `MAX_SLEEP_NS`).
macro_rules! poll_again {
    ($who:tt) => {
        concat!(
            "@!waiting ",
            branch!($who),
            " POLLED;\n",
            "add.u32 polls, polls, 1;\n",
            "setp.lt.u32 spinning, polls, {poll_rounds};\n",
            "@spinning ",
            branch!($who),
            " POLL;\n",
            "nanosleep.u32 pause;\n",
            "shl.b32 pause, pause, 1;\n",
            "min.u32 pause, pause, {max_sleep};\n",
            branch!($who),
            " POLL;\n",
            "POLLED:\n",
        )
    };
}

/// The poll at scope `$q`, by lane 0's load for a warp (`$who`), until the state
/// word's parity differs from the one in `before`.
macro_rules! parity_poll {
    ($q:literal, $who:tt) => {
        concat!(
            "{{\n",
            poll_start!(),
            "ld.relaxed.",
            $q,
            ".u32 seen, [{state}];\n",
            share!("seen", $who),
            "xor.b32 seen, seen, before;\n",
            "and.b32 seen, seen, {parity};\n",
            "setp.eq.u32 waiting, seen, 0;\n",
            poll_again!($who),
            "}}\n",
        )
    };
}

/// The count later phases expect (`expected`, the same in every lane of a warp), read
/// when it is needed: by a phase's last arrival after its acquire fence, or by an early
/// one (after the fence if a thread has dropped out, which makes the drops visible).
/// Not beside every arrival: that load (from the SM's cache, which the previous phase's
/// acquire fence had emptied) went to the contended line with every warp's arrival,
/// and the next arrival's release fence waited for it (docs/measurements.md,
/// `warp_barrier_phase`).
macro_rules! next_expected {
    ($q:literal, $who:tt) => {
        concat!(
            "ld.relaxed.",
            $q,
            ".u32 word, [{expected}];\n",
            share!("word", $who),
            "and.b32 expected, word, {expected_mask};\n",
        )
    };
}

/// The leader adds the start of a phase of `expected` arrivals to the state word where
/// `reopens` holds, without waiting for the reply. (In a warp every branch stays
/// uniform and the add sits under the lane-0 test alone: under any other predicate
/// ptxas wraps it in a warp aggregation, with reconvergence barriers around the whole
/// phase.)
macro_rules! reopen {
    ($q:literal, $who:tt) => {
        concat!(
            "{{\n",
            "@!reopens ",
            branch!($who),
            " KEPT;\n",
            "shl.b32 start, expected, {unit_shift};\n",
            "sub.u32 start, {parity}, start;\n",
            leader!($who),
            "red.relaxed.",
            $q,
            ".add.u32 [{state}], start;\n",
            "KEPT:\n",
            "}}\n",
        )
    };
}

/// One arrival of `$arrivals` (text: an operand or a number; `$units` the same times
/// `UNIT`) and its wait, as one `{ }` scope of PTX text at scope `$q`: by a warp whose
/// lane 0 arrives for it (`$who`: the shuffles' member mask), or by each lane alone
/// (`alone`). Falls through at its end.
macro_rules! arrival_and_wait {
    ($q:literal, $who:tt, $arrivals:literal, $units:literal) => {
        concat!(
            "{{\n",
            ".reg .pred early, dropped, over, last, reopens, waiting;\n",
            ".reg .b32 before, word, seen, count, expected, start;\n",
            leader!($who),
            "atom.release.",
            $q,
            ".add.u32 before, [{state}], ",
            $units,
            ";\n",
            share!("before", $who),
            "and.b32 count, before, {count_mask};\n",
            "and.b32 seen, before, {dropped_bit};\n",
            "setp.ne.u32 dropped, seen, 0;\n",
            "and.b32 seen, before, {open};\n",
            "setp.eq.u32 early, seen, 0;\n",
            "@early ",
            branch!($who),
            " EARLY;\n",
            // Open: the arrivals the phase had left, (PARITY - count) / UNIT.
            "sub.u32 count, {parity}, count;\n",
            "shr.u32 count, count, {unit_shift};\n",
            "setp.gt.u32 over, ",
            $arrivals,
            ", count;\n",
            "@over ",
            branch!($who),
            " OVER;\n",
            "setp.eq.u32 last, ",
            $arrivals,
            ", count;\n",
            "@last ",
            branch!($who),
            " ACQUIRE;\n",
            parity_poll!($q, $who),
            "ACQUIRE:\n",
            acquire_fence_text!($q),
            "@!last ",
            branch!($who),
            " DONE;\n",
            next_expected!($q, $who),
            "setp.ne.u32 reopens, expected, 0;\n",
            reopen!($q, $who),
            branch!($who),
            " DONE;\n",
            "EARLY:\n",
            "@dropped ",
            acquire_fence_text!($q),
            next_expected!($q, $who),
            // The arrivals counted on top of zero so far, this one's included.
            "shr.u32 count, count, {unit_shift};\n",
            "add.u32 count, count, ",
            $arrivals,
            ";\n",
            "setp.gt.u32 over, count, expected;\n",
            "@over ",
            branch!($who),
            " OVER;\n",
            "setp.eq.u32 reopens, count, expected;\n",
            reopen!($q, $who),
            parity_poll!($q, $who),
            acquire_fence_text!($q),
            branch!($who),
            " DONE;\n",
            // More arrivals than the phase had left (the release build's panic).
            "OVER:\n",
            "trap;\n",
            "DONE:\n",
            "}}\n",
        )
    };
}

/// One function per scope qualifier: the `asm` template is a literal.
macro_rules! block_phase_at {
    ($name:ident, $q:literal) => {
        /// [`block_phase`] at scope
        #[doc = $q]
        ///
        /// # Safety
        ///
        /// As for [`block_phase`].
        #[allow(named_asm_labels)]
        #[inline(always)]
        unsafe fn $name(state: *mut u32, expected: *mut u32) {
            let first_warp = u32::from(thread_in_block() < WARP_LANES);
            // Read outside the `asm` block, where the compiler can hoist it out of the
            // caller's loop (as in `grid_arrival`).
            let first_lane = u32::from(lane() == 0);
            let threads = block_size();
            // Lanes of the first warp, for blocks smaller than a warp.
            let lanes = 1_u32.checked_shl(threads).map_or(u32::MAX, |bit| bit - 1);
            // SAFETY: per the contract.
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred first_warp, first_lane, small;",
                    "setp.ne.u32 first_warp, {first_warp}, 0;",
                    "setp.ne.u32 first_lane, {first_lane}, 0;",
                    "setp.lt.u32 small, {arrivals}, 32;",
                    "barrier.sync 0;",
                    "@!first_warp bra.uni BARRIER_REST;",
                    "@small bra.uni BARRIER_SMALL;",
                    arrival_and_wait!($q, "-1", "{arrivals}", "{units}"),
                    "BARRIER_REST:",
                    "barrier.sync 0;",
                    "bra.uni BARRIER_END;",
                    "BARRIER_SMALL:",
                    arrival_and_wait!($q, "{lanes}", "{arrivals}", "{units}"),
                    "bra.uni BARRIER_REST;",
                    "BARRIER_END:",
                    "}}",
                    first_warp = in(reg32) first_warp,
                    first_lane = in(reg32) first_lane,
                    arrivals = in(reg32) threads,
                    units = in(reg32) threads * UNIT,
                    lanes = in(reg32) lanes,
                    state = in(reg64) state,
                    expected = in(reg64) expected,
                    parity = const PARITY,
                    open = const OPEN,
                    count_mask = const COUNT,
                    dropped_bit = const DROPPED,
                    expected_mask = const EXPECTED,
                    unit_shift = const UNIT.trailing_zeros(),
                    poll_rounds = const POLL_ROUNDS,
                    first_sleep = const FIRST_SLEEP_NS,
                    max_sleep = const MAX_SLEEP_NS,
                    options(nostack),
                )
            };
        }
    };
}

block_phase_at!(block_phase_gpu, "gpu");
block_phase_at!(block_phase_sys, "sys");

pub(crate) use {branch, leader, poll_again, poll_start, share, warp_together};

/// One function per scope qualifier, as [`block_phase_at`].
macro_rules! warp_phase_at {
    ($name:ident, $q:literal) => {
        /// [`warp_phase`] at scope
        #[doc = $q]
        ///
        /// # Safety
        ///
        /// As for [`warp_phase`].
        #[allow(named_asm_labels)]
        #[inline(always)]
        unsafe fn $name(state: *mut u32, expected: *mut u32) {
            let first_lane = u32::from(lane() == 0);
            // SAFETY: per the contract.
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred first_lane;",
                    "setp.ne.u32 first_lane, {first_lane}, 0;",
                    // All 32 lanes on one barrier, or each lane alone.
                    warp_together!("{state}"),
                    // The warp barriers order every lane's accesses before lane 0's
                    // release add, and lane 0's acquiring poll before every lane's
                    // later accesses (shuffles do not order memory).
                    "bar.warp.sync -1;",
                    arrival_and_wait!($q, "-1", "{arrivals}", "{units}"),
                    "bar.warp.sync -1;",
                    "bra.uni WARP_END;",
                    "WARP_APART:",
                    arrival_and_wait!($q, alone, "1", "{unit}"),
                    "WARP_END:",
                    "}}",
                    first_lane = in(reg32) first_lane,
                    arrivals = const WARP_LANES,
                    units = const WARP_LANES * UNIT,
                    unit = const UNIT,
                    state = in(reg64) state,
                    expected = in(reg64) expected,
                    parity = const PARITY,
                    open = const OPEN,
                    count_mask = const COUNT,
                    dropped_bit = const DROPPED,
                    expected_mask = const EXPECTED,
                    unit_shift = const UNIT.trailing_zeros(),
                    poll_rounds = const POLL_ROUNDS,
                    first_sleep = const FIRST_SLEEP_NS,
                    max_sleep = const MAX_SLEEP_NS,
                    options(nostack),
                )
            };
        }
    };
}

warp_phase_at!(warp_phase_gpu, "gpu");
warp_phase_at!(warp_phase_sys, "sys");

/// Whether [`block_phase`] and [`warp_phase`] serve scope `S`: device and system,
/// where the arrivals go through memory the whole GPU shares.
pub(crate) const fn serves<S: Scope>() -> bool {
    S::LEVEL == Device::LEVEL || S::LEVEL == System::LEVEL
}

/// The block's part of one phase of the barrier whose words are `state` and
/// `expected`: every thread of the block arrives (as one arrival of the block's thread
/// count) and waits.
///
/// # Safety
///
/// [`serves::<S>()`](serves); the words are a live barrier's in the portable form
/// without completion function, of scope `S` (`Barrier::portable_words`); every
/// thread of the block calls this together.
#[inline(always)]
pub(crate) unsafe fn block_phase<S: Scope>(state: *mut u32, expected: *mut u32) {
    const { assert!(UNIT.is_power_of_two()) };
    if S::LEVEL == Device::LEVEL {
        // SAFETY: forwarded.
        unsafe { block_phase_gpu(state, expected) }
    } else {
        // SAFETY: forwarded; `serves` leaves only system scope.
        unsafe { block_phase_sys(state, expected) }
    }
}

/// One `arrive_and_wait` of each lane that calls it, on the barrier whose words are
/// `state` and `expected`: if all 32 lanes of the warp run it together on the same
/// barrier, lane 0 adds the warp's 32 arrivals and the warp waits as one; otherwise
/// each lane arrives and waits alone (the compiler may still combine their adds).
///
/// # Safety
///
/// [`serves::<S>()`](serves); the words are a live barrier's in the portable form
/// without completion function, of scope `S` (`Barrier::portable_words`).
#[inline(always)]
pub(crate) unsafe fn warp_phase<S: Scope>(state: *mut u32, expected: *mut u32) {
    if S::LEVEL == Device::LEVEL {
        // SAFETY: forwarded.
        unsafe { warp_phase_gpu(state, expected) }
    } else {
        // SAFETY: forwarded; `serves` leaves only system scope.
        unsafe { warp_phase_sys(state, expected) }
    }
}
