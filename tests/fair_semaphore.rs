//! Conformance tests for `scoped_sync::FairSemaphore` (FIFO) on CPU threads: the
//! semaphore suite every semaphore passes (`semaphore_suite`, with the counter checked
//! where it knows it), plus first-come-first-served order and the count conservation
//! of waits that time out or are stopped while queued.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use scoped_sync::{FairSemaphore, StopSource, Stopped, WaiterSlot};

mod common;
mod semaphore_suite;
use common::{hang_guard, spin_until};

semaphore_suite::semaphore_suite!(
    FairSemaphore,
    count: crate::counter,
    lost_wakeup: (8, 2_000, 10),
    mutex_iterations: 5_000
);

/// [`count`] for the suite.
fn counter<const MAX: u32>(semaphore: &FairSemaphore<MAX>) -> Option<i64> {
    Some(count(semaphore))
}

/// The semaphore's counter as its `Debug` output shows it: free units, or minus the
/// number of queued tickets. Taking a ticket is the first thing a blocking acquire
/// does, so this observes "the thread is queued" without guessing with sleeps.
fn count<const MAX: u32>(semaphore: &FairSemaphore<MAX>) -> i64 {
    let text = format!("{semaphore:?}");
    let start = text.find("count: ").expect("Debug shows the count") + "count: ".len();
    let digits: String = text[start..]
        .chars()
        .take_while(|c| *c == '-' || c.is_ascii_digit())
        .collect();
    digits.parse().expect("count is a number")
}

#[test]
fn acquire_release_try_acquire() {
    let semaphore: FairSemaphore = FairSemaphore::new(2);
    assert_eq!(count(&semaphore), 2);
    assert!(semaphore.try_acquire());
    assert!(semaphore.try_acquire());
    assert!(!semaphore.try_acquire());
    semaphore.release(1);
    assert!(semaphore.try_acquire());
    semaphore.release(2);
    semaphore.acquire();
    semaphore.acquire();
    assert!(!semaphore.try_acquire());
    assert_eq!(count(&semaphore), 0);
}

#[test]
fn fifo_order() {
    const WAITERS: usize = 6;
    hang_guard("fifo_order", 60, || {
        let semaphore: FairSemaphore = FairSemaphore::new(0);
        let order = Mutex::new(Vec::new());
        thread::scope(|s| {
            for id in 0..WAITERS {
                let (semaphore, order) = (&semaphore, &order);
                s.spawn(move || {
                    semaphore.acquire();
                    order.lock().unwrap().push(id);
                });
                // The next thread starts only once this one holds its ticket.
                spin_until(|| count(semaphore) == -(id as i64 + 1));
            }
            // Let them all park (FIFO must not depend on it).
            thread::sleep(Duration::from_millis(20));
            for served in 1..=WAITERS {
                semaphore.release(1);
                spin_until(|| order.lock().unwrap().len() == served);
            }
        });
        assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
        assert!(!semaphore.try_acquire());
    });
}

#[test]
fn one_release_serves_the_whole_queue() {
    // release(n) with n queued threads lets every one of them through.
    const WAITERS: usize = 5;
    hang_guard("one_release_serves_the_whole_queue", 60, || {
        let semaphore: FairSemaphore = FairSemaphore::new(0);
        let served = Mutex::new(Vec::new());
        thread::scope(|s| {
            for id in 0..WAITERS {
                let (semaphore, served) = (&semaphore, &served);
                s.spawn(move || {
                    semaphore.acquire();
                    served.lock().unwrap().push(id);
                });
                spin_until(|| count(semaphore) == -(id as i64 + 1));
            }
            semaphore.release(WAITERS as u32);
        });
        let mut served = served.into_inner().unwrap();
        served.sort_unstable();
        assert_eq!(served, (0..WAITERS).collect::<Vec<_>>());
        assert_eq!(count(&semaphore), 0);
    });
}

#[test]
fn try_acquire_does_not_jump_the_queue() {
    hang_guard("try_acquire_does_not_jump_the_queue", 30, || {
        let semaphore: FairSemaphore = FairSemaphore::new(0);
        thread::scope(|s| {
            s.spawn(|| semaphore.acquire());
            spin_until(|| count(&semaphore) == -1);
            semaphore.release(1);
            // The unit belongs to the queued thread.
            assert!(!semaphore.try_acquire());
            assert!(!semaphore.try_acquire_for(Duration::ZERO));
        });
        assert_eq!(count(&semaphore), 0);
        semaphore.release(1);
        assert!(semaphore.try_acquire());
    });
}

