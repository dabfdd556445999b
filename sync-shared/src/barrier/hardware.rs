//! The hardware barrier a backend may put in place of a [`Barrier`]'s
//! words: the GPU's `mbarrier`, for a block-scope barrier in block-shared memory.
//!
//! Rust moves values, so a barrier cannot be built in place the way libcu++'s
//! `init(&bar, n)` builds one in `__shared__` memory (where it checks `__isShared` and
//! runs `mbarrier.init`). Instead a `Barrier` is built in its portable form, and placing
//! it where the backend's hardware serves it ([`Barrier::init_in_place`], which
//! `SharedSlot::init_block` calls) turns it into the hardware object, kept in the
//! barrier's own `hardware` field, and marks the expected word. From then on where the
//! barrier lies says which form it is in (an address-space test, which reads no
//! memory: libcu++ tests `__isShared` the same way). Bytes written there by other means
//! are caught by the token of their first arrival, and in the checked build of the
//! kernels and the parity waits by the marker (see `Barrier`'s "Hardware form").

use super::{check_count, ArrivalToken, Barrier, Completion, HardwareToken, EXPECTED, HARDWARE};
use crate::backend::Backend;
use crate::error::{
    violated, violated_in_loop, violated_in_loop_unless, Interrupted, UsageError, UsageErrorKind,
};
use crate::primitive::Ordering;
use crate::scope::Scope;
use crate::wait::{Limits, StopScope};

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

    /// Whether the hardware itself ends the kernel at the first barrier instruction
    /// on an unplaced object (the zero bytes that [`Barrier::new`] writes), so that
    /// a loop of `arrive_and_wait` need not test each arrival's token for it.
    const FAULTS_ON_UNPLACED: bool;

    /// Whether a barrier at `object` (its first byte, in the same memory as its
    /// hardware word) is in the hardware form (for the GPU: a block-scope barrier in
    /// block-shared memory). Reads no memory, so that a compiler may hoist it out of
    /// the caller's loop, or fold it where it knows where `object` lies (the same
    /// address that `SharedSlot::init_block` tells the compiler about).
    fn available(object: *const u64) -> bool;

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
    /// lanes, may all get the state from before all of their arrivals.) At least 1
    /// for every token of an initialized object.
    fn pending(token: u64) -> u32;

    /// Whether `token` can have come from an initialized object: `false` for the
    /// token of an arrival on an object of zero bytes (an unplaced barrier's hardware
    /// word), `true` for every token of an initialized one.
    fn placed(token: u64) -> bool;

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
    const FAULTS_ON_UNPLACED: bool = false;

    #[inline(always)]
    fn available(_object: *const u64) -> bool {
        false
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
    fn placed(_token: u64) -> bool {
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
    /// Whether the barrier is in the hardware form: where it lies, nothing else (on
    /// the GPU one `isspacep` of the barrier's own address, which reads no memory,
    /// which the compiler hoists out of a loop of phases, and which it folds away
    /// where it was told where that address lies). Every barrier at such a place must
    /// have been placed ([`place_in_hardware`](Self::place_in_hardware)); the hardware
    /// paths check the marker that placing sets, or the token of their arrival, after
    /// their first instruction, off the path from the arrival to the wait
    /// ([`check_token`](Self::check_token)), or leave it to the hardware's own fault
    /// ([`arrive_and_wait_in_hardware`](Self::arrive_and_wait_in_hardware)).
    #[inline(always)]
    pub(super) fn in_hardware_form(&self) -> bool {
        Self::HAS_HARDWARE && Hw::<S, B>::available((self as *const Self).cast())
    }

    /// Turns a fresh barrier that lies where the hardware serves it into the hardware
    /// object and sets the expected word's marker; elsewhere does nothing.
    ///
    /// # Safety
    ///
    /// No other thread uses the barrier until a release-acquire pair at its scope (a
    /// block barrier, for `Block`) orders this call before that use.
    pub(super) unsafe fn place_in_hardware(&self, operation: &'static str) {
        if !self.in_hardware_form() {
            return;
        }
        let marker = B::load(&self.expected, Ordering::Relaxed);
        let expected = marker & EXPECTED;
        let fresh = marker & HARDWARE == 0
            && B::load(&self.state, Ordering::Relaxed) == Self::phase_start(0, expected);
        if !fresh {
            violated(UsageError::new(operation, UsageErrorKind::PlacedAfterUse));
        }
        let arrivals = expected + Self::RESERVED;
        let most = Hw::<S, B>::MAX_EXPECTED - Self::RESERVED;
        if !(1..=Hw::<S, B>::MAX_EXPECTED).contains(&arrivals) {
            violated(UsageError::new(
                operation,
                UsageErrorKind::ExceedsMax {
                    value: expected,
                    max: most,
                },
            ));
        }
        // SAFETY: `available` held, and nobody else uses the object yet (the contract).
        unsafe { Hw::<S, B>::init(self.hardware.get(), arrivals) };
        B::store(&self.expected, expected | HARDWARE, Ordering::Relaxed);
    }

    /// The expected word, to tell whether the barrier, in the hardware form, was
    /// placed: bytes written into block-shared memory by other means hold no hardware
    /// object. A relaxed load: the placing thread's store reached this thread through
    /// whatever ordered the placing before its use.
    ///
    /// Arrivals check their token instead ([`check_token`](Self::check_token)) and
    /// load this only in the checked build: even issued between the arrival and the
    /// wait, off the path from one to the other, the load made a block's phase far
    /// slower (docs/measurements.md, `Barrier::placed_marker`). The parity waits,
    /// which have no token, load it.
    #[inline(always)]
    pub(super) fn placed_marker(&self) -> u32 {
        B::load(&self.expected, Ordering::Relaxed)
    }

    /// In the checked build of the kernels, traps with its message before an
    /// operation's first hardware instruction unless the barrier was placed: on sm_90
    /// (Hopper) the hardware instructions on an unplaced object's zero bytes ended the
    /// kernel before the token check could print why.
    #[inline(always)]
    #[track_caller]
    fn check_placed_first(&self, operation: &'static str) {
        if cfg!(debug_assertions) {
            Self::check_placed(operation, self.placed_marker());
        }
    }

    /// Traps unless `marker` ([`placed_marker`](Self::placed_marker)) says placed.
    #[inline(always)]
    #[track_caller]
    pub(super) fn check_placed(operation: &'static str, marker: u32) {
        if marker & HARDWARE == 0 {
            violated_in_loop(|| UsageError::new(operation, UsageErrorKind::NotPlaced));
        }
    }

    /// Traps unless the arrival of `n` that returned `state` came from a placed
    /// object ([`HardwareBarrier::placed`]: one compare in registers; an unplaced
    /// barrier's hardware word holds zero, which `new` writes) and, where a phase can
    /// expect fewer than `n` (plus the reserved arrival), unless it expected them
    /// (`pending`, what the phase still expected). A phase of a placed barrier without
    /// completion function always expects at least one arrival, so a single arrival
    /// skips that test: the decoding of the count sat between the arrival and the wait
    /// and cost a 128-thread block's phase several ns. The checked build of the
    /// kernels checks the marker before the arrival instead
    /// ([`check_placed_first`](Self::check_placed_first)), which names the error.
    #[inline(always)]
    #[track_caller]
    fn check_token(&self, operation: &'static str, n: u32, state: u64, pending: u32) {
        if !Hw::<S, B>::placed(state) {
            violated_in_loop(|| UsageError::new(operation, UsageErrorKind::NotPlaced));
        }
        let needed = n + Self::RESERVED;
        if needed > 1 && pending < needed {
            // The hardware counted an arrival its phase did not expect.
            violated_in_loop(|| {
                UsageError::new(
                    operation,
                    UsageErrorKind::ArrivalExceedsRemaining {
                        n,
                        remaining: pending.saturating_sub(Self::RESERVED),
                    },
                )
            });
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
        self.check_placed_first(operation);
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
        self.check_token(operation, n, state, pending);
        if !F::IS_NONE && pending == n + Self::RESERVED {
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

    pub(super) fn wait_in_hardware<T: StopScope<B>>(
        &self,
        state: u64,
        limits: &Limits<'_, S, B, T>,
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
    /// arrival, then the hardware's suspending test until the phase completes, and in
    /// the release build of the kernels nothing else, so that a loop of phases runs
    /// at the hardware's pace.
    ///
    /// Any instruction besides the wait that reads the arrival's state (one compare for
    /// the token check, before or after the wait, as a branch or a predicated `trap`)
    /// slows the phase (docs/measurements.md, `Barrier::arrive_and_wait_in_hardware`):
    /// the warp stalls until the state comes back, and the last arrival's stall is the
    /// phase's. So the token is checked only where the hardware would not catch an
    /// unplaced barrier itself ([`HardwareBarrier::FAULTS_ON_UNPLACED`]; sm_90's
    /// `mbarrier` does, and `tests/gpu_device_checks.rs` checks that such a kernel still
    /// ends), before any retry, so that a broken precondition traps instead of waiting
    /// for a phase that never completes; the checked build of the kernels tests the
    /// marker before the arrival and prints why. Nothing here calls a function in the
    /// release build of the kernels ([`violated_in_loop_unless`]), so this adds no call
    /// to a caller's loop of phases.
    #[inline(always)]
    #[track_caller]
    pub(super) fn arrive_and_wait_in_hardware(&self) {
        const OPERATION: &str = "Barrier::arrive_and_wait";
        let object = self.hardware.get();
        self.check_placed_first(OPERATION);
        // SAFETY: the caller saw the hardware form; an unplaced object is caught by
        // the hardware or below before a second instruction uses it.
        let state = unsafe { Hw::<S, B>::arrive(object, 1, false) };
        // A phase of a placed barrier without completion always expects the arrival
        // of one thread, so placement is all the token check has to test.
        let placed = Hw::<S, B>::FAULTS_ON_UNPLACED || Hw::<S, B>::placed(state);
        // SAFETY: as above. An unplaced object's state ends the loop at once.
        while !(unsafe { Hw::<S, B>::wait(object, state, true) } | !placed) {}
        if !Hw::<S, B>::FAULTS_ON_UNPLACED {
            violated_in_loop_unless(placed, || {
                UsageError::new(OPERATION, UsageErrorKind::NotPlaced)
            });
        }
    }

    /// `arrive_and_wait` with a completion function, in the hardware form: the
    /// arrival (whose last thread runs the completion), then the hardware's suspending
    /// test until the phase completes, without the limits of a timed wait.
    #[inline(always)]
    #[track_caller]
    pub(super) fn arrive_and_wait_in_hardware_completing(&self) {
        let Some(token) = self.arrive_in_hardware("Barrier::arrive_and_wait", 1, false) else {
            return;
        };
        let object = self.hardware.get();
        let state = token.hardware.map_or(0, |hardware| hardware.state);
        // SAFETY: the token came from this object in its hardware form.
        while !unsafe { Hw::<S, B>::wait(object, state, true) } {}
    }

    pub(super) fn test_in_hardware(&self, state: u64) -> bool {
        // SAFETY: the token came from this object in its hardware form.
        unsafe { Hw::<S, B>::wait(self.hardware.get(), state, false) }
    }

    #[track_caller]
    pub(super) fn wait_parity_in_hardware(&self, parity: bool) {
        let marker = self.placed_marker();
        // SAFETY: the caller saw the hardware form; an unplaced object is caught
        // before the test is repeated.
        let done = unsafe { Hw::<S, B>::wait_parity(self.hardware.get(), parity, true) };
        Self::check_placed("Barrier::wait_parity", marker);
        if !done {
            // SAFETY: as above, and placed.
            while !unsafe { Hw::<S, B>::wait_parity(self.hardware.get(), parity, true) } {}
        }
    }

    #[track_caller]
    pub(super) fn test_parity_in_hardware(&self, parity: bool) -> bool {
        // SAFETY: the caller saw the hardware form; an unplaced object traps below.
        let done = unsafe { Hw::<S, B>::wait_parity(self.hardware.get(), parity, false) };
        Self::check_placed("Barrier::try_wait_parity", self.placed_marker());
        done
    }
}
