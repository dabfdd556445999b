//! [`CountingSemaphore`] and [`BinarySemaphore`]: unfair (barging) semaphores.
//!
//! # Algorithm
//!
//! The counter lives in one word, the number of threads that are (about to be) parked
//! in a second. Acquire is a compare-and-swap that decrements a positive counter; a
//! thread that finds zero spins as the backend advises, then registers in the waiter
//! count and parks on the counter word while it is zero. On the host a blocking
//! acquire makes one swap per look and backs off after a lost one, rather than
//! retrying the swap at once against the threads it lost to. Release adds its units with
//! one read-modify-write, then wakes parked threads only if the waiter count is
//! non-zero, so an uncontended release makes no system call.
//!
//! A release that would pass `MAX` is found after its add (the count it added to was
//! above `MAX - n`): it subtracts its units again and reports the error. Meanwhile no
//! acquire takes a unit from a count above `MAX`, so the excess is never acquirable;
//! an acquire that finds one waits for the count to come back. A release whose add
//! finds a count already above `MAX` cannot judge its own units against another's
//! excess in flight: it takes them back too, waits for the count to come back to
//! `MAX` or below, and adds again. (So the excess stays unacquirable as long as the
//! excess in flight at once stays below 2³² − `MAX`; three releases of almost 2³⁰ units
//! each, each an error, could wrap the word.) A program whose releases never pass
//! `MAX` in any order never sees a count above `MAX`. On the GPU, where a failed
//! precondition ends the kernel, the check follows one `fetch_add` and nothing is
//! taken back.
//!
//! # Memory ordering
//!
//! A release (the compare-and-swap) is a release operation and a successful acquire is
//! an acquire operation on the counter: what a thread wrote before `release` is visible
//! to the thread whose `acquire` takes that unit. The waiter registration and the
//! releaser's waiter check form a store-buffering (Dekker) pair — the waiter writes the
//! waiter count then reads the counter, the releaser writes the counter then reads the
//! waiter count — so all four accesses are sequentially consistent: at least one side
//! sees the other, and a release never misses a thread about to park. (On x86-64 the
//! sequentially consistent loads are plain loads.) A backend whose parked threads poll
//! (`PARK_NEEDS_WAKE == false`, the GPU) skips the waiter count and its handshake.

use core::fmt;
use core::marker::PhantomData;
use core::time::Duration;

use crate::backend::{Backend, Word};
use crate::error::{violated, Interrupted, Stopped, UsageError, UsageErrorKind};
use crate::message::ConstMessage;
use crate::primitive::{const_fn, Ordering};
use crate::scope::{Includes, Scope};
use crate::stop_token::StopToken;
use crate::update::{update, update_from};
use crate::wait::{wait_until, Limits, Spin, StopScope};

/// The largest `MAX` a semaphore accepts, and the default: 2³⁰ − 1. (The fair
/// semaphore needs the headroom of a 32-bit word for its waiting tickets.)
pub const SEMAPHORE_MAX: u32 = (1 << 30) - 1;

/// A counting semaphore with a counter in `0..=MAX`, for threads inside scope `S`.
///
/// Unfair: a thread arriving at `acquire` may take a unit before threads that have been
/// waiting longer. See [`FairSemaphore`](crate::FairSemaphore) for FIFO order.
///
/// Counterpart: C++20 `std::counting_semaphore<MAX>`, libcu++
/// `cuda::counting_semaphore<Scope, MAX>`.
///
/// # Examples
///
/// ```
/// use scoped_sync::CountingSemaphore;
///
/// // At most two threads inside at once.
/// let slots: CountingSemaphore<2> = CountingSemaphore::new(2);
/// std::thread::scope(|s| {
///     for _ in 0..8 {
///         s.spawn(|| {
///             slots.acquire();
///             // ... use one of two resources ...
///             slots.release(1);
///         });
///     }
/// });
/// assert!(slots.try_acquire());
/// ```
#[repr(C)]
pub struct CountingSemaphore<S: Scope, B: Backend<S>, const MAX: u32 = SEMAPHORE_MAX> {
    /// The counter.
    count: Word,
    /// Threads registered to park on `count`.
    waiters: Word,
    _backend: PhantomData<(S, fn() -> B)>,
}

/// A semaphore whose counter is 0 or 1.
///
/// Counterpart: C++20 `std::binary_semaphore`, libcu++ `cuda::binary_semaphore<Scope>`.
pub type BinarySemaphore<S, B> = CountingSemaphore<S, B, 1>;

impl<S: Scope, B: Backend<S>, const MAX: u32> CountingSemaphore<S, B, MAX> {
    const MAX_IS_SUPPORTED: () = assert!(
        MAX <= SEMAPHORE_MAX,
        "CountingSemaphore: MAX exceeds SEMAPHORE_MAX"
    );

