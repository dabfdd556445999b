//! The one wait loop every primitive uses: spin on the word as the backend advises,
//! then publish that a sleeper exists and park, honouring a deadline and a stop token.

use core::pin::pin;
use core::time::Duration;

use crate::backend::{Backend, Word};
use crate::error::Interrupted;
use crate::primitive::Ordering;
use crate::scope::Scope;
use crate::stop_token::{StopCallback, StopSource, StopToken};

/// A stop request wakes parked waiters through a stop callback, which wakes the word
/// they sleep on. The stop request does not change that word, so where the backend
/// cannot also compare the stop source's word in the sleep
/// ([`Backend::park_unless`] returns `false`), the callback's wake can slip in between
/// the waiter's last look at the token and its sleep; such a sleep ends after this long,
/// which bounds the latency of that rare case.
const STOP_RECHECK: Duration = Duration::from_millis(2);

/// What may end a wait besides its condition: a deadline, or a stop token of scope `T`,
/// which is the wait's own scope `S` or a wider one (a block's semaphore stopped by a
/// device-wide source, say). The token's words are read at its own scope, so a stop
/// requested anywhere in `T` reaches the wait.
pub(crate) struct Limits<'a, S: Scope, B: Backend<S>, T: StopScope<B> = S> {
    deadline: Option<B::Instant>,
    stop: Option<&'a T::Source>,
}

impl<'a, S: Scope, B: Backend<S>> Limits<'a, S, B> {
    /// Wait for ever.
    pub(crate) const NONE: Self = Self {
        deadline: None,
        stop: None,
    };

    pub(crate) fn until(deadline: B::Instant) -> Self {
        Self {
            deadline: Some(deadline),
            stop: None,
        }
    }

    pub(crate) fn within(duration: Duration) -> Self {
        Self::until(B::after(B::now(), duration))
    }
}

impl<'a, S: Scope, B: Backend<S>, T: StopScope<B>> Limits<'a, S, B, T> {
    /// Until stop is requested through `stop` (a token of no source: for ever).
    pub(crate) fn stop(stop: StopToken<'a, T, B>) -> Self
    where
        B: Backend<T>,
    {
        Self {
            deadline: None,
            stop: T::source_of(stop),
        }
    }

    /// Whether the wait must end now (two predictable branches when unbounded).
    #[inline]
    pub(crate) fn check(&self) -> Result<(), Interrupted> {
        if let Some(source) = self.stop {
            if T::stop_requested(source) {
                return Err(Interrupted::Stopped);
            }
        }
        match self.deadline {
            Some(deadline) if B::now() >= deadline => Err(Interrupted::TimedOut),
            _ => Ok(()),
        }
    }

    /// Sleeps while `word == value`, within the limits.
    ///
    /// A stoppable sleep registers a stop callback that wakes `word`, then sleeps on
    /// both `word` and the stop source's word ([`Backend::park_unless`], at the
    /// token's scope): a stop that comes before the sleep changed the source's word, so
    /// the sleep does not begin; one that comes after wakes it through the callback.
    /// Backends whose sleep polls (no `wake_*` needed) skip the callback: their
    /// `park_unless` sees the stop itself.
    fn park(&self, word: &Word, value: u32) {
        let Some(source) = self.stop else {
            B::park(word, value, self.deadline);
            return;
        };
        let sleep_in_slices = || {
            let recheck = B::after(B::now(), STOP_RECHECK);
            let until = match self.deadline {
                Some(deadline) if deadline < recheck => deadline,
                _ => recheck,
            };
            B::park(word, value, Some(until));
        };
        T::park_unless_stopped(
            source,
            word,
            value,
            B::PARK_NEEDS_WAKE,
            <B as Backend<S>>::wake_all,
            &sleep_in_slices,
        );
    }
}

/// A scope whose stop tokens a wait of backend `B` can honour (every scope `B` runs
/// at): the stop source's words read at that scope, however narrow the wait's own.
pub(crate) trait StopScope<B>: Scope {
    /// `StopSource<Self, B>`.
    type Source;

    /// The source `token` observes, if any.
    fn source_of(token: StopToken<'_, Self, B>) -> Option<&'_ Self::Source>
    where
        B: Backend<Self>;

    /// Whether stop has been requested on `source` (acquire ordering).
    fn stop_requested(source: &Self::Source) -> bool;

    /// Sleeps on `word` (while it holds `value`) unless stop is requested on `source`:
    /// with a stop callback that runs `wake(word)` registered first where the sleep
    /// needs a wake-up (`needs_wake`), then `park_unless` on both words at this scope,
    /// or, where the backend cannot compare both, `sleep_in_slices`.
    fn park_unless_stopped(
        source: &Self::Source,
        word: &Word,
        value: u32,
        needs_wake: bool,
        wake: fn(&Word),
        sleep_in_slices: &dyn Fn(),
    );
}

impl<T: Scope, B: Backend<T>> StopScope<B> for T {
    type Source = StopSource<T, B>;

