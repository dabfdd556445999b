//! [`FairSemaphore`]: a first-come, first-served counting semaphore.
//!
//! libcu++'s semaphores are unfair, and users have hit starvation with them
//! (NVIDIA/cccl#450); this one serves blocked threads in arrival order.
//!
//! # Algorithm
//!
//! One word holds the free units, a "queued" bit and a lock bit; the lock guards a
//! doubly linked FIFO queue of waiter nodes that live on the waiting threads' stacks.
//! While threads are queued no unit is free: `release` hands units straight to the
//! oldest waiters (direct hand-off) and only the rest become free units. So a thread
//! that arrives later can never take a unit ahead of a queued one, and `try_acquire`
//! fails while anybody is queued. When no thread waits, `acquire` and `release` are
//! one compare-and-swap each, like [`CountingSemaphore`](crate::CountingSemaphore).
//!
//! A wait that times out or is stopped takes the lock and unlinks its node, from
//! wherever it is in the queue, unless a unit was handed to it meanwhile (then the
//! acquire succeeded). The count stays exact and the order of the others is kept.
//!
//! An earlier version used tickets (`next`/`grant` counters). Tickets cannot leave the
//! middle of the queue without per-ticket state: paying for the abandoned ticket at
//! once let the queue's head in early, two holders at once in a binary semaphore.
//!
//! # Memory ordering
//!
//! A unit passes either through the word (release compare-and-swap, acquire
//! compare-and-swap) or through the waiter node (the releaser's release swap of the
//! node's `granted` word, the waiter's acquire load of it), so the releaser's writes
//! are visible to the thread that takes its unit. The queue is guarded by the lock bit
//! (acquire on lock, release on unlock). A releaser touches a granted node only while
//! holding the lock, and a granted waiter takes the lock once before its node goes out
//! of scope, so a node is never touched after it is gone.

use core::cell::UnsafeCell;
use core::convert::Infallible;
use core::fmt;
use core::marker::PhantomData;
use core::ptr;
use core::time::Duration;

use crate::backend::{Backend, Word};
use crate::error::{violated, Interrupted, Stopped, UsageError, UsageErrorKind};
use crate::message::ConstMessage;
use crate::primitive::{const_fn, Ordering};
use crate::scope::{Includes, Scope};
use crate::semaphore::SEMAPHORE_MAX;
use crate::stop_token::StopToken;
use crate::update::update;
use crate::wait::{announce_with_flag, wait_until, Limits, Spin, StopScope};

/// A thread holds the queue lock.
const LOCKED: u32 = 1;
/// The queue is not empty (and then no unit is free).
const QUEUED: u32 = 2;
/// One free unit, in the bits above the flags.
const UNIT: u32 = 4;

/// `granted` of a waiter that has no unit yet.
const WAITING: u32 = 0;
/// `granted` of a waiter that has no unit yet and is parked (the granter must wake it).
const PARKED: u32 = 1;
/// `granted` of a waiter a releaser handed a unit to.
const GRANTED: u32 = 2;

/// A queued thread; lives on that thread's stack while it waits, or in the caller's
/// [`WaiterSlot`].
#[repr(C)]
struct Waiter {
    /// Guarded by the semaphore's lock.
    next: UnsafeCell<*mut Waiter>,
    /// Guarded by the semaphore's lock.
    prev: UnsafeCell<*mut Waiter>,
    /// `WAITING`, `PARKED` or `GRANTED`.
    granted: Word,
}

impl Waiter {
    const_fn! {
        fn new() -> Self {
            Self {
                next: UnsafeCell::new(ptr::null_mut()),
                prev: UnsafeCell::new(ptr::null_mut()),
                granted: Word::new(WAITING),
            }
        }
    }
}

/// Room for one thread queued on a [`FairSemaphore`], for threads whose stack the
/// others cannot reach (GPU threads: a stack is local memory, private to its thread).
/// A kernel keeps one per thread in global memory (in shared memory for a semaphore
/// only its block uses) and passes it to the `_in` methods. A slot serves one waiting
/// thread at a time (the `&mut` says so) and may be reused for any number of waits.
///
/// Counterpart: none (libcu++ semaphores are unfair).
///
/// ```
/// use scoped_sync::{FairSemaphore, WaiterSlot};
///
/// let turns: FairSemaphore = FairSemaphore::new(1);
/// let mut slot = WaiterSlot::new();
/// turns.acquire_in(&mut slot);
/// turns.release(1);
/// ```
#[repr(C)]
pub struct WaiterSlot(Waiter);

// SAFETY: a slot holds queue links that are only used under the semaphore's lock while
// its thread waits; between waits it is inert, and any thread may own it.
unsafe impl Send for WaiterSlot {}

