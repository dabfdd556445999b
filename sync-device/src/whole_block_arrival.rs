//! A block's whole arrival at a portable [`Barrier`](sync_shared::Barrier) of device or
//! system scope, in PTX: the block barrier, the block's arrival and wait, the block
//! barrier again ([`WholeBlock::block_arrive_and_wait`](crate::WholeBlock)).
//!
//! The same shape as [`Grid::sync`](crate::Grid)'s phase (`grid_arrival`, whose
//! module documentation says why it is one `asm` block run by the block's first warp
//! with `bra.uni` branches only), on the barrier's own words: lane 0 adds the block's
//! arrivals to the state word (release) and reads the expected word behind it, the warp
//! takes lane 0's reply through a shuffle and decides on it as one; a phase's last
//! arrival reopens the next phase, the others poll the parity. Written in Rust, the
//! same protocol (a branch for thread 0, the generic wait) cost an H100 1044 ns per
//! phase at 132 blocks of 128 threads where `cuda::barrier<thread_scope_device>`'s
//! leader took 996 (docs/measurements.md).
//!
//! The protocol is the unchecked arrival of `sync_shared::barrier` (its module
//! documentation and `portable.rs`), step for step, in the barrier's
//! [`encoding`](sync_shared::barrier::encoding):
//! - an arrival into an open phase that takes more than the phase has left traps (the
//!   release build's panic is a trap too; the checked build keeps the Rust path, which
//!   prints why);
//! - the phase's last arrival acquires the others (one fence) and reopens the next
//!   phase with an add it does not wait for, from the expected count it read beside its
//!   add, or, once a thread has dropped out, from the word read again after the fence;
//! - an arrival counted before the reopening landed ("early") reopens the phase after
//!   if it is that phase's last (every arrival came early), traps if it is one too
//!   many, and waits for the parity like any other.
//!
//! Memory ordering: the arrival is a release at the barrier's scope after the first
//! block barrier (it covers the block's writes before the phase); the warp's relaxed
//! polls see the parity flipped by the chain of adds and one acquire fence follows, which
//! the second block barrier passes on to the rest of the block.

use core::arch::asm;

use sync_shared::barrier::encoding::{COUNT, DROPPED, EXPECTED, OPEN, PARITY, UNIT};
use sync_shared::{Device, Scope, System};

use crate::geometry::{block_size, thread_in_block};
use crate::ptx_atomics::acquire_fence_text;
use crate::warp::lane;

/// Lanes of a warp.
const WARP_LANES: u32 = 32;

/// The warp's poll at scope `$q`, by lane 0's load (member mask `$mask`), until the
/// state word's parity differs from the one in `before`.
macro_rules! parity_poll {
    ($q:literal, $mask:literal) => {
        concat!(
            "{{\n",
            "POLL:\n",
            "ld.relaxed.",
            $q,
            ".u32 seen, [{state}];\n",
            "shfl.sync.idx.b32 seen, seen, 0, 31, ",
            $mask,
            ";\n",
            "xor.b32 seen, seen, before;\n",
            "and.b32 seen, seen, {parity};\n",
            "setp.eq.u32 waiting, seen, 0;\n",
            "@waiting bra.uni POLL;\n",
            "}}\n",
        )
    };
}

/// The count later phases expect (`expected`, the same in every lane: member mask
/// `$mask`): the word lane 0 read beside its arrival (`guess`), or, once a thread has
/// dropped out, the word read again (the caller has taken the acquire fence that makes
/// the drops visible).
macro_rules! next_expected {
    ($q:literal, $mask:literal) => {
        concat!(
            "@dropped ld.relaxed.",
            $q,
            ".u32 guess, [{expected}];\n",
            "shfl.sync.idx.b32 guess, guess, 0, 31, ",
            $mask,
            ";\n",
            "and.b32 expected, guess, {expected_mask};\n",
        )
    };
}

/// Lane 0 adds the start of a phase of `expected` arrivals to the state word where
/// `reopens` holds, without waiting for the reply. (Every branch stays uniform and the
/// add sits under the lane-0 test alone: under any other predicate ptxas wraps it in a
/// warp aggregation, with reconvergence barriers around the whole phase.)
macro_rules! reopen {
    ($q:literal) => {
        concat!(
            "{{\n",
            "@!reopens bra.uni KEPT;\n",
            "shl.b32 start, expected, {unit_shift};\n",
            "sub.u32 start, {parity}, start;\n",
            "@first_lane red.relaxed.",
            $q,
            ".add.u32 [{state}], start;\n",
            "KEPT:\n",
            "}}\n",
        )
    };
}

/// The first warp's part of the phase, as one `{ }` scope of PTX text, at scope `$q`
/// with the shuffles' member mask `$mask`. Falls through at its end.
macro_rules! first_warp_part {
    ($q:literal, $mask:literal) => {
        concat!(
            "{{\n",
            ".reg .pred early, dropped, over, last, reopens, waiting;\n",
            ".reg .b32 before, guess, seen, count, expected, start;\n",
            "@first_lane atom.release.",
            $q,
            ".add.u32 before, [{state}], {units};\n",
            // Issued right behind the add, so that both round trips overlap; from the
            // SM's cache (`Backend::load_cached`), away from the contended line.
            "@first_lane ld.relaxed.cta.u32 guess, [{expected}];\n",
            "shfl.sync.idx.b32 before, before, 0, 31, ",
            $mask,
            ";\n",
            "and.b32 count, before, {count_mask};\n",
            "and.b32 seen, before, {dropped_bit};\n",
            "setp.ne.u32 dropped, seen, 0;\n",
            "and.b32 seen, before, {open};\n",
            "setp.eq.u32 early, seen, 0;\n",
            "@early bra.uni EARLY;\n",
            // Open: the arrivals the phase had left, (PARITY - count) / UNIT.
            "sub.u32 count, {parity}, count;\n",
            "shr.u32 count, count, {unit_shift};\n",
            "setp.gt.u32 over, {arrivals}, count;\n",
            "@over bra.uni OVER;\n",
            "setp.eq.u32 last, {arrivals}, count;\n",
            "@last bra.uni ACQUIRE;\n",
            parity_poll!($q, $mask),
            "ACQUIRE:\n",
            acquire_fence_text!($q),
            "@!last bra.uni DONE;\n",
            next_expected!($q, $mask),
            "setp.ne.u32 reopens, expected, 0;\n",
            reopen!($q),
            "bra.uni DONE;\n",
            "EARLY:\n",
            "@dropped ",
            acquire_fence_text!($q),
            next_expected!($q, $mask),
            // The arrivals counted on top of zero so far, this one's included.
            "shr.u32 count, count, {unit_shift};\n",
            "add.u32 count, count, {arrivals};\n",
            "setp.gt.u32 over, count, expected;\n",
            "@over bra.uni OVER;\n",
            "setp.eq.u32 reopens, count, expected;\n",
            reopen!($q),
            parity_poll!($q, $mask),
            acquire_fence_text!($q),
            "bra.uni DONE;\n",
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
                    first_warp_part!($q, "-1"),
                    "BARRIER_REST:",
                    "barrier.sync 0;",
                    "bra.uni BARRIER_END;",
                    "BARRIER_SMALL:",
                    first_warp_part!($q, "{lanes}"),
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
                    options(nostack),
                )
            };
        }
    };
}

block_phase_at!(block_phase_gpu, "gpu");
block_phase_at!(block_phase_sys, "sys");

/// Whether [`block_phase`] serves scope `S`: device and system, where a block's
/// arrival goes through memory the whole GPU shares.
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
