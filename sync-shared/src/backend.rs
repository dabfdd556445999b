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
/// - [`thread_id`](Backend::thread_id) differs between threads alive at the same time.
pub unsafe trait Backend<S: Scope>: 'static {
    /// A point in time of this backend's monotonic clock.
    type Instant: Copy + Ord + Debug;

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

    /// The current time.
    fn now() -> Self::Instant;
    /// `from + duration`, saturating at the clock's far future.
    fn after(from: Self::Instant, duration: Duration) -> Self::Instant;

    /// One step of the spin phase of a wait. Returns `false` when spinning should stop
    /// and the caller should [`park`](Backend::park). `round` starts at 0.
    fn relax(round: &mut u32) -> bool;
    /// Gives the processor to other threads for a moment (spin locks use it).
    fn yield_now();
    /// Sleeps while `word == expected`, at most until `deadline`. See the trait's
    /// safety section for when it may return.
    fn park(word: &Word, expected: u32, deadline: Option<Self::Instant>);
    /// Wakes one thread parked on `word`.
    fn wake_one(word: &Word);
    /// Wakes every thread parked on `word`.
    fn wake_all(word: &Word);

    /// An identifier of the calling thread, distinct among live threads.
    fn thread_id() -> usize;
}