impl WaiterSlot {
    const_fn! {
        /// An unused slot.
        pub fn new() -> Self {
            Self(Waiter::new())
        }
    }
}

impl Default for WaiterSlot {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for WaiterSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaiterSlot").finish_non_exhaustive()
    }
}

/// A counting semaphore that serves blocked threads first-come, first-served.
///
/// Same API as [`CountingSemaphore`](crate::CountingSemaphore). Threads that block in
/// an acquire are served in the order they queued; `try_acquire` succeeds only when a
/// unit is free and nobody is queued. Timed and stoppable acquires leave the queue
/// exactly when they give up.
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
    /// `free units * UNIT | QUEUED | LOCKED`.
    state: Word,
    /// Oldest waiter; guarded by `LOCKED`.
    head: UnsafeCell<*mut Waiter>,
    /// Newest waiter; guarded by `LOCKED`.
    tail: UnsafeCell<*mut Waiter>,
    _backend: PhantomData<(S, fn() -> B)>,
}

// SAFETY: the queue pointers are only used under the lock bit, and point at waiter
// nodes that stay alive until their thread has taken the lock after leaving the queue.
unsafe impl<S: Scope, B: Backend<S>, const MAX: u32> Sync for FairSemaphore<S, B, MAX> {}
// SAFETY: as above; the semaphore owns nothing tied to a thread.
unsafe impl<S: Scope, B: Backend<S>, const MAX: u32> Send for FairSemaphore<S, B, MAX> {}

