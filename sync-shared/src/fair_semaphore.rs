//! [`FairSemaphore`]: a FIFO (ticket) counting semaphore.
//!
//! libcu++'s semaphores are unfair, and users have hit starvation with them
//! (NVIDIA/cccl#450); this one serves blocked threads in arrival order.
//!
//! # Algorithm
//!
//! Two counters that only grow (modulo 2³²): `next`, the tickets handed out, and
//! `grant`, the tickets that may proceed (the initial count plus every unit released).
//! `acquire` takes ticket `t = next++` and waits until `grant > t`, so units go to
//! tickets in order; `try_acquire` takes a ticket only when one is free at once
//! (`grant > next`), so it never jumps the queue. The counter of the C++ semaphore is
//! `grant - next` (negative while threads wait).
//!
//! A wait that times out or is stopped cannot leave the queue — later tickets are
//! already behind it — so it pays for its own ticket instead: it adds one to `grant`
//! (if its ticket was not served meanwhile). That unit reaches the head of the queue at
//! once, and the release that later reaches the abandoned ticket is absorbed by it, so
//! the count is conserved and order is kept.
//!
//! # Memory ordering
//!
//! Releases add to `grant` with release ordering, and a ticket holder proceeds after an
//! acquire load of `grant`, so the releaser's writes are visible to the thread that
//! takes its unit. Taking a ticket and a releaser's check for waiting tickets form a
//! store-buffering pair (as in [`CountingSemaphore`](crate::CountingSemaphore)), made
//! sequentially consistent so a release never misses a ticket holder about to park.

use core::fmt;
use core::marker::PhantomData;
use core::time::Duration;

use crate::backend::{Backend, Word};
use crate::error::{violated, Interrupted, Stopped, UsageError, UsageErrorKind};
use crate::message::ConstMessage;
use crate::primitive::{const_fn, Ordering};
use crate::scope::Scope;
use crate::semaphore::SEMAPHORE_MAX;
use crate::stop_token::StopToken;
use crate::wait::{wait_until, Limits, Spin};

