//! loom models of the bus objects (`sync_shared::bus`): `HandoffSemaphore` with its
//! exclusive `Producer`/`Consumer` endpoints, `HandoffChannel`, `BusLatch`,
//! `BusBarrier` and `BusStopSource`, and the publish protocol they share
//! (`counter.rs`).
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
//!     cargo test -p sync-host --test loom_bus --release
//! ```
//!
//! (`scripts/loom.sh` runs it with `tests/loom.rs`.) Payloads are [`Data`] cells:
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
#![cfg(loom)]

use std::cell::Cell;
// std's Arc, not loom's, as in tests/loom.rs: a failing model reports its first panic
// instead of aborting in loom's Arc destructor while unwinding. Every model joins its
// threads before the iteration ends.
use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use sync_host::{Host, StopSource, System};
use sync_shared::bus::{
    BusBarrier, BusLatch, BusStopSource, BusWait, BusWord, Direction, GpuToHost, HandoffChannel,
    HandoffSemaphore, HostToGpu, Side, SideKind, WaitError,
};

// ---------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------

/// Plain (non-atomic) data: loom reports any two accesses to it that happens-before
/// does not order, so reading it after a synchronizing operation proves that operation
/// ordered the write before the read.
struct Data(UnsafeCell<u32>);

// SAFETY: the models access the cell only where a bus object under test orders the
// accesses; loom checks that it does and fails the model otherwise.
unsafe impl Sync for Data {}

impl Data {
    fn new(value: u32) -> Self {
        Self(UnsafeCell::new(value))
    }

    fn get(&self) -> u32 {
        // SAFETY: loom checks that no write races with this read.
        self.0.with(|value| unsafe { *value })
    }

    fn set(&self, new: u32) {
        // SAFETY: loom checks that no access races with this write.
        self.0.with_mut(|value| unsafe { *value = new });
    }
}

/// The outcomes a model reached across its iterations, as bits (a std atomic, outside
/// the model: loom runs one thread at a time, so it sees the schedule's real order).
struct Seen(std::sync::atomic::AtomicU32);

impl Seen {
    const fn new() -> Self {
        Self(std::sync::atomic::AtomicU32::new(0))
    }

    fn mark(&self, outcome: u32) {
        self.0.fetch_or(outcome, Ordering::Relaxed);
    }

    /// Asserts that every outcome in `outcomes` was reached by some iteration.
    #[track_caller]
    fn assert_all(&self, outcomes: u32) {
        let seen = self.0.load(Ordering::Relaxed);
        assert_eq!(
            seen & outcomes,
            outcomes,
            "loom did not explore every outcome (seen {seen:#b}, wanted {outcomes:#b})"
        );
    }
}

std::thread_local! {
    /// [`Gpu::pause`] calls of the running iteration: loom runs a model's threads as
    /// coroutines of the test's own thread, so this counts the model's GPU waits for a
    /// publisher ahead in line (or, in a claim, for the adders before it).
    static GPU_PAUSES: Cell<u32> = const { Cell::new(0) };
}

/// Starts counting [`Gpu::pause`] calls for a new iteration.
fn reset_gpu_pauses() {
    GPU_PAUSES.with(|pauses| pauses.set(0));
}

/// [`Gpu::pause`] calls so far in this iteration.
fn gpu_pauses() -> u32 {
    GPU_PAUSES.with(Cell::get)
}

/// The GPU side played by loom threads: what sync-device's `Gpu` side does, on loom's
/// atomics.
struct Gpu;

/// The ordering of the device's single `atom.cas` for a compare-and-exchange with
/// these success and failure orderings (the stronger of the two; sync-device's
/// `cas_order`).
fn device_cas_order(success: Ordering, failure: Ordering) -> Ordering {
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
struct LoomWait<'a> {
    stop: Option<&'a dyn Fn() -> bool>,
    polls: u32,
    short: bool,
}