impl<S: Scope, B: Backend<S>, const MAX: u32> FairSemaphore<S, B, MAX> {
    const MAX_IS_SUPPORTED: () = assert!(
        MAX <= SEMAPHORE_MAX,
        "FairSemaphore: MAX exceeds SEMAPHORE_MAX"
    );
    const STACK_NODES_WORK: () = assert!(
        B::STACKS_ARE_SHARED,
        "FairSemaphore: this backend's threads cannot reach each other's stacks (GPU \
         local memory); use the `_in` methods with a WaiterSlot in global or shared memory"
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
            Self {
                state: Word::new(initial * UNIT),
                head: UnsafeCell::new(ptr::null_mut()),
                tail: UnsafeCell::new(ptr::null_mut()),
                _backend: PhantomData,
            }
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

    /// Adds `n` units (release): the oldest queued threads get them first.
    ///
    /// # Panics
    ///
    /// If the free units would exceed `MAX`. The semaphore is left unchanged.
    #[inline]
    #[track_caller]
    pub fn release(&self, n: u32) {
        if let Err(error) = self.try_release(n) {
            violated(error)
        }
    }

    /// Like [`release`](Self::release), but returns an error instead of panicking.
    pub fn try_release(&self, n: u32) -> Result<(), UsageError> {
        loop {
            // Nobody queued: add free units (the lock may be held; it does not guard
            // them, and `QUEUED` is only set while there are none).
            let added = update::<S, B, _>(&self.state, Ordering::Release, |state| {
                if state & QUEUED != 0 {
                    return Err(None);
                }
                let count = state / UNIT;
                if n > MAX - count {
                    return Err(Some(Self::exceeds_max(n, count)));
                }
                Ok(state + n * UNIT)
            });
            match added {
                Ok(_) => return Ok(()),
                Err(Some(error)) => return Err(error),
                Err(None) => {
                    if let Some(outcome) = self.release_to_queue(n) {
                        return outcome;
                    }
                    // The queue emptied before we got the lock: add free units.
                }
            }
        }
    }

    fn exceeds_max(n: u32, count: u32) -> UsageError {
        UsageError::new(
            "FairSemaphore::release",
            UsageErrorKind::ReleaseExceedsMax { n, count, max: MAX },
        )
    }

    /// Hands up to `n` units to queued threads, oldest first; the rest become free
    /// units. `None` if the queue turned out to be empty.
    #[cold]
    fn release_to_queue(&self, n: u32) -> Option<Result<(), UsageError>> {
        self.lock();
        // Count first, so that a refused release changes nothing. While the lock is
        // held and the queue is not empty, `QUEUED` stays set and no unit is free, so
        // only the units the queue does not take must fit under `MAX`.
        let mut served = 0;
        let mut emptied = false;
        // SAFETY: the lock is held; queued nodes are alive until their thread has
        // taken the lock after leaving the queue.
        unsafe {
            let mut node = *self.head.get();
            if node.is_null() {
                self.unlock();
                return None;
            }
            while served < n && !node.is_null() {
                served += 1;
                node = *(*node).next.get();
            }
            if node.is_null() {
                emptied = true;
            }
        }
        let left_over = n - served;
        if left_over > MAX {
            self.unlock();
            return Some(Err(Self::exceeds_max(n, 0)));
        }
        for _ in 0..served {
            // SAFETY: the lock is held and the queue has at least `served` nodes; a
            // node stays alive while we hold the lock.
            unsafe {
                let waiter = *self.head.get();
                self.unlink(waiter);
                if B::swap(&(*waiter).granted, GRANTED, Ordering::Release) == PARKED {
                    B::wake_one(&(*waiter).granted);
                }
            }
        }
        if emptied {
            self.end_queue(left_over);
        }
        self.unlock();
        Some(Ok(()))
    }

    /// Takes a free unit if there is one and nobody is queued; never blocks (acquire).
    ///
    /// Unlike C++'s `try_acquire`, this never fails spuriously.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        update::<S, B, _>(&self.state, Ordering::Acquire, |state| {
            if state & QUEUED == 0 && state >= UNIT {
                Ok(state - UNIT)
            } else {
                Err(())
            }
        })
        .is_ok()
    }

    /// Blocks until it takes a unit, in FIFO order with other blocked threads.
    ///
    /// For a backend whose threads cannot reach each other's stacks (the GPU) this does
    /// not compile: use [`acquire_in`](Self::acquire_in).
    #[inline]
    pub fn acquire(&self) {
        let () = Self::STACK_NODES_WORK;
        if !self.try_acquire() {
            let _ = self.acquire_slow(&Limits::NONE, &mut WaiterSlot::new());
        }
    }

    /// Queues for at most `timeout`; `true` if it took a unit.
    pub fn try_acquire_for(&self, timeout: Duration) -> bool {
        let () = Self::STACK_NODES_WORK;
        self.try_acquire()
            || self
                .acquire_slow(&Limits::within(timeout), &mut WaiterSlot::new())
                .is_ok()
    }

    /// Queues until `deadline`; `true` if it took a unit.
    pub fn try_acquire_until(&self, deadline: B::Instant) -> bool {
        let () = Self::STACK_NODES_WORK;
        self.try_acquire()
            || self
                .acquire_slow(&Limits::until(deadline), &mut WaiterSlot::new())
                .is_ok()
    }

    /// Queues until it takes a unit, or until `stop` is requested. The token may be of
    /// a wider scope than the semaphore's: the wait reads it at the token's scope.
    pub fn acquire_stoppable<T>(&self, stop: StopToken<'_, T, B>) -> Result<(), Stopped>
    where
        T: Includes<S>,
        B: Backend<T>,
    {
        let () = Self::STACK_NODES_WORK;
        if self.try_acquire() {
            return Ok(());
        }
        self.acquire_slow(&Limits::stop(stop), &mut WaiterSlot::new())
            .map_err(|_| Stopped)
    }

    /// [`acquire`](Self::acquire), queuing in `slot` if it has to wait (see
    /// [`WaiterSlot`]).
    #[inline]
    pub fn acquire_in(&self, slot: &mut WaiterSlot) {
        if !self.try_acquire() {
            let _ = self.acquire_slow(&Limits::NONE, slot);
        }
    }

    /// [`try_acquire_for`](Self::try_acquire_for), queuing in `slot`.
    pub fn try_acquire_for_in(&self, slot: &mut WaiterSlot, timeout: Duration) -> bool {
        self.try_acquire() || self.acquire_slow(&Limits::within(timeout), slot).is_ok()
    }

    /// [`try_acquire_until`](Self::try_acquire_until), queuing in `slot`.
    pub fn try_acquire_until_in(&self, slot: &mut WaiterSlot, deadline: B::Instant) -> bool {
        self.try_acquire() || self.acquire_slow(&Limits::until(deadline), slot).is_ok()
    }

    /// [`acquire_stoppable`](Self::acquire_stoppable), queuing in `slot`.
    pub fn acquire_stoppable_in<T>(
        &self,
        slot: &mut WaiterSlot,
        stop: StopToken<'_, T, B>,
    ) -> Result<(), Stopped>
    where
        T: Includes<S>,
        B: Backend<T>,
    {
        if self.try_acquire() {
            return Ok(());
        }
        self.acquire_slow(&Limits::stop(stop), slot)
            .map_err(|_| Stopped)
    }

    #[cold]
    fn acquire_slow<T: StopScope<B>>(
        &self,
        limits: &Limits<'_, S, B, T>,
        slot: &mut WaiterSlot,
    ) -> Result<(), Interrupted> {
        limits.check()?;
        *slot = WaiterSlot::new();
        let waiter = &slot.0;
        let node = ptr::from_ref(waiter).cast_mut();
        self.lock();
        // Under the lock: take a free unit, or mark the queue non-empty while there is
        // none (one compare-and-swap, so a concurrent release either lands before it
        // and is taken here, or sees `QUEUED` and hands its unit to the queue).
        let entered = update::<S, B, _>(&self.state, Ordering::Acquire, |state| {
            if state & QUEUED != 0 {
                Err(()) // Already queued: join the queue.
            } else if state >= UNIT {
                Ok(state - UNIT)
            } else {
                Ok(state | QUEUED)
            }
        });
        if matches!(entered, Ok(previous) if previous >= UNIT) {
            self.unlock();
            return Ok(());
        }
        // SAFETY: the lock is held and `QUEUED` is set; `waiter` outlives its time in
        // the queue (every return path below takes the lock after it left the queue).
        unsafe { self.push_tail(node) };
        self.unlock();

        let granted = wait_until(
            &waiter.granted,
            Ordering::Acquire,
            limits,
            Spin::First,
            |granted| granted == GRANTED,
            // `granted` is WAITING or PARKED here, and PARKED = WAITING | PARKED.
            |granted| announce_with_flag::<S, B>(&waiter.granted, granted, PARKED),
        );
        self.lock();
        let outcome = match granted {
            Ok(_) => Ok(()),
            // A unit may have been handed over after the wait gave up: then keep it.
            Err(_) if B::load(&waiter.granted, Ordering::Acquire) == GRANTED => Ok(()),
            Err(interrupted) => {
                // SAFETY: the lock is held and the node was not granted, so it is
                // still queued.
                unsafe {
                    self.unlink(node);
                    if (*self.head.get()).is_null() {
                        self.end_queue(0);
                    }
                }
                Err(interrupted)
            }
        };
        // Taking the lock above also waited out any releaser still touching the node.
        self.unlock();
        outcome
    }

    /// Takes the queue lock.
    fn lock(&self) {
        let mut round = 0;
        loop {
            let state = B::load(&self.state, Ordering::Relaxed);
            if state & LOCKED == 0
                && B::compare_exchange(
                    &self.state,
                    state,
                    state | LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return;
            }
            if !B::relax(&mut round) {
                B::yield_now();
            }
        }
    }

    /// Releases the queue lock (other bits may change meanwhile: subtract the bit).
    fn unlock(&self) {
        B::fetch_sub(&self.state, LOCKED, Ordering::Release);
    }

    /// Appends `node`.
    ///
    /// # Safety
    /// The lock is held, `QUEUED` is set, and `node` is alive and not queued.
    unsafe fn push_tail(&self, node: *mut Waiter) {
        // SAFETY: per the contract, the queue and the node are ours to edit.
        unsafe {
            let tail = *self.tail.get();
            *(*node).prev.get() = tail;
            *(*node).next.get() = ptr::null_mut();
            if tail.is_null() {
                *self.head.get() = node;
            } else {
                *(*tail).next.get() = node;
            }
            *self.tail.get() = node;
        }
    }

    /// Removes `node` from the queue (the caller ends the queue if it empties).
    ///
    /// # Safety
    /// The lock is held and `node` is queued.
    unsafe fn unlink(&self, node: *mut Waiter) {
        // SAFETY: per the contract, the queue and the node are ours to edit.
        unsafe {
            let next = *(*node).next.get();
            let prev = *(*node).prev.get();
            if prev.is_null() {
                *self.head.get() = next;
            } else {
                *(*prev).next.get() = next;
            }
            if next.is_null() {
                *self.tail.get() = prev;
            } else {
                *(*next).prev.get() = prev;
            }
        }
    }

    /// The queue is empty: clears `QUEUED` and adds `free` units, in one step (while
    /// `QUEUED` is set no release adds units, so there were none).
    fn end_queue(&self, free: u32) {
        let _ = update::<S, B, Infallible>(&self.state, Ordering::Release, |state| {
            Ok((state & !QUEUED) + free * UNIT)
        });
    }
}

impl<S: Scope, B: Backend<S>, const MAX: u32> fmt::Debug for FairSemaphore<S, B, MAX> {
    /// Shows `count` as C++ would define it: free units, or minus the number of queued
    /// threads. Takes the queue lock to count them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.lock();
        let mut queued: i64 = 0;
        // SAFETY: the lock is held, so the queue is stable and its nodes alive.
        unsafe {
            let mut node = *self.head.get();
            while !node.is_null() {
                queued += 1;
                node = *(*node).next.get();
            }
        }
        let free = i64::from(B::load(&self.state, Ordering::Relaxed) / UNIT);
        self.unlock();
        f.debug_struct("FairSemaphore")
            .field("scope", &S::NAME)
            .field("count", &(free - queued))
            .field("max", &MAX)
            .finish()
    }
}

#[cfg(all(target_pointer_width = "64", not(loom)))]
crate::assert_layout!(WaiterSlot, crate::layout::WAITER_SLOT);