/// `a - b` of two ticket counters, as a signed distance.
#[inline]
fn distance(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

/// A counting semaphore that serves blocked threads first-come, first-served.
///
/// Same API as [`CountingSemaphore`](crate::CountingSemaphore). FIFO among threads
/// that block in `acquire`; `try_acquire` succeeds only when a unit is free and nobody
/// is queued.
///
/// # Examples
///
/// ```
/// use scoped_sync::FairSemaphore;
///
/// let turns: FairSemaphore = FairSemaphore::new(0);
/// std::thread::scope(|s| {
///     s.spawn(|| turns.acquire());
///     turns.release(1);
/// });
/// assert!(!turns.try_acquire());
/// ```
#[repr(C)]
pub struct FairSemaphore<S: Scope, B: Backend<S>, const MAX: u32 = SEMAPHORE_MAX> {
    /// Tickets handed out.
    next: Word,
    /// Tickets allowed to proceed.
    grant: Word,
    _backend: PhantomData<(S, fn() -> B)>,
}

impl<S: Scope, B: Backend<S>, const MAX: u32> FairSemaphore<S, B, MAX> {
    const MAX_IS_SUPPORTED: () = assert!(
        MAX <= SEMAPHORE_MAX,
        "FairSemaphore: MAX exceeds SEMAPHORE_MAX"
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
                    .text("FairSemaphore::new: initial = ")
                    .number(initial as u64)
                    .text(" exceeds max() = ")
                    .number(MAX as u64)
                    .panic();
            }
            Self { next: Word::new(0), grant: Word::new(initial), _backend: PhantomData }
        }
    }

    /// Like [`new`](Self::new), but returns an error instead of panicking.
    pub fn try_new(initial: u32) -> Result<Self, UsageError> {
        if initial > MAX {
            return Err(UsageError::new(
                "FairSemaphore::new",
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

    /// Adds `n` units (release); they go to waiting threads in ticket order.
    ///
    /// # Panics
    ///
    /// If the counter would exceed `MAX`. The semaphore is left unchanged.
    #[inline]
    #[track_caller]
    pub fn release(&self, n: u32) {
        if let Err(error) = self.try_release(n) {
            violated(error)
        }
    }

    /// Like [`release`](Self::release), but returns an error instead of panicking.
    pub fn try_release(&self, n: u32) -> Result<(), UsageError> {
        let mut grant = B::load(&self.grant, Ordering::Relaxed);
        loop {
            // `next` only grows, so reading it after `grant` gives the counter as it was
            // at this read (the CAS below checks `grant` is still the same).
            let available = distance(grant, B::load(&self.next, Ordering::Relaxed));
            let count = available.max(0) as u32;
            if i64::from(available) + i64::from(n) > i64::from(MAX) {
                return Err(UsageError::new(
                    "FairSemaphore::release",
                    UsageErrorKind::ReleaseExceedsMax { n, count, max: MAX },
                ));
            }
            match B::compare_exchange(
                &self.grant,
                grant,
                grant.wrapping_add(n),
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(actual) => grant = actual,
            }
        }
        // Tickets at or beyond the old grant belong to threads that wait (or will).
        if distance(B::load(&self.next, Ordering::SeqCst), grant) > 0 {
            B::wake_all(&self.grant);
        }
        Ok(())
    }

    /// Takes a unit if one is free and no thread is queued; never blocks (acquire).
    #[inline]
    pub fn try_acquire(&self) -> bool {
        let mut next = B::load(&self.next, Ordering::Relaxed);
        loop {
            if distance(B::load(&self.grant, Ordering::Acquire), next) <= 0 {
                return false;
            }
            match B::compare_exchange(
                &self.next,
                next,
                next.wrapping_add(1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => next = actual,
            }
        }
    }

    /// Takes a ticket and blocks until it is served (acquire).
    #[inline]
    pub fn acquire(&self) {
        let _ = self.acquire_limited(&Limits::NONE);
    }

    /// Queues for at most `timeout`; `true` if served.
    pub fn try_acquire_for(&self, timeout: Duration) -> bool {
        self.acquire_limited(&Limits::within(timeout)).is_ok()
    }

    /// Queues until `deadline`; `true` if served.
    pub fn try_acquire_until(&self, deadline: B::Instant) -> bool {
        self.acquire_limited(&Limits::until(deadline)).is_ok()
    }

    /// Queues until served, or until `stop` is requested.
    pub fn acquire_stoppable(&self, stop: StopToken<'_, S, B>) -> Result<(), Stopped> {
        self.acquire_limited(&Limits::stop(stop))
            .map_err(|_| Stopped)
    }

    fn acquire_limited(&self, limits: &Limits<'_, S, B>) -> Result<(), Interrupted> {
        let ticket = B::fetch_add(&self.next, 1, Ordering::SeqCst);
        let served = wait_until(
            &self.grant,
            Ordering::SeqCst,
            limits,
            Spin::First,
            |grant| distance(grant, ticket) > 0,
            Some,
        );
        match served {
            Ok(_) => Ok(()),
            Err(interrupted) => self.abandon(ticket, interrupted),
        }
    }

    /// Leaves the queue after a timeout or stop: pays one unit for `ticket`, unless it
    /// was served meanwhile (then the unit is ours and the acquire succeeded).
    #[cold]
    fn abandon(&self, ticket: u32, interrupted: Interrupted) -> Result<(), Interrupted> {
        let mut grant = B::load(&self.grant, Ordering::Acquire);
        loop {
            if distance(grant, ticket) > 0 {
                return Ok(());
            }
            match B::compare_exchange(
                &self.grant,
                grant,
                grant.wrapping_add(1),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(actual) => grant = actual,
            }
        }
        B::wake_all(&self.grant);
        Err(interrupted)
    }
}

impl<S: Scope, B: Backend<S>, const MAX: u32> fmt::Debug for FairSemaphore<S, B, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = B::load(&self.grant, Ordering::Relaxed);
        let next = B::load(&self.next, Ordering::Relaxed);
        f.debug_struct("FairSemaphore")
            .field("scope", &S::NAME)
            .field("count", &distance(grant, next))
            .field("max", &MAX)
            .finish()
    }
}
