//! [`Barrier`]: a reusable phase barrier with an optional completion function.
//!
//! # Algorithm
//!
//! One word holds the phase parity, a "sleepers" bit and the arrivals the current
//! phase still expects; a second word holds the count the next phase will expect
//! (lowered by `arrive_and_drop`). An arrival is a compare-and-swap that subtracts from
//! the remaining count, so a broken precondition is caught before the word changes.
//! The arrival that brings the count to zero runs the completion function, then swaps
//! in the flipped parity and the next phase's count in one store, and wakes sleepers if
//! the bit was set. Arrivals that find the count at zero (the completion is running)
//! wait for that swap, so early arrivals for the next phase are counted in it.
//! Arrivals that a backend can combine (a GPU warp's lanes arriving together) take
//! their total in one compare-and-swap.
//!
//! # Memory ordering
//!
//! Arrivals are acquire-release read-modify-writes on the state word, so they form one
//! release sequence: the completing arrival acquires every earlier arrival's writes,
//! runs the completion, and its release swap publishes all of it. Waiters load the
//! state with acquire ordering. So everything a thread wrote before `arrive` happens
//! before the completion function, which happens before any `wait` of that phase
//! returns (C++ [thread.barrier.class]).

use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::time::Duration;

use crate::backend::{Backend, Word};
use crate::error::{violated, Interrupted, Stopped, UsageError, UsageErrorKind};
use crate::message::ConstMessage;
use crate::primitive::{const_fn, Ordering};
use crate::scope::Scope;
use crate::stop_token::StopToken;
use crate::update::combined_take;
use crate::wait::{announce_with_flag, wait_until, Limits, Spin};

/// Parity of the current phase; flips when a phase completes.
const PARITY: u32 = 1 << 31;
/// At least one thread may be parked on the state word.
const SLEEPERS: u32 = 1 << 30;
/// Arrivals the current phase still expects.
const REMAINING: u32 = SLEEPERS - 1;

/// What runs once per phase, after the last arrival and before any waiter is released.
pub trait Completion {
    /// `true` only for [`NoCompletion`]: lets a barrier skip the completion step.
    const IS_NONE: bool = false;

    /// Runs the completion step.
    fn on_phase_complete(&mut self);
}

/// No completion step (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCompletion;

impl Completion for NoCompletion {
    const IS_NONE: bool = true;

    #[inline]
    fn on_phase_complete(&mut self) {}
}

impl<F: FnMut()> Completion for F {
    #[inline]
    fn on_phase_complete(&mut self) {
        self()
    }
}

/// A reusable barrier for a set of threads inside scope `S`.
///
/// Each phase expects a number of arrivals. When the last one arrives, the completion
/// function runs once, the phase ends, and every thread waiting on a token of that
/// phase is released. `arrive_and_drop` also lowers the count of every later phase.
///
/// Counterpart: C++20 `std::barrier`, libcu++ `cuda::barrier<Scope>`.
///
/// # Examples
///
/// ```
/// use scoped_sync::Barrier;
///
/// let barrier = Barrier::new(3);
/// std::thread::scope(|s| {
///     for _ in 0..3 {
///         s.spawn(|| {
///             for _phase in 0..100 {
///                 barrier.arrive_and_wait();
///             }
///         });
///     }
/// });
/// ```
///
/// With a completion function, and split arrive/wait:
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use scoped_sync::Barrier;
///
/// let phases = AtomicU32::new(0);
/// let barrier = Barrier::with_completion(2, || {
///     phases.fetch_add(1, Ordering::Relaxed);
/// });
/// std::thread::scope(|s| {
///     s.spawn(|| barrier.arrive_and_wait());
///     let token = barrier.arrive(1);
///     // ... independent work here overlaps the other thread's arrival ...
///     barrier.wait(token);
/// });
/// assert_eq!(phases.load(Ordering::Relaxed), 1);
/// ```
#[repr(C)]
pub struct Barrier<S: Scope, B: Backend<S>, F: Completion = NoCompletion> {
    /// `PARITY | SLEEPERS | remaining`.
    state: Word,
    /// Arrivals each later phase expects.
    expected: Word,
    /// Run only by the completing arrival, which the state word makes exclusive.
    completion: UnsafeCell<F>,
    _backend: PhantomData<(S, fn() -> B)>,
}

// SAFETY: the completion function is only called by the one thread whose arrival
// completed the phase, and the acquire-release arrivals order those calls.
unsafe impl<S: Scope, B: Backend<S>, F: Completion + Send> Sync for Barrier<S, B, F> {}