    #[inline]
    fn source_of(token: StopToken<'_, T, B>) -> Option<&'_ StopSource<T, B>> {
        token.source()
    }

    #[inline]
    fn stop_requested(source: &StopSource<T, B>) -> bool {
        source.stop_requested()
    }

    fn park_unless_stopped(
        source: &StopSource<T, B>,
        word: &Word,
        value: u32,
        needs_wake: bool,
        wake: fn(&Word),
        sleep_in_slices: &dyn Fn(),
    ) {
        let waker = pin!(StopCallback::new(source.token(), || wake(word)));
        if needs_wake {
            waker.as_ref().register();
        }
        // After the registration: a stop before it ran the waker already, to no one,
        // and shows here.
        let stop_state = B::load(source.state_word(), Ordering::Relaxed);
        if StopSource::<T, B>::is_stop(stop_state) {
            return;
        }
        if B::park_unless(word, value, source.state_word(), stop_state, None) {
            return;
        }
        sleep_in_slices();
    }
}

/// Whether a wait spins before it parks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spin {
    /// Spin as the backend advises, then park.
    First,
    /// Spin as the backend advises for a wait on other threads' arrivals
    /// ([`Backend::relax_for_arrivals`]), then park.
    ForArrivals,
    /// The caller already spun: park at once.
    Done,
}

/// The usual `announce` of [`wait_until`]: sets `flag` on `value` with a
/// compare-and-swap, so that whoever changes the word next sees that a thread may be
/// parked. Returns the value to park on, or `None` if the word changed meanwhile.
pub(crate) fn announce_with_flag<S: Scope, B: Backend<S>>(
    word: &Word,
    value: u32,
    flag: u32,
) -> Option<u32> {
    if value & flag != 0 || !B::PARK_NEEDS_WAKE {
        return Some(value);
    }
    B::compare_exchange(
        word,
        value,
        value | flag,
        Ordering::Relaxed,
        Ordering::Relaxed,
    )
    .ok()
    .map(|_| value | flag)
}

/// Waits until `ready(value)` holds for a value of `word` loaded with `order`, and
/// returns that value.
///
/// An `Acquire` wait polls with relaxed loads and takes one acquire fence after the
/// load that saw the value (the same synchronization: a relaxed read followed by an
/// acquire fence is an acquire pattern). On a GPU an acquire load invalidates the L1
/// on every poll, the fence once.
///
/// Before each sleep, `announce(value)` must make sure that whoever next changes the
/// word also wakes parked threads (typically by setting a "sleepers" bit with a CAS),
/// and return the value to sleep on; `None` means the word changed meanwhile.
#[inline]
pub(crate) fn wait_until<S: Scope, B: Backend<S>, T: StopScope<B>>(
    word: &Word,
    order: Ordering,
    limits: &Limits<'_, S, B, T>,
    spin: Spin,
    ready: impl Fn(u32) -> bool,
    announce: impl Fn(u32) -> Option<u32>,
) -> Result<u32, Interrupted> {
    let poll = poll_order(order);
    let value = B::load(word, poll);
    if ready(value) {
        finish_poll::<S, B>(order);
        return Ok(value);
    }
    wait_slow(word, order, limits, spin, &ready, &announce)
}

/// The order polls use for a wait of `order` (see [`wait_until`]).
#[inline(always)]
fn poll_order(order: Ordering) -> Ordering {
    if order == Ordering::Acquire {
        Ordering::Relaxed
    } else {
        order
    }
}

/// After the poll that ended a wait of `order`: the acquire fence of an `Acquire` wait.
#[inline(always)]
fn finish_poll<S: Scope, B: Backend<S>>(order: Ordering) {
    if order == Ordering::Acquire {
        B::fence(Ordering::Acquire);
    }
}

#[cold]
fn wait_slow<S: Scope, B: Backend<S>, T: StopScope<B>>(
    word: &Word,
    order: Ordering,
    limits: &Limits<'_, S, B, T>,
    spin: Spin,
    ready: &dyn Fn(u32) -> bool,
    announce: &dyn Fn(u32) -> Option<u32>,
) -> Result<u32, Interrupted> {
    let mut round = 0;
    let mut spinning = spin != Spin::Done;
    let poll = poll_order(order);
    loop {
        let value = B::load(word, poll);
        if ready(value) {
            finish_poll::<S, B>(order);
            return Ok(value);
        }
        limits.check()?;
        if spinning {
            spinning = if spin == Spin::ForArrivals {
                B::relax_for_arrivals(&mut round)
            } else {
                B::relax(&mut round)
            };
            if spinning {
                continue;
            }
        }
        if let Some(sleep_on) = announce(value) {
            limits.park(word, sleep_on);
        }
    }
}
