//! Cooperative cancellation: [`StopSource`], [`StopToken`], [`StopCallback`].
//!
//! The source holds the stop state in place (no allocation), like C++26's
//! `std::inplace_stop_source`: tokens borrow it, and callbacks are intrusive list nodes
//! that must stay pinned while registered. That makes the state a fixed `#[repr(C)]`
//! object that can sit in a `static`, on a stack, or (later) in memory shared with a
//! GPU.
//!
//! # Memory ordering
//!
//! `request_stop` stores the stop flag with release ordering and `stop_requested` loads
//! it with acquire ordering: everything written before a successful `request_stop` is
//! visible to a thread that sees `stop_requested() == true`. The callback list is
//! guarded by a lock bit in the same word (acquire on lock, release on unlock). A
//! callback runs on the thread that calls `request_stop` (or on the registering thread
//! if stop was already requested).

use core::cell::UnsafeCell;
use core::fmt;
use core::marker::{PhantomData, PhantomPinned};
use core::pin::Pin;
use core::ptr;

use crate::backend::{Backend, Word};
use crate::primitive::{const_fn, Ordering};
use crate::scope::Scope;

/// Stop has been requested.
const STOP_REQUESTED: u32 = 1;
/// A thread holds the callback-list lock.
const LOCKED: u32 = 2;
/// A thread dropping a callback that runs elsewhere is parked on the word, waiting for
/// the running callback to return; the next unlock must wake it.
const DROP_WAITERS: u32 = 4;

/// The owner of a stop state. See the [module docs](self).
///
/// Counterpart: `std::stop_source` / C++26 `std::inplace_stop_source`.
///
/// # Examples
///
/// ```
/// use core::pin::pin;
/// use core::sync::atomic::{AtomicBool, Ordering};
/// use scoped_sync::{StopCallback, StopSource};
///
/// let source = StopSource::new();
/// let token = source.token();
/// let called = AtomicBool::new(false);
/// let callback = pin!(StopCallback::new(token, || called.store(true, Ordering::Relaxed)));
/// callback.as_ref().register();
///
/// assert!(!token.stop_requested());
/// assert!(source.request_stop());
/// assert!(!source.request_stop(), "only the first request returns true");
/// assert!(token.stop_requested());
/// assert!(called.load(Ordering::Relaxed));
/// ```
#[repr(C)]
pub struct StopSource<S: Scope, B: Backend<S>> {
    state: Word,
    /// The thread running callbacks after `request_stop`; guarded by `LOCKED`.
    requester: UnsafeCell<usize>,
    /// Registered callbacks, newest first; guarded by `LOCKED`.
    head: UnsafeCell<*mut Node>,
    /// The callback `request_stop` is running now; guarded by `LOCKED`.
    running: UnsafeCell<*const Node>,
    _backend: PhantomData<(S, fn() -> B)>,
}

// SAFETY: all shared mutable state is either the atomic `state` word or guarded by the
// lock bit in it; the raw pointers only point at pinned, registered callbacks whose
// closures are `Send`.
unsafe impl<S: Scope, B: Backend<S>> Sync for StopSource<S, B> {}
// SAFETY: as above; the source owns nothing tied to a thread.
unsafe impl<S: Scope, B: Backend<S>> Send for StopSource<S, B> {}
// A panic that unwinds out of `request_stop` (a callback's) leaves the source
// consistent: the rest of the list has run and the lock is released (see
// `request_stop`'s panics section), so a source may be used after catching it.
impl<S: Scope, B: Backend<S>> core::panic::RefUnwindSafe for StopSource<S, B> {}
impl<S: Scope, B: Backend<S>> core::panic::UnwindSafe for StopSource<S, B> {}

/// A view of a [`StopSource`]: asks whether stop was requested, and is what
/// [`StopCallback`]s and stoppable waits take. `Copy`; a default token has no source.
///
/// Counterpart: `std::stop_token` / `std::inplace_stop_token`.
pub struct StopToken<'a, S: Scope, B: Backend<S>> {
    source: Option<&'a StopSource<S, B>>,
}

