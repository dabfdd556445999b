//! What the loom models of the bus objects (`sync_shared::bus`) share: the GPU side
//! played by loom threads, waits, and the host and GPU views of one object.
//!
//! The models cover `HandoffSemaphore` with its exclusive `Producer`/`Consumer`
//! endpoints, `HandoffChannel`, `BusLatch`, `BusBarrier` and `BusStopSource`, and the
//! publish protocol they share (`counter.rs`).
//!
//! Under `--cfg loom` the bus and side words are loom's atomics. Host threads use
//! sync-host's own [`Host`] side (its `pause` yields to loom's scheduler there); the
//! GPU's threads are loom threads too, through [`Gpu`] below: the device side's
//! semantics (sync-device's `bus_side.rs`: a load or store of the requested ordering on
//! bus words, atomics of the requested ordering on side words, one compare-and-swap
//! ordering for success and failure) without its scopes, which loom does not know: a
//! model checks the protocol under the C11 memory model that PTX's system-scope
//! accesses follow. Waits go through [`LoomWait`], which calls `ready` and yields to
//! loom between calls (a yielded thread's next load reads a newer value when there is
//! one, so a spin that can end does); a wait that never ends fails the model.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p sync-host --test 'loom_bus_*' --release
//! ```
//!
//! (`scripts/loom.sh` runs them with the other models.) Payloads are [`Data`] cells:
//! plain memory whose unordered accesses loom reports, so reading one after an acquire,
//! a wait or a seen stop request proves that operation synchronized with the writer.
//! Models use two or three threads. The ones that must reach a particular interleaving
//! to prove anything (an adder waiting for its turn, a claim waiting for an adder)
//! record it in a [`Seen`] outside the model and assert after `loom::model` that it
//! was reached.
//!
//! Spinning under loom: a switch away from a thread that yielded costs no preemption,
//! so two threads spinning at once can take turns for ever while the thread they wait
//! for never runs, and loom stops at its branch limit. A model therefore has at most
//! one thread spinning without bound at a time; its other waits are short and then
//! join the threads they wait for ([`wait_for`]).
//!
//! Every ordering on the protocols' paths is load-bearing here: weakening any one
//! Release or Acquire of `sync_shared::bus` to Relaxed (publishing, waiting for a turn
//! or a claim, acquiring, handing an endpoint over, latch and barrier waits, stop
//! requests) makes at least one model report a data race on a payload. Only the
//! Acquire of the count queries (`released`, `sent`, `received`) is relied on by none:
//! no documented guarantee rests on it.
//!
//! With `LOOM_MAX_PREEMPTIONS=2` the models take about 2 s in all (3: 9 s, 4: 32 s,
//! measured on the 2-core development machine).
//!
//! Two models pin down `BusStopSource::request_stop` behaviours that these models
//! found broken at first (both sides' concurrent requests returning `false`; a losing
//! request returning before the request was visible) and that its fix guarantees.
// Each test binary uses some of these.
#![allow(dead_code)]

use std::cell::Cell;

use loom::sync::atomic::Ordering;
use loom::thread;
use sync_host::Host;
use sync_shared::bus::{
    BusBarrier, BusLatch, BusStopSource, BusWait, BusWord, Direction, HandoffChannel,
    HandoffSemaphore, Side, SideKind, WaitError,
};

std::thread_local! {
    /// [`Gpu::pause`] calls of the running iteration: loom runs a model's threads as
    /// coroutines of the test's own thread, so this counts the model's GPU waits for a
    /// publisher ahead in line (or, in a claim, for the adders before it).
    static GPU_PAUSES: Cell<u32> = const { Cell::new(0) };
}

/// Starts counting [`Gpu::pause`] calls for a new iteration.
pub fn reset_gpu_pauses() {
    GPU_PAUSES.with(|pauses| pauses.set(0));
}

/// [`Gpu::pause`] calls so far in this iteration.
pub fn gpu_pauses() -> u32 {
    GPU_PAUSES.with(Cell::get)
}

/// The GPU side played by loom threads: what sync-device's `Gpu` side does, on loom's
/// atomics.
pub struct Gpu;

/// The ordering of the device's single `atom.cas` for a compare-and-exchange with
/// these success and failure orderings (the stronger of the two; sync-device's
/// `cas_order`).
pub fn device_cas_order(success: Ordering, failure: Ordering) -> Ordering {
    use Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
    match (success, failure) {
        (SeqCst, _) | (_, SeqCst) => SeqCst,
        (Release, Acquire) => AcqRel,
        (Relaxed, Acquire) => Acquire,
        (success, _) => success,
    }
}

// SAFETY: loom's atomics are atomic among all of the model's threads; bus words get
// only loads and stores, side words are touched by `Gpu` threads only (the protocols
// under test guarantee it); `pause` only yields.
unsafe impl Side for Gpu {
    const KIND: SideKind = SideKind::Gpu;

    fn load_bus(word: &BusWord, order: Ordering) -> u64 {
        word.load(order)
    }
    fn store_bus(word: &BusWord, value: u64, order: Ordering) {
        word.store(value, order)
    }
    fn load_side(word: &BusWord, order: Ordering) -> u64 {
        word.load(order)
    }
    fn store_side(word: &BusWord, value: u64, order: Ordering) {
        word.store(value, order)
    }
    fn fetch_add_side(word: &BusWord, value: u64, order: Ordering) -> u64 {
        word.fetch_add(value, order)
    }
    fn compare_exchange_side(
        word: &BusWord,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        // One ordering for both outcomes, as the device's one instruction has; a
        // failed compare is a load, so it keeps only the acquiring half.
        let order = device_cas_order(success, failure);
        let on_failure = match order {
            Ordering::AcqRel => Ordering::Acquire,
            Ordering::Release => Ordering::Relaxed,
            other => other,
        };
        word.compare_exchange(current, new, order, on_failure)
    }
    fn pause(_round: &mut u32) {
        GPU_PAUSES.with(|pauses| pauses.set(pauses.get() + 1));
        thread::yield_now();
    }
}

