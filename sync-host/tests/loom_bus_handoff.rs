//! loom models of `HandoffSemaphore` (the publish protocol, sequence numbers, shared
//! acquirers, the exclusive endpoints) and `HandoffChannel` (how they run:
//! `loom_bus_support`).
#![cfg(loom)]

mod loom_bus_support;
mod loom_support;

// std's Arc, not loom's, as in the other models: a failing model reports its first
// panic instead of aborting in loom's Arc destructor while unwinding.
use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use loom_bus_support::*;
use loom_support::{Data, Seen};
use sync_host::Host;
use sync_shared::bus::{GpuToHost, HandoffChannel, HandoffSemaphore, HostToGpu};

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
