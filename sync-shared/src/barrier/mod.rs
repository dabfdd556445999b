//! [`Barrier`]: a reusable phase barrier with an optional completion function.
//!
//! # Algorithm
//!
//! One word holds the phase parity (bit 31), the current phase's arrival count (bits
//! 2–30, counting up), a sticky "some thread dropped out" bit (bit 1) and a "sleepers"
//! bit (bit 0); a second word holds the count each later phase expects (lowered by
//! `arrive_and_drop`). A phase of `e` arrivals starts its count at `2²⁹ − e`, so an
//! arrival is one add of `n`, and the add that brings the count to `2²⁹` carries into
//! the parity bit: the last arrival flips the phase in the same read-modify-write that
//! counts it, and waiters, polling the parity, are released by it. (The single-word
//! arrival-and-phase idea is libcu++'s `__barrier_base` for barriers without
//! completion; this encoding is our own.) The count is then zero and the completing
//! thread adds the next phase's `2²⁹ − e` ("reopens" the phase) without waiting for the
//! add's reply. Arrivals released early are counted on top of zero meanwhile, so nobody
//! waits for the reopening; if a phase's arrivals all come early, the last of them sees
//! it (its count reaches `e` before the reopening) and reopens the phase after: the two
//! reopenings add up in either order, the count passes the carry once (completing that
//! phase) and ends at the start of the next. Bit 30 (count ≥ 2²⁸) tells an open phase
//! from one whose reopening is pending, which bounds `max()` at 2²⁸ − 1.
//!
//! The reopening needs `e`. Each arrival reads the expected word after its add
//! (through [`Backend::load_cached`]: on the GPU from the SM's own cache, off the
//! contended line; before the add, the read would hold the add's release back). A
//! thread arriving alone (a block's leader) issues the read right behind the add, so
//! both round trips overlap and the completing thread reopens as soon as its add
//! returns; the lanes of a combined group read once the leader's reply is shared.
//! That read is only trusted while no thread has ever dropped out: a drop lowers the
//! expected word, then sets the sticky bit in its (release) arrival, and a completing
//! thread that sees the bit takes an acquire fence and reads the word again.
//!
//! With a completion function a phase expects one arrival more, reserved for the
//! completing thread: the arrival that leaves only the reserved one runs the
//! completion, then stores the next phase (flipped parity, its fresh count) in one
//! write, which releases the waiters. Arrivals that a backend can combine (a GPU warp's
//! lanes arriving together) take their total in one add.
//!
//! A backend may run a whole `arrive_and_wait` of this protocol in its own instructions
//! ([`Backend::barrier_phase_together`]: on the GPU, a whole warp's arrival as one, and
//! a block's for `WholeBlock`, in PTX); it follows the unchecked arrival step for step,
//! except that only a completing or early arrival reads the expected word, after its
//! acquire fence (there the read beside every arrival cost more than the round trip it
//! saves the completing thread: `sync_device`'s `warp_barrier_phase`).
//!
//! The checked forms (the host's `arrive`, every `try_` form) take arrivals with a
//! compare-and-swap that checks the count first (against `e` less the early arrivals
//! while a reopening is pending), and wait only while a completion function runs, in
//! bounded sleeps: the thread that ends the wait may be a GPU thread, which cannot wake
//! a host thread.
//!
//! # Memory ordering
//!
//! Arrivals are release read-modify-writes on the state word, so they form one release
//! sequence, which the reopening add continues. A waiter loads the state with acquire
//! ordering and sees the parity flipped by the last of them: everything written before
//! any arrival of the phase happens before its wait returns. The completing thread
//! takes an acquire fence after its arrival (which read every other arrival) instead:
//! its own wait returns at once. With a completion, that fence comes before the
//! completion runs, and the release store of the next phase publishes the completion's
//! writes to every waiter (C++ [thread.barrier.class]).
//!
//! # Hardware form
//!
//! Where the backend has a hardware barrier for the place the object sits (the GPU's
//! `mbarrier`, for a `Block`-scope barrier in block-shared memory), placing a fresh
//! barrier there ([`Barrier::init_in_place`], which `SharedSlot::init_block` calls)
//! turns it into that hardware object, kept in the barrier's third word, and marks the
//! expected-count word; from then on arrivals and waits are the hardware's
//! instructions (see [`hardware`]). Which form a barrier is in follows from where it
//! lies (on the GPU, `isspacep.shared`, which reads no memory and leaves the caller's
//! loop), as libcu++'s `barrier<thread_scope_block>` tests `__isShared`.
//! `arrive_and_wait` without a completion function is inline and short: the arrival,
//! the first test of the wait, then the checks (placed, not over-arrived), and no call
//! in the release build of the kernels; the portable path is out of line.

