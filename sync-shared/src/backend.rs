//! The backend contract: scoped atomics on 32-bit words, fences, a clock, and a way to
//! sleep on a word until another thread changes it.
//!
//! Every algorithm in this crate is written once against [`Backend`]. `sync-host`
//! implements it with `core::sync::atomic` and futexes (at [`System`](crate::System)
//! scope only); `sync-device` implements it with inline PTX at every scope. Backends
//! are zero-sized, so an object's bytes are the same whichever backend it is typed with.

use core::fmt::Debug;
use core::time::Duration;

use crate::primitive::{AtomicU32, Ordering};
use crate::scope::Scope;

/// The atomic word every primitive is built from: a naturally aligned `u32`.
pub type Word = AtomicU32;

/// Atomics, fences, clock and parking for scope `S`.
///
/// A backend implements `Backend<S>` only for the scopes its threads can use: the host
/// backend only for `System`, so `Barrier<Block, Host>` has no methods.
///
/// # Safety
///
/// The algorithms rely on these duties; an implementation that breaks one breaks the
/// synchronization of every primitive built on it:
///
/// - Each atomic method performs one single-copy-atomic access of the whole word, at
///   scope `S` or wider, with *at least* the given memory ordering (as defined by the C++
///   memory model, and by the PTX memory model for scoped operations). Read-modify-write
///   methods are atomic with respect to every other atomic method on the same word by a
///   thread inside `S`. `compare_exchange` is strong (no spurious failure).
/// - [`fence`](Backend::fence) is a fence of that ordering at scope `S` or wider.
/// - [`park`](Backend::park) returns only after one of: the word held a value other
///   than `expected` at some point after the call began, a `wake_*` call on the word,
///   the deadline passed, or a spurious wake-up. It must not return early for ever
///   (callers loop), and its comparison of the word with `expected` is atomic with
///   respect to wake-ups: a `wake_*` that follows a store changing the word, in the
///   store's thread, cannot be missed by a `park` whose comparison saw the old value.
/// - [`wake_one`](Backend::wake_one) wakes at least one parked thread if any is parked
///   on the word; [`wake_all`](Backend::wake_all) wakes every one. Either may be called
///   on an address whose object was freed meanwhile: the result may be spurious
///   wake-ups, never memory unsafety.
/// - [`thread_id`](Backend::thread_id) is never 0 and differs between threads alive at
///   the same time; a thread's id stays the same while it lives, and is not handed to
///   a later thread while the earlier one could still be inside a stop callback (ids
///   that are never reused satisfy this).
pub unsafe trait Backend<S: Scope>: 'static {
    /// A point in time of this backend's monotonic clock.
    type Instant: Copy + Ord + Debug;

    /// The hardware barrier a [`Barrier`](crate::Barrier) at scope `S` becomes where
    /// the hardware serves its place ([`NoHardwareBarrier`](crate::barrier::NoHardwareBarrier)
    /// for none).
    type HardwareBarrier: crate::barrier::HardwareBarrier;

    /// Atomic load.
    fn load(word: &Word, order: Ordering) -> u32;
    /// Atomic store.
    fn store(word: &Word, value: u32, order: Ordering);
    /// Atomic swap; returns the previous value.
    fn swap(word: &Word, value: u32, order: Ordering) -> u32;
    /// Strong compare-and-exchange; `Ok(previous)` when the word held `current`.
    fn compare_exchange(
        word: &Word,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u32, u32>;
    /// Atomic wrapping add; returns the previous value.
    fn fetch_add(word: &Word, value: u32, order: Ordering) -> u32;
    /// Atomic wrapping subtract; returns the previous value.
    fn fetch_sub(word: &Word, value: u32, order: Ordering) -> u32;
    /// Memory fence at scope `S`.
    fn fence(order: Ordering);

    /// A relaxed load that may be answered by a cache near the calling thread (on the
    /// GPU, the SM's L1: a block-scope load), for words that rarely change, where the
    /// caller checks by other means whether the value can be trusted. It reads a value
    /// the word held at or after the latest write that happens before the call; it
    /// need not be the latest value.
    #[inline(always)]
    fn load_cached(word: &Word) -> u32 {
        Self::load(word, Ordering::Relaxed)
    }

    /// The current time.
    fn now() -> Self::Instant;
    /// `from + duration`, saturating at the clock's far future.
    fn after(from: Self::Instant, duration: Duration) -> Self::Instant;

    /// One step of the spin phase of a wait. Returns `false` when spinning should stop
    /// and the caller should [`park`](Backend::park). `round` starts at 0.
    fn relax(round: &mut u32) -> bool;
    /// [`relax`](Backend::relax) for a wait on other threads' arrivals (a latch's or a
    /// barrier's): those threads are running towards the wait, so a backend may stay
    /// runnable longer before it parks. The default is `relax`.
    #[inline(always)]
    fn relax_for_arrivals(round: &mut u32) -> bool {
        Self::relax(round)
    }
    /// Gives the processor to other threads for a moment (spin locks use it).
    fn yield_now();
    /// Sleeps while `word == expected`, at most until `deadline`. See the trait's
    /// safety section for when it may return.
    fn park(word: &Word, expected: u32, deadline: Option<Self::Instant>);
    /// Sleeps while `word == expected` *and* `stop == stop_expected`, at most until
    /// `deadline`, and returns `true`; or returns `false` at once, having slept not at
    /// all, where this backend cannot compare the second word atomically with the
    /// sleep (the caller then falls back to sleeping in short slices).
    ///
    /// A stoppable wait passes the word of its stop source as `stop`: the stop request
    /// changes that word and then wakes the waiter through `word` (a stop callback
    /// calls [`wake_all`](Backend::wake_all) on it). Where the comparison of both words
    /// is atomic with respect to that wake-up, a stop can never slip in between the
    /// waiter's last look at the token and its sleep, so the sleep needs no timeout:
    /// an idle stoppable waiter never wakes. The safety section's rules for
    /// [`park`](Backend::park) apply to both words: the comparison with `stop_expected`
    /// is atomic with respect to a `wake_*` of `word` that follows a store changing
    /// `stop`, in the store's thread.
    ///
    /// The default cannot, and returns `false`.
    fn park_unless(
        word: &Word,
        expected: u32,
        stop: &Word,
        stop_expected: u32,
        deadline: Option<Self::Instant>,
    ) -> bool {
        let _ = (word, expected, stop, stop_expected, deadline);
        false
    }
    /// Wakes one thread parked on `word`.
    fn wake_one(word: &Word);
    /// Wakes every thread parked on `word`.
    fn wake_all(word: &Word);

    /// An identifier of the calling thread: never 0, and never the id of another
    /// thread that is alive (or was alive while this one could observe it). See the
    /// safety section.
    fn thread_id() -> usize;

    /// Whether a parked thread needs a `wake_*` call to notice a change of its word.
    /// `false` for backends whose `park` polls the word (the GPU): the algorithms then
    /// skip the bookkeeping that exists only to decide whether to wake anyone.
    const PARK_NEEDS_WAKE: bool = true;

    /// Whether the panicking forms of arrivals, count-downs and releases use one
    /// unconditional `fetch_sub`/`fetch_add` and check the precondition on the value it
    /// returns, instead of a compare-and-swap loop that checks before changing the word.
    /// `true` where a contended compare-and-swap costs a memory round trip per retry
    /// (the GPU: 132 blocks arriving at one word would retry for tens of microseconds)
    /// and where a broken precondition ends the program anyway (a device panic traps
    /// the kernel), so the object it changed is never used again. The `try_` forms
    /// always check first and leave the object unchanged.
    const UNCHECKED_FAST_PATHS: bool = false;

    /// Whether a compare-and-swap that fails costs no more than a load: both travel to
    /// where the word lives and back (a GPU's L2), and a failed one returns the value
    /// like a load. A conditional update can then start with a compare-and-swap on a
    /// likely value instead of loading first, which saves a round trip when the guess
    /// is right and costs nothing when it is wrong. `false` where a failed
    /// compare-and-swap takes the cache line away from other readers (CPUs).
    const GUESSING_CAS_IS_FREE: bool = false;

    /// Whether other threads can reach a thread's stack variables through a pointer.
    /// CPU threads can. A GPU thread's stack is local memory: the same address names
    /// each thread's own copy, so a queue node there is invisible to the releaser, and
    /// [`FairSemaphore`](crate::FairSemaphore) takes a caller's
    /// [`WaiterSlot`](crate::WaiterSlot) instead (its plain blocking methods do not
    /// compile for such a backend).
    const STACKS_ARE_SHARED: bool = true;

    /// Groups the calling thread with the threads that call `combine` on the same
    /// `word` at the same moment and in lockstep (a GPU warp's converged lanes), each
    /// with its own `n`, so that one read-modify-write of the group's total can stand
    /// for all of them. A backend that groups threads orders every member's earlier memory
    /// accesses before the leader's read-modify-write, as a barrier among them would.
    /// The default groups nobody: every thread is alone.
    #[inline(always)]
    fn combine(_word: &Word, n: u32) -> Combined {
        Combined::alone(n)
    }

    /// One `arrive_and_wait` of a [`Barrier`](crate::Barrier) in its portable form
    /// without completion function (`state` and `expected` are its words, encoded as
    /// [`barrier::encoding`](crate::barrier::encoding) says), done by the backend's own
    /// instructions for a group of threads that arrive together (the GPU: a whole warp
    /// on one barrier, in PTX). Returns `true` if it arrived and waited for the caller;
    /// `false` (the default) leaves the caller to the generic arrival and wait. An
    /// implementation follows the barrier's unchecked arrival step for step, and panics
    /// (or traps) where that would.
    #[inline(always)]
    fn barrier_phase_together(_state: &Word, _expected: &Word) -> bool {
        false
    }

    /// One `arrive_and_wait(n)` of a [`Latch`](crate::Latch) whose word is `state`
    /// ([`latch::COUNT`](crate::latch::COUNT) holds the counter), done by the
    /// backend's own instructions for threads that arrive together (the GPU: a whole
    /// warp on one latch with one `n`, in PTX). `true` if it counted down and waited;
    /// `false` (the default) leaves the caller to the generic count-down and wait. Only
    /// called where [`UNCHECKED_FAST_PATHS`](Backend::UNCHECKED_FAST_PATHS) holds: a
    /// count-down past zero panics (traps) after the word changed.
    #[inline(always)]
    fn latch_phase_together(_state: &Word, _n: u32) -> bool {
        false
    }

    /// Every member of `group` gets the value its leader passes (the other members'
    /// arguments are ignored), with the members' memory accesses ordered around it as by
    /// a barrier among them. Only called by every member of a group of more than one.
    #[inline(always)]
    fn broadcast(_group: &Combined, value: u64) -> u64 {
        value
    }
}

/// A group of threads that [`Backend::combine`] formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Combined {
    /// The sum of the members' `n`.
    pub total: u32,
    /// The sum of the `n` of the members ordered before this thread; 0 for the leader.
    pub before: u32,
    /// Backend data naming the members (a lane mask on the GPU).
    pub members: u32,
}

impl Combined {
    /// A group of one thread.
    #[inline(always)]
    pub const fn alone(n: u32) -> Self {
        Self {
            total: n,
            before: 0,
            members: 0,
        }
    }

    /// Whether the group is the calling thread alone.
    #[inline(always)]
    pub const fn is_alone(&self) -> bool {
        self.before == 0 && self.members.count_ones() <= 1
    }
}
