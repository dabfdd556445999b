//! The portable form of [`Barrier`]: the counting state word and the expected word
//! (see the module documentation for the encoding).

use core::convert::Infallible;
#[cfg(not(loom))]
use core::time::Duration;

use super::{
    ArrivalToken, Barrier, Completion, COUNT, DROPPED, EXPECTED, OPEN, PARITY, SLEEPERS, UNIT,
};
use crate::backend::{Backend, Combined};
use crate::error::{violated, Interrupted, UsageError, UsageErrorKind};
use crate::primitive::Ordering;
use crate::scope::Scope;
use crate::update::{combined_add, combined_add_in, update};
use crate::wait::{announce_with_flag, wait_until, Limits, Spin, StopScope};

/// The operation an unchecked arrival's panics name.
const ARRIVE: &str = "Barrier::arrive";

#[cfg(not(loom))]
/// Longest sleep of a checked arrival that waits for a phase to take arrivals: the
/// thread that makes it may be one that cannot wake this one (a GPU thread).
const AWAIT_SLICE: Duration = Duration::from_millis(1);

impl<S: Scope, B: Backend<S>, F: Completion> Barrier<S, B, F> {
    /// The state word of a phase of `expected` arrivals (plus the reserved one) that
    /// has parity `parity` and no arrival yet. A phase nobody can arrive in (no
    /// arrivals at all) stays closed: its count is zero.
    pub(super) const fn phase_start(parity: u32, expected: u32) -> u32 {
        let arrivals = expected + Self::RESERVED;
        if arrivals == 0 {
            parity
        } else {
            parity | (PARITY - arrivals * UNIT)
        }
    }

    /// The arrivals an open phase still takes (0 for a phase whose reopening is
    /// pending, or whose completion is running).
    #[inline(always)]
    pub(super) fn remaining(&self, state: u32) -> u32 {
        if state & OPEN == 0 {
            return 0;
        }
        ((PARITY - (state & COUNT)) / UNIT).saturating_sub(Self::RESERVED)
    }

    /// Whether the phase in `state` is open and takes arrivals.
    #[inline(always)]
    fn collecting(&self, state: u32) -> bool {
        self.remaining(state) > 0
    }

    #[inline(always)]
    fn token(before: u32) -> ArrivalToken {
        ArrivalToken {
            parity: before & PARITY != 0,
            complete: false,
            hardware: None,
        }
    }

    /// The token of the arrival that completed its phase (and acquired the others).
    #[inline(always)]
    fn completed_token(before: u32) -> ArrivalToken {
        ArrivalToken {
            complete: true,
            ..Self::token(before)
        }
    }

    /// `arrive` as one `fetch_add` (see `Backend::UNCHECKED_FAST_PATHS`): a broken
    /// precondition is found after the word changed, and the caller panics. `alone`:
    /// the caller runs alone by construction, and is not grouped with others.
    #[inline]
    pub(super) fn arrive_unchecked(&self, n: u32, alone: bool) -> Result<ArrivalToken, UsageError> {
        if n == 0 {
            return Err(UsageError::new(ARRIVE, UsageErrorKind::ZeroArrival));
        }
        let group = if alone {
            Combined::alone(n)
        } else {
            B::combine(&self.state, n)
        };
        let (before, guess) = if group.is_alone() {
            let before = self.add_arrivals(n);
            // Read while the add is on its way: after its reply, the read put one more
            // round trip on every phase whose arrivals come one per block
            // (docs/measurements.md, `Barrier::arrive_unchecked`).
            let guess = B::load_cached(&self.expected);
            self.check_arrivals(before, n);
            (before, guess)
        } else {
            let Ok(before) = combined_add_in::<S, B, Infallible>(group, n, UNIT, |total| {
                let before = self.add_arrivals(total);
                self.check_arrivals(before, total);
                Ok(before)
            });
            // Read after the add: before it, the read would hold the add's release
            // back until it returned. (Beside the add, with the leader's reply
            // broadcast with it, every lane waited for the read, and a warp per
            // arrival measured slower; docs/measurements.md, `Barrier::arrive_unchecked`.)
            (before, B::load_cached(&self.expected))
        };
        if before & OPEN == 0 {
            self.arrived_early(before, n, guess);
        } else if n == self.remaining(before) {
            self.complete_phase(before, Some(guess));
            return Ok(Self::completed_token(before));
        }
        Ok(Self::token(before))
    }