    const_fn! {
        /// A semaphore with counter `initial`.
        ///
        /// # Panics
        ///
        /// If `initial > MAX`. (`MAX > SEMAPHORE_MAX` is a compile error.)
        #[track_caller]
        pub fn new(initial: u32) -> Self {
            let () = Self::MAX_IS_SUPPORTED;
            if initial > MAX {
                ConstMessage::new()
                    .text("CountingSemaphore::new: initial = ")
                    .number(initial as u64)
                    .text(" exceeds max() = ")
                    .number(MAX as u64)
                    .panic();
            }
            Self { count: Word::new(initial), waiters: Word::new(0), _backend: PhantomData }
        }
    }

    /// Like [`new`](Self::new), but returns an error instead of panicking.
    pub fn try_new(initial: u32) -> Result<Self, UsageError> {
        if initial > MAX {
            return Err(UsageError::new(
                "CountingSemaphore::new",
                UsageErrorKind::ExceedsMax {
                    value: initial,
                    max: MAX,
                },
            ));
        }
        Ok(Self::new(initial))
    }

    /// The largest counter value: `MAX`.
    pub const fn max() -> u32 {
        MAX
    }

    /// Adds `n` to the counter (release) and wakes up to `n` waiting threads.
    ///
    /// # Panics
    ///
    /// If the counter would exceed `MAX`. The semaphore is left as it was: the units
    /// are taken back, and no thread acquires them in between.
    #[inline]
    #[track_caller]
    pub fn release(&self, n: u32) {
        if B::UNCHECKED_FAST_PATHS && !B::PARK_NEEDS_WAKE {
            // One fetch_add (see `Backend::UNCHECKED_FAST_PATHS`), checked afterwards.
            let count = B::fetch_add(&self.count, n, Ordering::Release);
            if n > MAX - count.min(MAX) {
                violated(Self::exceeds_max(n, count));
            }
        } else if let Err(error) = self.try_release(n) {
            violated(error)
        }
    }

    /// Like [`release`](Self::release), but returns an error instead of panicking.
    #[inline]
    pub fn try_release(&self, n: u32) -> Result<(), UsageError> {
        if B::PARK_NEEDS_WAKE {
            return self.release_by_add(n);
        }
        update::<S, B, _>(&self.count, Ordering::Release, |count| {
            if n > MAX - count {
                return Err(Self::exceeds_max(n, count));
            }
            Ok(count + n)
        })?;
        Ok(())
    }

    /// The release of a backend whose sleepers need a wake (the host): one
    /// sequentially consistent add (also the first half of the waiter handshake), the
    /// `MAX` check after it (see the module's algorithm), then the waiter check.
    #[inline]
    fn release_by_add(&self, n: u32) -> Result<(), UsageError> {
        if n > MAX {
            return Err(Self::exceeds_max(
                n,
                B::load(&self.count, Ordering::Relaxed),
            ));
        }
        loop {
            let count = B::fetch_add(&self.count, n, Ordering::SeqCst);
            if count <= MAX - n {
                if B::load(&self.waiters, Ordering::SeqCst) != 0 {
                    self.wake(n);
                }
                return Ok(());
            }
            self.take_back(n);
            if count <= MAX {
                return Err(Self::exceeds_max(n, count));
            }
            self.wait_for_no_excess();
        }
    }

    /// Subtracts the units of a release that passed `MAX`, and wakes the acquirers that
    /// went to sleep on the excess (the count changes under them).
    #[cold]
    fn take_back(&self, n: u32) {
        B::fetch_sub(&self.count, n, Ordering::SeqCst);
        if B::load(&self.waiters, Ordering::SeqCst) != 0 {
            B::wake_all(&self.count);
        }
    }

    /// Spins (and yields) until no release's excess is in the count.
    #[cold]
    fn wait_for_no_excess(&self) {
        let mut round = 0;
        while B::load(&self.count, Ordering::Relaxed) > MAX {
            if !B::relax(&mut round) {
                B::yield_now();
            }
        }
    }

    fn exceeds_max(n: u32, count: u32) -> UsageError {
        UsageError::new(
            "CountingSemaphore::release",
            UsageErrorKind::ReleaseExceedsMax { n, count, max: MAX },
        )
    }

    /// A count an acquire may take a unit from: positive, and, where a release may
    /// put an excess in the count for a moment (the host), not above `MAX`.
    #[inline(always)]
    fn take_one(count: u32) -> Result<u32, ()> {
        if B::PARK_NEEDS_WAKE && count > MAX {
            return Err(());
        }
        count.checked_sub(1).ok_or(())
    }

    #[cold]
    fn wake(&self, n: u32) {
        if n == 1 {
            B::wake_one(&self.count);
        } else {
            B::wake_all(&self.count);
        }
    }

