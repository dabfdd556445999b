//! The hardware barrier a backend may put in place of a [`Barrier`]'s
//! words: the GPU's `mbarrier`, for a block-scope barrier in block-shared memory.
//!
//! Rust moves values, so a barrier cannot be built in place the way libcu++'s
//! `init(&bar, n)` builds one in `__shared__` memory (where it checks `__isShared` and
//! runs `mbarrier.init`). Instead a `Barrier` starts in its portable form wherever it is
//! written, and its first operation at a place the backend's hardware serves turns it
//! into the hardware object (see `Barrier`'s "Hardware form"). The hardware object
//! lives in the barrier's own `hardware` field, so the portable words stay readable and
//! say which form the barrier is in.

use super::{
    check_count, ArrivalToken, Barrier, Completion, HardwareToken, CONVERTING, EXPECTED, HARDWARE,
    PORTABLE_ONLY,
};
use crate::backend::Backend;
use crate::error::{violated, Interrupted, UsageError, UsageErrorKind};
use crate::primitive::Ordering;
use crate::scope::Scope;
use crate::wait::Limits;

/// A hardware barrier object: a 64-bit word that only the backend's barrier
/// instructions touch, with phases, an expected count, arrivals that return a state
/// token, and waits on a token or on a phase parity.
///
/// # Safety
///
/// An implementation whose [`available`](HardwareBarrier::available) returns `true`
/// provides a barrier with the semantics of PTX's `mbarrier` at the scope of the
/// backend it is named by: arrivals release, a wait that returns `true` acquires every
/// write made before the phase's arrivals, phases alternate parity starting with
/// parity `false`, and `arrive_drop` lowers the expected count of later phases.
pub unsafe trait HardwareBarrier {
    /// The largest expected count the hardware object holds.
    const MAX_EXPECTED: u32;

    /// Whether a barrier whose hardware word is at `object` can use the hardware object
    /// (for the GPU: a block-scope barrier in block-shared memory).
    fn available(object: *const u64) -> bool;

    /// The threads running this call together (a GPU warp's active lanes), for
    /// [`regroup`](Self::regroup).
    fn group() -> u32;

    /// Waits until every thread of `group` has called this (reconverges a warp).
    fn regroup(group: u32);

    /// Makes `object` a hardware barrier of `expected` arrivals per phase, in its first
    /// phase.
    ///
    /// # Safety
    ///
    /// `available(object)`; no other thread uses the object until a release-acquire
    /// pair at the backend's scope orders this call before its use.
    unsafe fn init(object: *mut u64, expected: u32);

    /// Arrives `n` times; returns the state token of the phase arrived in. With `drop`,
    /// also lowers the expected count of later phases by `n`.
    ///
    /// # Safety
    ///
    /// `object` is an initialized hardware barrier.
    unsafe fn arrive(object: *mut u64, n: u32, drop: bool) -> u64;

    /// The arrivals the phase still expected when `token` was taken, before the
    /// arrival that returned it. (Threads that arrive in one instruction, a GPU warp's
    /// lanes, may all get the state from before all of their arrivals.)
    fn pending(token: u64) -> u32;

    /// Whether the phase of `token` has completed. With `suspend`, the hardware may
    /// hold the thread for a while before answering `false`.
    ///
    /// # Safety
    ///
    /// `object` is an initialized hardware barrier; `token` came from it.
    unsafe fn wait(object: *mut u64, token: u64, suspend: bool) -> bool;

    /// Whether the phase with parity `parity` has completed (that is, whether the
    /// current phase's parity differs), suspending as in [`wait`](Self::wait).
    ///
    /// # Safety
    ///
    /// `object` is an initialized hardware barrier.
    unsafe fn wait_parity(object: *mut u64, parity: bool, suspend: bool) -> bool;
}

/// No hardware barrier: every barrier keeps its portable form.
#[derive(Clone, Copy, Debug)]
pub enum NoHardwareBarrier {}

// SAFETY: `available` is always `false`, so no other method is ever called.
unsafe impl HardwareBarrier for NoHardwareBarrier {
    const MAX_EXPECTED: u32 = 0;

