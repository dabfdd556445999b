//! [`Latch`]: a single-use count-down.
//!
//! # Algorithm
//!
//! One word: a "sleepers" bit and the counter. `count_down` looks at the counter,
//! fails if it holds less than `n`, and otherwise subtracts with one `fetch_sub` (not
//! a compare-and-swap, which fails and retries under contention). Where others took
//! units between the look and the subtraction, the counter wraps below zero and reads
//! above `MAX` (2³⁰ − 1, [`Latch::max`]); the count-down sees so in the value before
//! its subtraction, adds its `n` back and looks again. A count-down that looks at a
//! wrapped counter waits until the wrapping one has added its `n` back. The
//! subtraction that reaches zero wakes every sleeper if the sleepers bit was set (it
//! leaves the bit: waiters test the count only). A waiter sets the bit with a
//! compare-and-swap before it parks, but never on a wrapped counter, whose top bits
//! belong to the wrap.
//!
//! The limit of this scheme: a wrapped count reads above `MAX` only while the
//! subtractions that wrapped it take together less than 2³¹ − `MAX` (about 2³⁰) below
//! zero. On the GPU, `count_down` and `arrive_and_wait` do not check at all (see
//! [`Backend::UNCHECKED_FAST_PATHS`]), and a backend may run a whole `arrive_and_wait`
//! in its own instructions ([`Backend::latch_phase_together`]: a whole warp's
//! count-down as one, in PTX).
//!
//! # Memory ordering
//!
//! `count_down` is a release operation and a wait that returns has loaded zero with
//! acquire ordering, so everything written before any `count_down` is visible after
//! any `wait` returns (C++ [thread.latch.class]: `count_down` strongly happens before
//! the return of the waits it unblocks). The take-back of a failed count-down is a
//! read-modify-write, so it continues the release sequences of the subtractions
//! before it.

use core::convert::Infallible;
use core::fmt;
use core::marker::PhantomData;
use core::time::Duration;

use crate::backend::{Backend, Word};
use crate::error::{violated, Interrupted, Stopped, UsageError, UsageErrorKind};
use crate::message::ConstMessage;
use crate::primitive::{const_fn, Ordering};
use crate::scope::{Includes, Scope};
use crate::stop_token::StopToken;
use crate::update::combined_take;
use crate::wait::{announce_with_flag, wait_until, Limits, Spin, StopScope};

/// At least one thread may be parked on the word.
const SLEEPERS: u32 = 1 << 31;
/// The counter. (Public only for a backend that writes a count-down in its own
/// instructions, `Backend::latch_phase_together`; not a stable interface.)
#[doc(hidden)]
pub const COUNT: u32 = SLEEPERS - 1;
/// The largest count a latch holds. Counts above it appear only while a subtraction
/// that lost a race has wrapped the counter and not yet added its `n` back.
const MAX: u32 = (1 << 30) - 1;

/// A single-use barrier: threads count it down, and waits return once it reaches zero.
///
/// Counterpart: C++20 `std::latch`, libcu++ `cuda::latch<Scope>`.
///
/// # Examples
///
/// ```
/// use scoped_sync::Latch;
///
/// let workers_ready = Latch::new(4);
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| workers_ready.count_down(1));
///     }
///     workers_ready.wait();
/// });
/// assert!(workers_ready.try_wait());
/// ```
#[repr(C)]
pub struct Latch<S: Scope, B: Backend<S>> {
    /// `SLEEPERS | count`.
    state: Word,
    _backend: PhantomData<(S, fn() -> B)>,
}

impl<S: Scope, B: Backend<S>> Latch<S, B> {
    const_fn! {
        /// A latch with counter `expected`.
        ///
        /// # Panics
        ///
        /// If `expected > Self::max()`.
        #[track_caller]
        pub fn new(expected: u32) -> Self {
            if expected > MAX {
                ConstMessage::new()
                    .text("Latch::new: expected = ")
                    .number(expected as u64)
                    .text(" exceeds Latch::max() = ")
                    .number(MAX as u64)
                    .panic();
            }
            Self { state: Word::new(expected), _backend: PhantomData }
        }
    }

    /// Like [`new`](Self::new), but returns an error instead of panicking.
    pub fn try_new(expected: u32) -> Result<Self, UsageError> {
        if expected > MAX {
            return Err(UsageError::new(
                "Latch::new",
                UsageErrorKind::ExceedsMax {
                    value: expected,
                    max: MAX,
                },
            ));
        }
        Ok(Self::new(expected))
    }

    /// The largest counter a latch supports: 2³⁰ − 1.
    pub const fn max() -> u32 {
        MAX
    }

    /// Decrements the counter by `n` (release); at zero, releases every waiter.
    ///
    /// # Panics
    ///
    /// If `n` exceeds the counter. The latch is left as it was, except on backends with
    /// [`UNCHECKED_FAST_PATHS`](Backend::UNCHECKED_FAST_PATHS) (the GPU, where the panic
    /// traps the kernel). Where count-downs racing each other exceed the counter
    /// together, the one that fails may show others the counter low, or zero, for the
    /// moment it takes to add its `n` back.
    #[inline]
    #[track_caller]
    pub fn count_down(&self, n: u32) {
        if B::UNCHECKED_FAST_PATHS {
            self.count_down_unchecked("Latch::count_down", n);
        } else if let Err(error) = self.try_count_down(n) {
            violated(error)
        }
    }

