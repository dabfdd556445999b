//! Bus objects across PEs (NVSHMEM's symmetric heap, `cuda::Nvshmem::handoff` and
//! `stop_source`) on CPU threads only: each "PE" is an array element, a copy of the
//! object at the same offset, and a stand-in `Side` plays the GPU of one PE, sending
//! its crossing stores to another copy as NVSHMEM's signal set does. CI (no GPU, no
//! NVSHMEM) checks which copy each side writes and reads, the payload ordering (Miri:
//! `scripts/miri.sh`), the shared releasers' hand-over and the stop claim; the GPU runs
//! are `tests/gpu_process.rs`'s.

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use scoped_sync::bus::{
    BusStopSource, BusWord, Crossing, GpuSideLines, HandoffSemaphore, Side, SideKind,
};
use scoped_sync::{GpuToGpu, Host};

use common::cpu_side::Polling;
use common::{hang_guard, Unsync};

/// The PEs of a test: the start of the slice of their copies of the object under test
/// (a pointer whose provenance spans every copy), and the size of one copy. One test
/// at a time sets them.
static COPIES: Mutex<(usize, usize)> = Mutex::new((0, 0));
static BASE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
/// NVSHMEM completions waited for (`quiet`), over all threads.
static QUIETS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The PE the calling thread plays.
    static MY_PE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Runs `body` with `copies` as the PEs' copies of one object.
fn with_pes<T, R>(copies: &[T], body: impl FnOnce() -> R) -> R {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    BASE.store(copies.as_ptr().cast::<u8>().cast_mut(), Ordering::Relaxed);
    *COPIES.lock().unwrap() = (copies.len(), size_of::<T>());
    QUIETS.store(0, Ordering::Relaxed);
    body()
}

/// `word` (in the calling PE's copy) as it lies in PE `pe`'s copy.
fn on_pe(word: &BusWord, pe: u32) -> &BusWord {
    let (count, size) = *COPIES.lock().unwrap();
    let base = BASE.load(Ordering::Relaxed);
    let mine = MY_PE.with(Cell::get);
    assert!(
        mine < count && (pe as usize) < count,
        "PE {pe} or {mine} of {count}"
    );
    let offset = std::ptr::from_ref(word).addr() - base.addr() - mine * size;
    // SAFETY: the copies are the elements of one slice of one type, alive for the test
    // (`with_pes`'s borrow), and `base` its start, with provenance over all of it: the
    // word at the same offset of PE `pe`'s copy is a live `BusWord` there.
    unsafe { &*base.add(pe as usize * size + offset).cast::<BusWord>() }
}

/// A CPU thread playing the GPU of PE `MY_PE`: host atomics on its own copy, and its
/// crossing stores put into the other copy at the same offset.
struct PeGpu;