impl<'a> LoomWait<'a> {
    /// Waits until ready.
    fn new() -> Self {
        Self {
            stop: None,
            polls: MAX_POLLS,
            short: false,
        }
    }

    /// Gives up after [`SHORT_POLLS`] polls.
    fn short() -> Self {
        Self {
            stop: None,
            polls: SHORT_POLLS,
            short: true,
        }
    }

    /// Ends the wait with [`WaitError::Stopped`] once `stop` returns `true` (checked
    /// after `ready`, as the device's wait does).
    fn stop(stop: &'a dyn Fn() -> bool) -> Self {
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
struct Pending<T> {
    handles: Vec<thread::JoinHandle<T>>,
    results: Vec<T>,
}

impl<T: 'static> Pending<T> {
    fn new(handles: Vec<thread::JoinHandle<T>>) -> Self {
        Self {
            handles,
            results: Vec::new(),
        }
    }

    fn join(&mut self) {
        for handle in self.handles.drain(..) {
            self.results.push(handle.join().unwrap());
        }
    }

    fn results(mut self) -> Vec<T> {
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
fn wait_for<T: 'static, R>(
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
trait OnGpu {
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
fn gpu<T: OnGpu>(object: &T) -> &T::Gpu {
    assert_eq!(size_of::<T>(), size_of::<T::Gpu>());
    assert_eq!(align_of::<T>(), align_of::<T::Gpu>());
    // SAFETY: every `OnGpu` pair is one `#[repr(C)]` type whose side parameter appears
    // only in a zero-sized `PhantomData`, so both have the same layout and contents.
    unsafe { &*std::ptr::from_ref(object).cast::<T::Gpu>() }
}

// ---------------------------------------------------------------------------------
// HandoffSemaphore: the publish protocol, sequence numbers, shared acquirers
// ---------------------------------------------------------------------------------

/// Two GPU threads `release_with(1)` while the host `acquire`s twice (shared paths on
/// both sides). Proves the publish protocol: the adders get the sequence numbers 0 and
/// 1 (unique, gap-free); the host takes unit 0 then unit 1, and after acquiring unit
/// `k` it reads the payload that unit `k`'s adder wrote in its `fill`, also when the
/// published count it read was stored by the other adder (the chain of publishing
/// release and turn-waiting acquire). The schedule where unit 1's adder must wait for
/// unit 0 to be published is explored.
#[test]
fn handoff_gpu_adders_publish_in_sequence_order() {
    const UNIT_1_WAITED: u32 = 1;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        reset_gpu_pauses();
        let results = Arc::new(HandoffSemaphore::<GpuToHost, Host>::new(0));
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let mut adders = Pending::new(
            (1..=2)
                .map(|me| {
                    let (results, slots) = (results.clone(), slots.clone());
                    thread::spawn(move || {
                        let unit =
                            gpu(&*results).release_with(1, |unit| slots[unit as usize].set(me));
                        if unit == 1 && gpu_pauses() > 0 {
                            SEEN.mark(UNIT_1_WAITED);
                        }
                        unit
                    })
                })
                .collect(),
        );

        let mut payloads = [0; 2];
        for expected in 0..2 {
            let unit = wait_for(&mut adders, |wait| results.acquire(wait));
            assert_eq!(unit, expected, "one acquirer takes the units in order");
            payloads[expected as usize] = slots[expected as usize].get();
        }
        assert_eq!(results.try_acquire(), None);

        let units = adders.results();
        assert!(units == [0, 1] || units == [1, 0], "units {units:?}");
        for (adder, unit) in units.into_iter().enumerate() {
            assert_eq!(payloads[unit as usize], adder as u32 + 1);
        }
        assert_eq!(results.released(), 2);
    });
    SEEN.assert_all(UNIT_1_WAITED);
}

/// The same protocol on the host's side: two host threads (sync-host's `Host` side)
/// `release_with(1)`; a GPU thread takes the semaphore's `Consumer` endpoint and takes
/// two units, each with `try_acquire` or, if none is there yet, `acquire`. Proves the
/// host adders publish in sequence order, and that the endpoint's polls (no
/// read-modify-write) see each unit's payload, also through the later adder's
/// published count.
#[test]
fn handoff_host_adders_to_gpu_consumer_endpoint() {
    const FIRST_GETS_0: u32 = 1;
    const SECOND_GETS_0: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let work = Arc::new(HandoffSemaphore::<HostToGpu, Host>::new(0));
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let mut adders = Pending::new(
            (1..=2)
                .map(|me| {
                    let (work, slots) = (work.clone(), slots.clone());
                    thread::spawn(move || work.release_with(1, |unit| slots[unit as usize].set(me)))
                })
                .collect(),
        );

        // This thread plays the GPU.
        let mut consumer = gpu(&*work).consumer().expect("the only endpoint");
        let mut payloads = [0; 2];
        for expected in 0..2 {
            let unit = match consumer.try_acquire() {
                Some(unit) => unit,
                None => wait_for(&mut adders, |wait| consumer.acquire(wait)),
            };
            assert_eq!(unit, expected);
            payloads[expected as usize] = slots[expected as usize].get();
        }
        assert_eq!(consumer.try_acquire(), None);
        assert_eq!(consumer.acquired(), 2);

        let units = adders.results();
        assert!(units == [0, 1] || units == [1, 0], "units {units:?}");
        for (adder, unit) in units.iter().enumerate() {
            assert_eq!(payloads[*unit as usize], adder as u32 + 1);
        }
        SEEN.mark(if units[0] == 0 {
            FIRST_GETS_0
        } else {
            SECOND_GETS_0
        });
    });
    SEEN.assert_all(FIRST_GETS_0 | SECOND_GETS_0);
}

