//! Conformance tests for `scoped_sync::CountingSemaphore` and `BinarySemaphore` on CPU
//! threads.
//!
//! Modelled on libc++'s `thread.semaphore` tests (acquire, release, try_acquire,
//! try_acquire_for, try_acquire_until, timed_hang, lost_wakeup, max, binary) plus
//! stoppable acquires and mutual exclusion.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use scoped_sync::{
    BinarySemaphore, CountingSemaphore, StopSource, StopToken, Stopped, System, SEMAPHORE_MAX,
};

mod common;
use common::{hang_guard, spin_until, Unsync};

/// Takes every unit that is free without blocking; returns how many.
fn drain<const MAX: u32>(semaphore: &CountingSemaphore<MAX>) -> u32 {
    let mut taken = 0;
    while semaphore.try_acquire() {
        taken += 1;
    }
    taken
}

#[test]
fn libcxx_acquire() {
    // libc++ acquire.pass.cpp
    hang_guard("libcxx_acquire", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(2);
        thread::scope(|s| {
            s.spawn(|| semaphore.acquire());
        });
        semaphore.acquire();
        assert!(!semaphore.try_acquire());
    });
}

#[test]
fn libcxx_release() {
    // libc++ release.pass.cpp
    hang_guard("libcxx_release", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        semaphore.release(1);
        semaphore.acquire();
        thread::scope(|s| {
            s.spawn(|| semaphore.acquire());
            semaphore.release(2);
        });
        semaphore.acquire();
        assert!(!semaphore.try_acquire());
    });
}

#[test]
fn libcxx_try_acquire() {
    // libc++ try_acquire.pass.cpp
    let semaphore: CountingSemaphore = CountingSemaphore::new(1);
    assert!(semaphore.try_acquire());
    assert!(!semaphore.try_acquire());
    semaphore.release(1);
    assert!(semaphore.try_acquire());
    assert!(!semaphore.try_acquire());
    semaphore.release(2);
    thread::scope(|s| {
        s.spawn(|| assert!(semaphore.try_acquire()));
    });
    assert!(semaphore.try_acquire());
    assert!(!semaphore.try_acquire());
}

#[test]
fn libcxx_binary() {
    // libc++ binary.pass.cpp
    hang_guard("libcxx_binary", 30, || {
        let semaphore: BinarySemaphore = BinarySemaphore::new(1);
        semaphore.acquire();
        assert!(!semaphore.try_acquire());
        thread::scope(|s| {
            s.spawn(|| {
                semaphore.acquire();
                semaphore.release(1);
            });
            thread::sleep(Duration::from_millis(10));
            semaphore.release(1);
        });
        assert!(semaphore.try_acquire());
    });
}

#[test]
fn acquire_blocks_until_release() {
    hang_guard("acquire_blocks_until_release", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        let acquired = AtomicBool::new(false);
        thread::scope(|s| {
            s.spawn(|| {
                semaphore.acquire();
                acquired.store(true, Ordering::Relaxed);
            });
            thread::sleep(Duration::from_millis(20));
            assert!(!acquired.load(Ordering::Relaxed), "acquired with no unit");
            semaphore.release(1);
        });
        assert!(acquired.load(Ordering::Relaxed));
        assert!(!semaphore.try_acquire());
    });
}

#[test]
fn release_n_lets_exactly_n_waiters_through() {
    const WAITERS: u32 = 5;
    hang_guard("release_n_lets_exactly_n_waiters_through", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        let through = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..WAITERS {
                s.spawn(|| {
                    semaphore.acquire();
                    through.fetch_add(1, Ordering::Relaxed);
                });
            }
            thread::sleep(Duration::from_millis(20));
            semaphore.release(3);
            spin_until(|| through.load(Ordering::Relaxed) == 3);
            thread::sleep(Duration::from_millis(20));
            assert_eq!(
                through.load(Ordering::Relaxed),
                3,
                "more than 3 units taken"
            );
            semaphore.release(2);
        });
        assert_eq!(through.load(Ordering::Relaxed), WAITERS);
        assert!(!semaphore.try_acquire());
    });
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
fn timed_hang_returns_false_promptly() {
    // libc++ timed_hang.pass.cpp: tiny timeouts on an empty semaphore return false.
    hang_guard("timed_hang_returns_false_promptly", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        for timeout in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(10),
            Duration::from_nanos(100),
            Duration::from_micros(1),
            Duration::from_micros(10),
            Duration::from_micros(100),
            Duration::from_millis(1),
        ] {
            for _ in 0..10 {
                assert!(
                    !semaphore.try_acquire_for(timeout),
                    "try_acquire_for({timeout:?}) took a unit that does not exist"
                );
            }
        }
        let now = Instant::now();
        assert!(!semaphore.try_acquire_until(now));
        assert!(!semaphore.try_acquire_until(now - Duration::from_millis(5)));
        assert!(!semaphore.try_acquire_until(Instant::now() + Duration::from_millis(1)));
        // Timeouts left no trace: a release is taken exactly once.
        semaphore.release(1);
        assert!(semaphore.try_acquire());
        assert!(!semaphore.try_acquire());
    });
}

#[test]
fn timed_acquires_succeed_at_once_when_a_unit_is_free() {
    let semaphore: CountingSemaphore = CountingSemaphore::new(2);
    assert!(semaphore.try_acquire_for(Duration::ZERO));
    assert!(semaphore.try_acquire_until(Instant::now() - Duration::from_secs(1)));
    assert!(!semaphore.try_acquire_for(Duration::ZERO));
}