// SAFETY: host atomics are atomic for every thread; `pause` only yields; the words on
// other PEs are live words of the copies `with_pes` holds.
unsafe impl Side for PeGpu {
    const KIND: SideKind = SideKind::Gpu;
    host_atomic_side_words!();
    fn store_bus_on_pe(word: &BusWord, value: u64, pe: u32) {
        // The fence before the signal: a release store carries the thread's earlier
        // writes (the payloads it put into that PE's memory).
        on_pe(word, pe).store(value, Ordering::Release);
    }
    fn quiet() {
        QUIETS.fetch_add(1, Ordering::Relaxed);
    }
    fn compare_exchange_on_pe(word: &BusWord, current: u64, new: u64, pe: u32) -> Result<u64, u64> {
        on_pe(word, pe).compare_exchange(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

/// The copies of a handoff from PE `producer` to PE `consumer` among `pes` PEs, marked
/// as `Nvshmem::handoff` marks them.
fn handoff_copies(
    pes: usize,
    producer: u32,
    consumer: u32,
) -> Vec<HandoffSemaphore<GpuToGpu, Host>> {
    (0..pes as u32)
        .map(|pe| {
            let copy = HandoffSemaphore::new(0);
            let [publishing, taking] = copy.gpu_side_lines();
            let crossing = if pe == producer {
                Crossing::ToPe(consumer)
            } else {
                Crossing::None
            };
            // SAFETY: the copies are the stand-in's symmetric heap.
            unsafe {
                publishing.unwrap().attach_own_word_crossing(crossing);
                taking.unwrap().attach_own_word_crossing(Crossing::None);
            }
            copy
        })
        .collect()
}

/// The GPU view of a host-built object (same bytes: the side is zero-sized).
fn as_pe_gpu<T, U>(object: &T) -> &U {
    assert_eq!(size_of::<T>(), size_of::<U>());
    // SAFETY: `T` and `U` are the same `#[repr(C)]` type but for a zero-sized marker.
    unsafe { &*std::ptr::from_ref(object).cast::<U>() }
}

fn payload_of(seq: u64) -> u64 {
    seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5bd1_e995
}

#[test]
fn a_handoff_across_pes_publishes_into_the_consumers_copy_with_its_payloads() {
    hang_guard("handoff across PEs", 60, || {
        const UNITS: usize = if cfg!(miri) { 200 } else { 20_000 };
        const PRODUCERS: usize = 4;
        let copies = handoff_copies(3, 2, 0);
        // The consumer's payload slots (PE 0's memory, written by PE 2's "puts").
        let slots: Vec<Unsync<u64>> = (0..UNITS).map(|_| Unsync::new(0)).collect();
        with_pes(&copies, || {
            let (consumer, producer): (
                &HandoffSemaphore<GpuToGpu, PeGpu>,
                &HandoffSemaphore<GpuToGpu, PeGpu>,
            ) = (as_pe_gpu(&copies[0]), as_pe_gpu(&copies[2]));
            let sum = std::thread::scope(|s| {
                for _ in 0..PRODUCERS {
                    s.spawn(|| {
                        MY_PE.with(|pe| pe.set(2));
                        for _ in 0..UNITS / PRODUCERS {
                            producer
                                .release_with(1, |seq| slots[seq as usize].set(payload_of(seq)));
                        }
                    });
                }
                s.spawn(|| {
                    MY_PE.with(|pe| pe.set(0));
                    let mut inbox = consumer.consumer().expect("the consumer's endpoint");
                    (0..UNITS)
                        .map(|_| slots[inbox.acquire(Polling).expect("a unit") as usize].get())
                        .fold(0u64, u64::wrapping_add)
                })
                .join()
                .unwrap()
            });
            let expected = (0..UNITS as u64)
                .map(payload_of)
                .fold(0u64, u64::wrapping_add);
            assert_eq!(sum, expected, "the consumer saw every payload it acquired");
            assert_eq!(copies[0].released(), UNITS as u64, "the consumer's copy");
            assert_eq!(
                copies[2].released(),
                UNITS as u64,
                "the producer's own copy"
            );
            assert_eq!(copies[1].released(), 0, "a PE that is neither end");
            assert_eq!(
                QUIETS.load(Ordering::Relaxed),
                UNITS,
                "each shared release waited until its count was delivered"
            );
        });
    });
}

#[test]
fn an_exclusive_producer_across_pes_sends_each_count_without_waiting_for_delivery() {
    let copies = handoff_copies(2, 0, 1);
    with_pes(&copies, || {
        MY_PE.with(|pe| pe.set(0));
        let producer: &HandoffSemaphore<GpuToGpu, PeGpu> = as_pe_gpu(&copies[0]);
        let mut out = producer.producer().expect("the producer's endpoint");
        for n in 1..=5 {
            out.release(n);
        }
        drop(out);
        assert_eq!(copies[1].released(), 15, "the consumer's copy");
        assert_eq!(copies[0].released(), 15, "the producer's own copy");
        assert_eq!(
            QUIETS.load(Ordering::Relaxed),
            0,
            "one thread's signals keep their order"
        );
        // The shared releases go on from the producer's count.
        assert_eq!(producer.release(1), 15);
        assert_eq!(copies[1].released(), 16);
    });
}

#[test]
fn a_stop_request_across_pes_reaches_every_copy_and_one_request_of_all_is_first() {
    const PES: usize = 4;
    let copies: Vec<BusStopSource<Host>> = (0..PES)
        .map(|_| {
            let copy = BusStopSource::new();
            let [claim, _] = copy.gpu_side_lines();
            // SAFETY: the copies are the stand-in's symmetric heap.
            unsafe {
                claim
                    .unwrap()
                    .attach_own_word_crossing(Crossing::ToEveryPe(PES as u32))
            };
            copy
        })
        .collect();
    with_pes(&copies, || {
        let firsts = std::thread::scope(|s| {
            let requests: Vec<_> = (0..PES)
                .map(|pe| {
                    let copy: &BusStopSource<PeGpu> = as_pe_gpu(&copies[pe]);
                    s.spawn(move || {
                        MY_PE.with(|me| me.set(pe));
                        let first = copy.request_stop();
                        assert!(copy.stop_requested(), "PE {pe} sees its own request");
                        first
                    })
                })
                .collect();
            requests
                .into_iter()
                .map(|request| request.join().unwrap())
                .filter(|&first| first)
                .count()
        });
        assert_eq!(firsts, 1, "one GPU request of all PEs is the first");
        for (pe, copy) in copies.iter().enumerate() {
            assert!(copy.requested_by_gpu(), "PE {pe}'s copy holds the request");
            assert!(!copy.requested_by_host(), "no host asked");
        }
    });
}

#[test]
fn marks_name_their_pe_and_leave_unmarked_lines_alone() {
    let copies = handoff_copies(2, 1, 0);
    let [publishing, _] = copies[1].gpu_side_lines();
    assert_eq!(publishing.unwrap().crossing(), Crossing::ToPe(0));
    let [publishing, taking] = copies[0].gpu_side_lines();
    assert_eq!(publishing.unwrap().crossing(), Crossing::None);
    assert_eq!(taking.unwrap().crossing(), Crossing::None);
    let fresh: HandoffSemaphore<GpuToGpu, Host> = HandoffSemaphore::new(0);
    assert_eq!(
        fresh.gpu_side_lines()[0].unwrap().crossing(),
        Crossing::None
    );
}