/// The callback list node. `#[repr(C)]` and first in [`StopCallback`], so a node
/// pointer is also a pointer to its callback.
#[repr(C)]
struct Node {
    next: UnsafeCell<*mut Node>,
    prev: UnsafeCell<*mut Node>,
    /// In the source's list; guarded by the source lock.
    linked: UnsafeCell<bool>,
    /// Takes the closure out of the callback and calls it.
    invoke: unsafe fn(*const Node),
}

/// A callback that runs once when stop is requested on its token's source.
///
/// Build it with [`new`](Self::new), pin it (`core::pin::pin!` or `Box::pin`) and call
/// [`register`](Self::register); if stop was already requested, the callback runs at
/// once in the registering thread. Dropping a registered callback deregisters it: if it
/// is running on another thread at that moment, the drop waits until it returns; if it
/// is running on this thread (the callback drops itself), the drop returns at once.
///
/// On the GPU, the callback must sit where the thread that requests stop can reach it:
/// in global memory (or, for a source used by one block only, shared memory). A GPU
/// thread's stack is local memory, private to that thread, so a callback pinned there
/// works only if the same thread requests stop.
///
/// Counterpart: `std::stop_callback` (which registers on construction; Rust needs the
/// pin first).
///
/// # Examples
///
/// ```
/// use core::pin::pin;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use scoped_sync::{StopCallback, StopSource};
///
/// let source = StopSource::new();
/// let runs = AtomicU32::new(0);
/// let callback = pin!(StopCallback::new(source.token(), || {
///     runs.fetch_add(1, Ordering::Relaxed);
/// }));
/// callback.as_ref().register();
/// std::thread::scope(|s| {
///     s.spawn(|| source.request_stop());
/// });
/// // It ran in the thread that requested stop, exactly once.
/// assert_eq!(runs.load(Ordering::Relaxed), 1);
/// ```
#[repr(C)]
pub struct StopCallback<'a, F: FnOnce() + Send, S: Scope, B: Backend<S>> {
    node: Node,
    source: Option<&'a StopSource<S, B>>,
    /// The closure until it runs; `None` afterwards.
    callback: UnsafeCell<Option<F>>,
    /// Set by `register`; only the owner touches it.
    registered: UnsafeCell<bool>,
    _pinned: PhantomPinned,
}

impl<S: Scope, B: Backend<S>> StopSource<S, B> {
    const_fn! {
        /// A source on which stop has not been requested.
        pub fn new() -> Self {
            Self {
                state: Word::new(0),
                requester: UnsafeCell::new(0),
                head: UnsafeCell::new(ptr::null_mut()),
                running: UnsafeCell::new(ptr::null()),
                _backend: PhantomData,
            }
        }
    }