    /// The unchecked arrival's add of `total` arrivals; returns the state before.
    #[inline(always)]
    fn add_arrivals(&self, total: u32) -> u32 {
        if total > EXPECTED {
            // More than any phase takes (and more than the count field holds).
            too_many_arrivals(
                total,
                self.remaining(B::load(&self.state, Ordering::Relaxed)),
            );
        }
        B::fetch_add(&self.state, total * UNIT, Ordering::Release)
    }

    /// Panics if the unchecked arrival of `total` that replaced `before` took more
    /// than the open phase had left.
    #[inline(always)]
    fn check_arrivals(&self, before: u32, total: u32) {
        let remaining = self.remaining(before);
        if before & OPEN != 0 && total > remaining {
            too_many_arrivals(total, remaining);
        }
    }

    /// An arrival in a phase whose reopening is still on its way (counted on top of
    /// zero). If it is the phase's last, every arrival of the phase came early, and the
    /// reopening will complete the phase when it lands: this thread then reopens the
    /// phase after it, as a completing thread would. (The two reopenings add up in
    /// either order: the count passes the carry once, and ends at the start of the
    /// phase after.)
    #[cold]
    fn arrived_early(&self, before: u32, n: u32, guess: u32) {
        let expected = self.next_expected(before, Some(guess));
        let early = (before & COUNT) / UNIT + n;
        if early > expected {
            violated(UsageError::new(
                "Barrier::arrive",
                UsageErrorKind::ArrivalExceedsRemaining {
                    n,
                    remaining: expected.saturating_sub(early - n),
                },
            ));
        }
        if F::IS_NONE && early == expected {
            self.reopen(expected);
        }
    }

    /// `arrive` with the precondition checked before the word changes.
    pub(super) fn arrive_checked(
        &self,
        operation: &'static str,
        n: u32,
    ) -> Result<ArrivalToken, UsageError> {
        self.arrive_checked_setting(operation, n, 0)
    }

    /// [`arrive_checked`](Self::arrive_checked) that also sets `flags` in the state
    /// word with the arrival.
    fn arrive_checked_setting(
        &self,
        operation: &'static str,
        n: u32,
        flags: u32,
    ) -> Result<ArrivalToken, UsageError> {
        if n == 0 {
            return Err(UsageError::new(operation, UsageErrorKind::ZeroArrival));
        }
        // `take` checks `n` against the remaining count before it multiplies.
        let before =
            combined_add::<S, B, _>(&self.state, n, UNIT, |n| self.take(operation, n, flags))?;
        let guess = B::load_cached(&self.expected);
        if before & OPEN == 0 {
            self.arrived_early(before | flags, n, guess);
        } else if n == self.remaining(before) {
            self.complete_phase(before | flags, Some(guess));
            return Ok(Self::completed_token(before));
        }
        Ok(Self::token(before))
    }

    /// Takes `n` arrivals from the open phase, setting `flags`; returns the state
    /// before.
    fn take(&self, operation: &'static str, n: u32, flags: u32) -> Result<u32, UsageError> {
        let mut current = B::load(&self.state, Ordering::Relaxed);
        loop {
            let remaining = self.takes(current);
            if remaining == 0 {
                current = self.await_next_phase(operation, n, Self::takes)?;
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
                current.wrapping_add(n * UNIT) | flags,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(current),
                Err(actual) => current = actual,
            }
        }
    }

