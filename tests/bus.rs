//! The bus objects' protocols on CPU threads only: a stand-in `Side` with
//! `KIND = Gpu` plays the GPU, so CI (no GPU) checks sequence numbers, payload
//! ordering, exclusive endpoints, latch, barrier and stop requests. The GPU runs of the
//! same objects are in `tests/gpu_bus.rs`.
//!
//! Payloads are plain memory ([`Unsync`]), as a ring of payload slots is: Miri
//! (`scripts/miri.sh`) then reports any payload access the protocol leaves unordered.
//! Under Miri the many-to-many handoff hands 1000 units, not 40 000 (4000 took 2 min).

mod common;

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::Mutex;

use scoped_sync::bus::{
    BusBarrier, BusLatch, BusStopSource, BusWord, GpuSideLines, HandoffChannel, HandoffSemaphore,
    Side, SideKind, SideLine,
};
use scoped_sync::{GpuToGpu, GpuToHost, Host, HostToGpu, StopSource};

use common::cpu_side::Polling;
use common::{hang_guard, Unsync};

/// CPU threads standing in for GPU threads (same atomics, other side). With
/// `ATTACHED`, they read-modify-write the words attached to the object's GPU side
/// lines, as the GPU does (`SideLine::attached_gpu_word`); without, the lines' own
/// words.
struct FakeGpuOf<const ATTACHED: bool>;
/// The stand-in on the lines' own words.
type FakeGpu = FakeGpuOf<false>;
/// The stand-in on attached words.
type AttachedGpu = FakeGpuOf<true>;

// SAFETY: host atomics are atomic for every thread; `pause` only yields; an attached
// word is a live host atomic (the tests attach `Box`ed words that outlive the object's
// use).
unsafe impl<const ATTACHED: bool> Side for FakeGpuOf<ATTACHED> {
    const KIND: SideKind = SideKind::Gpu;
    fn side_word(line: &SideLine) -> &BusWord {
        if ATTACHED {
            line.attached_gpu_word()
        } else {
            line.word()
        }
    }
    host_atomic_side_words!();
}

/// The "GPU side" view of a host-built object (same bytes: the side is zero-sized).
fn as_gpu<T, U>(object: &T) -> &U {
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<U>());
    // SAFETY: `T` and `U` are the same `#[repr(C)]` type but for a zero-sized marker.
    unsafe { &*std::ptr::from_ref(object).cast::<U>() }
}

fn payload_of(seq: u64) -> u32 {
    (seq as u32).wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995
}