#[test]
fn timed_out_waiter_conserves_the_count() {
    // Initial 0: A times out while queued; a release must then go to B, and leave 0.
    hang_guard("timed_out_waiter_conserves_the_count", 30, || {
        let semaphore: FairSemaphore = FairSemaphore::new(0);
        assert!(!semaphore.try_acquire_for(Duration::from_millis(10)));
        assert_eq!(count(&semaphore), 0);
        thread::scope(|s| {
            let b = s.spawn(|| semaphore.acquire());
            spin_until(|| count(&semaphore) == -1);
            semaphore.release(1);
            b.join().unwrap();
        });
        assert!(!semaphore.try_acquire(), "the timeout created a unit");
        assert_eq!(count(&semaphore), 0);
    });
}

#[test]
fn head_waiter_times_out_before_a_later_one() {
    // A (head, timed) and B (behind A) queue; A times out; one release serves B.
    hang_guard("head_waiter_times_out_before_a_later_one", 30, || {
        let semaphore: FairSemaphore = FairSemaphore::new(0);
        let b_through = AtomicBool::new(false);
        thread::scope(|s| {
            let a = s.spawn(|| semaphore.try_acquire_for(Duration::from_millis(50)));
            spin_until(|| count(&semaphore) == -1);
            s.spawn(|| {
                semaphore.acquire();
                b_through.store(true, Ordering::Relaxed);
            });
            spin_until(|| count(&semaphore) == -2 || a.is_finished());
            assert!(!a.join().unwrap(), "A got a unit nobody released");
            assert!(
                !b_through.load(Ordering::Relaxed),
                "B got a unit nobody released"
            );
            semaphore.release(1);
        });
        assert!(b_through.load(Ordering::Relaxed));
        assert!(!semaphore.try_acquire());
        assert_eq!(count(&semaphore), 0);
    });
}

#[test]
fn later_waiter_timing_out_grants_nothing_to_the_head() {
    // A queues first (untimed), then this thread queues behind it with a timeout. No
    // unit is ever released before the timeout, so A must still be blocked after it.
    hang_guard(
        "later_waiter_timing_out_grants_nothing_to_the_head",
        30,
        || {
            let semaphore: FairSemaphore = FairSemaphore::new(0);
            let a_through = AtomicBool::new(false);
            thread::scope(|s| {
                s.spawn(|| {
                    semaphore.acquire();
                    a_through.store(true, Ordering::Relaxed);
                });
                spin_until(|| count(&semaphore) == -1);
                assert!(!semaphore.try_acquire_for(Duration::from_millis(10)));
                thread::sleep(Duration::from_millis(50));
                let early = a_through.load(Ordering::Relaxed);
                semaphore.release(1);
                assert!(
                    !early,
                    "the queued thread acquired although no unit was released \
                 (a later waiter's timeout paid for it)"
                );
            });
            assert!(a_through.load(Ordering::Relaxed));
            assert!(!semaphore.try_acquire());
            assert_eq!(count(&semaphore), 0);
        },
    );
}

#[test]
fn mutual_exclusion_survives_a_timed_out_waiter() {
    // A binary fair semaphore as a lock: while this thread holds it, A queues and B
    // queues behind A with a timeout. B's timeout must not let A in.
    hang_guard("mutual_exclusion_survives_a_timed_out_waiter", 30, || {
        let lock: FairSemaphore<1> = FairSemaphore::new(1);
        let holders = AtomicU32::new(0);
        let violated = AtomicBool::new(false);
        lock.acquire();
        holders.fetch_add(1, Ordering::SeqCst);
        thread::scope(|s| {
            s.spawn(|| {
                lock.acquire();
                if holders.fetch_add(1, Ordering::SeqCst) != 0 {
                    violated.store(true, Ordering::SeqCst);
                }
                holders.fetch_sub(1, Ordering::SeqCst);
                lock.release(1);
            });
            spin_until(|| count(&lock) == -1);
            let b = s.spawn(|| lock.try_acquire_for(Duration::from_millis(10)));
            assert!(!b.join().unwrap(), "B acquired a held lock");
            thread::sleep(Duration::from_millis(50));
            holders.fetch_sub(1, Ordering::SeqCst);
            lock.release(1);
        });
        assert!(
            !violated.load(Ordering::SeqCst),
            "two holders of a binary semaphore after a queued waiter timed out"
        );
        assert!(lock.try_acquire());
    });
}