    /// The arrivals the phase in `state` takes now: an open phase's remaining count,
    /// or, while the reopening of a phase without completion function is on its way,
    /// what the expected count leaves after the early arrivals. 0 while a completion
    /// function runs, or when nobody is expected.
    fn takes(&self, state: u32) -> u32 {
        if state & OPEN != 0 || !F::IS_NONE {
            return self.remaining(state);
        }
        let expected = B::load(&self.expected, Ordering::Relaxed) & EXPECTED;
        expected.saturating_sub((state & COUNT) / UNIT)
    }

    /// The phase takes no arrivals (its completion is running, or, for a drop, its
    /// reopening is pending): waits until `ready` says it does and returns its state.
    /// A barrier that expects no arrivals at all (every thread dropped, or `new(0)`)
    /// refuses the `n` arrivals.
    ///
    /// The thread that changes the state next may be a GPU thread, which cannot wake a
    /// parked host thread (a barrier in managed memory): so each sleep is bounded.
    #[cold]
    fn await_next_phase(
        &self,
        operation: &'static str,
        n: u32,
        ready: fn(&Self, u32) -> u32,
    ) -> Result<u32, UsageError> {
        loop {
            if B::load(&self.expected, Ordering::Relaxed) & EXPECTED == 0 {
                return Err(UsageError::new(
                    operation,
                    UsageErrorKind::ArrivalExceedsRemaining { n, remaining: 0 },
                ));
            }
            // (loom has no clock, and its threads all wake each other: untimed there.)
            #[cfg(not(loom))]
            let slice = Limits::within(AWAIT_SLICE);
            #[cfg(loom)]
            let slice = Limits::NONE;
            // `Err`: a slice passed; look again (the loop's first check).
            // Acquire: an arrival that waited for a completion sees what it wrote.
            if let Ok(started) = wait_until::<S, B, _>(
                &self.state,
                Ordering::Acquire,
                &slice,
                Spin::ForArrivals,
                |value| ready(self, value) > 0,
                |value| self.announce_sleeper(value),
            ) {
                return Ok(started);
            }
        }
    }

    /// Runs in the thread whose arrival completed the phase; `before` is the state
    /// just before that arrival, `guess` the expected word as the arrival read it. On
    /// return, every write made before the phase's arrivals is visible to this thread
    /// (its wait needs no further step).
    fn complete_phase(&self, before: u32, guess: Option<u32>) {
        if F::IS_NONE {
            // The arrival carried into the parity: the phase is over and its waiters
            // are free. This thread acquires the other arrivals (its wait will not),
            // then sets up the next phase's count.
            B::fence(Ordering::Acquire);
            if before & SLEEPERS != 0 {
                B::wake_all(&self.state);
            }
            let expected = self.next_expected(before, guess);
            if expected != 0 {
                self.reopen(expected);
            }
        } else {
            self.complete_with_function(before, guess);
        }
    }

    /// The count each later phase expects: `guess` while no thread has ever dropped
    /// out (then the word still holds what it was built with), or else the word itself
    /// after an acquire fence that makes every drop of the phases so far visible (a
    /// drop lowers the word before its release arrival, which this thread's arrival
    /// read through the chain of adds).
    fn next_expected(&self, before: u32, guess: Option<u32>) -> u32 {
        match guess {
            Some(word) if before & DROPPED == 0 => word & EXPECTED,
            _ => {
                B::fence(Ordering::Acquire);
                B::load(&self.expected, Ordering::Relaxed) & EXPECTED
            }
        }
    }

