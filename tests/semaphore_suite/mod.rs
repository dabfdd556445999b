//! The conformance tests every semaphore of the crate passes, generated for each by
//! [`semaphore_suite!`]: libc++'s `thread.semaphore` tests (acquire, release,
//! try_acquire, binary, timed_hang, try_acquire_for/until, lost_wakeup, max), blocking
//! and release-n behaviour, stoppable acquires, mutual exclusion and statics.
//! `tests/semaphore.rs` runs them on `CountingSemaphore`, `tests/fair_semaphore.rs` on
//! `FairSemaphore`; each file adds the tests of what only its semaphore promises.

/// Generates the suite for the semaphore type `$sem` (generic over its maximum, with
/// `new`, `acquire`, `try_acquire`, `release`, `try_acquire_for/until`,
/// `acquire_stoppable` and `max` of the same signatures), in a module of the calling
/// test crate, which has `mod common;`.
///
/// - `count`: a `fn(&$sem<MAX>) -> Option<i64>` giving the semaphore's counter where the
///   type shows it (free units, or minus the queued waiters), `None` where it does not:
///   with it the tests wait until threads are queued instead of sleeping, and check the
///   counter where the test knows it.
/// - `lost_wakeup`: `(acquirers, acquires per acquirer, rounds)` of the lost-wakeup stress.
/// - `mutex_iterations`: the lock round trips per thread of the binary semaphore as a
///   mutex.
macro_rules! semaphore_suite {
    (
        $sem:ident,
        count: $count:path,
        lost_wakeup: ($acquirers:expr, $acquires:expr, $rounds:expr),
        mutex_iterations: $mutex_iterations:expr
    ) => {
        mod suite {
            use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
            use std::thread;
            use std::time::{Duration, Instant};

            use scoped_sync::{$sem, StopSource, StopToken, Stopped, SEMAPHORE_MAX};

            use super::common::{hang_guard, spin_until, Unsync};

            /// Waits until `waiters` threads are queued on `semaphore`: exactly where
            /// the counter shows it, else by sleeping long enough for them to park.
            fn until_queued<const MAX: u32>(semaphore: &$sem<MAX>, waiters: i64) {
                if $count(semaphore).is_some() {
                    spin_until(|| $count(semaphore) == Some(-waiters));
                } else {
                    thread::sleep(Duration::from_millis(20));
                }
            }

            /// Asserts the counter is `expected`, where the type shows it.
            #[track_caller]
            fn assert_count<const MAX: u32>(semaphore: &$sem<MAX>, expected: i64) {
                if let Some(count) = $count(semaphore) {
                    assert_eq!(count, expected, "the semaphore's counter");
                }
            }

            /// Takes every unit that is free without blocking; returns how many.
            fn drain<const MAX: u32>(semaphore: &$sem<MAX>) -> u32 {
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
                    let semaphore: $sem = $sem::new(2);
                    thread::scope(|s| {
                        s.spawn(|| semaphore.acquire());
                    });
                    semaphore.acquire();
                    assert!(!semaphore.try_acquire());
                    assert_count(&semaphore, 0);
                });
            }

            #[test]
            fn libcxx_release() {
                // libc++ release.pass.cpp
                hang_guard("libcxx_release", 30, || {
                    let semaphore: $sem = $sem::new(0);
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
                let semaphore: $sem = $sem::new(1);
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
                    let semaphore: $sem<1> = $sem::new(1);
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
                    let semaphore: $sem = $sem::new(0);
                    let acquired = AtomicBool::new(false);
                    thread::scope(|s| {
                        s.spawn(|| {
                            semaphore.acquire();
                            acquired.store(true, Ordering::Relaxed);
                        });
                        until_queued(&semaphore, 1);
                        thread::sleep(Duration::from_millis(20));
                        assert!(!acquired.load(Ordering::Relaxed), "acquired with no unit");
                        semaphore.release(1);
                    });
                    assert!(acquired.load(Ordering::Relaxed));
                    assert_count(&semaphore, 0);
                    assert!(!semaphore.try_acquire());
                });
            }

            #[test]
            fn release_n_lets_exactly_n_waiters_through() {
                const WAITERS: u32 = 5;
                hang_guard("release_n_lets_exactly_n_waiters_through", 30, || {
                    let semaphore: $sem = $sem::new(0);
                    let through = AtomicU32::new(0);
                    thread::scope(|s| {
                        for _ in 0..WAITERS {
                            s.spawn(|| {
                                semaphore.acquire();
                                through.fetch_add(1, Ordering::Relaxed);
                            });
                        }
                        until_queued(&semaphore, i64::from(WAITERS));
                        semaphore.release(3);
                        spin_until(|| through.load(Ordering::Relaxed) == 3);
                        thread::sleep(Duration::from_millis(20));
                        assert_eq!(
                            through.load(Ordering::Relaxed),
                            3,
                            "more than 3 units taken"
                        );
                        assert_count(&semaphore, -2);
                        semaphore.release(2);
                    });
                    assert_eq!(through.load(Ordering::Relaxed), WAITERS);
                    assert!(!semaphore.try_acquire());
                });
            }

            #[test]
            fn timed_hang_returns_false_promptly() {
                // libc++ timed_hang.pass.cpp: tiny timeouts on an empty semaphore
                // return false.
                hang_guard("timed_hang_returns_false_promptly", 30, || {
                    let semaphore: $sem = $sem::new(0);
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
                    let soon = Instant::now() + Duration::from_millis(1);
                    assert!(!semaphore.try_acquire_until(soon));
                    // The timeouts left no trace: no waiter counted, and a release is
                    // taken exactly once.
                    assert_count(&semaphore, 0);
                    semaphore.release(1);
                    assert!(semaphore.try_acquire());
                    assert!(!semaphore.try_acquire());
                });
            }

            #[test]
            fn timed_acquires_succeed_at_once_when_a_unit_is_free() {
                let semaphore: $sem = $sem::new(2);
                assert!(semaphore.try_acquire_for(Duration::ZERO));
                assert!(semaphore.try_acquire_until(Instant::now() - Duration::from_secs(1)));
                assert!(!semaphore.try_acquire_for(Duration::ZERO));
            }

            #[test]
            fn timed_acquires_succeed_when_released() {
                // libc++ try_acquire_for.pass.cpp / try_acquire_until.pass.cpp
                hang_guard("timed_acquires_succeed_when_released", 60, || {
                    let semaphore: $sem = $sem::new(0);
                    thread::scope(|s| {
                        s.spawn(|| {
                            thread::sleep(Duration::from_millis(20));
                            semaphore.release(1);
                            thread::sleep(Duration::from_millis(20));
                            semaphore.release(1);
                        });
                        assert!(semaphore.try_acquire_for(Duration::from_secs(30)));
                        let later = Instant::now() + Duration::from_secs(30);
                        assert!(semaphore.try_acquire_until(later));
                    });
                    assert_count(&semaphore, 0);
                    assert!(!semaphore.try_acquire());
                });
            }

            #[test]
            fn timed_acquire_with_huge_timeout() {
                // Duration::MAX must not overflow the deadline computation.
                hang_guard("timed_acquire_with_huge_timeout", 30, || {
                    let semaphore: $sem = $sem::new(0);
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
                // libc++ lost_wakeup.pass.cpp: many acquirers and one releaser; every
                // release must reach an acquirer and the counts must balance exactly.
                const ACQUIRERS: u32 = $acquirers;
                const ACQUIRES: u32 = $acquires;
                const ROUNDS: u32 = $rounds;
                hang_guard("lost_wakeup", 100, || {
                    let semaphore: $sem = $sem::new(0);
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
            fn acquire_stoppable_returns_ok_when_released() {
                hang_guard("acquire_stoppable_returns_ok", 30, || {
                    let semaphore: $sem = $sem::new(0);
                    let source = StopSource::new();
                    thread::scope(|s| {
                        let waiter = s.spawn(|| semaphore.acquire_stoppable(source.token()));
                        until_queued(&semaphore, 1);
                        semaphore.release(1);
                        assert_eq!(waiter.join().unwrap(), Ok(()));
                    });
                    assert!(!semaphore.try_acquire());
                    // A free unit wins over a stop request; none free: returns at once.
                    source.request_stop();
                    semaphore.release(1);
                    assert_eq!(semaphore.acquire_stoppable(source.token()), Ok(()));
                    assert_eq!(semaphore.acquire_stoppable(source.token()), Err(Stopped));
                    assert_count(&semaphore, 0);
                    // No source: an ordinary acquire.
                    semaphore.release(1);
                    assert_eq!(semaphore.acquire_stoppable(StopToken::none()), Ok(()));
                });
            }

            #[test]
            fn max_values() {
                assert_eq!(SEMAPHORE_MAX, (1 << 30) - 1);
                assert_eq!(<$sem>::max(), SEMAPHORE_MAX);
                assert_eq!($sem::<SEMAPHORE_MAX>::max(), SEMAPHORE_MAX);
                assert_eq!($sem::<7>::max(), 7);
                assert_eq!($sem::<1>::max(), 1);

                let full: $sem<7> = $sem::new(7);
                assert_eq!(drain(&full), 7);
                full.release(7);
                assert_count(&full, 7);
                assert_eq!(drain(&full), 7);

                let largest: $sem = $sem::new(SEMAPHORE_MAX);
                assert!(largest.try_acquire());
                largest.release(1);
                assert_count(&largest, i64::from(SEMAPHORE_MAX));
                assert!(largest.try_acquire_for(Duration::ZERO));
            }

            #[test]
            fn binary_semaphore_as_a_mutex() {
                const THREADS: u64 = 4;
                const ITERATIONS: u64 = $mutex_iterations;
                hang_guard("binary_semaphore_as_a_mutex", 60, || {
                    let lock: $sem<1> = $sem::new(1);
                    let counter = Unsync::new(0u64);
                    let inside = AtomicBool::new(false);
                    thread::scope(|s| {
                        for _ in 0..THREADS {
                            s.spawn(|| {
                                for _ in 0..ITERATIONS {
                                    lock.acquire();
                                    let other = inside.swap(true, Ordering::Relaxed);
                                    assert!(!other, "two threads inside");
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

            static STATIC_SEMAPHORE: $sem = $sem::new(0);
            static STATIC_BINARY: $sem<1> = $sem::new(1);

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
        }
    };
}

pub(crate) use semaphore_suite;