/// One host `release_with(2)` fills both payloads; two GPU threads `acquire` on the
/// shared path (compare-and-exchange on the GPU's side word). Proves each unit is
/// taken exactly once (the acquirers get 0 and 1, and nothing is left), each with its
/// payload, whichever acquirer wins, including acquirers that wait for the release.
#[test]
fn handoff_two_gpu_acquirers_take_distinct_units() {
    const MAIN_GETS_0: u32 = 1;
    const OTHER_GETS_0: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let work = Arc::new(HandoffSemaphore::<HostToGpu, Host>::new(0));
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let mut releaser = {
            let (work, slots) = (work.clone(), slots.clone());
            Pending::new(vec![thread::spawn(move || {
                work.release_with(2, |first| {
                    slots[first as usize].set(10);
                    slots[first as usize + 1].set(11);
                })
            })])
        };
        let other = {
            let (work, slots) = (work.clone(), slots.clone());
            thread::spawn(move || {
                let unit = gpu(&*work).acquire(LoomWait::new()).unwrap();
                (unit, slots[unit as usize].get())
            })
        };

        // This thread plays the other GPU thread.
        let gpu = gpu(&*work);
        let unit = wait_for(&mut releaser, |wait| gpu.acquire(wait));
        let mine = (unit, slots[unit as usize].get());
        let theirs = other.join().unwrap();
        assert_eq!(releaser.results(), [0]);

        assert_eq!(mine.0 + theirs.0, 1, "units {mine:?} and {theirs:?}");
        for (unit, payload) in [mine, theirs] {
            assert_eq!(payload, 10 + unit as u32);
        }
        assert_eq!(gpu.try_acquire(), None);
        SEEN.mark(if mine.0 == 0 {
            MAIN_GETS_0
        } else {
            OTHER_GETS_0
        });
    });
    SEEN.assert_all(MAIN_GETS_0 | OTHER_GETS_0);
}

// ---------------------------------------------------------------------------------
// Exclusive endpoints
// ---------------------------------------------------------------------------------

