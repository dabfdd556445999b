//! loom models of `FairSemaphore`, on the host flavour (how they run: `loom_support`).
#![cfg(loom)]

mod loom_support;

// std's Arc, not loom's: a failing model then reports its first panic instead of
// aborting in loom's Arc destructor during unwinding. Every model orders its last use
// of shared state before the end of the iteration by `join`.
use std::sync::Arc;

use loom::thread;
use loom_support::Data;
use sync_host::FairSemaphore;

/// Two acquirers (queued, or not yet), a releaser handing over two units at once: both
/// are served, and each sees the write made before the release.
#[test]
fn fair_semaphore_two_acquirers_and_releaser() {
    loom::model(|| {
        let semaphore = Arc::new(FairSemaphore::<2>::new(0));
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

/// A fair semaphore with one unit as a mutex; `try_acquire` never takes a unit a
/// queued thread is owed.
#[test]
fn fair_semaphore_mutex() {
    loom::model(|| {
        let mutex = Arc::new(FairSemaphore::<1>::new(1));
        let counter = Arc::new(Data::new(0));

        let other = {
            let (mutex, counter) = (mutex.clone(), counter.clone());
            thread::spawn(move || {
                mutex.acquire();
                counter.bump();
                mutex.release(1);
            })
        };

        if mutex.try_acquire() {
            counter.bump();
            mutex.release(1);
        } else {
            mutex.acquire();
            counter.bump();
            mutex.release(1);
        }

        other.join().unwrap();
        assert_eq!(counter.get(), 2);
        assert!(mutex.try_acquire());
    });
}

/// Two threads each take one of two units and release it: no release is refused as
/// exceeding `MAX` whatever the other thread's progress (the `MAX` check must not see
/// the other thread's release without its acquire), and both units are back at the end.
#[test]
fn fair_semaphore_holders_release() {
    loom::model(|| {
        let semaphore = Arc::new(FairSemaphore::<2>::new(2));

        let other = {
            let semaphore = semaphore.clone();
            thread::spawn(move || {
                semaphore.acquire();
                semaphore.release(1);
            })
        };

        semaphore.acquire();
        semaphore.release(1);
        other.join().unwrap();
        assert!(semaphore.try_acquire());
        assert!(semaphore.try_acquire());
        assert!(!semaphore.try_acquire());
    });
}

/// Three threads contend for a fair semaphore with one unit.
#[test]
fn fair_semaphore_three_contenders() {
    loom::model(|| {
        let mutex = Arc::new(FairSemaphore::<1>::new(1));
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