/// What [`Barrier::arrive`] returns and [`Barrier::wait`] takes: the phase of the
/// arrival, as its parity.
#[must_use = "a token is needed to wait for the phase to complete"]
#[derive(Debug, PartialEq, Eq)]
pub struct ArrivalToken {
    parity: bool,
}

impl ArrivalToken {
    /// The parity of the phase this arrival belongs to: [`Barrier::wait_parity`]
    /// with this value waits for the same phase.
    pub fn parity(&self) -> bool {
        self.parity
    }
}

impl<S: Scope, B: Backend<S>> Barrier<S, B> {
    const_fn! {
        /// A barrier whose phases expect `expected` arrivals.
        ///
        /// # Panics
        ///
        /// If `expected > Self::max()`.
        #[track_caller]
        pub fn new(expected: u32) -> Self {
            Self::with_completion(expected, NoCompletion)
        }
    }
}

impl<S: Scope, B: Backend<S>, F: Completion> Barrier<S, B, F> {
    const_fn! {
        /// A barrier whose phases expect `expected` arrivals and run `completion` when
        /// they complete.
        ///
        /// The completion runs in the thread whose arrival completes the phase. If it
        /// panics, the process aborts (C++ calls `std::terminate`): the phase could
        /// never complete, and every waiter would block for ever.
        ///
        /// # Panics
        ///
        /// If `expected > Self::max()`.
        #[track_caller]
        pub fn with_completion(expected: u32, completion: F) -> Self {
            if expected > REMAINING {
                ConstMessage::new()
                    .text("Barrier::new: expected = ")
                    .number(expected as u64)
                    .text(" exceeds Barrier::max() = ")
                    .number(REMAINING as u64)
                    .panic();
            }
            Self {
                state: Word::new(expected),
                expected: Word::new(expected),
                completion: UnsafeCell::new(completion),
                _backend: PhantomData,
            }
        }
    }

    /// Like [`with_completion`](Self::with_completion), but returns an error instead of
    /// panicking.
    pub fn try_with_completion(expected: u32, completion: F) -> Result<Self, UsageError> {
        if expected > REMAINING {
            return Err(UsageError::new(
                "Barrier::new",
                UsageErrorKind::ExceedsMax {
                    value: expected,
                    max: REMAINING,
                },
            ));
        }
        Ok(Self::with_completion(expected, completion))
    }

    /// The largest expected count a barrier supports: 2³⁰ − 1.
    pub const fn max() -> u32 {
        REMAINING
    }

    /// Arrives `n` times in the current phase; returns the token to wait on.
    ///
    /// Release-acquire: writes before the arrival are visible to the completion
    /// function and to every thread whose wait on this phase returns.
    ///
    /// # Panics
    ///
    /// If `n == 0` or `n` exceeds the arrivals the current phase still expects. The
    /// barrier is left unchanged, except on backends with
    /// [`UNCHECKED_FAST_PATHS`](Backend::UNCHECKED_FAST_PATHS) (the GPU, where the
    /// panic traps the kernel), which also count an arrival while the completion step
    /// runs as one too many.
    #[inline]
    #[track_caller]
    pub fn arrive(&self, n: u32) -> ArrivalToken {
        let arrival = if B::UNCHECKED_FAST_PATHS {
            self.arrive_unchecked(n)
        } else {
            self.try_arrive(n)
        };
        match arrival {
            Ok(token) => token,
            Err(error) => violated(error),
        }
    }

    /// `arrive` as one `fetch_sub` (see `Backend::UNCHECKED_FAST_PATHS`): a broken
    /// precondition is found after the word changed, and the caller panics.
    #[inline]
    fn arrive_unchecked(&self, n: u32) -> Result<ArrivalToken, UsageError> {
        const OPERATION: &str = "Barrier::arrive";
        if n == 0 {
            return Err(UsageError::new(OPERATION, UsageErrorKind::ZeroArrival));
        }
        let before = combined_take::<S, B, _>(&self.state, n, |n| {
            let before = B::fetch_sub(&self.state, n, Ordering::Release);
            let remaining = before & REMAINING;
            if n > remaining {
                violated(UsageError::new(
                    OPERATION,
                    UsageErrorKind::ArrivalExceedsRemaining { n, remaining },
                ));
            }
            Ok::<u32, UsageError>(before)
        })?;
        if before & REMAINING == n {
            self.complete_phase(before);
        }
        Ok(ArrivalToken {
            parity: before & PARITY != 0,
        })
    }

    /// Like [`arrive`](Self::arrive), but returns an error instead of panicking.
    #[inline]
    pub fn try_arrive(&self, n: u32) -> Result<ArrivalToken, UsageError> {
        self.arrive_as("Barrier::arrive", n)
    }