    /// Adds the next phase's starting count (of `expected` arrivals) on top of the
    /// arrivals it took early. Fire and forget: if those were all of them, the last
    /// of them saw it and reopens the phase after (see `arrived_early`).
    fn reopen(&self, expected: u32) {
        let start = PARITY - expected * UNIT;
        if B::PARK_NEEDS_WAKE {
            // Clears the sleepers bit, and wakes those who set it: checked arrivals wait
            // for the reopening.
            let Ok(before) = update::<S, B, Infallible>(&self.state, Ordering::Relaxed, |v| {
                Ok(v.wrapping_add(start) & !SLEEPERS)
            });
            if before & SLEEPERS != 0 {
                B::wake_all(&self.state);
            }
        } else {
            B::fetch_add(&self.state, start, Ordering::Relaxed);
        }
    }

    /// With a completion function: the arrival left only the reserved one. Runs the
    /// completion, then starts the next phase in one release write.
    #[inline(never)]
    fn complete_with_function(&self, before: u32, guess: Option<u32>) {
        // Arrivals release (their read-modify-writes of `state` form one chain); this
        // fence, after the one that saw every other arrival, acquires them all for the
        // completion function and, through the release write below, for every waiter.
        // (Acquire on every arrival would cost each GPU arrival an L1 invalidation.)
        B::fence(Ordering::Acquire);
        self.run_completion();
        let expected = self.next_expected(before, guess);
        let next = Self::phase_start(!before & PARITY, expected) | (before & DROPPED);
        if B::PARK_NEEDS_WAKE {
            let previous = B::swap(&self.state, next, Ordering::Release);
            if previous & SLEEPERS != 0 {
                B::wake_all(&self.state);
            }
        } else {
            // Nobody else writes the word now: every arrival of the phase is in, and
            // the next phase's wait for this write.
            B::store(&self.state, next, Ordering::Release);
        }
    }

    /// Sets the sleepers bit on `value`; returns the value to park on, or `None` if the
    /// state changed meanwhile.
    fn announce_sleeper(&self, value: u32) -> Option<u32> {
        announce_with_flag::<S, B>(&self.state, value, SLEEPERS)
    }

    pub(super) fn wait_portable<T: StopScope<B>>(
        &self,
        parity: bool,
        limits: &Limits<'_, S, B, T>,
    ) -> Result<(), Interrupted> {
        let phase = if parity { PARITY } else { 0 };
        wait_until(
            &self.state,
            Ordering::Acquire,
            limits,
            Spin::ForArrivals,
            |value| value & PARITY != phase,
            |value| self.announce_sleeper(value),
        )
        .map(drop)
    }

    #[inline]
    pub(super) fn portable_phase_pending(&self, parity: bool) -> bool {
        let phase = if parity { PARITY } else { 0 };
        B::load(&self.state, Ordering::Acquire) & PARITY == phase
    }

    pub(super) fn drop_portable(&self, operation: &'static str) -> Result<(), UsageError> {
        // Enter an open phase first: a drop before the reopening would lower the count
        // of our own phase. Once the phase is open, it cannot complete without us.
        let mut current = B::load(&self.state, Ordering::Relaxed);
        while !self.collecting(current) {
            current = self.await_next_phase(operation, 1, Self::remaining)?;
        }
        update::<S, B, _>(&self.expected, Ordering::Relaxed, |word| {
            if word & EXPECTED == 0 {
                Err(UsageError::new(
                    operation,
                    UsageErrorKind::ArrivalExceedsRemaining { n: 1, remaining: 0 },
                ))
            } else {
                Ok(word - 1)
            }
        })?;
        // The arrival sets the sticky bit, and its release orders the decrement before
        // the reopening's read.
        match self.arrive_checked_setting(operation, 1, DROPPED) {
            Ok(_token) => Ok(()),
            Err(error) => {
                B::fetch_add(&self.expected, 1, Ordering::Relaxed);
                Err(error)
            }
        }
    }
}

/// The panic of an unchecked arrival of `n` when the phase had `remaining` left.
#[cold]
#[inline(never)]
fn too_many_arrivals(n: u32, remaining: u32) -> ! {
    violated(UsageError::new(
        ARRIVE,
        UsageErrorKind::ArrivalExceedsRemaining { n, remaining },
    ))
}