    /// A token that observes this source.
    pub fn token(&self) -> StopToken<'_, S, B> {
        StopToken { source: Some(self) }
    }

    /// Whether stop has been requested (acquire ordering).
    #[inline]
    pub fn stop_requested(&self) -> bool {
        B::load(&self.state, Ordering::Acquire) & STOP_REQUESTED != 0
    }

    /// The word a stop request changes (its `STOP_REQUESTED` bit), for sleeps that
    /// must end at a stop request ([`Backend::park_unless`]).
    pub(crate) fn state_word(&self) -> &Word {
        &self.state
    }

    /// Whether `state`, a value of [`state_word`](Self::state_word), says that stop
    /// was requested.
    pub(crate) fn is_stop(state: u32) -> bool {
        state & STOP_REQUESTED != 0
    }

    /// Always `true`: an in-place source can always be stopped.
    #[inline]
    pub fn stop_possible(&self) -> bool {
        true
    }

    /// Requests stop. Returns `true` only for the first request; that call runs every
    /// registered callback, in this thread, before returning.
    ///
    /// # Panics
    ///
    /// If a callback panics, the panic goes on to the caller of this first
    /// `request_stop`, but only after the source is consistent again and every other
    /// registered callback has run: while the panic unwinds, this call goes on running
    /// the rest of the list, marks the panicking callback as finished (so that a thread
    /// dropping its registration does not wait for it) and releases the list. Stop stays
    /// requested, so a later `request_stop` returns `false`, as after any first request.
    /// If a second callback panics while the first panic unwinds, the process aborts
    /// (Rust's rule for a panic during unwinding), so no callback is ever skipped
    /// without the process knowing. C++ calls `std::terminate` at the first one
    /// (callbacks there are `noexcept`).
    ///
    /// ```
    /// use core::pin::pin;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use scoped_sync::{StopCallback, StopSource};
    ///
    /// let source = StopSource::new();
    /// let other_ran = AtomicBool::new(false);
    /// let other = pin!(StopCallback::new(source.token(), || {
    ///     other_ran.store(true, Ordering::Relaxed)
    /// }));
    /// other.as_ref().register();
    /// let failing = pin!(StopCallback::new(source.token(), || panic!("callback failed")));
    /// failing.as_ref().register();
    ///
    /// let panicked = std::panic::catch_unwind(|| source.request_stop());
    /// assert!(panicked.is_err(), "the callback's panic reaches the requester");
    /// assert!(other_ran.load(Ordering::Relaxed), "the other callback still ran");
    /// assert!(source.stop_requested());
    /// assert!(!source.request_stop());
    /// ```
    pub fn request_stop(&self) -> bool {
        let flags = self.lock();
        if flags & STOP_REQUESTED != 0 {
            self.unlock(flags);
            return false;
        }
        // Publish the stop flag now, lock still held: pollers see it at once.
        B::store(
            &self.state,
            flags | STOP_REQUESTED | LOCKED,
            Ordering::Release,
        );
        // SAFETY: the lock is held.
        unsafe { *self.requester.get() = B::thread_id() };
        // Dropped only while a callback's panic unwinds through this frame.
        let finish_on_panic = FinishOnPanic(self);
        self.run_callbacks();
        core::mem::forget(finish_on_panic);
        true
    }

    /// Runs the registered callbacks one by one, newest first, until the list is empty;
    /// then clears `running` and releases the lock. Called with the lock held, by the
    /// thread recorded as `requester`.
    fn run_callbacks(&self) {
        loop {
            // SAFETY: the lock is held; the list only holds pinned, live nodes.
            let node = unsafe { *self.head.get() };
            if node.is_null() {
                break;
            }
            // SAFETY: the lock is held and `node` is linked, so it is alive and pinned.
            unsafe {
                self.unlink(node);
                *self.running.get() = node;
            }
            self.unlock(STOP_REQUESTED);
            // SAFETY: `node` was linked, so its closure is still there. A drop of the
            // callback on another thread waits until `running` moves on; a drop from
            // inside the closure (this thread) returns at once, so after this call the
            // node may be gone: it is only compared by address from here on.
            unsafe { ((*node).invoke)(node) };
            self.lock();
        }
        // SAFETY: the lock is held.
        unsafe { *self.running.get() = ptr::null() };
        self.unlock(STOP_REQUESTED);
    }

    /// Takes the list lock; returns the flags (without `LOCKED`).
    fn lock(&self) -> u32 {
        let mut round = 0;
        loop {
            let current = B::load(&self.state, Ordering::Relaxed);
            if current & LOCKED == 0
                && B::compare_exchange(
                    &self.state,
                    current,
                    current | LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return current;
            }
            if !B::relax(&mut round) {
                B::yield_now();
            }
        }
    }

    /// Releases the list lock, leaving `flags`; wakes parked droppers.
    fn unlock(&self, flags: u32) {
        let previous = B::swap(&self.state, flags & !DROP_WAITERS, Ordering::Release);
        if previous & DROP_WAITERS != 0 {
            B::wake_all(&self.state);
        }
    }

    /// Removes `node` from the list.
    ///
    /// # Safety
    /// The lock is held and `node` is linked.
    unsafe fn unlink(&self, node: *mut Node) {
        // SAFETY: per the contract, the list and the node are ours to edit.
        unsafe {
            let next = *(*node).next.get();
            let prev = *(*node).prev.get();
            if prev.is_null() {
                *self.head.get() = next;
            } else {
                *(*prev).next.get() = next;
            }
            if !next.is_null() {
                *(*next).prev.get() = prev;
            }
            *(*node).linked.get() = false;
        }
    }
}