    fn arrive_as(&self, operation: &'static str, n: u32) -> Result<ArrivalToken, UsageError> {
        if n == 0 {
            return Err(UsageError::new(operation, UsageErrorKind::ZeroArrival));
        }
        let before = combined_take::<S, B, _>(&self.state, n, |n| self.take(operation, n))?;
        if before & REMAINING == n {
            self.complete_phase(before);
        }
        Ok(ArrivalToken {
            parity: before & PARITY != 0,
        })
    }

    /// Takes `n` arrivals from the phase collecting them; returns the state before.
    fn take(&self, operation: &'static str, n: u32) -> Result<u32, UsageError> {
        let mut current = B::load(&self.state, Ordering::Relaxed);
        loop {
            let remaining = current & REMAINING;
            if remaining == 0 {
                current = self.await_next_phase(operation, n, current)?;
                continue;
            }
            if n > remaining {
                return Err(UsageError::new(
                    operation,
                    UsageErrorKind::ArrivalExceedsRemaining { n, remaining },
                ));
            }
            match B::compare_exchange(
                &self.state,
                current,
                current - n,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(current),
                Err(actual) => current = actual,
            }
        }
    }

    /// The completion step of a phase is running (`remaining == 0` in `current`):
    /// waits for the next phase to start and returns its state. A barrier that expects
    /// no arrivals at all (every thread dropped, or `new(0)`) refuses the `n` arrivals.
    #[cold]
    fn await_next_phase(
        &self,
        operation: &'static str,
        n: u32,
        current: u32,
    ) -> Result<u32, UsageError> {
        if B::load(&self.expected, Ordering::Relaxed) == 0 {
            return Err(UsageError::new(
                operation,
                UsageErrorKind::ArrivalExceedsRemaining { n, remaining: 0 },
            ));
        }
        let phase = current & PARITY;
        let started = wait_until::<S, B>(
            &self.state,
            Ordering::Relaxed,
            &Limits::NONE,
            Spin::First,
            |value| value & PARITY != phase,
            |value| self.announce_sleeper(value),
        );
        Ok(started.unwrap_or(current))
    }

    /// Runs by the arrival that brought `remaining` to zero; `before` is the state just
    /// before that arrival.
    fn complete_phase(&self, before: u32) {
        // Arrivals release (their read-modify-writes of `state` form one chain); this
        // fence, after the one that saw every other arrival, acquires them all for the
        // completion function and, through the release swap below, for every waiter.
        // (Acquire on every arrival would cost each GPU arrival an L1 invalidation.)
        B::fence(Ordering::Acquire);
        let abort_if_it_panics = CompletionPanicked;
        // SAFETY: only the arrival that took `remaining` to zero gets here, and no
        // arrival can start the next phase until the swap below.
        unsafe { (*self.completion.get()).on_phase_complete() };
        core::mem::forget(abort_if_it_panics);
        let next_expected = B::load(&self.expected, Ordering::Relaxed);
        let next = (!before & PARITY) | next_expected;
        let previous = B::swap(&self.state, next, Ordering::Release);
        if previous & SLEEPERS != 0 {
            B::wake_all(&self.state);
        }
    }

    /// Sets the sleepers bit on `value`; returns the value to park on, or `None` if the
    /// state changed meanwhile.
    fn announce_sleeper(&self, value: u32) -> Option<u32> {
        announce_with_flag::<S, B>(&self.state, value, SLEEPERS)
    }

    fn wait_phase(&self, parity: bool, limits: &Limits<'_, S, B>) -> Result<(), Interrupted> {
        let phase = if parity { PARITY } else { 0 };
        wait_until(
            &self.state,
            Ordering::Acquire,
            limits,
            Spin::First,
            |value| value & PARITY != phase,
            |value| self.announce_sleeper(value),
        )
        .map(drop)
    }

    /// Blocks until the phase of `token` completes.
    ///
    /// Acquire: everything written before every arrival of that phase, and by the
    /// completion function, is visible afterwards.
    #[inline]
    pub fn wait(&self, token: ArrivalToken) {
        let _ = self.wait_phase(token.parity, &Limits::NONE);
    }

    /// Whether the phase of `token` has completed (acquire when it returns `true`).
    #[inline]
    pub fn try_wait(&self, token: &ArrivalToken) -> bool {
        !self.phase_pending(token.parity)
    }