/// A GPU thread's shared `release_with(1)` reserves unit 0; another GPU thread, once
/// that reservation is made, takes the `Producer` endpoint and releases unit 1 with
/// one store; the host acquires both. Proves that the claim continues the count after
/// the shared adder (unit 1: no gap, no unit twice) and waits for the adder to publish:
/// the host sees unit 0's payload even when the count it reads is the producer's 2,
/// which carries the adder's writes only through the claim's wait. The schedule where
/// the claim waits is explored.
#[test]
fn producer_claim_waits_for_an_earlier_adder() {
    const CLAIM_WAITED: u32 = 1;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        reset_gpu_pauses();
        let results = Arc::new(HandoffSemaphore::<GpuToHost, Host>::new(0));
        let slots = Arc::new([Data::new(0), Data::new(0)]);
        // Set by the adder before it writes its payload, and Relaxed: it tells the
        // claimant that the adder reserved, without ordering the payload.
        let reserved = Arc::new(AtomicBool::new(false));

        let adder = {
            let (results, slots, reserved) = (results.clone(), slots.clone(), reserved.clone());
            thread::spawn(move || {
                gpu(&*results).release_with(1, |unit| {
                    reserved.store(true, Ordering::Relaxed);
                    slots[unit as usize].set(1);
                })
            })
        };
        let claimant = {
            let (results, slots, reserved) = (results.clone(), slots.clone(), reserved.clone());
            thread::spawn(move || {
                while !reserved.load(Ordering::Relaxed) {
                    thread::yield_now();
                }
                let mut producer = gpu(&*results).producer().expect("the only endpoint");
                if gpu_pauses() > 0 {
                    SEEN.mark(CLAIM_WAITED);
                }
                let unit = producer.release_with(1, |unit| slots[unit as usize].set(2));
                assert_eq!(producer.released(), 2);
                unit
            })
        };
        let mut gpu_threads = Pending::new(vec![adder, claimant]);

        let mut payloads = [0; 2];
        for expected in 0..2 {
            assert_eq!(
                wait_for(&mut gpu_threads, |wait| results.acquire(wait)),
                expected
            );
            payloads[expected as usize] = slots[expected as usize].get();
        }
        assert_eq!(
            gpu_threads.results(),
            [0, 1],
            "(adder's unit, producer's unit)"
        );
        assert_eq!(payloads, [1, 2]);
        assert_eq!(results.released(), 2);
    });
    SEEN.assert_all(CLAIM_WAITED);
}

/// Two host threads race for the `Producer` endpoint: the loser sees `None` and tries
/// again until the winner drops its endpoint; each releases one unit with one store,
/// then writes a note for the next holder. The GPU acquires both. Proves one endpoint
/// at a time, that a dropped endpoint hands its count to the next claim (units 0 and
/// 1: no gap), that both payloads are visible to the consumer, and that the endpoint
/// is handed over like a lock: what a holder wrote after its last release is visible
/// to the next holder (the drop's release, the claim's acquire).
#[test]
fn producer_endpoints_take_turns() {
    const FIRST_WINS: u32 = 1;
    const SECOND_WINS: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let work = Arc::new(HandoffSemaphore::<HostToGpu, Host>::new(0));
        let slots = Arc::new([Data::new(0), Data::new(0)]);
        // Written by a holder after its release, read by the next holder.
        let note = Arc::new(Data::new(0));

        let mut producers = Pending::new(
            (1..=2)
                .map(|me| {
                    let (work, slots, note) = (work.clone(), slots.clone(), note.clone());
                    thread::spawn(move || loop {
                        if let Some(mut producer) = work.producer() {
                            let unit =
                                producer.release_with(1, |unit| slots[unit as usize].set(me));
                            assert_eq!(note.get(), if unit == 0 { 0 } else { 3 - me });
                            note.set(me);
                            return unit;
                        }
                        thread::yield_now();
                    })
                })
                .collect(),
        );

        // This thread plays the GPU.
        let gpu = gpu(&*work);
        let mut payloads = [0; 2];
        for expected in 0..2 {
            assert_eq!(wait_for(&mut producers, |wait| gpu.acquire(wait)), expected);
            payloads[expected as usize] = slots[expected as usize].get();
        }
        let units = producers.results();
        assert!(units == [0, 1] || units == [1, 0], "units {units:?}");
        for (producer, unit) in units.iter().enumerate() {
            assert_eq!(payloads[*unit as usize], producer as u32 + 1);
        }
        assert_eq!(work.released(), 2);
        SEEN.mark(if units[0] == 0 {
            FIRST_WINS
        } else {
            SECOND_WINS
        });
    });
    SEEN.assert_all(FIRST_WINS | SECOND_WINS);
}