    #[inline(always)]
    fn available(_object: *const u64) -> bool {
        false
    }
    fn group() -> u32 {
        unreachable!("NoHardwareBarrier is never available")
    }
    fn regroup(_group: u32) {
        unreachable!("NoHardwareBarrier is never available")
    }
    unsafe fn init(_object: *mut u64, _expected: u32) {
        unreachable!("NoHardwareBarrier is never available")
    }
    unsafe fn arrive(_object: *mut u64, _n: u32, _drop: bool) -> u64 {
        unreachable!("NoHardwareBarrier is never available")
    }
    fn pending(_token: u64) -> u32 {
        unreachable!("NoHardwareBarrier is never available")
    }
    unsafe fn wait(_object: *mut u64, _token: u64, _suspend: bool) -> bool {
        unreachable!("NoHardwareBarrier is never available")
    }
    unsafe fn wait_parity(_object: *mut u64, _parity: bool, _suspend: bool) -> bool {
        unreachable!("NoHardwareBarrier is never available")
    }
}

/// The hardware barrier type of backend `B` at scope `S`.
type Hw<S, B> = <B as Backend<S>>::HardwareBarrier;

impl<S: Scope, B: Backend<S>, F: Completion> Barrier<S, B, F> {
    /// Whether the barrier is (or has just become) the backend's hardware barrier.
    ///
    /// One acquire load of the expected word: its marker is set only by a conversion,
    /// which only an object at a place the hardware serves undergoes, so a marked
    /// object needs no address-space test (on the GPU that test, `isspacep`, cost
    /// 19 ns per phase of a 128-thread block on an H100). An unmarked object at such a
    /// place is converted by its first user.
    #[inline(always)]
    pub(super) fn in_hardware_form(&self) -> bool {
        if !Self::HAS_HARDWARE {
            return false;
        }
        let marker = B::load(&self.expected, Ordering::Acquire);
        self.is_hardware_marker(marker) || self.convert_if_available(marker)
    }

    /// Whether the barrier has been converted: the marker alone, without converting
    /// a fresh barrier (the caller's slow path does).
    #[inline(always)]
    pub(super) fn marked_hardware(&self) -> bool {
        self.is_hardware_marker(B::load(&self.expected, Ordering::Acquire))
    }

    #[inline(always)]
    fn is_hardware_marker(&self, marker: u32) -> bool {
        if marker & HARDWARE == 0 {
            return false;
        }
        // A copy of a converted barrier's bytes elsewhere would carry the marker
        // (only unsafe code makes one): the checked build catches it.
        debug_assert!(
            Hw::<S, B>::available(self.hardware.get()),
            "a Barrier marked as a hardware barrier lies where the hardware does not serve it (its bytes were copied)"
        );
        true
    }

    /// The cold half of [`in_hardware_form`](Self::in_hardware_form): an unmarked
    /// object, converted if it lies where the hardware serves it.
    #[cold]
    #[inline(never)]
    fn convert_if_available(&self, marker: u32) -> bool {
        Hw::<S, B>::available(self.hardware.get()) && self.convert(marker)
    }

    /// Turns a fresh barrier into the hardware form, or marks it portable for good
    /// (it has been used already, or its count does not fit the hardware). Concurrent
    /// first users wait for the one that claimed the conversion.
    ///
    /// Memory ordering: the claimer's release store of the marker follows the
    /// hardware initialization; every other user loads the marker with acquire.
    #[inline(always)]
    fn convert(&self, marker: u32) -> bool {
        // The threads that convert together (one claims, the others wait for it) leave
        // together: on the GPU, a warp left diverged here would stay so, and take every
        // later phase lane by lane.
        let together = Hw::<S, B>::group();
        let hardware = self.convert_or_wait(marker);
        Hw::<S, B>::regroup(together);
        hardware
    }