    /// Waits for the phase of `token` at most `timeout`; `true` if it completed.
    pub fn try_wait_for(&self, token: &ArrivalToken, timeout: Duration) -> bool {
        self.wait_phase(token.parity, &Limits::within(timeout))
            .is_ok()
    }

    /// Waits for the phase of `token` until `deadline`; `true` if it completed.
    pub fn try_wait_until(&self, token: &ArrivalToken, deadline: B::Instant) -> bool {
        self.wait_phase(token.parity, &Limits::until(deadline))
            .is_ok()
    }

    /// Waits for the phase of `token`, or until `stop` is requested.
    pub fn wait_stoppable(
        &self,
        token: ArrivalToken,
        stop: StopToken<'_, S, B>,
    ) -> Result<(), Stopped> {
        self.wait_phase(token.parity, &Limits::stop(stop))
            .map_err(|_| Stopped)
    }

    /// Blocks until the phase with parity `parity` completes (that is, until the
    /// current phase's parity differs from `parity`).
    ///
    /// Counterpart: libcu++ `barrier_wait_parity` / PTX `mbarrier.try_wait.parity`.
    pub fn wait_parity(&self, parity: bool) {
        let _ = self.wait_phase(parity, &Limits::NONE);
    }

    /// Whether the phase with parity `parity` has completed.
    pub fn try_wait_parity(&self, parity: bool) -> bool {
        !self.phase_pending(parity)
    }

    #[inline]
    fn phase_pending(&self, parity: bool) -> bool {
        let phase = if parity { PARITY } else { 0 };
        B::load(&self.state, Ordering::Acquire) & PARITY == phase
    }

    /// Arrives once and waits for the phase to complete.
    #[inline]
    #[track_caller]
    pub fn arrive_and_wait(&self) {
        let token = self.arrive(1);
        self.wait(token);
    }

    /// Arrives once and waits for the phase, or until `stop` is requested.
    #[track_caller]
    pub fn arrive_and_wait_stoppable(&self, stop: StopToken<'_, S, B>) -> Result<(), Stopped> {
        let token = self.arrive(1);
        self.wait_stoppable(token, stop)
    }

    /// Arrives once in the current phase and lowers the expected count of every later
    /// phase by one (the thread leaves the barrier).
    ///
    /// # Panics
    ///
    /// If the current phase expects no more arrivals. The barrier is left unchanged.
    #[track_caller]
    pub fn arrive_and_drop(&self) {
        if let Err(error) = self.try_arrive_and_drop() {
            violated(error)
        }
    }

    /// Like [`arrive_and_drop`](Self::arrive_and_drop), but returns an error instead of
    /// panicking.
    pub fn try_arrive_and_drop(&self) -> Result<(), UsageError> {
        const OPERATION: &str = "Barrier::arrive_and_drop";
        // Enter a phase that is collecting arrivals first: a drop during the previous
        // phase's completion step would otherwise lower the count of our own phase.
        // Once `remaining > 0`, the phase cannot complete without this thread.
        let mut current = B::load(&self.state, Ordering::Relaxed);
        while current & REMAINING == 0 {
            current = self.await_next_phase(OPERATION, 1, current)?;
        }
        let previous = B::fetch_sub(&self.expected, 1, Ordering::Relaxed);
        if previous == 0 {
            B::fetch_add(&self.expected, 1, Ordering::Relaxed);
            return Err(UsageError::new(
                OPERATION,
                UsageErrorKind::ArrivalExceedsRemaining { n: 1, remaining: 0 },
            ));
        }
        // The arrival's release orders the decrement before the completion reads it.
        match self.arrive_as(OPERATION, 1) {
            Ok(_token) => Ok(()),
            Err(error) => {
                B::fetch_add(&self.expected, 1, Ordering::Relaxed);
                Err(error)
            }
        }
    }
}

/// Armed while the completion function runs. If it panics, the phase can never
/// complete and every waiter would hang; like C++ (`std::terminate`), abort instead:
/// a panic while unwinding aborts the process, with this message.
struct CompletionPanicked;

impl Drop for CompletionPanicked {
    fn drop(&mut self) {
        panic!("Barrier: the completion function panicked, so the phase can never complete; aborting rather than leaving every waiter blocked");
    }
}

impl<S: Scope, B: Backend<S>, F: Completion> fmt::Debug for Barrier<S, B, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = B::load(&self.state, Ordering::Relaxed);
        f.debug_struct("Barrier")
            .field("scope", &S::NAME)
            .field("parity", &(state & PARITY != 0))
            .field("remaining", &(state & REMAINING))
            .field("expected", &B::load(&self.expected, Ordering::Relaxed))
            .finish()
    }
}