/// Two GPU threads race for the `Consumer` endpoint of a semaphore created with two
/// units: the loser tries again until the winner drops it; each takes one unit with
/// `try_acquire` and writes a note for the next holder. Proves one endpoint at a time,
/// that a dropped endpoint hands its count to the next (units 0 and 1, each once), and
/// that the endpoint is handed over like a lock (the drop's release, the claim's
/// acquire).
#[test]
fn consumer_endpoints_take_turns() {
    loom::model(|| {
        let work = Arc::new(HandoffSemaphore::<HostToGpu, Host>::new(2));
        let note = Arc::new(Data::new(0));

        let other = {
            let (work, note) = (work.clone(), note.clone());
            thread::spawn(move || take_one_unit(gpu(&*work), &note, 2))
        };
        let mine = take_one_unit(gpu(&*work), &note, 1);
        let theirs = other.join().unwrap();
        assert_eq!(mine + theirs, 1, "units {mine} and {theirs}");
        assert_eq!(gpu(&*work).try_acquire(), None);
    });

    /// Claims the consumer endpoint (retrying while the other thread holds it), takes
    /// one unit, reads the previous holder's note and leaves its own.
    fn take_one_unit(work: &HandoffSemaphore<HostToGpu, Gpu>, note: &Data, me: u32) -> u64 {
        loop {
            if let Some(mut consumer) = work.consumer() {
                let unit = consumer.try_acquire().expect("two units, one each");
                assert_eq!(note.get(), if unit == 0 { 0 } else { 3 - me });
                note.set(me);
                return unit;
            }
            thread::yield_now();
        }
    }
}

// ---------------------------------------------------------------------------------
// HandoffChannel
// ---------------------------------------------------------------------------------

/// Two round trips host → GPU → host through one channel, one work slot and one
/// answer slot reused by both rounds: the host uses both exclusive endpoints (as the
/// runtime's example does), the GPU the shared `acquire`/`release_with`. Proves both
/// directions' counters: the units of each direction are numbered 0, 1; the GPU sees
/// each round's work and the host each round's answer; and reusing the slots does not
/// race (the host's next write comes after the GPU's read of the last one, through the
/// answer's release and acquire, and likewise for the GPU's answers).
#[test]
fn channel_round_trips_reuse_their_slots() {
    loom::model(|| {
        let channel = Arc::new(HandoffChannel::<Host>::new(0, 0));
        let work = Arc::new(Data::new(0));
        let answer = Arc::new(Data::new(0));

        let kernel = {
            let (channel, work, answer) = (channel.clone(), work.clone(), answer.clone());
            thread::spawn(move || {
                let gpu = gpu(&*channel);
                for round in 0..2 {
                    assert_eq!(gpu.acquire(LoomWait::new()), Ok(round));
                    let task = work.get();
                    assert_eq!(u64::from(task), round + 1);
                    assert_eq!(gpu.release_with(1, |_| answer.set(task * 10)), round);
                }
                assert_eq!((gpu.sent(), gpu.received()), (2, 2));
            })
        };

        let mut to_gpu = channel.producer().expect("the only producer");
        let mut from_gpu = channel.consumer().expect("the only consumer");
        for round in 0..2 {
            let task = round as u32 + 1;
            assert_eq!(to_gpu.release_with(1, |_| work.set(task)), round);
            assert_eq!(from_gpu.acquire(LoomWait::new()), Ok(round));
            assert_eq!(answer.get(), task * 10);
        }
        drop((to_gpu, from_gpu));
        kernel.join().unwrap();
        assert_eq!((channel.sent(), channel.received()), (2, 2));
        assert_eq!(channel.try_acquire(), None);
    });
}