    /// `count_down` as one `fetch_sub` (see `Backend::UNCHECKED_FAST_PATHS`).
    #[inline]
    fn count_down_unchecked(&self, operation: &'static str, n: u32) {
        let Ok(previous) = combined_take::<S, B, Infallible>(&self.state, n, |n| {
            let previous = B::fetch_sub(&self.state, n, Ordering::Release);
            let count = previous & COUNT;
            if n > count {
                violated(UsageError::new(
                    operation,
                    UsageErrorKind::CountDownExceedsCount { n, count },
                ));
            }
            Ok(previous)
        });
        // Reaching zero leaves the sleepers bit set here; waiters test the count only.
        if previous & COUNT == n && previous & SLEEPERS != 0 {
            B::wake_all(&self.state);
        }
    }

    /// Like [`count_down`](Self::count_down), but returns an error instead of panicking.
    #[inline]
    pub fn try_count_down(&self, n: u32) -> Result<(), UsageError> {
        self.count_down_as("Latch::count_down", n)
    }

    fn count_down_as(&self, operation: &'static str, n: u32) -> Result<(), UsageError> {
        let beyond = |count| {
            UsageError::new(
                operation,
                UsageErrorKind::CountDownExceedsCount { n, count },
            )
        };
        if n > MAX {
            return Err(beyond(B::load(&self.state, Ordering::Relaxed) & COUNT));
        }
        let previous =
            combined_take::<S, B, _>(&self.state, n, |n| self.subtract(n)).map_err(beyond)?;
        if previous & COUNT == n && previous & SLEEPERS != 0 {
            B::wake_all(&self.state);
        }
        Ok(())
    }

    /// Subtracts `n` from a counter that holds at least `n` and returns the word
    /// before, or returns the count that does not hold it. A wrapped counter is waited
    /// out (the subtraction that wrapped it adds its `n` back at once); a subtraction
    /// that wraps the counter, because others took units after the look, adds its `n`
    /// back and looks again.
    #[inline]
    fn subtract(&self, n: u32) -> Result<u32, u32> {
        let mut round = 0;
        loop {
            let count = B::load(&self.state, Ordering::Relaxed) & COUNT;
            if count > MAX {
                Self::wait_a_moment(&mut round);
                continue;
            }
            if n > count {
                return Err(count);
            }
            let previous = B::fetch_sub(&self.state, n, Ordering::Release);
            let count = previous & COUNT;
            if count <= MAX && n <= count {
                return Ok(previous);
            }
            self.take_back(n);
        }
    }

    #[cold]
    fn wait_a_moment(round: &mut u32) {
        if !B::relax(round) {
            B::yield_now();
        }
    }

    /// Adds back the `n` of a subtraction that failed. The counter may read zero here
    /// for a moment (count-downs that came in while it was wrapped are still to add
    /// theirs back): the sleepers are woken, to see what a spinning waiter sees.
    #[cold]
    fn take_back(&self, n: u32) {
        let wrapped = B::fetch_add(&self.state, n, Ordering::Relaxed);
        if wrapped.wrapping_add(n) & COUNT == 0 {
            B::wake_all(&self.state);
        }
    }

    /// The `announce` of the waits: sets the sleepers bit, but not on a wrapped
    /// counter (its top bits are the wrap's, and go with it); there it yields and
    /// has the wait look again.
    fn announce_sleeper(&self, value: u32) -> Option<u32> {
        if value & COUNT > MAX {
            B::yield_now();
            return None;
        }
        announce_with_flag::<S, B>(&self.state, value, SLEEPERS)
    }

    /// Whether the counter has reached zero (acquire when `true`).
    ///
    /// Unlike C++'s `try_wait`, this never fails spuriously.
    #[inline]
    pub fn try_wait(&self) -> bool {
        B::load(&self.state, Ordering::Acquire) & COUNT == 0
    }

    fn wait_limited<T: StopScope<B>>(
        &self,
        limits: &Limits<'_, S, B, T>,
    ) -> Result<(), Interrupted> {
        wait_until(
            &self.state,
            Ordering::Acquire,
            limits,
            Spin::ForArrivals,
            |value| value & COUNT == 0,
            |value| self.announce_sleeper(value),
        )
        .map(drop)
    }

    /// Blocks until the counter reaches zero (acquire).
    #[inline]
    pub fn wait(&self) {
        let _ = self.wait_limited(&Limits::NONE);
    }

    /// Waits at most `timeout` for zero; `true` if reached.
    pub fn try_wait_for(&self, timeout: Duration) -> bool {
        self.wait_limited(&Limits::within(timeout)).is_ok()
    }

    /// Waits until `deadline` for zero; `true` if reached.
    pub fn try_wait_until(&self, deadline: B::Instant) -> bool {
        self.wait_limited(&Limits::until(deadline)).is_ok()
    }

    /// Waits for zero, or until `stop` is requested. The token may be of a wider scope
    /// than the latch's: the wait reads it at the token's scope.
    pub fn wait_stoppable<T>(&self, stop: StopToken<'_, T, B>) -> Result<(), Stopped>
    where
        T: Includes<S>,
        B: Backend<T>,
    {
        self.wait_limited(&Limits::stop(stop)).map_err(|_| Stopped)
    }

    /// Counts down by `n`, then waits for zero.
    ///
    /// # Panics
    ///
    /// If `n` exceeds the counter, as [`count_down`](Self::count_down).
    #[track_caller]
    pub fn arrive_and_wait(&self, n: u32) {
        const OPERATION: &str = "Latch::arrive_and_wait";
        if B::UNCHECKED_FAST_PATHS {
            if B::latch_phase_together(&self.state, n) {
                return;
            }
            self.count_down_unchecked(OPERATION, n);
        } else if let Err(error) = self.count_down_as(OPERATION, n) {
            violated(error)
        }
        self.wait();
    }
}

impl<S: Scope, B: Backend<S>> fmt::Debug for Latch<S, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latch")
            .field("scope", &S::NAME)
            .field("count", &(B::load(&self.state, Ordering::Relaxed) & COUNT))
            .finish()
    }
}
