//! Conformance tests for `scoped_sync::CountingSemaphore` and `BinarySemaphore` on CPU
//! threads: the semaphore suite every semaphore passes (`semaphore_suite`: libc++'s
//! `thread.semaphore` tests, stoppable acquires, mutual exclusion, statics), plus
//! wake-ups of parked waiters, bounded concurrency, publication and `Debug`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use scoped_sync::{BinarySemaphore, CountingSemaphore, StopSource, Stopped, System};

mod common;
mod semaphore_suite;
use common::{hang_guard, spin_until, Unsync};

semaphore_suite::semaphore_suite!(
    CountingSemaphore,
    count: crate::counter,
    lost_wakeup: (8, 10_000, 20),
    mutex_iterations: 20_000
);

/// The suite's counter: a `CountingSemaphore` counts free units only (its waiters
/// apart), so the suite cannot see queued threads in it and sleeps instead.
fn counter<const MAX: u32>(_semaphore: &CountingSemaphore<MAX>) -> Option<i64> {
    None
}

/// Takes every unit that is free without blocking; returns how many.
fn drain<const MAX: u32>(semaphore: &CountingSemaphore<MAX>) -> u32 {
    let mut taken = 0;
    while semaphore.try_acquire() {
        taken += 1;
    }
    taken
}

#[test]
fn release_n_wakes_every_parked_waiter() {
    const WAITERS: u32 = 8;
    const ROUNDS: u32 = 50;
    hang_guard("release_n_wakes_every_parked_waiter", 60, || {
        for _ in 0..ROUNDS {
            let semaphore: CountingSemaphore = CountingSemaphore::new(0);
            let parked = AtomicU32::new(0);
            thread::scope(|s| {
                for _ in 0..WAITERS {
                    s.spawn(|| {
                        parked.fetch_add(1, Ordering::Relaxed);
                        semaphore.acquire();
                    });
                }
                spin_until(|| parked.load(Ordering::Relaxed) == WAITERS);
                semaphore.release(WAITERS);
            });
            assert!(!semaphore.try_acquire());
        }
    });
}

#[test]
fn releases_of_one_wake_waiters_one_by_one() {
    const WAITERS: u32 = 6;
    const ROUNDS: u32 = 50;
    hang_guard("releases_of_one_wake_waiters_one_by_one", 60, || {
        for _ in 0..ROUNDS {
            let semaphore: CountingSemaphore = CountingSemaphore::new(0);
            let parked = AtomicU32::new(0);
            thread::scope(|s| {
                for _ in 0..WAITERS {
                    s.spawn(|| {
                        parked.fetch_add(1, Ordering::Relaxed);
                        semaphore.acquire();
                    });
                }
                spin_until(|| parked.load(Ordering::Relaxed) == WAITERS);
                for _ in 0..WAITERS {
                    semaphore.release(1);
                }
            });
            assert!(!semaphore.try_acquire());
        }
    });
}

#[test]
fn lost_wakeup_with_timed_acquirers() {
    // Acquirers that time out and retry must not swallow the wake-up meant for a
    // thread blocked without a timeout.
    const ACQUIRES: u32 = 5_000;
    hang_guard("lost_wakeup_with_timed_acquirers", 60, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        thread::scope(|s| {
            for id in 0..4u32 {
                let semaphore = &semaphore;
                s.spawn(move || {
                    for _ in 0..ACQUIRES {
                        if id % 2 == 0 {
                            semaphore.acquire();
                        } else {
                            while !semaphore.try_acquire_for(Duration::from_micros(20)) {}
                        }
                    }
                });
            }
            for _ in 0..4 * ACQUIRES {
                semaphore.release(1);
            }
        });
        assert!(!semaphore.try_acquire());
    });
}

#[test]
fn acquire_stoppable_returns_stopped_and_keeps_the_count() {
    hang_guard("acquire_stoppable_returns_stopped", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        let source = StopSource::new();
        let waiting = AtomicBool::new(false);
        thread::scope(|s| {
            let waiter = s.spawn(|| {
                waiting.store(true, Ordering::Relaxed);
                semaphore.acquire_stoppable(source.token())
            });
            spin_until(|| waiting.load(Ordering::Relaxed));
            thread::sleep(Duration::from_millis(20));
            assert!(source.request_stop());
            assert_eq!(waiter.join().unwrap(), Err(Stopped));
        });
        // The stopped acquire took nothing.
        semaphore.release(1);
        assert!(semaphore.try_acquire());
        assert!(!semaphore.try_acquire());
    });
}