// ---------------------------------------------------------------------------------
// BusLatch
// ---------------------------------------------------------------------------------

/// A latch of 2: a host thread and a GPU thread each write their slot and
/// `arrive_and_wait(1)`. Proves count-downs from both sides open the latch (neither
/// wait hangs) and a returned wait sees the other side's write, in both directions.
#[test]
fn latch_count_downs_from_both_sides() {
    loom::model(|| {
        let latch = Arc::new(BusLatch::<Host>::new(2));
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let kernel = {
            let (latch, slots) = (latch.clone(), slots.clone());
            thread::spawn(move || {
                slots[1].set(2);
                gpu(&*latch).arrive_and_wait(1, LoomWait::new()).unwrap();
                assert_eq!(slots[0].get(), 1);
            })
        };

        slots[0].set(1);
        latch.arrive_and_wait(1, LoomWait::new()).unwrap();
        assert_eq!(slots[1].get(), 2);
        kernel.join().unwrap();
        assert_eq!(latch.counted(), 2);
    });
}

/// A latch of 3: two host threads write their slots and count down by one each (the
/// publish protocol on the host's side); a GPU thread counts down by one and waits.
/// Proves the GPU's wait returns only when all three are published, and then sees
/// both host threads' writes, also when the host count it reads was published by the
/// later host adder.
#[test]
fn latch_two_host_count_downs_and_a_gpu_waiter() {
    loom::model(|| {
        let latch = Arc::new(BusLatch::<Host>::new(3));
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let mut hosts = Pending::new(
            (0..2)
                .map(|me| {
                    let (latch, slots) = (latch.clone(), slots.clone());
                    thread::spawn(move || {
                        slots[me].set(me as u32 + 1);
                        latch.count_down(1);
                    })
                })
                .collect(),
        );

        // This thread plays the GPU.
        let gpu = gpu(&*latch);
        gpu.count_down(1);
        wait_for(&mut hosts, |wait| gpu.wait(wait));
        assert_eq!(slots[0].get() + slots[1].get(), 3);
        hosts.join();
        assert!(gpu.try_wait() && latch.try_wait());
    });
}

// ---------------------------------------------------------------------------------
// BusBarrier
// ---------------------------------------------------------------------------------

/// One host and one GPU participant, two phases; each writes its slot of the phase
/// before arriving and reads the other's after the wait. The host uses split
/// `arrive`/`wait`. Proves the tokens carry phases 0 and 1, neither side passes a
/// phase before the other arrived, and a write before phase `k` is seen after it by
/// the other side (also in phase 1, where the counts to reach are 2).
#[test]
fn barrier_two_phases_across_the_bus() {
    loom::model(|| {
        let barrier = Arc::new(BusBarrier::<Host>::new(1, 1));
        // written[phase][side]
        let written = Arc::new([[Data::new(0), Data::new(0)], [Data::new(0), Data::new(0)]]);

        let kernel = {
            let (barrier, written) = (barrier.clone(), written.clone());
            thread::spawn(move || {
                let gpu = gpu(&*barrier);
                for phase in 0..2 {
                    written[phase][1].set(1);
                    gpu.arrive_and_wait(LoomWait::new()).unwrap();
                    assert_eq!(written[phase][0].get(), 1);
                }
            })
        };

        for phase in 0..2 {
            written[phase][0].set(1);
            let token = barrier.arrive(1);
            assert_eq!(token.phase(), phase as u64);
            barrier.wait(token, LoomWait::new()).unwrap();
            assert_eq!(written[phase][1].get(), 1);
        }
        kernel.join().unwrap();
    });
}

