//! [`Gpu`]: the `Backend` of CUDA threads, at every scope.

use core::arch::asm;
use core::time::Duration;

use sync_shared::{Backend, Combined, Ordering, Word};

use crate::backend::scope_check;
#[cfg(not(debug_assertions))]
use crate::protocols::{warp_barrier_phase, warp_latch_phase};
use crate::ptx::atomics::PtxScope;
use crate::ptx::geometry::{global_thread_index, launch_id};
use crate::ptx::warp;

/// The device backend: inline-PTX scoped atomics; waits poll with `nanosleep` and a
/// capped exponential backoff (a device thread has no operating system to park in, and
/// a spinning GPU thread is fine as long as it sleeps a little between polls).
#[derive(Clone, Copy, Debug, Default)]
pub struct Gpu;

/// A reading of the GPU's global nanosecond timer (`%globaltimer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GlobalTime(pub u64);

/// Rounds of pure polling before the first sleep. (Polling for a fixed time instead,
/// by `%globaltimer`, measured slower on a semaphore hand-off: the timer read costs
/// more than the sleeps it saves; docs/measurements.md, `POLL_ROUNDS`.)
pub(crate) const POLL_ROUNDS: u32 = 8;
/// First sleep, in nanoseconds; doubles each round.
pub(crate) const FIRST_SLEEP_NS: u32 = 32;
/// Longest sleep between polls, in nanoseconds (libcu++ waits grow to far longer and
/// pay for it in wake-up latency).
pub(crate) const MAX_SLEEP_NS: u32 = 1024;

pub(crate) fn nanosleep(ns: u32) {
    // SAFETY: `nanosleep` only suspends the thread; it touches no memory.
    unsafe { asm!("nanosleep.u32 {ns};", ns = in(reg32) ns, options(nomem, nostack)) };
}

pub(crate) fn backoff_ns(round: u32) -> u32 {
    let shift = round.saturating_sub(POLL_ROUNDS).min(16);
    (FIRST_SLEEP_NS << shift).min(MAX_SLEEP_NS)
}

/// PTX `cas` has one ordering: the stronger of the success and failure orderings.
pub(crate) fn cas_order(success: Ordering, failure: Ordering) -> Ordering {
    match (success, failure) {
        (Ordering::SeqCst, _) | (_, Ordering::SeqCst) => Ordering::SeqCst,
        (Ordering::Release, Ordering::Acquire) => Ordering::AcqRel,
        (Ordering::Relaxed, Ordering::Acquire) => Ordering::Acquire,
        (success, _) => success,
    }
}

// SAFETY: every atomic is the `PtxScope` table's single PTX instruction at scope `S`
// (or wider) with at least the requested ordering; `park` returns when the word
// differs from `expected`, at the deadline, or after one backoff sleep (spuriously);
// wakes are no-ops because parked threads poll (hence `PARK_NEEDS_WAKE = false`); a
// device panic traps the kernel (hence `UNCHECKED_FAST_PATHS`);
// `combine` groups only lanes that execute it together on the same word (summing their
// `n` exactly, or leaving each alone where a sum could overflow), passing them through `bar.warp.sync` (which orders their memory accesses) before
// the leader's update, and `broadcast` syncs them again after it; thread ids are linear
// the launch's `%gridid` beside the linear grid index (see `thread_identity`), so
// threads of two grids that run at the same time differ too.
unsafe impl<S: PtxScope> Backend<S> for Gpu {
    type Instant = GlobalTime;
    /// sm_90's `mbarrier` (a `Barrier<Block>` in shared memory); none before (the
    /// waits it needs, `mbarrier.try_wait`, are sm_90).
    #[cfg(target_feature = "sm_90")]
    type HardwareBarrier = crate::ptx::mbarrier::Mbarrier<S>;
    #[cfg(not(target_feature = "sm_90"))]
    type HardwareBarrier = sync_shared::barrier::NoHardwareBarrier;