#[test]
fn many_to_many_handoff_hands_each_unit_once_with_its_payload() {
    hang_guard("handoff", 60, || {
        const UNITS: usize = if cfg!(miri) { 1_000 } else { 40_000 };
        let host: HandoffSemaphore<GpuToHost, Host> = HandoffSemaphore::new(0);
        let gpu: &HandoffSemaphore<GpuToHost, FakeGpu> = as_gpu(&host);
        let payload: Vec<Unsync<u32>> = (0..UNITS).map(|_| Unsync::new(0)).collect();
        let seen: Vec<AtomicU8> = (0..UNITS).map(|_| AtomicU8::new(0)).collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..UNITS / 4 {
                        gpu.release_with(1, |seq| payload[seq as usize].set(payload_of(seq)));
                    }
                });
                s.spawn(|| {
                    for _ in 0..UNITS / 4 {
                        let seq = host.acquire(Polling).unwrap();
                        assert_eq!(
                            payload[seq as usize].get(),
                            payload_of(seq),
                            "payload of unit {seq} not visible after its acquire"
                        );
                        seen[seq as usize].fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert!(seen.iter().all(|count| count.load(Ordering::Relaxed) == 1));
        assert_eq!(host.released(), UNITS as u64);
        assert_eq!(host.try_acquire(), None);
    });
}

#[test]
fn exclusive_endpoints_continue_the_shared_count() {
    let host: HandoffSemaphore<HostToGpu, Host> = HandoffSemaphore::new(2);
    let gpu: &HandoffSemaphore<HostToGpu, FakeGpu> = as_gpu(&host);
    assert_eq!(host.release(3), 2, "units 2, 3, 4");
    {
        let mut producer = host.producer().expect("no endpoint yet");
        assert!(host.producer().is_none(), "one producer endpoint at a time");
        assert_eq!(producer.release(2), 5);
        assert_eq!(producer.released(), 7);
    }
    assert_eq!(
        host.release(1),
        7,
        "the shared path continues after the endpoint"
    );
    assert_eq!(gpu.try_acquire(), Some(0));
    let mut consumer = gpu.consumer().expect("no endpoint yet");
    let taken: Vec<_> = std::iter::from_fn(|| consumer.try_acquire()).collect();
    assert_eq!(taken, [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(consumer.acquired(), 8);
    drop(consumer);
    assert_eq!(gpu.try_acquire(), None);
    host.release(1);
    assert_eq!(gpu.acquire(Polling), Ok(8));
}

#[test]
#[should_panic(expected = "exclusive endpoint")]
fn shared_release_while_a_producer_exists_panics() {
    let host: HandoffSemaphore<HostToGpu, Host> = HandoffSemaphore::new(0);
    let _producer = host.producer().unwrap();
    host.release(1);
}

#[test]
#[should_panic(expected = "Consumer")]
fn shared_acquire_while_a_consumer_exists_panics() {
    let host: HandoffSemaphore<GpuToHost, Host> = HandoffSemaphore::new(1);
    let _consumer = host.consumer().unwrap();
    let _ = host.try_acquire();
}

#[test]
fn consumer_endpoint_waits_for_the_other_side() {
    hang_guard("consumer endpoint", 60, || {
        const UNITS: u64 = 10_000;
        let host: HandoffSemaphore<GpuToHost, Host> = HandoffSemaphore::new(0);
        let gpu: &HandoffSemaphore<GpuToHost, FakeGpu> = as_gpu(&host);
        // A ring of 8 slots: the producer refills a slot only after the consumer has
        // read it (the `freed` count), so each slot is written and read in turn.
        const SLOTS: u64 = 8;
        let ring: Vec<Unsync<u32>> = (0..SLOTS).map(|_| Unsync::new(0)).collect();
        let freed: HandoffSemaphore<HostToGpu, Host> = HandoffSemaphore::new(SLOTS);
        let freed_gpu: &HandoffSemaphore<HostToGpu, FakeGpu> = as_gpu(&freed);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut producer = gpu.producer().unwrap();
                let mut free = freed_gpu.consumer().unwrap();
                for seq in 0..UNITS {
                    free.acquire(Polling).unwrap();
                    let slot = &ring[(seq % SLOTS) as usize];
                    producer.release_with(1, |_| slot.set(payload_of(seq)));
                }
            });
            let mut consumer = host.consumer().unwrap();
            let mut free = freed.producer().unwrap();
            for expected in 0..UNITS {
                assert_eq!(consumer.acquire(Polling), Ok(expected));
                assert_eq!(
                    ring[(expected % SLOTS) as usize].get(),
                    payload_of(expected)
                );
                free.release(1);
            }
        });
    });
}

#[test]
fn bus_latch_counts_both_sides_and_rejects_an_overrun() {
    let host: BusLatch<Host> = BusLatch::new(5);
    let gpu: &BusLatch<FakeGpu> = as_gpu(&host);
    host.count_down(2);
    assert!(!gpu.try_wait());
    gpu.count_down(3);
    assert!(host.try_wait() && gpu.try_wait());
    assert_eq!(host.wait(Polling), Ok(()));
    let overrun = std::panic::catch_unwind(|| gpu.count_down(1));
    assert!(overrun.is_err(), "counting past expected panics");
    // The overrun's units were published as its panic unwound: a later count-down of
    // that side finds its turn instead of waiting for ever (it panics too: the latch
    // is still overrun).
    hang_guard("count_down_after_an_overrun", 30, || {
        let again = std::panic::catch_unwind(|| gpu.count_down(1));
        assert!(again.is_err(), "still counting past expected");
    });
}

/// A `fill` that panics does not stop the releasers after it: its units are released
/// as the panic unwinds, and the next release publishes after them.
#[test]
fn a_panicking_fill_does_not_stop_later_releases() {
    hang_guard("a_panicking_fill", 30, || {
        let semaphore: HandoffSemaphore<HostToGpu, Host> = HandoffSemaphore::new(0);
        let failed = std::panic::catch_unwind(|| {
            semaphore.release_with(2, |_| panic!("fill failed"));
        });
        assert!(failed.is_err(), "the fill's panic reaches the releaser");
        assert_eq!(
            semaphore.released(),
            2,
            "the failed release's units were published"
        );
        assert_eq!(semaphore.release(1), 2, "the next release follows them");
        assert_eq!(semaphore.released(), 3);
    });
}