/// One host and two GPU participants, one phase: the GPU's arrivals go through the
/// publish protocol on its side; one GPU participant only arrives. Proves no waiter
/// passes before all three arrived, and each sees the others' writes, also when the
/// GPU count the host reads was published by the later GPU arrival.
#[test]
fn barrier_two_gpu_participants() {
    loom::model(|| {
        let barrier = Arc::new(BusBarrier::<Host>::new(1, 2));
        // Participant `i` writes `i + 1` to `slots[i]`: all written, they sum to 6.
        let slots = Arc::new([Data::new(0), Data::new(0), Data::new(0)]);
        let sum = |slots: &[Data; 3]| slots.iter().map(Data::get).sum::<u32>();

        let waiter = {
            let (barrier, slots) = (barrier.clone(), slots.clone());
            thread::spawn(move || {
                slots[1].set(2);
                gpu(&*barrier).arrive_and_wait(LoomWait::new()).unwrap();
                assert_eq!(sum(&slots), 6);
            })
        };
        let mut arriver = {
            let (barrier, slots) = (barrier.clone(), slots.clone());
            Pending::new(vec![thread::spawn(move || {
                slots[2].set(3);
                gpu(&*barrier).arrive(1).phase()
            })])
        };

        slots[0].set(1);
        let token = barrier.arrive(1);
        wait_for(&mut arriver, |wait| barrier.wait(token, wait));
        assert_eq!(sum(&slots), 6);
        assert_eq!(arriver.results(), [0]);
        waiter.join().unwrap();
    });
}

// ---------------------------------------------------------------------------------
// BusStopSource
// ---------------------------------------------------------------------------------

/// The host hands one unit of work to a GPU thread that serves until stopped, then
/// writes a flag and requests stop. The GPU acquires with a wait that ends at the stop
/// request; once stopped, it drains with `try_acquire`. Proves the host's request
/// reaches the GPU (the wait ends, also while it waits for work), publishes what the
/// host wrote before it (the flag, and the released count: the unit is never lost,
/// whether the GPU took it before the stop or drains it after), and that the first
/// request reports `true` and later ones `false`.
#[test]
fn stop_from_the_host_ends_a_gpu_wait() {
    const SERVED_BEFORE_STOP: u32 = 1;
    const DRAINED_AFTER_STOP: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let work = Arc::new(HandoffSemaphore::<HostToGpu, Host>::new(0));
        let stop = Arc::new(BusStopSource::<Host>::new());
        let task = Arc::new(Data::new(0));
        let flag = Arc::new(Data::new(0));

        let kernel = {
            let (work, stop, task, flag) = (work.clone(), stop.clone(), task.clone(), flag.clone());
            thread::spawn(move || {
                let (work, stop) = (gpu(&*work), gpu(&*stop));
                let stopped = || stop.stop_requested();
                let mut served = 0;
                while let Ok(unit) = work.acquire(LoomWait::stop(&stopped)) {
                    assert_eq!((unit, task.get()), (0, 7));
                    served += 1;
                    SEEN.mark(SERVED_BEFORE_STOP);
                }
                assert!(stop.requested_by_host() && !stop.requested_by_gpu());
                assert_eq!(flag.get(), 1);
                if let Some(unit) = work.try_acquire() {
                    assert_eq!((unit, task.get()), (0, 7));
                    served += 1;
                    SEEN.mark(DRAINED_AFTER_STOP);
                }
                assert_eq!(served, 1, "the unit released before the stop");
                assert!(!stop.request_stop(), "the host asked first");
            })
        };

        work.release_with(1, |_| task.set(7));
        flag.set(1);
        assert!(stop.request_stop());
        assert!(!stop.request_stop(), "only the first request on a side");
        kernel.join().unwrap();
        assert!(stop.requested_by_gpu());
    });
    SEEN.assert_all(SERVED_BEFORE_STOP | DRAINED_AFTER_STOP);
}