    fn convert_or_wait(&self, mut marker: u32) -> bool {
        loop {
            if marker & HARDWARE != 0 {
                return true;
            }
            if marker & PORTABLE_ONLY != 0 {
                return false;
            }
            if marker & CONVERTING != 0 {
                B::yield_now();
                marker = B::load(&self.expected, Ordering::Acquire);
                continue;
            }
            let expected = marker & EXPECTED;
            let arrivals = expected + Self::RESERVED;
            // Every operation at this place converts first, so a barrier still in its
            // first phase without arrivals is one nobody has used.
            let fresh = B::load(&self.state, Ordering::Relaxed) == Self::phase_start(0, expected);
            let fits = (1..=Hw::<S, B>::MAX_EXPECTED).contains(&arrivals);
            let claim = if fresh && fits {
                CONVERTING
            } else {
                PORTABLE_ONLY
            };
            if let Err(actual) = B::compare_exchange(
                &self.expected,
                marker,
                marker | claim,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                marker = actual;
                continue;
            }
            if claim == PORTABLE_ONLY {
                return false;
            }
            // SAFETY: `available` held; the other users wait for the marker below.
            unsafe { Hw::<S, B>::init(self.hardware.get(), arrivals) };
            B::store(&self.expected, expected | HARDWARE, Ordering::Release);
            return true;
        }
    }

    /// `arrive` (or `arrive_and_drop`, with `drop`) on the hardware barrier; `None` in
    /// the portable form.
    #[inline(always)]
    pub(super) fn arrive_in_hardware(
        &self,
        operation: &'static str,
        n: u32,
        drop: bool,
    ) -> Option<ArrivalToken> {
        if !self.in_hardware_form() {
            return None;
        }
        let object = self.hardware.get();
        if let Err(error) = check_count(operation, n, Hw::<S, B>::MAX_EXPECTED) {
            violated(error)
        }
        let (state, pending) = if F::IS_NONE {
            // SAFETY: the object is in its hardware form.
            let state = unsafe { Hw::<S, B>::arrive(object, n, drop) };
            // At least the arrivals of every thread that arrived in the same
            // instruction: enough to catch a phase that expected fewer.
            (state, Hw::<S, B>::pending(state))
        } else {
            self.arrive_in_hardware_combined(operation, object, n, drop)
        };
        let needed = n + Self::RESERVED;
        if pending < needed {
            // The hardware counted an arrival its phase did not expect.
            violated(UsageError::new(
                operation,
                UsageErrorKind::ArrivalExceedsRemaining {
                    n,
                    remaining: pending.saturating_sub(Self::RESERVED),
                },
            ));
        }
        if !F::IS_NONE && pending == needed {
            self.complete_in_hardware(object);
        }
        Some(ArrivalToken {
            parity: false,
            complete: false,
            hardware: Some(HardwareToken {
                object: object as usize,
                state,
                parity_of: Self::parity_in_hardware,
            }),
        })
    }

    /// With a completion function, exactly one thread must learn that its arrival left
    /// only the reserved one, but the lanes of a warp that arrive in one instruction
    /// can all get the same state back. So the lanes arriving together arrive as one
    /// (the group's total, by its leader), and each works out the count it would have
    /// seen arriving alone after the members before it. Returns the state and that
    /// count.
    fn arrive_in_hardware_combined(
        &self,
        operation: &'static str,
        object: *mut u64,
        n: u32,
        drop: bool,
    ) -> (u64, u32) {
        // Drops and plain arrivals form separate groups (one instruction each).
        let key = if drop { &self.expected } else { &self.state };
        let group = B::combine(key, n);
        if group.is_alone() {
            // SAFETY: the object is in its hardware form.
            let state = unsafe { Hw::<S, B>::arrive(object, n, drop) };
            return (state, Hw::<S, B>::pending(state));
        }
        if let Err(error) = check_count(operation, group.total, Hw::<S, B>::MAX_EXPECTED) {
            violated(error)
        }
        let led = if group.before == 0 {
            // SAFETY: the object is in its hardware form.
            unsafe { Hw::<S, B>::arrive(object, group.total, drop) }
        } else {
            0
        };
        let state = B::broadcast(&group, led);
        (
            state,
            Hw::<S, B>::pending(state).saturating_sub(group.before),
        )
    }