#[test]
fn bus_barrier_phases_show_every_participants_writes() {
    hang_guard("bus barrier", 60, || {
        const PHASES: u32 = 300;
        let host: BusBarrier<Host> = BusBarrier::new(2, 3);
        let gpu: &BusBarrier<FakeGpu> = as_gpu(&host);
        let written: Vec<AtomicU32> = (0..5).map(|_| AtomicU32::new(0)).collect();
        let bad = AtomicU32::new(0);
        std::thread::scope(|s| {
            for me in 0..5 {
                let (host, written, bad) = (&host, &written, &bad);
                let arrive_and_wait = move || {
                    if me < 2 {
                        host.arrive_and_wait(Polling)
                    } else {
                        gpu.arrive_and_wait(Polling)
                    }
                };
                s.spawn(move || {
                    for phase in 0..PHASES {
                        written[me].store(phase + 1, Ordering::Relaxed);
                        arrive_and_wait().unwrap();
                        if written
                            .iter()
                            .any(|word| word.load(Ordering::Relaxed) < phase + 1)
                        {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                        // Nobody writes phase + 2 before everyone has checked phase + 1.
                        arrive_and_wait().unwrap();
                    }
                });
            }
        });
        assert_eq!(bad.into_inner(), 0);
        let token = host.arrive(2);
        assert_eq!(token.phase(), u64::from(PHASES) * 2);
        assert!(!host.try_wait(token), "the GPU side has not arrived");
        let over = std::panic::catch_unwind(|| host.arrive(1));
        assert!(over.is_err(), "a third host arrival in one phase panics");
    });
}

#[test]
fn bus_stop_source_reports_who_asked_and_forwards_to_host_callbacks() {
    let host: BusStopSource<Host> = BusStopSource::new();
    let gpu: &BusStopSource<FakeGpu> = as_gpu(&host);
    assert!(!host.stop_requested());
    assert!(gpu.request_stop(), "the first request");
    assert!(!gpu.request_stop(), "only the first on its side");
    assert!(!host.request_stop(), "the other side asked first");
    assert!(host.requested_by_gpu() && host.requested_by_host());
    let source = StopSource::new();
    let ran = Mutex::new(false);
    let _callback = scoped_sync::stop_callback(source.token(), || *ran.lock().unwrap() = true);
    assert_eq!(host.forward_to(&source, Polling), Ok(true));
    assert!(*ran.lock().unwrap());
}

#[test]
fn bus_objects_have_the_shared_layouts() {
    use scoped_sync::layout::{self, of};
    assert_eq!(
        of::<HandoffSemaphore<GpuToHost, Host>>(),
        layout::HANDOFF_SEMAPHORE
    );
    assert_eq!(of::<BusLatch<Host>>(), layout::BUS_LATCH);
    assert_eq!(of::<BusBarrier<Host>>(), layout::BUS_BARRIER);
    assert_eq!(of::<BusStopSource<Host>>(), layout::BUS_STOP_SOURCE);
}

/// How many of `object`'s GPU side lines exist, each checked to lie inside the object.
fn gpu_lines_within<T: GpuSideLines>(object: &T) -> usize {
    let start = std::ptr::from_ref(object) as usize;
    let lines: Vec<&SideLine> = object.gpu_side_lines().into_iter().flatten().collect();
    for line in &lines {
        let at = std::ptr::from_ref(*line) as usize;
        assert!(at >= start && at + 64 <= start + std::mem::size_of::<T>());
    }
    lines.len()
}

#[test]
fn each_bus_object_names_the_side_lines_the_gpu_read_modify_writes() {
    assert_eq!(
        gpu_lines_within(&HandoffSemaphore::<GpuToHost, Host>::new(0)),
        1
    );
    assert_eq!(
        gpu_lines_within(&HandoffSemaphore::<HostToGpu, Host>::new(0)),
        1
    );
    assert_eq!(
        gpu_lines_within(&HandoffSemaphore::<GpuToGpu, Host>::new(0)),
        2
    );
    assert_eq!(gpu_lines_within(&HandoffChannel::<Host>::new(0, 0)), 2);
    assert_eq!(gpu_lines_within(&BusLatch::<Host>::new(1)), 1);
    assert_eq!(gpu_lines_within(&BusBarrier::<Host>::new(1, 1)), 1);
    assert_eq!(gpu_lines_within(&BusStopSource::<Host>::new()), 1);
    // A GPU-to-host semaphore's producing line is the GPU's, a host-to-GPU one's
    // consuming line: never the same line for both directions.
    let to_host = HandoffSemaphore::<GpuToHost, Host>::new(0);
    let to_gpu = HandoffSemaphore::<HostToGpu, Host>::new(0);
    assert!(to_host.gpu_side_lines()[0].is_some() && to_host.gpu_side_lines()[1].is_none());
    assert!(to_gpu.gpu_side_lines()[0].is_none() && to_gpu.gpu_side_lines()[1].is_some());
}

/// Attaches a fresh word to each of `object`'s GPU side lines, holding the line's value
/// (what the runtime does in device memory); returns the words (their heap buffer
/// stays where it is while the caller keeps them).
fn attach_words<T: GpuSideLines>(object: &T) -> Vec<BusWord> {
    let lines: Vec<&SideLine> = object.gpu_side_lines().into_iter().flatten().collect();
    let words: Vec<BusWord> = lines
        .iter()
        .map(|line| BusWord::new(line.word().load(Ordering::Relaxed)))
        .collect();
    for (line, word) in lines.iter().zip(&words) {
        // SAFETY: a live host atomic that the caller keeps while the object is used.
        unsafe { line.attach_gpu_word(word.as_ptr() as u64) };
    }
    words
}

#[test]
fn the_gpu_side_works_on_the_attached_words_and_never_on_the_objects_own() {
    let host: HandoffSemaphore<GpuToHost, Host> = HandoffSemaphore::new(3);
    let words = attach_words(&host);
    let gpu: &HandoffSemaphore<GpuToHost, AttachedGpu> = as_gpu(&host);
    assert_eq!(
        gpu.release(2),
        3,
        "the attached word starts from the line's count"
    );
    {
        let mut producer = gpu.producer().expect("no endpoint yet");
        assert_eq!(producer.release(1), 5);
    }
    assert_eq!(host.released(), 6);
    assert_eq!(
        words[0].load(Ordering::Relaxed),
        6,
        "the producer handed its count back"
    );
    let own = host.gpu_side_lines()[0].expect("the GPU's producing line");
    assert_eq!(
        own.word().load(Ordering::Relaxed),
        3,
        "the object's own word untouched"
    );

    let stop: BusStopSource<Host> = BusStopSource::new();
    let claims = attach_words(&stop);
    let gpu_stop: &BusStopSource<AttachedGpu> = as_gpu(&stop);
    assert!(gpu_stop.request_stop());
    assert!(
        !gpu_stop.request_stop(),
        "the GPU's second request is not the first"
    );
    assert_eq!(claims[0].load(Ordering::Relaxed), 1);
    assert!(stop.requested_by_gpu());
}

#[test]
#[should_panic(expected = "the object was not placed by the runtime")]
fn a_gpu_side_without_attached_words_stops_with_a_clear_message() {
    let host: BusLatch<Host> = BusLatch::new(2);
    let gpu: &BusLatch<AttachedGpu> = as_gpu(&host);
    gpu.count_down(1);
}

#[test]
fn one_racer_gets_both_endpoints_of_a_channel_and_the_rest_none() {
    const ROUNDS: usize = if cfg!(miri) { 20 } else { 1000 };
    const RACERS: usize = 8;
    hang_guard("endpoints race", 60, || {
        let host: HandoffChannel<Host> = HandoffChannel::new(0, 0);
        let gpu: &HandoffChannel<FakeGpu> = as_gpu(&host);
        let start = std::sync::Barrier::new(RACERS);
        let tried = std::sync::Barrier::new(RACERS);
        let winners: Vec<AtomicU32> = (0..ROUNDS).map(|_| AtomicU32::new(0)).collect();
        std::thread::scope(|s| {
            for _ in 0..RACERS {
                s.spawn(|| {
                    for round in &winners {
                        start.wait();
                        let claimed = gpu.endpoints();
                        if claimed.is_some() {
                            round.fetch_add(1, Ordering::Relaxed);
                        }
                        // Everyone has tried before the winner lets go.
                        tried.wait();
                        drop(claimed);
                    }
                });
            }
        });
        for (round, count) in winners.iter().enumerate() {
            assert_eq!(count.load(Ordering::Relaxed), 1, "round {round}");
        }
    });
}

#[test]
fn endpoints_are_both_or_none_when_one_is_held_elsewhere() {
    let host: HandoffChannel<Host> = HandoffChannel::new(0, 0);
    let consumer = host.consumer().expect("free");
    assert!(host.endpoints().is_none());
    // The producer claimed on the way was handed back.
    let mut producer = host
        .producer()
        .expect("the failed claim released the producer");
    assert_eq!(producer.release(1), 0);
    drop((producer, consumer));
    assert!(host.endpoints().is_some());
}