/// A GPU thread writes its result and requests stop; the host forwards the bus request
/// to an ordinary host `StopSource`, whose registered callback reads the result in the
/// forwarding thread. Proves the GPU's request ends the host's wait, publishes the
/// GPU's write to the host (to the callback, through `forward_to`), and that
/// `forward_to` makes the target's request.
#[test]
fn stop_from_the_gpu_forwarded_to_host_callbacks() {
    loom::model(|| {
        let stop = Arc::new(BusStopSource::<Host>::new());
        let result = Arc::new(Data::new(0));

        let kernel = {
            let (stop, result) = (stop.clone(), result.clone());
            thread::spawn(move || {
                result.set(42);
                assert!(gpu(&*stop).request_stop());
            })
        };

        let source = StopSource::<System>::new();
        let ran = Data::new(0);
        let callback = sync_host::stop_callback(source.token(), || {
            assert_eq!(result.get(), 42);
            ran.set(1);
        });
        assert_eq!(stop.forward_to(&source, LoomWait::new()), Ok(true));
        assert_eq!(ran.get(), 1);
        assert!(stop.requested_by_gpu() && !stop.requested_by_host());
        drop(callback);
        kernel.join().unwrap();
    });
}

/// Both sides request stop at the same time, each after writing its slot. Proves
/// both requests are seen by both sides, each side that sees the other's request sees
/// the other's write, and that both calls may report making the request (as the
/// documentation says). Whether at least one always does is
/// [`stop_concurrent_requests_one_reports_making_it`]'s question.
#[test]
fn stop_requested_by_both_sides() {
    const BOTH_TRUE: u32 = 1;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let stop = Arc::new(BusStopSource::<Host>::new());
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let kernel = {
            let (stop, slots) = (stop.clone(), slots.clone());
            thread::spawn(move || {
                let stop = gpu(&*stop);
                slots[1].set(2);
                let made = stop.request_stop();
                if stop.requested_by_host() {
                    assert_eq!(slots[0].get(), 1);
                }
                made
            })
        };

        slots[0].set(1);
        let made_here = stop.request_stop();
        if stop.requested_by_gpu() {
            assert_eq!(slots[1].get(), 2);
        }
        let made_there = kernel.join().unwrap();
        assert!(stop.requested_by_host() && stop.requested_by_gpu());
        if made_here && made_there {
            SEEN.mark(BOTH_TRUE);
        }
    });
    SEEN.assert_all(BOTH_TRUE);
}

/// When both sides request stop at once, at least one call reports having made the
/// request. (This model found the first version, which stored its own word and then
/// loaded the other's, returning `false` on both sides; `request_stop` now loads the
/// other side's word with acquire before storing its own, which leaves "both `true`"
/// possible but not "both `false`".)
#[test]
fn stop_concurrent_requests_one_reports_making_it() {
    loom::model(|| {
        let stop = Arc::new(BusStopSource::<Host>::new());
        let kernel = {
            let stop = stop.clone();
            thread::spawn(move || gpu(&*stop).request_stop())
        };
        let made_here = stop.request_stop();
        let made_there = kernel.join().unwrap();
        assert!(
            made_here || made_there,
            "neither side's request_stop reported making the request"
        );
    });
}

/// Two threads of one side request stop: `stop_requested()` is `true` right after
/// either `request_stop()` returned (C++'s postcondition). (This model found the first
/// version, whose losing caller returned at once, possibly before the winner stored
/// the request, and published none of its own writes; every request now stores the
/// side's word, an idempotent store of 1.)
#[test]
fn stop_requested_after_any_request_returns() {
    loom::model(|| {
        let stop = Arc::new(BusStopSource::<Host>::new());
        let other = {
            let stop = stop.clone();
            thread::spawn(move || {
                stop.request_stop();
                assert!(
                    stop.stop_requested(),
                    "stop not requested after request_stop"
                );
            })
        };
        stop.request_stop();
        assert!(
            stop.stop_requested(),
            "stop not requested after request_stop"
        );
        other.join().unwrap();
    });
}