/// Polls of one unbounded [`LoomWait`] before the model fails: loom runs another
/// thread between two polls, and no model has nearly this many steps in its other
/// threads, so a wait this long would never end.
const MAX_POLLS: u32 = 300;

/// Polls of a short [`LoomWait`] before it gives up (see [`wait_for`]).
const SHORT_POLLS: u32 = 3;

/// A [`BusWait`] for loom: calls `ready`, then the optional stop check, then yields to
/// loom's scheduler. An unbounded one fails the model if the wait cannot end; a short
/// one gives up with [`WaitError::TimedOut`].
pub struct LoomWait<'a> {
    stop: Option<&'a dyn Fn() -> bool>,
    polls: u32,
    short: bool,
}

impl<'a> LoomWait<'a> {
    /// Waits until ready.
    pub fn new() -> Self {
        Self {
            stop: None,
            polls: MAX_POLLS,
            short: false,
        }
    }

    /// Gives up after [`SHORT_POLLS`] polls.
    pub fn short() -> Self {
        Self {
            stop: None,
            polls: SHORT_POLLS,
            short: true,
        }
    }

    /// Ends the wait with [`WaitError::Stopped`] once `stop` returns `true` (checked
    /// after `ready`, as the device's wait does).
    pub fn stop(stop: &'a dyn Fn() -> bool) -> Self {
        Self {
            stop: Some(stop),
            ..Self::new()
        }
    }
}

impl BusWait for LoomWait<'_> {
    type Error = WaitError;

    fn wait_until(&mut self, ready: &mut dyn FnMut() -> bool) -> Result<(), WaitError> {
        for _ in 0..self.polls {
            if ready() {
                return Ok(());
            }
            if self.stop.is_some_and(|stop| stop()) {
                return Err(WaitError::Stopped);
            }
            thread::yield_now();
        }
        assert!(
            self.short,
            "a bus wait polled {MAX_POLLS} times in vain: what it waits for is never published"
        );
        Err(WaitError::TimedOut)
    }
}

/// Threads a model spawned, joined at most once; their results in spawn order.
pub struct Pending<T> {
    handles: Vec<thread::JoinHandle<T>>,
    results: Vec<T>,
}

impl<T: 'static> Pending<T> {
    pub fn new(handles: Vec<thread::JoinHandle<T>>) -> Self {
        Self {
            handles,
            results: Vec::new(),
        }
    }

    pub fn join(&mut self) {
        for handle in self.handles.drain(..) {
            self.results.push(handle.join().unwrap());
        }
    }

    pub fn results(mut self) -> Vec<T> {
        self.join();
        self.results
    }
}

/// Runs `attempt` with a [`LoomWait::short`] wait; if that gives up, joins `others`
/// (the threads the wait waits for) and runs it again with a wait that must end.
///
/// Why: loom does not count a switch away from a thread that yielded as a preemption,
/// so with two threads spinning it explores schedules where they take turns for ever
/// while the thread they wait for never runs, and fails at its branch limit. Each
/// model therefore has at most one thread spinning without bound at any time (a
/// publisher waiting for its turn, or one `LoomWait::new`); every other wait is short
/// and then blocks in `join`, which cannot starve anyone. The join orders the joined
/// threads before the retry, so an ordering bug shows only in the schedules where the
/// short wait succeeded; loom explores those too.
pub fn wait_for<T: 'static, R>(
    others: &mut Pending<T>,
    mut attempt: impl FnMut(LoomWait<'_>) -> Result<R, WaitError>,
) -> R {
    match attempt(LoomWait::short()) {
        Ok(done) => done,
        Err(WaitError::TimedOut) => {
            others.join();
            attempt(LoomWait::new()).expect("no early end")
        }
        Err(other) => panic!("{other}"),
    }
}

/// A host bus object and the same object as the GPU side sees it.
pub trait OnGpu {
    /// The same `#[repr(C)]` type with the [`Gpu`] side.
    type Gpu;
}

impl<D: Direction> OnGpu for HandoffSemaphore<D, Host> {
    type Gpu = HandoffSemaphore<D, Gpu>;
}
impl OnGpu for HandoffChannel<Host> {
    type Gpu = HandoffChannel<Gpu>;
}
impl OnGpu for BusLatch<Host> {
    type Gpu = BusLatch<Gpu>;
}
impl OnGpu for BusBarrier<Host> {
    type Gpu = BusBarrier<Gpu>;
}
impl OnGpu for BusStopSource<Host> {
    type Gpu = BusStopSource<Gpu>;
}

/// The GPU side's view of a host-built bus object, as a kernel gets it through the
/// device alias.
pub fn gpu<T: OnGpu>(object: &T) -> &T::Gpu {
    assert_eq!(size_of::<T>(), size_of::<T::Gpu>());
    assert_eq!(align_of::<T>(), align_of::<T::Gpu>());
    // SAFETY: every `OnGpu` pair is one `#[repr(C)]` type whose side parameter appears
    // only in a zero-sized `PhantomData`, so both have the same layout and contents.
    unsafe { &*std::ptr::from_ref(object).cast::<T::Gpu>() }
}