    /// With a completion function the hardware phase expects one arrival more; the
    /// thread whose arrival left only that one runs the completion, then makes it.
    #[inline(never)]
    fn complete_in_hardware(&self, object: *mut u64) {
        // The other arrivals released at this scope, and this thread's arrival saw
        // them all (the hardware count): the fence makes theirs visible here.
        B::fence(Ordering::Acquire);
        self.run_completion();
        // SAFETY: the object is in its hardware form; this is the reserved arrival,
        // which releases the completion's writes with the phase.
        unsafe { Hw::<S, B>::arrive(object, 1, false) };
    }

    /// The parity of the phase `state` was taken in (asked for rarely, so worked out
    /// when asked): the current parity read before the phase is seen incomplete is
    /// that phase's, and the one read after it is seen complete belongs to the phase
    /// after it (the caller has not arrived again, so no later one has completed).
    ///
    /// # Safety
    ///
    /// `object` is a hardware barrier and `state` came from it.
    unsafe fn parity_in_hardware(object: *mut u64, state: u64) -> bool {
        // SAFETY: per the contract. The phase of parity 0 has completed exactly when
        // the current phase is odd.
        unsafe {
            let odd_before = Hw::<S, B>::wait_parity(object, false, false);
            if Hw::<S, B>::wait(object, state, false) {
                !Hw::<S, B>::wait_parity(object, false, false)
            } else {
                odd_before
            }
        }
    }

    pub(super) fn wait_in_hardware(
        &self,
        state: u64,
        limits: &Limits<'_, S, B>,
    ) -> Result<(), Interrupted> {
        let object = self.hardware.get();
        loop {
            // SAFETY: the token came from this object in its hardware form.
            if unsafe { Hw::<S, B>::wait(object, state, true) } {
                return Ok(());
            }
            if let Err(interrupted) = limits.check() {
                return if self.test_in_hardware(state) {
                    Ok(())
                } else {
                    Err(interrupted)
                };
            }
        }
    }

    /// `arrive_and_wait` without a completion function, in the hardware form: the
    /// arrival, then the wait; the count check (an arrival the phase did not
    /// expect) after the first test instead of before it, off the path from the
    /// arrival to the wait, but before any retry, so that a broken precondition
    /// traps instead of waiting for a phase that may never complete.
    #[inline(always)]
    #[track_caller]
    pub(super) fn arrive_and_wait_in_hardware(&self) {
        let object = self.hardware.get();
        // SAFETY: the caller saw the hardware form.
        let state = unsafe { Hw::<S, B>::arrive(object, 1, false) };
        // SAFETY: the token came from this object in its hardware form.
        let done = unsafe { Hw::<S, B>::wait(object, state, true) };
        if Hw::<S, B>::pending(state) < 1 {
            self.arrival_not_expected();
        }
        if !done {
            self.wait_in_hardware_unlimited(state);
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn arrival_not_expected(&self) -> ! {
        violated(UsageError::new(
            "Barrier::arrive",
            UsageErrorKind::ArrivalExceedsRemaining { n: 1, remaining: 0 },
        ))
    }

    /// [`wait_in_hardware`](Self::wait_in_hardware) without limits: the hardware's
    /// suspending test in a loop, nothing else.
    #[inline(always)]
    pub(super) fn wait_in_hardware_unlimited(&self, state: u64) {
        let object = self.hardware.get();
        // SAFETY: the token came from this object in its hardware form.
        while !unsafe { Hw::<S, B>::wait(object, state, true) } {}
    }

    pub(super) fn test_in_hardware(&self, state: u64) -> bool {
        // SAFETY: the token came from this object in its hardware form.
        unsafe { Hw::<S, B>::wait(self.hardware.get(), state, false) }
    }

    pub(super) fn wait_parity_in_hardware(&self, parity: bool) {
        // SAFETY: the caller saw the hardware form.
        while !unsafe { Hw::<S, B>::wait_parity(self.hardware.get(), parity, true) } {}
    }

    pub(super) fn test_parity_in_hardware(&self, parity: bool) -> bool {
        // SAFETY: the caller saw the hardware form.
        unsafe { Hw::<S, B>::wait_parity(self.hardware.get(), parity, false) }
    }
}