use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::time::Duration;

use crate::backend::{Backend, Word};
use crate::error::{violated, Interrupted, Stopped, UsageError, UsageErrorKind};
use crate::message::ConstMessage;
use crate::primitive::{const_fn, Ordering};
use crate::scope::{Includes, Scope};
use crate::stop_token::StopToken;
use crate::wait::{Limits, StopScope};

pub mod hardware;
mod portable;

pub use hardware::{HardwareBarrier, NoHardwareBarrier};

use encoding::{COUNT, DROPPED, EXPECTED, HARDWARE, OPEN, PARITY, SLEEPERS, UNIT};

/// The portable form's two words, bit by bit (see the module documentation). Public
/// only for a backend that writes an arrival in its own instructions
/// ([`Backend::barrier_phase_together`], the GPU's `WholeBlock`); not a stable
/// interface.
#[doc(hidden)]
pub mod encoding {
    /// State word: parity of the current phase; the carry out of the count flips it.
    pub const PARITY: u32 = 1 << 31;
    /// State word: set while the count holds an open phase's arrivals (count ≥ 2²⁸).
    pub const OPEN: u32 = 1 << 30;
    /// State word: one arrival in the count field (bits 2–30).
    pub const UNIT: u32 = 4;
    /// State word: the count field.
    pub const COUNT: u32 = PARITY - UNIT;
    /// State word: some thread has dropped out (sticky): the expected word may have
    /// changed since the barrier was built.
    pub const DROPPED: u32 = 2;
    /// State word: at least one thread may be parked on it.
    pub const SLEEPERS: u32 = 1;

    /// Expected word: the arrivals each later phase expects.
    pub const EXPECTED: u32 = (1 << 28) - 1;
    /// Expected word: the object was placed into its hardware form (the state word is
    /// unused from then on).
    pub const HARDWARE: u32 = 1 << 31;
}

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
/// On the GPU, a `Barrier<Block>` in block-shared memory is the hardware `mbarrier`
/// (as libcu++'s `barrier<thread_scope_block>` is), with the same API: place it with
/// `SharedSlot::init_block` (or call [`init_in_place`](Self::init_in_place) after
/// writing it there). Elsewhere an arrival is one atomic add and a wait polls one word.
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
    /// `PARITY | count | DROPPED | SLEEPERS`.
    state: Word,
    /// `HARDWARE | expected`.
    expected: Word,
    /// The backend's hardware barrier, in the hardware form; unused otherwise.
    hardware: UnsafeCell<u64>,
    /// Run only by the completing arrival, which the state word makes exclusive.
    completion: UnsafeCell<F>,
    _backend: PhantomData<(S, fn() -> B)>,
}

// SAFETY: the completion function is only called by the one thread whose arrival
// completed the phase, and the release-acquire chain of arrivals orders those calls;
// the hardware word is only touched by the backend's atomic barrier instructions.
unsafe impl<S: Scope, B: Backend<S>, F: Completion + Send> Sync for Barrier<S, B, F> {}

