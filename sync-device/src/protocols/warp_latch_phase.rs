//! A [`Latch`](sync_shared::Latch)'s `arrive_and_wait(n)` in PTX: lane 0 counts down
//! for the whole warp when all 32 lanes run it together on one latch with one `n`, and
//! each lane counts down alone otherwise; then the wait for zero.
//!
//! The warp form is `warp_barrier_phase`'s (whose module documentation says why it is
//! one `asm` block with uniform branches): lane 0's release add, its reply shuffled to
//! the warp, relaxed polls by lane 0's load, one acquire fence, warp barriers before
//! the add and after the fence. The protocol is the latch's unchecked count-down
//! (`sync_shared::latch`): one add of the negated count; a count-down past zero traps
//! after the word changed (the release build's panic is a trap too; the checked build
//! keeps the Rust path, which prints why); the count-down that reaches zero takes the
//! acquire fence at once, the others poll for zero first.
//!
//! Memory ordering: as in `warp_barrier_phase`. The count-downs are release
//! read-modify-writes of one word; the fence after the add that reached zero, or after
//! the poll that read zero, acquires all of them.

use core::arch::asm;

use sync_shared::latch::COUNT;
use sync_shared::{Block, Device, Scope, System};

use crate::backend::gpu::{FIRST_SLEEP_NS, MAX_SLEEP_NS, POLL_ROUNDS};
use crate::protocols::warp_barrier_phase::{
    branch, leader, poll_again, poll_start, share, warp_together,
};
use crate::ptx::atomics::acquire_fence_text;
use crate::ptx::warp::{lane, WARP_LANES};

/// One count-down of `$take` (text: an operand; `$minus` its negation) and the wait
/// for zero, as one `{ }` scope of PTX text at scope `$q`: by a warp whose lane 0
/// counts down for it (`$who`: the shuffles' member mask), or by each lane alone
/// (`alone`). Falls through at its end.
macro_rules! count_down_and_wait {
    ($q:literal, $who:tt, $take:literal, $minus:literal) => {
        concat!(
            "{{\n",
            ".reg .pred over, last, waiting;\n",
            ".reg .b32 before, seen;\n",
            leader!($who),
            "atom.release.",
            $q,
            ".add.u32 before, [{state}], ",
            $minus,
            ";\n",
            share!("before", $who),
            "and.b32 before, before, {count_mask};\n",
            "setp.gt.u32 over, ",
            $take,
            ", before;\n",
            "@over ",
            branch!($who),
            " OVER;\n",
            "setp.eq.u32 last, ",
            $take,
            ", before;\n",
            "@last ",
            branch!($who),
            " ACQUIRE;\n",
            "{{\n",
            poll_start!(),
            "ld.relaxed.",
            $q,
            ".u32 seen, [{state}];\n",
            share!("seen", $who),
            "and.b32 seen, seen, {count_mask};\n",
            "setp.ne.u32 waiting, seen, 0;\n",
            poll_again!($who),
            "}}\n",
            "ACQUIRE:\n",
            acquire_fence_text!($q),
            branch!($who),
            " DONE;\n",
            // A count-down past zero (the release build's panic).
            "OVER:\n",
            "trap;\n",
            "DONE:\n",
            "}}\n",
        )
    };
}

/// One function per scope qualifier: the `asm` template is a literal.
macro_rules! latch_phase_at {
    ($name:ident, $q:literal) => {
        /// [`latch_phase`] at scope
        #[doc = $q]
        ///
        /// # Safety
        ///
        /// As for [`latch_phase`].
        #[allow(named_asm_labels)]
        #[inline(always)]
        unsafe fn $name(state: *mut u32, n: u32) {
            let first_lane = u32::from(lane() == 0);
            // The warp's total, or more than any count where it would not fit (the
            // count-down then traps, as every lane's would have in turn).
            let warp_take = if n <= COUNT / WARP_LANES {
                n * WARP_LANES
            } else {
                u32::MAX
            };
            // SAFETY: per the contract.
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred first_lane;",
                    "setp.ne.u32 first_lane, {first_lane}, 0;",
                    // All 32 lanes on one latch with one count, or each lane alone.
                    warp_together!("{state}", "{n}"),
                    // As in `warp_barrier_phase`: the warp barriers order every
                    // lane's accesses around lane 0's release and acquire.
                    "bar.warp.sync -1;",
                    count_down_and_wait!($q, "-1", "{warp_take}", "{warp_minus}"),
                    "bar.warp.sync -1;",
                    "bra.uni WARP_END;",
                    "WARP_APART:",
                    count_down_and_wait!($q, alone, "{n}", "{minus}"),
                    "WARP_END:",
                    "}}",
                    first_lane = in(reg32) first_lane,
                    n = in(reg32) n,
                    minus = in(reg32) n.wrapping_neg(),
                    warp_take = in(reg32) warp_take,
                    warp_minus = in(reg32) warp_take.wrapping_neg(),
                    state = in(reg64) state,
                    count_mask = const COUNT,
                    poll_rounds = const POLL_ROUNDS,
                    first_sleep = const FIRST_SLEEP_NS,
                    max_sleep = const MAX_SLEEP_NS,
                    options(nostack),
                )
            };
        }
    };
}

latch_phase_at!(latch_phase_cta, "cta");
latch_phase_at!(latch_phase_gpu, "gpu");
latch_phase_at!(latch_phase_sys, "sys");

/// Whether [`latch_phase`] serves scope `S`: block, device and system (not the
/// cluster scope, whose qualifier exists from sm_90 only).
pub(crate) const fn serves<S: Scope>() -> bool {
    S::LEVEL == Block::LEVEL || S::LEVEL == Device::LEVEL || S::LEVEL == System::LEVEL
}

/// One `arrive_and_wait(n)` of each lane that calls it on the latch whose word is
/// `state`: if all 32 lanes of the warp run it together on one latch with one `n`,
/// lane 0 counts down for the warp and the warp waits as one; otherwise each lane
/// counts down and waits alone.
///
/// # Safety
///
/// [`serves::<S>()`](serves); `state` is a live latch's word, of scope `S`.
#[inline(always)]
pub(crate) unsafe fn latch_phase<S: Scope>(state: *mut u32, n: u32) {
    if S::LEVEL == Block::LEVEL {
        // SAFETY: forwarded.
        unsafe { latch_phase_cta(state, n) }
    } else if S::LEVEL == Device::LEVEL {
        // SAFETY: forwarded.
        unsafe { latch_phase_gpu(state, n) }
    } else {
        // SAFETY: forwarded; `serves` leaves only system scope.
        unsafe { latch_phase_sys(state, n) }
    }
}