#[test]
fn max_values_of_zero_and_binary() {
    // The rest of `max` is the suite's `max_values`.
    assert_eq!(CountingSemaphore::<0>::max(), 0);
    assert_eq!(BinarySemaphore::<System>::max(), 1);
    let empty: CountingSemaphore<0> = CountingSemaphore::new(0);
    assert!(!empty.try_acquire());
}

#[test]
fn counting_semaphore_bounds_concurrency() {
    const SLOTS: u32 = 3;
    const THREADS: u32 = 8;
    hang_guard("counting_semaphore_bounds_concurrency", 60, || {
        let slots: CountingSemaphore<SLOTS> = CountingSemaphore::new(SLOTS);
        let inside = AtomicU32::new(0);
        let most = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for i in 0..2_000 {
                        slots.acquire();
                        let now = inside.fetch_add(1, Ordering::Relaxed) + 1;
                        most.fetch_max(now, Ordering::Relaxed);
                        if i % 100 == 0 {
                            thread::yield_now();
                        }
                        inside.fetch_sub(1, Ordering::Relaxed);
                        slots.release(1);
                    }
                });
            }
        });
        assert!(most.load(Ordering::Relaxed) <= SLOTS);
        assert_eq!(drain(&slots), SLOTS);
    });
}

#[test]
fn release_publishes_writes_to_the_acquirer() {
    const MESSAGES: u64 = 20_000;
    hang_guard("release_publishes_writes_to_the_acquirer", 60, || {
        let full: CountingSemaphore = CountingSemaphore::new(0);
        let empty: CountingSemaphore = CountingSemaphore::new(1);
        let slot = Unsync::new(0u64);
        thread::scope(|s| {
            s.spawn(|| {
                for message in 1..=MESSAGES {
                    empty.acquire();
                    slot.set(message);
                    full.release(1);
                }
            });
            for message in 1..=MESSAGES {
                full.acquire();
                assert_eq!(slot.get(), message);
                empty.release(1);
            }
        });
    });
}

#[test]
fn release_zero_changes_nothing() {
    let semaphore: CountingSemaphore<2> = CountingSemaphore::new(1);
    semaphore.release(0);
    assert_eq!(drain(&semaphore), 1);
    semaphore.release(0);
    assert!(!semaphore.try_acquire());
}

#[test]
fn debug_output_shows_the_count() {
    let semaphore: CountingSemaphore<9> = CountingSemaphore::new(4);
    let text = format!("{semaphore:?}");
    assert!(text.contains("CountingSemaphore"), "{text}");
    assert!(text.contains("count: 4"), "{text}");
    assert!(text.contains("max: 9"), "{text}");
}

/// Releases that pass `MAX` race with good ones and with acquirers: every refused
/// release leaves no unit behind and none is taken from its excess, so what the
/// acquirers took plus what is left equals what the successful releases put in.
#[test]
fn excess_releases_racing_acquirers_leave_no_unit_behind() {
    const RELEASES: u32 = 20_000;
    let semaphore = CountingSemaphore::<4>::new(0);
    let released = AtomicU32::new(0);
    let refused = AtomicU32::new(0);
    let taken = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    hang_guard("excess releases racing acquirers", 60, || {
        thread::scope(|s| {
            let releasers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        for _ in 0..RELEASES {
                            // 3 fits an empty or nearly empty semaphore, not a fuller one.
                            match semaphore.try_release(3) {
                                Ok(()) => released.fetch_add(3, Ordering::Relaxed),
                                Err(_) => refused.fetch_add(1, Ordering::Relaxed),
                            };
                        }
                    })
                })
                .collect();
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        if semaphore.try_acquire() {
                            taken.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            for releaser in releasers {
                releaser.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    let left = drain(&semaphore);
    assert!(left <= 4, "{left} units left above MAX");
    assert!(
        refused.load(Ordering::Relaxed) > 0,
        "no release was refused: the test raced nothing"
    );
    assert_eq!(
        taken.load(Ordering::Relaxed) + left,
        released.load(Ordering::Relaxed)
    );
}