/// What [`Barrier::arrive`] returns and [`Barrier::wait`] takes: the phase of the
/// arrival.
#[must_use = "a token is needed to wait for the phase to complete"]
#[derive(Debug, PartialEq, Eq)]
pub struct ArrivalToken {
    /// The phase's parity, for a barrier in its portable form.
    parity: bool,
    /// The arrival completed the phase and acquired the others' writes: waits return
    /// at once.
    complete: bool,
    /// For a barrier in its hardware form.
    hardware: Option<HardwareToken>,
}

/// The hardware barrier's state from an arrival, and how to read the phase's parity.
#[derive(Clone, Copy, Debug)]
struct HardwareToken {
    /// The hardware object's address (an integer, so that tokens stay `Send`).
    object: usize,
    state: u64,
    /// Works out the parity of the phase of `state`, from the object.
    parity_of: unsafe fn(*mut u64, u64) -> bool,
}

impl PartialEq for HardwareToken {
    fn eq(&self, other: &Self) -> bool {
        self.object == other.object && self.state == other.state
    }
}

impl Eq for HardwareToken {}

impl ArrivalToken {
    /// The parity of the phase this arrival belongs to: [`Barrier::wait_parity`]
    /// with this value waits for the same phase.
    ///
    /// In the hardware form it is read from the barrier when asked (three reads of
    /// the hardware object): ask before this thread arrives again.
    pub fn parity(&self) -> bool {
        match self.hardware {
            // SAFETY: the token came from the hardware object at `object`, which lives
            // as long as the barrier the token's phase belongs to.
            Some(token) => unsafe { (token.parity_of)(token.object as *mut u64, token.state) },
            None => self.parity,
        }
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
    /// Arrivals reserved for the completing thread in each phase.
    const RESERVED: u32 = if F::IS_NONE { 0 } else { 1 };

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
            if expected > EXPECTED {
                ConstMessage::new()
                    .text("Barrier::new: expected = ")
                    .number(expected as u64)
                    .text(" exceeds Barrier::max() = ")
                    .number(EXPECTED as u64)
                    .panic();
            }
            Self {
                state: Word::new(Self::phase_start(0, expected)),
                expected: Word::new(expected),
                hardware: UnsafeCell::new(0),
                completion: UnsafeCell::new(completion),
                _backend: PhantomData,
            }
        }
    }

    /// Like [`with_completion`](Self::with_completion), but returns an error instead of
    /// panicking.
    pub fn try_with_completion(expected: u32, completion: F) -> Result<Self, UsageError> {
        if expected > EXPECTED {
            return Err(UsageError::new(
                "Barrier::new",
                UsageErrorKind::ExceedsMax {
                    value: expected,
                    max: EXPECTED,
                },
            ));
        }
        Ok(Self::with_completion(expected, completion))
    }

    /// The largest expected count a barrier supports: 2²⁸ − 1.
    pub const fn max() -> u32 {
        EXPECTED
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
    /// panic traps the kernel) and in the hardware form, which find the broken
    /// precondition after the arrival counted.
    #[inline]
    #[track_caller]
    pub fn arrive(&self, n: u32) -> ArrivalToken {
        self.arrive_grouped(n, false)
    }

    /// [`arrive`](Self::arrive) by a thread that runs alone by construction and
    /// arrives on behalf of others (a GPU block's thread 0 in `WholeBlock`): skips the
    /// backend's grouping of threads that arrive together, whose code (even the test
    /// that finds a lane alone) slowed each phase of a device barrier with one arrival
    /// per block (docs/measurements.md, `Barrier::arrive_alone`).
    #[doc(hidden)]
    #[inline]
    #[track_caller]
    pub fn arrive_alone(&self, n: u32) -> ArrivalToken {
        self.arrive_grouped(n, true)
    }

    #[inline(always)]
    #[track_caller]
    fn arrive_grouped(&self, n: u32, alone: bool) -> ArrivalToken {
        if let Some(token) = self.arrive_in_hardware("Barrier::arrive", n, false) {
            return token;
        }
        let arrival = if B::UNCHECKED_FAST_PATHS {
            self.arrive_unchecked(n, alone)
        } else {
            self.arrive_checked("Barrier::arrive", n)
        };
        match arrival {
            Ok(token) => token,
            Err(error) => violated(error),
        }
    }

    /// Like [`arrive`](Self::arrive), but returns an error instead of panicking.
    ///
    /// In the hardware form the hardware cannot check before it counts, so a broken
    /// precondition panics (traps) as in `arrive`.
    #[inline]
    pub fn try_arrive(&self, n: u32) -> Result<ArrivalToken, UsageError> {
        if let Some(token) = self.arrive_in_hardware("Barrier::arrive", n, false) {
            return Ok(token);
        }
        self.arrive_checked("Barrier::arrive", n)
    }

    fn wait_phase<T: StopScope<B>>(
        &self,
        token: &ArrivalToken,
        limits: &Limits<'_, S, B, T>,
    ) -> Result<(), Interrupted> {
        if token.complete {
            return Ok(());
        }
        match token.hardware {
            Some(hardware) => self.wait_in_hardware(hardware.state, limits),
            None => self.wait_portable(token.parity, limits),
        }
    }

    /// Blocks until the phase of `token` completes.
    ///
    /// Acquire: everything written before every arrival of that phase, and by the
    /// completion function, is visible afterwards.
    #[inline]
    pub fn wait(&self, token: ArrivalToken) {
        let _ = self.wait_phase(&token, &Limits::NONE);
    }

    /// Whether the phase of `token` has completed (acquire when it returns `true`).
    #[inline]
    pub fn try_wait(&self, token: &ArrivalToken) -> bool {
        if token.complete {
            return true;
        }
        match token.hardware {
            Some(hardware) => self.test_in_hardware(hardware.state),
            None => !self.portable_phase_pending(token.parity),
        }
    }

    /// Waits for the phase of `token` at most `timeout`; `true` if it completed.
    pub fn try_wait_for(&self, token: &ArrivalToken, timeout: Duration) -> bool {
        self.wait_phase(token, &Limits::within(timeout)).is_ok()
    }

    /// Waits for the phase of `token` until `deadline`; `true` if it completed.
    pub fn try_wait_until(&self, token: &ArrivalToken, deadline: B::Instant) -> bool {
        self.wait_phase(token, &Limits::until(deadline)).is_ok()
    }

    /// Waits for the phase of `token`, or until `stop` is requested. The stop token
    /// may be of a wider scope than the barrier's: the wait reads it at its own scope.
    pub fn wait_stoppable<T>(
        &self,
        token: ArrivalToken,
        stop: StopToken<'_, T, B>,
    ) -> Result<(), Stopped>
    where
        T: Includes<S>,
        B: Backend<T>,
    {
        self.wait_phase(&token, &Limits::stop(stop))
            .map_err(|_| Stopped)
    }

    /// Blocks until the phase with parity `parity` completes (that is, until the
    /// current phase's parity differs from `parity`).
    ///
    /// Counterpart: libcu++ `barrier_wait_parity` / PTX `mbarrier.try_wait.parity`.
    pub fn wait_parity(&self, parity: bool) {
        if self.in_hardware_form() {
            self.wait_parity_in_hardware(parity);
        } else {
            let _ = self.wait_portable(parity, &Limits::NONE);
        }
    }

    /// Whether the phase with parity `parity` has completed.
    pub fn try_wait_parity(&self, parity: bool) -> bool {
        if self.in_hardware_form() {
            self.test_parity_in_hardware(parity)
        } else {
            !self.portable_phase_pending(parity)
        }
    }

    /// Arrives once and waits for the phase to complete.
    #[inline]
    #[track_caller]
    pub fn arrive_and_wait(&self) {
        if self.in_hardware_form() {
            if F::IS_NONE {
                self.arrive_and_wait_in_hardware();
            } else {
                self.arrive_and_wait_in_hardware_completing();
            }
            return;
        }
        if let Some((state, expected)) = self.portable_words() {
            if B::barrier_phase_together(state, expected) {
                return;
            }
        }
        if Self::HAS_HARDWARE {
            // Out of line. Where the compiler knows the barrier lies in block-shared
            // memory (`SharedSlot::init_block` tells it) this branch is gone; where
            // it does not, the call stays in the caller's loop, on the branch the
            // hardware form never takes, and costs that loop all the same: ptxas puts
            // a `YIELD` at the head of a loop that contains a call and keeps the
            // object's address out of the uniform registers. Inlined, the portable
            // path's spin loops and branches cost more (docs/measurements.md,
            // `Barrier::arrive_and_wait`).
            self.arrive_and_wait_outlined();
        } else {
            let token = self.arrive(1);
            self.wait(token);
        }
    }

    /// Whether the backend has a hardware barrier at this scope at all.
    pub(super) const HAS_HARDWARE: bool = <B as Backend<S>>::HardwareBarrier::MAX_EXPECTED > 0;

    #[inline(never)]
    #[track_caller]
    fn arrive_and_wait_outlined(&self) {
        let token = self.arrive(1);
        self.wait(token);
    }

    /// Arrives once and waits for the phase, or until `stop` is requested.
    #[track_caller]
    pub fn arrive_and_wait_stoppable<T>(&self, stop: StopToken<'_, T, B>) -> Result<(), Stopped>
    where
        T: Includes<S>,
        B: Backend<T>,
    {
        let token = self.arrive(1);
        self.wait_stoppable(token, stop)
    }

    /// Arrives once in the current phase and lowers the expected count of every later
    /// phase by one (the thread leaves the barrier).
    ///
    /// # Panics
    ///
    /// If the current phase expects no more arrivals. The barrier is left unchanged,
    /// except in the hardware form (see [`arrive`](Self::arrive)).
    #[track_caller]
    pub fn arrive_and_drop(&self) {
        if let Err(error) = self.try_arrive_and_drop() {
            violated(error)
        }
    }

    /// Like [`arrive_and_drop`](Self::arrive_and_drop), but returns an error instead of
    /// panicking (in the hardware form, a broken precondition panics as in
    /// [`try_arrive`](Self::try_arrive)).
    pub fn try_arrive_and_drop(&self) -> Result<(), UsageError> {
        const OPERATION: &str = "Barrier::arrive_and_drop";
        if let Some(_token) = self.arrive_in_hardware(OPERATION, 1, true) {
            return Ok(());
        }
        self.drop_portable(OPERATION)
    }

    /// Whether the barrier runs on the backend's hardware barrier: on the GPU (sm_90),
    /// a `Block`-scope barrier in block-shared memory.
    ///
    /// ```ignore
    /// let slot = scoped_sync::shared!(STAGE: Barrier<Block>);
    /// // SAFETY: every thread of the block runs this once.
    /// let stage = unsafe { slot.init_block(Barrier::new(scoped_sync::block_size())) };
    /// assert!(stage.uses_hardware());
    /// ```
    ///
    /// # Panics
    ///
    /// If the barrier lies where the hardware serves it but was not placed there
    /// ([`init_in_place`](Self::init_in_place)).
    #[track_caller]
    pub fn uses_hardware(&self) -> bool {
        if !self.in_hardware_form() {
            return false;
        }
        Self::check_placed("Barrier::uses_hardware", self.placed_marker());
        true
    }

    /// The state and expected words ([`encoding`]), for a backend that writes a whole
    /// arrival and wait in its own instructions: `Some` for a barrier without a
    /// completion function in the portable form. Such code must follow the unchecked
    /// arrival of this module exactly (a phase's last arrival reopens the next, an early
    /// one may reopen the one after, a drop makes the expected word authoritative).
    #[doc(hidden)]
    #[inline(always)]
    pub fn portable_words(&self) -> Option<(&Word, &Word)> {
        if F::IS_NONE && !self.in_hardware_form() {
            Some((&self.state, &self.expected))
        } else {
            None
        }
    }

    /// Finishes placing a barrier that was just written where it will be used: where
    /// the backend has a hardware barrier for that place (on the GPU, a `Block`-scope
    /// barrier in block-shared memory), builds the hardware object in the barrier and
    /// marks it; elsewhere does nothing. `SharedSlot::init_block`, `init_block_with`
    /// and `init_cluster` call it; call it yourself after writing a barrier into
    /// block-shared memory any other way (dynamic shared memory, a field of a larger
    /// object). A barrier in block-shared memory that was not placed traps at its first
    /// operation.
    ///
    /// Counterpart: libcu++ `init(&barrier, expected)` on a `__shared__` barrier.
    ///
    /// # Safety
    ///
    /// One thread calls it, and no other thread uses the barrier until a
    /// release-acquire pair at the barrier's scope orders this call before that use
    /// (on the GPU: a block barrier, `sync_block()`, after it).
    ///
    /// # Panics
    ///
    /// Where it places the barrier into the hardware form: if the barrier has been
    /// used (an arrival or a completed phase) or was placed already, or if its
    /// expected count is 0 or above the hardware's (on the GPU 2²⁰ − 1, less one with a
    /// completion function).
    ///
    /// # Examples
    ///
    /// ```ignore
    /// use scoped_sync::{dynamic_shared, sync_block, thread_in_block, Barrier, Block};
    ///
    /// let barrier = dynamic_shared::<Barrier<Block>>();
    /// if thread_in_block() == 0 {
    ///     // SAFETY: the launch asked for enough dynamic shared memory; the block
    ///     // barrier below orders the placing before any other thread's use.
    ///     unsafe {
    ///         barrier.write(Barrier::new(scoped_sync::block_size()));
    ///         (*barrier).init_in_place();
    ///     }
    /// }
    /// sync_block();
    /// // SAFETY: placed above.
    /// unsafe { (*barrier).arrive_and_wait() };
    /// ```
    #[track_caller]
    pub unsafe fn init_in_place(&self) {
        // SAFETY: forwarded.
        unsafe { self.place_in_hardware("Barrier::init_in_place") }
    }

    /// Runs the completion function, aborting the process if it panics.
    fn run_completion(&self) {
        let abort_if_it_panics = CompletionPanicked;
        // SAFETY: only the arrival that completed the phase gets here, and no arrival
        // can complete the next phase before this one releases its waiters.
        unsafe { (*self.completion.get()).on_phase_complete() };
        core::mem::forget(abort_if_it_panics);
    }
}

/// The `ZeroArrival`/`ArrivalExceedsRemaining` checks every arrival starts with.
#[inline(always)]
fn check_count(operation: &'static str, n: u32, most: u32) -> Result<(), UsageError> {
    if n == 0 {
        return Err(UsageError::new(operation, UsageErrorKind::ZeroArrival));
    }
    if n > most {
        return Err(UsageError::new(
            operation,
            UsageErrorKind::ArrivalExceedsRemaining { n, remaining: most },
        ));
    }
    Ok(())
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
        let marker = B::load(&self.expected, Ordering::Relaxed);
        let mut out = f.debug_struct("Barrier");
        out.field("scope", &S::NAME);
        if marker & HARDWARE != 0 {
            out.field("form", &"hardware");
        } else {
            let state = B::load(&self.state, Ordering::Relaxed);
            out.field("parity", &(state & PARITY != 0))
                .field("remaining", &self.remaining(state));
        }
        out.field("expected", &(marker & EXPECTED)).finish()
    }
}