/// Finishes a `request_stop` whose callback panicked: dropped only while that panic
/// unwinds (the normal path forgets it). The callback's closure was taken before it
/// ran and its node unlinked, so the source only needs the rest of the list run, which
/// also moves `running` off the panicked node (waking any thread parked in its drop)
/// and releases the lock. A second panic in here aborts the process.
struct FinishOnPanic<'a, S: Scope, B: Backend<S>>(&'a StopSource<S, B>);

impl<S: Scope, B: Backend<S>> Drop for FinishOnPanic<'_, S, B> {
    fn drop(&mut self) {
        // The panicking callback ran with the lock released.
        self.0.lock();
        self.0.run_callbacks();
    }
}

impl<S: Scope, B: Backend<S>> Default for StopSource<S, B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Scope, B: Backend<S>> fmt::Debug for StopSource<S, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopSource")
            .field("scope", &S::NAME)
            .field("stop_requested", &self.stop_requested())
            .finish_non_exhaustive()
    }
}

impl<'a, S: Scope, B: Backend<S>> StopToken<'a, S, B> {
    /// A token with no source: never stopped, `stop_possible() == false`.
    pub const fn none() -> Self {
        Self { source: None }
    }

    /// Whether stop was requested on the source (acquire ordering). Costs one load.
    #[inline]
    pub fn stop_requested(&self) -> bool {
        match self.source {
            Some(source) => source.stop_requested(),
            None => false,
        }
    }

    /// The source this token observes, if any.
    pub(crate) fn source(&self) -> Option<&'a StopSource<S, B>> {
        self.source
    }

    /// Whether stop can ever be requested: the token has a source.
    #[inline]
    pub fn stop_possible(&self) -> bool {
        self.source.is_some()
    }
}

impl<S: Scope, B: Backend<S>> Clone for StopToken<'_, S, B> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: Scope, B: Backend<S>> Copy for StopToken<'_, S, B> {}

impl<S: Scope, B: Backend<S>> Default for StopToken<'_, S, B> {
    fn default() -> Self {
        Self::none()
    }
}

impl<S: Scope, B: Backend<S>> PartialEq for StopToken<'_, S, B> {
    /// Tokens are equal when they observe the same source (or both have none).
    fn eq(&self, other: &Self) -> bool {
        match (self.source, other.source) {
            (Some(a), Some(b)) => ptr::eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}
impl<S: Scope, B: Backend<S>> Eq for StopToken<'_, S, B> {}

impl<S: Scope, B: Backend<S>> fmt::Debug for StopToken<'_, S, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopToken")
            .field("stop_possible", &self.stop_possible())
            .field("stop_requested", &self.stop_requested())
            .finish()
    }
}

impl<'a, F: FnOnce() + Send, S: Scope, B: Backend<S>> StopCallback<'a, F, S, B> {
    /// A callback for `token`, not registered yet: pin it and call
    /// [`register`](Self::register).
    pub const fn new(token: StopToken<'a, S, B>, callback: F) -> Self {
        Self {
            node: Node {
                next: UnsafeCell::new(ptr::null_mut()),
                prev: UnsafeCell::new(ptr::null_mut()),
                linked: UnsafeCell::new(false),
                invoke: Self::invoke,
            },
            source: token.source,
            callback: UnsafeCell::new(Some(callback)),
            registered: UnsafeCell::new(false),
            _pinned: PhantomPinned,
        }
    }