#[test]
fn timed_acquires_succeed_when_released() {
    // libc++ try_acquire_for.pass.cpp / try_acquire_until.pass.cpp
    hang_guard("timed_acquires_succeed_when_released", 60, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(20));
                semaphore.release(1);
                thread::sleep(Duration::from_millis(20));
                semaphore.release(1);
            });
            assert!(semaphore.try_acquire_for(Duration::from_secs(30)));
            assert!(semaphore.try_acquire_until(Instant::now() + Duration::from_secs(30)));
        });
        assert!(!semaphore.try_acquire());
    });
}

#[test]
fn timed_acquire_with_huge_timeout() {
    // Duration::MAX must not overflow the deadline computation.
    hang_guard("timed_acquire_with_huge_timeout", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(10));
                semaphore.release(1);
            });
            assert!(semaphore.try_acquire_for(Duration::MAX));
        });
    });
}

#[test]
fn lost_wakeup() {
    // libc++ lost_wakeup.pass.cpp: many acquirers and one releaser; every release must
    // reach an acquirer and the counts must balance exactly.
    const ACQUIRERS: u32 = 8;
    const ACQUIRES: u32 = 10_000;
    const ROUNDS: u32 = 20;
    hang_guard("lost_wakeup", 100, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        let acquired = AtomicU64::new(0);
        for round in 0..ROUNDS {
            thread::scope(|s| {
                for _ in 0..ACQUIRERS {
                    s.spawn(|| {
                        for _ in 0..ACQUIRES {
                            semaphore.acquire();
                        }
                        acquired.fetch_add(u64::from(ACQUIRES), Ordering::Relaxed);
                    });
                }
                // Mix releases of 1 (wake one) with larger ones (wake all).
                let mut left = ACQUIRERS * ACQUIRES;
                let mut i = 0;
                while left > 0 {
                    let n = (i % 4 + 1).min(left);
                    semaphore.release(n);
                    left -= n;
                    i += 1;
                    if i % 64 == 0 {
                        // Let the acquirers run dry and park now and then.
                        thread::yield_now();
                    }
                }
            });
            assert_eq!(
                acquired.load(Ordering::Relaxed),
                u64::from((round + 1) * ACQUIRERS * ACQUIRES)
            );
            assert!(
                !semaphore.try_acquire(),
                "round {round}: a unit was left over"
            );
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
fn acquire_stoppable_returns_ok_when_released() {
    hang_guard("acquire_stoppable_returns_ok", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        let source = StopSource::new();
        thread::scope(|s| {
            let waiter = s.spawn(|| semaphore.acquire_stoppable(source.token()));
            thread::sleep(Duration::from_millis(10));
            semaphore.release(1);
            assert_eq!(waiter.join().unwrap(), Ok(()));
        });
        assert!(!semaphore.try_acquire());
        // A free unit wins over a stop request; none free: returns at once.
        source.request_stop();
        semaphore.release(1);
        assert_eq!(semaphore.acquire_stoppable(source.token()), Ok(()));
        assert_eq!(semaphore.acquire_stoppable(source.token()), Err(Stopped));
        // No source: an ordinary acquire.
        semaphore.release(1);
        assert_eq!(semaphore.acquire_stoppable(StopToken::none()), Ok(()));
    });
}

#[test]
fn max_values() {
    assert_eq!(SEMAPHORE_MAX, (1 << 30) - 1);
    assert_eq!(CountingSemaphore::<SEMAPHORE_MAX>::max(), SEMAPHORE_MAX);
    assert_eq!(<CountingSemaphore>::max(), SEMAPHORE_MAX);
    assert_eq!(CountingSemaphore::<5>::max(), 5);
    assert_eq!(CountingSemaphore::<0>::max(), 0);
    assert_eq!(BinarySemaphore::<System>::max(), 1);

    let full: CountingSemaphore<5> = CountingSemaphore::new(5);
    assert_eq!(drain(&full), 5);
    full.release(5);
    assert_eq!(drain(&full), 5);

    let largest: CountingSemaphore = CountingSemaphore::new(SEMAPHORE_MAX);
    assert!(largest.try_acquire());
    largest.release(1);
    assert!(largest.try_acquire_for(Duration::ZERO));
}

#[test]
fn binary_semaphore_as_a_mutex() {
    const THREADS: u64 = 4;
    const ITERATIONS: u64 = 20_000;
    hang_guard("binary_semaphore_as_a_mutex", 60, || {
        let lock: BinarySemaphore = BinarySemaphore::new(1);
        let counter = Unsync::new(0u64);
        let inside = AtomicBool::new(false);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..ITERATIONS {
                        lock.acquire();
                        assert!(!inside.swap(true, Ordering::Relaxed), "two threads inside");
                        counter.set(counter.get() + 1);
                        inside.store(false, Ordering::Relaxed);
                        lock.release(1);
                    }
                });
            }
        });
        assert_eq!(counter.get(), THREADS * ITERATIONS);
        assert!(lock.try_acquire());
    });
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

static STATIC_SEMAPHORE: CountingSemaphore = CountingSemaphore::new(0);
static STATIC_BINARY: BinarySemaphore = BinarySemaphore::new(1);

#[test]
fn semaphores_in_statics() {
    hang_guard("semaphores_in_statics", 30, || {
        thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..100 {
                    STATIC_SEMAPHORE.acquire();
                }
            });
            for _ in 0..100 {
                STATIC_BINARY.acquire();
                STATIC_SEMAPHORE.release(1);
                STATIC_BINARY.release(1);
            }
        });
        assert!(!STATIC_SEMAPHORE.try_acquire());
        assert!(STATIC_BINARY.try_acquire());
        STATIC_BINARY.release(1);
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