    /// Takes a unit if the counter is positive; never blocks (on the host it may wait
    /// out the moment in which a release that passed `MAX` takes its units back, see
    /// the module's algorithm). `true` on success (acquire).
    ///
    /// Unlike C++'s `try_acquire`, this never fails spuriously.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        if B::GUESSING_CAS_IS_FREE {
            // Guess 1, the count of a semaphore that hands one unit at a time from
            // thread to thread: then the first compare-and-swap takes it, with no load
            // before. Otherwise its reply is the count, as a load would have given.
            self.take_from(1)
        } else {
            loop {
                match update::<S, B, _>(&self.count, Ordering::Acquire, Self::take_one) {
                    Ok(_) => return true,
                    // A release's excess in the count hides whether a unit is there.
                    Err(())
                        if B::PARK_NEEDS_WAKE && B::load(&self.count, Ordering::Relaxed) > MAX =>
                    {
                        self.wait_for_no_excess()
                    }
                    Err(()) => return false,
                }
            }
        }
    }

    /// Blocks until it takes a unit (acquire).
    #[inline]
    pub fn acquire(&self) {
        let taken = if B::PARK_NEEDS_WAKE {
            self.take_once()
        } else {
            self.try_acquire()
        };
        if !taken {
            let _ = self.acquire_slow(&Limits::NONE);
        }
    }

    /// One look and, if it shows a unit, one compare-and-swap: `false` also when the
    /// swap lost to another thread. A blocking acquire on the host backs off in its
    /// slow path before it looks again, instead of retrying the swap at once against
    /// the threads it just lost to (libstdc++'s acquire also makes one swap per look).
    #[inline]
    fn take_once(&self) -> bool {
        let count = B::load(&self.count, Ordering::Relaxed);
        Self::take_one(count).is_ok_and(|next| {
            B::compare_exchange(
                &self.count,
                count,
                next,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
        })
    }

    /// Tries to take a unit for at most `timeout`; `true` on success.
    pub fn try_acquire_for(&self, timeout: Duration) -> bool {
        self.try_acquire() || self.acquire_slow(&Limits::within(timeout)).is_ok()
    }

    /// Tries to take a unit until `deadline`; `true` on success.
    pub fn try_acquire_until(&self, deadline: B::Instant) -> bool {
        self.try_acquire() || self.acquire_slow(&Limits::until(deadline)).is_ok()
    }

    /// Blocks until it takes a unit, or until `stop` is requested. The token may be of
    /// a wider scope than the semaphore's (a device-wide stop source for a block's
    /// semaphore): the wait reads it at the token's scope.
    pub fn acquire_stoppable<T>(&self, stop: StopToken<'_, T, B>) -> Result<(), Stopped>
    where
        T: Includes<S>,
        B: Backend<T>,
    {
        if self.try_acquire() {
            return Ok(());
        }
        self.acquire_slow(&Limits::stop(stop)).map_err(|_| Stopped)
    }

    /// Takes a unit starting from `count`, a value just loaded (or a guess): one
    /// compare-and-swap when it was right, without loading the word again.
    #[inline]
    fn take_from(&self, count: u32) -> bool {
        update_from::<S, B, _>(&self.count, count, Ordering::Acquire, Self::take_one).is_ok()
    }

    #[cold]
    fn acquire_slow<T: StopScope<B>>(
        &self,
        limits: &Limits<'_, S, B, T>,
    ) -> Result<(), Interrupted> {
        let mut round = 0;
        // On the host the caller's attempt just failed: back off before the next look.
        loop {
            if !B::PARK_NEEDS_WAKE && self.try_acquire() {
                return Ok(());
            }
            limits.check()?;
            if !B::relax(&mut round) {
                break;
            }
            if B::PARK_NEEDS_WAKE && self.take_once() {
                return Ok(());
            }
        }
        // The load that decides to park is the second half of the waiter handshake.
        let waiter_order = if B::PARK_NEEDS_WAKE {
            B::fetch_add(&self.waiters, 1, Ordering::SeqCst);
            Ordering::SeqCst
        } else {
            Ordering::Relaxed
        };
        let result = loop {
            let positive = wait_until(
                &self.count,
                waiter_order,
                limits,
                Spin::Done,
                |count| Self::take_one(count).is_ok(),
                Some,
            );
            match positive {
                Ok(count) if self.take_from(count) => break Ok(()),
                Ok(_) => continue,
                Err(interrupted) => break Err(interrupted),
            }
        };
        if B::PARK_NEEDS_WAKE {
            B::fetch_sub(&self.waiters, 1, Ordering::Relaxed);
        }
        result
    }
}

impl<S: Scope, B: Backend<S>, const MAX: u32> fmt::Debug for CountingSemaphore<S, B, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingSemaphore")
            .field("scope", &S::NAME)
            .field("count", &B::load(&self.count, Ordering::Relaxed))
            .field("max", &MAX)
            .finish()
    }
}