    #[inline(always)]
    fn load(word: &Word, order: Ordering) -> u32 {
        scope_check::check::<S>(word.as_ptr());
        // SAFETY: `word` is a live, aligned atomic word.
        unsafe { S::load_u32(word.as_ptr(), order) }
    }
    #[inline(always)]
    fn store(word: &Word, value: u32, order: Ordering) {
        scope_check::check::<S>(word.as_ptr());
        // SAFETY: as above.
        unsafe { S::store_u32(word.as_ptr(), value, order) }
    }
    #[inline(always)]
    fn swap(word: &Word, value: u32, order: Ordering) -> u32 {
        scope_check::check::<S>(word.as_ptr());
        // SAFETY: as above.
        unsafe { S::swap_u32(word.as_ptr(), value, order) }
    }
    #[inline(always)]
    fn compare_exchange(
        word: &Word,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u32, u32> {
        scope_check::check::<S>(word.as_ptr());
        // SAFETY: as above.
        let previous =
            unsafe { S::cas_u32(word.as_ptr(), current, new, cas_order(success, failure)) };
        if previous == current {
            Ok(previous)
        } else {
            Err(previous)
        }
    }
    #[inline(always)]
    fn fetch_add(word: &Word, value: u32, order: Ordering) -> u32 {
        scope_check::check::<S>(word.as_ptr());
        // SAFETY: as above.
        unsafe { S::fetch_add_u32(word.as_ptr(), value, order) }
    }
    #[inline(always)]
    fn fetch_sub(word: &Word, value: u32, order: Ordering) -> u32 {
        scope_check::check::<S>(word.as_ptr());
        // SAFETY: as above.
        unsafe { S::fetch_sub_u32(word.as_ptr(), value, order) }
    }
    #[inline(always)]
    fn fence(order: Ordering) {
        S::fence(order)
    }
    #[inline(always)]
    fn load_cached(word: &Word) -> u32 {
        // A block-scope load may be served by the SM's L1, away from the word's
        // (possibly contended) L2 line. Not scope-checked: it is allowed at any scope.
        // SAFETY: `word` is a live, aligned atomic word.
        unsafe { <sync_shared::Block as PtxScope>::load_u32(word.as_ptr(), Ordering::Relaxed) }
    }

    #[inline]
    fn now() -> GlobalTime {
        let ns: u64;
        // SAFETY: reading a special register touches no memory.
        unsafe { asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) ns, options(nomem, nostack)) };
        GlobalTime(ns)
    }
    fn after(from: GlobalTime, duration: Duration) -> GlobalTime {
        let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        GlobalTime(from.0.saturating_add(ns))
    }

    #[inline]
    fn relax(round: &mut u32) -> bool {
        if *round >= POLL_ROUNDS {
            return false;
        }
        *round += 1;
        true
    }
    fn yield_now() {
        nanosleep(FIRST_SLEEP_NS);
    }
    fn park(word: &Word, expected: u32, deadline: Option<GlobalTime>) {
        let mut round = POLL_ROUNDS;
        while <Self as Backend<S>>::load(word, Ordering::Relaxed) == expected {
            if let Some(deadline) = deadline {
                if <Self as Backend<S>>::now() >= deadline {
                    return;
                }
            }
            nanosleep(backoff_ns(round));
            round = round.saturating_add(1);
        }
    }
    fn park_unless(
        word: &Word,
        expected: u32,
        stop: &Word,
        stop_expected: u32,
        deadline: Option<GlobalTime>,
    ) -> bool {
        // The same polling as `park`, with the stop word read beside the word: a
        // stop request ends the sleep by itself, so no stop callback and no recheck
        // slices are needed.
        let mut round = POLL_ROUNDS;
        while <Self as Backend<S>>::load(word, Ordering::Relaxed) == expected
            && <Self as Backend<S>>::load(stop, Ordering::Relaxed) == stop_expected
        {
            if let Some(deadline) = deadline {
                if <Self as Backend<S>>::now() >= deadline {
                    break;
                }
            }
            nanosleep(backoff_ns(round));
            round = round.saturating_add(1);
        }
        true
    }
    fn wake_one(_word: &Word) {}
    fn wake_all(_word: &Word) {}

    const PARK_NEEDS_WAKE: bool = false;
    const UNCHECKED_FAST_PATHS: bool = true;
    const GUESSING_CAS_IS_FREE: bool = true;
    const STACKS_ARE_SHARED: bool = false;

    #[inline(always)]
    fn combine(word: &Word, n: u32) -> Combined {
        match warp::group_counts(word.as_ptr().cast(), n) {
            Some((members, total, before)) => Combined {
                total,
                before,
                members,
            },
            None => Combined::alone(n),
        }
    }

    /// The release build, at device and system scope: a whole warp's arrival and wait
    /// in PTX (`warp_barrier_phase`). The checked build keeps the generic path, whose
    /// broken preconditions print why.
    #[inline(always)]
    fn barrier_phase_together(state: &Word, expected: &Word) -> bool {
        #[cfg(not(debug_assertions))]
        if warp_barrier_phase::serves::<S>() {
            // SAFETY: a served scope; the caller passes a barrier's words in the
            // portable form without completion function (the trait's contract).
            unsafe { warp_barrier_phase::warp_phase::<S>(state.as_ptr(), expected.as_ptr()) };
            return true;
        }
        let _ = (state, expected);
        false
    }

    /// The release build, at block, device and system scope: a whole warp's
    /// count-down and wait in PTX (`warp_latch_phase`). The checked build keeps the
    /// generic path, whose broken preconditions print why.
    #[inline(always)]
    fn latch_phase_together(state: &Word, n: u32) -> bool {
        #[cfg(not(debug_assertions))]
        if warp_latch_phase::serves::<S>() {
            // SAFETY: a served scope; the caller passes a latch's word.
            unsafe { warp_latch_phase::latch_phase::<S>(state.as_ptr(), n) };
            return true;
        }
        let _ = (state, n);
        false
    }

    #[inline(always)]
    fn broadcast(group: &Combined, value: u64) -> u64 {
        let shared = warp::broadcast_u64(group.members, value, group.members.trailing_zeros());
        warp::sync(group.members);
        shared
    }

    fn thread_id() -> usize {
        thread_identity()
    }
}

/// Bits of [`thread_identity`] that hold the linear index within the grid plus one:
/// the index is 32-bit, so the sum needs 33.
const INDEX_BITS: u32 = 33;

/// The calling thread's identity: the launch's `%gridid` (a number the driver gives
/// each launch of a context, in launch order) in the high 31 bits, the linear index
/// within the grid plus one in the low 33. The plus one keeps 0 free, as
/// [`Backend::thread_id`] asks. The index alone would not do: two kernels running at
/// the same time have threads with equal indices, and a stop source in device memory
/// may be used by both (a thread dropping its own registration while a thread of the
/// other grid with the same index runs that callback would not wait for it). Two
/// threads alive at the same time share an identity only if their grids were launched
/// a multiple of 2^31 launches apart and both still run, or if their grid has more
/// than 2^32 threads (the index wraps, as [`global_thread_index`] does).
fn thread_identity() -> usize {
    let index = u64::from(global_thread_index()) + 1;
    ((launch_id() << INDEX_BITS) | index) as usize
}
