//! loom models of `CountingSemaphore` and `BinarySemaphore`, on the host flavour (how
//! they run: `loom_support`).
#![cfg(loom)]

mod loom_support;

// std's Arc, not loom's: a failing model then reports its first panic instead of
// aborting in loom's Arc destructor during unwinding. Every model orders its last use
// of shared state before the end of the iteration by `join`.
use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::thread;
use loom_support::{Data, Seen};
use sync_host::{BinarySemaphore, CountingSemaphore, System};

/// Release in one thread, acquire in another: the acquire returns (no lost wake-up:
/// loom reports a deadlock if the acquirer sleeps for ever) and sees the releaser's
/// Relaxed store. Both the "release first" and the "acquirer blocks first" orders are
/// explored.
#[test]
fn semaphore_release_acquire_handoff() {
    const RELEASED_BEFORE_ACQUIRE: u32 = 1;
    const ACQUIRE_BEFORE_RELEASE: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let semaphore = Arc::new(CountingSemaphore::<1>::new(0));
        let payload = Arc::new(AtomicU32::new(0));
        // A loom atomic, so that loom orders its accesses against the release.
        let released = Arc::new(AtomicBool::new(false));

        let releaser = {
            let (semaphore, payload, released) =
                (semaphore.clone(), payload.clone(), released.clone());
            thread::spawn(move || {
                payload.store(1, Ordering::Relaxed);
                semaphore.release(1);
                released.store(true, Ordering::Relaxed);
            })
        };

        SEEN.mark(if released.load(Ordering::Relaxed) {
            RELEASED_BEFORE_ACQUIRE
        } else {
            ACQUIRE_BEFORE_RELEASE
        });
        semaphore.acquire();
        assert_eq!(payload.load(Ordering::Relaxed), 1);
        assert!(!semaphore.try_acquire());
        releaser.join().unwrap();
    });
    SEEN.assert_all(RELEASED_BEFORE_ACQUIRE | ACQUIRE_BEFORE_RELEASE);
}

/// Two acquirers, one `release(2)` (the wake-all path): both return, and both see the
/// write made before the release.
#[test]
fn semaphore_two_acquirers_release_two() {
    loom::model(|| {
        let semaphore = Arc::new(CountingSemaphore::<2>::new(0));
        let data = Arc::new(Data::new(0));

        let acquirers: Vec<_> = (0..2)
            .map(|_| {
                let (semaphore, data) = (semaphore.clone(), data.clone());
                thread::spawn(move || {
                    semaphore.acquire();
                    assert_eq!(data.get(), 1);
                })
            })
            .collect();

        data.set(1);
        semaphore.release(2);
        for acquirer in acquirers {
            acquirer.join().unwrap();
        }
        assert!(!semaphore.try_acquire());
    });
}

/// Two acquirers, two `release(1)` (the wake-one path): both return.
#[test]
fn semaphore_two_acquirers_release_one_by_one() {
    loom::model(|| {
        let semaphore = Arc::new(CountingSemaphore::<2>::new(0));

        let acquirers: Vec<_> = (0..2)
            .map(|_| {
                let semaphore = semaphore.clone();
                thread::spawn(move || semaphore.acquire())
            })
            .collect();

        semaphore.release(1);
        semaphore.release(1);
        for acquirer in acquirers {
            acquirer.join().unwrap();
        }
        assert!(!semaphore.try_acquire());
    });
}

/// A binary semaphore as a mutex: the critical sections' non-atomic increments never
/// overlap, and both are seen.
#[test]
fn binary_semaphore_mutex() {
    loom::model(|| {
        let mutex = Arc::new(BinarySemaphore::<System>::new(1));
        let counter = Arc::new(Data::new(0));

        let other = {
            let (mutex, counter) = (mutex.clone(), counter.clone());
            thread::spawn(move || {
                mutex.acquire();
                counter.bump();
                mutex.release(1);
            })
        };

        mutex.acquire();
        counter.bump();
        mutex.release(1);

        other.join().unwrap();
        assert_eq!(counter.get(), 2);
        assert!(mutex.try_acquire());
    });
}

/// Three threads contend for a binary semaphore.
#[test]
fn binary_semaphore_three_contenders() {
    loom::model(|| {
        let mutex = Arc::new(BinarySemaphore::<System>::new(1));
        let counter = Arc::new(Data::new(0));

        let others: Vec<_> = (0..2)
            .map(|_| {
                let (mutex, counter) = (mutex.clone(), counter.clone());
                thread::spawn(move || {
                    mutex.acquire();
                    counter.bump();
                    mutex.release(1);
                })
            })
            .collect();

        mutex.acquire();
        counter.bump();
        mutex.release(1);
        for other in others {
            other.join().unwrap();
        }
        assert_eq!(counter.get(), 3);
    });
}

/// Two releases that together pass `MAX` (each fits alone), beside an acquirer that
/// takes what it can: exactly the units of the releases that succeed are ever
/// acquired (the excess of the one that fails is taken back before anyone takes it,
/// whatever the order), and at least one release succeeds.
#[test]
fn semaphore_an_excess_release_is_never_acquired() {
    loom::model(|| {
        let semaphore = Arc::new(CountingSemaphore::<2>::new(1));
        let released = Arc::new(AtomicU32::new(0));

        let releasers: Vec<_> = (0..2)
            .map(|_| {
                let (semaphore, released) = (semaphore.clone(), released.clone());
                thread::spawn(move || {
                    if semaphore.try_release(1).is_ok() {
                        released.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();

        // Enough tries to take the excess too, if it were acquirable; bounded, so that a
        // count that wrapped below zero fails the count instead of looping.
        let mut taken = 0;
        for _ in 0..3 {
            taken += u32::from(semaphore.try_acquire());
        }
        for releaser in releasers {
            releaser.join().unwrap();
        }
        for _ in 0..3 {
            taken += u32::from(semaphore.try_acquire());
        }
        let released = released.load(Ordering::Relaxed);
        assert!(released >= 1);
        assert_eq!(taken, 1 + released);
    });
}

/// An acquirer that may go to sleep while a release that passes `MAX` has its excess in
/// the count (two releases of 2 on an empty semaphore of `MAX` 2): taking the excess
/// back wakes it (loom reports a deadlock otherwise), and it takes exactly the units
/// of the releases that succeed.
#[test]
fn semaphore_an_acquirer_waits_out_an_excess_release() {
    loom::model(|| {
        let semaphore = Arc::new(CountingSemaphore::<2>::new(0));

        let acquirer = {
            let semaphore = semaphore.clone();
            thread::spawn(move || {
                semaphore.acquire();
                semaphore.acquire();
            })
        };
        let releaser = {
            let semaphore = semaphore.clone();
            thread::spawn(move || semaphore.try_release(2).is_ok())
        };

        let mine = semaphore.try_release(2).is_ok();
        let theirs = releaser.join().unwrap();
        acquirer.join().unwrap();
        let mut left = 0;
        while semaphore.try_acquire() {
            left += 1;
        }
        assert!(mine || theirs);
        assert_eq!(2 + left, 2 * (u32::from(mine) + u32::from(theirs)));
    });
}