#[test]
fn stopped_waiter_conserves_the_count() {
    hang_guard("stopped_waiter_conserves_the_count", 30, || {
        let semaphore: FairSemaphore = FairSemaphore::new(0);
        let source = StopSource::new();
        thread::scope(|s| {
            let a = s.spawn(|| semaphore.acquire_stoppable(source.token()));
            spin_until(|| count(&semaphore) == -1);
            assert!(source.request_stop());
            assert_eq!(a.join().unwrap(), Err(Stopped));
            assert_eq!(count(&semaphore), 0);
            let b = s.spawn(|| semaphore.acquire());
            spin_until(|| count(&semaphore) == -1);
            semaphore.release(1);
            b.join().unwrap();
        });
        assert!(!semaphore.try_acquire(), "the stop created a unit");
    });
}

#[test]
fn later_waiter_stopping_grants_nothing_to_the_head() {
    hang_guard(
        "later_waiter_stopping_grants_nothing_to_the_head",
        30,
        || {
            let semaphore: FairSemaphore = FairSemaphore::new(0);
            let source = StopSource::new();
            let a_through = AtomicBool::new(false);
            thread::scope(|s| {
                s.spawn(|| {
                    semaphore.acquire();
                    a_through.store(true, Ordering::Relaxed);
                });
                spin_until(|| count(&semaphore) == -1);
                let b = s.spawn(|| semaphore.acquire_stoppable(source.token()));
                spin_until(|| count(&semaphore) == -2);
                source.request_stop();
                assert_eq!(b.join().unwrap(), Err(Stopped));
                thread::sleep(Duration::from_millis(50));
                let early = a_through.load(Ordering::Relaxed);
                semaphore.release(1);
                assert!(
                    !early,
                    "the queued thread acquired although no unit was released \
                 (a later waiter's stop paid for it)"
                );
            });
            assert!(!semaphore.try_acquire());
        },
    );
}

#[test]
fn many_timed_waiters_conserve_units() {
    // Timed acquirers churn (time out, retry) while units trickle in: every unit is
    // taken exactly once and none is invented.
    const THREADS: u32 = 4;
    const PER_THREAD: u32 = 2_000;
    hang_guard("many_timed_waiters_conserve_units", 60, || {
        let semaphore: FairSemaphore = FairSemaphore::new(0);
        let taken = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..PER_THREAD {
                        while !semaphore.try_acquire_for(Duration::from_micros(30)) {}
                        taken.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            for i in 0..THREADS * PER_THREAD {
                semaphore.release(1);
                if i % 64 == 0 {
                    thread::yield_now();
                }
            }
        });
        assert_eq!(taken.load(Ordering::Relaxed), THREADS * PER_THREAD);
        assert!(!semaphore.try_acquire());
        assert_eq!(count(&semaphore), 0);
    });
}

#[test]
fn release_with_queued_waiters_counts_them() {
    // The counter is negative while threads queue; a release up to MAX above it is
    // allowed (it serves the queue first).
    hang_guard("release_with_queued_waiters_counts_them", 30, || {
        let semaphore: FairSemaphore<1> = FairSemaphore::new(0);
        thread::scope(|s| {
            s.spawn(|| semaphore.acquire());
            spin_until(|| count(&semaphore) == -1);
            semaphore.release(2);
        });
        assert_eq!(count(&semaphore), 1);
        assert!(semaphore.try_release(1).is_err(), "1 + 1 exceeds MAX = 1");
        assert!(semaphore.try_acquire());
    });
}

#[test]
fn waiter_slots_serve_many_waits_in_fifo_order() {
    // The `_in` methods queue in the caller's slot: each thread reuses one slot for
    // every wait; the queue is still first-come, first-served and exclusive.
    hang_guard("waiter_slots_serve_many_waits_in_fifo_order", 30, || {
        let semaphore: FairSemaphore<1> = FairSemaphore::new(0);
        let order = Mutex::new(Vec::new());
        thread::scope(|s| {
            for id in 0..3_u32 {
                let (semaphore, order) = (&semaphore, &order);
                spin_until(|| count(semaphore) == -(id as i64));
                s.spawn(move || {
                    let mut slot = WaiterSlot::new();
                    semaphore.acquire_in(&mut slot);
                    order.lock().unwrap().push(id);
                    semaphore.release(1);
                    for _ in 0..50 {
                        semaphore.acquire_in(&mut slot);
                        semaphore.release(1);
                    }
                    assert!(semaphore.try_acquire_for_in(&mut slot, Duration::from_secs(5)));
                    semaphore.release(1);
                });
            }
            spin_until(|| count(&semaphore) == -3);
            semaphore.release(1);
        });
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
        assert_eq!(count(&semaphore), 1);
        let mut slot = WaiterSlot::new();
        semaphore.acquire_in(&mut slot);
        let deadline = Instant::now() + Duration::from_millis(5);
        assert!(
            !semaphore.try_acquire_until_in(&mut slot, deadline),
            "took a unit nobody released"
        );
    });
}