    /// Registers the callback with its token's source, or runs it now in this thread
    /// if stop was already requested. A token without a source never runs it. Calling
    /// `register` again does nothing.
    pub fn register(self: Pin<&Self>) {
        let this = self.get_ref();
        // SAFETY: `registered` is only touched by the owner, through this pinned
        // reference or in `drop`.
        if unsafe { core::mem::replace(&mut *this.registered.get(), true) } {
            return;
        }
        let Some(source) = this.source else { return };
        let flags = source.lock();
        if flags & STOP_REQUESTED != 0 {
            source.unlock(flags);
            // SAFETY: never linked, so no other thread can reach the node.
            unsafe { Self::invoke(ptr::from_ref(this).cast::<Node>()) };
            return;
        }
        // From a pointer to the whole callback, not to the `node` field: `invoke` casts
        // the node pointer back to `Self` and reads the closure through it.
        let node = ptr::from_ref(this).cast::<Node>().cast_mut();
        // SAFETY: the lock is held; `this` is pinned, so the node stays at this address
        // until `drop`, which unlinks it.
        unsafe {
            let head = *source.head.get();
            *this.node.next.get() = head;
            *this.node.prev.get() = ptr::null_mut();
            if !head.is_null() {
                *(*head).prev.get() = node;
            }
            *source.head.get() = node;
            *this.node.linked.get() = true;
        }
        source.unlock(flags);
    }

    /// Runs the closure of the callback that owns `node`.
    ///
    /// # Safety
    /// `node` is the `node` field of a live `StopCallback<F, S, B>` whose closure no
    /// other thread is taking.
    unsafe fn invoke(node: *const Node) {
        let this = node.cast::<Self>();
        // SAFETY: `node` is the first field of a `#[repr(C)]` `Self`, and the caller
        // gives us exclusive use of the closure slot.
        let callback = unsafe { (*(*this).callback.get()).take() };
        if let Some(callback) = callback {
            callback();
        }
    }
}

// SAFETY: the node's links are only read or written under the source's lock, and the
// closure (which is `Send`) runs on at most one thread; moving a registered callback
// is prevented by its pin, not by `Send`.
unsafe impl<F: FnOnce() + Send, S: Scope, B: Backend<S>> Send for StopCallback<'_, F, S, B> {}

impl<F: FnOnce() + Send, S: Scope, B: Backend<S>> Drop for StopCallback<'_, F, S, B> {
    fn drop(&mut self) {
        // SAFETY: `registered` belongs to the owner.
        if !unsafe { *self.registered.get() } {
            return;
        }
        let Some(source) = self.source else { return };
        let node = ptr::from_ref(&*self).cast::<Node>();
        loop {
            let flags = source.lock();
            // SAFETY: the lock is held, which guards `linked`, `running` and the list.
            unsafe {
                if *self.node.linked.get() {
                    source.unlink(node.cast_mut());
                    source.unlock(flags);
                    return;
                }
                if *source.running.get() != node {
                    // Ran to completion already (or at registration).
                    source.unlock(flags);
                    return;
                }
                if *source.requester.get() == B::thread_id() {
                    // The closure drops its own callback; `request_stop` will not touch
                    // the node again, so there is nothing to wait for.
                    source.unlock(flags);
                    return;
                }
            }
            // Running on another thread: park until the next unlock, then look again.
            let parked = flags | DROP_WAITERS;
            source.unlock_keep_waiters(parked);
            B::park(&source.state, parked, None);
        }
    }
}

impl<S: Scope, B: Backend<S>> StopSource<S, B> {
    /// Unlocks leaving `DROP_WAITERS` set, so the runner's next unlock wakes us.
    fn unlock_keep_waiters(&self, flags: u32) {
        B::store(&self.state, flags, Ordering::Release);
    }
}

impl<F: FnOnce() + Send, S: Scope, B: Backend<S>> fmt::Debug for StopCallback<'_, F, S, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopCallback").finish_non_exhaustive()
    }
}
