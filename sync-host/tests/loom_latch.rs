//! loom models of `Latch`, on the host flavour (how they run: `loom_support`).
#![cfg(loom)]

mod loom_support;

// std's Arc, not loom's: a failing model then reports its first panic instead of
// aborting in loom's Arc destructor during unwinding. Every model orders its last use
// of shared state before the end of the iteration by `join`.
use std::sync::Arc;

use loom::sync::atomic::{AtomicU32, Ordering};
use loom::thread;
use loom_support::Data;
use sync_host::{Latch, System};

/// `count_down` in one thread releases `wait` in another and publishes its write.
#[test]
fn latch_count_down_then_wait() {
    loom::model(|| {
        let latch = Arc::new(Latch::<System>::new(1));
        let data = Arc::new(Data::new(0));

        let counter = {
            let (latch, data) = (latch.clone(), data.clone());
            thread::spawn(move || {
                data.set(1);
                latch.count_down(1);
            })
        };

        latch.wait();
        assert_eq!(data.get(), 1);
        assert!(latch.try_wait());
        counter.join().unwrap();
    });
}

/// The same with a Relaxed loom atomic as the payload: loom lets a Relaxed load
/// return any store that happens-before does not hide, so reading 1 every time proves
/// the latch ordered the store before the load.
#[test]
fn latch_publishes_relaxed_store() {
    loom::model(|| {
        let latch = Arc::new(Latch::<System>::new(1));
        let payload = Arc::new(AtomicU32::new(0));

        let counter = {
            let (latch, payload) = (latch.clone(), payload.clone());
            thread::spawn(move || {
                payload.store(1, Ordering::Relaxed);
                latch.count_down(1);
            })
        };

        latch.wait();
        assert_eq!(payload.load(Ordering::Relaxed), 1);
        counter.join().unwrap();
    });
}

/// Two threads count down by one each; a third waits and sees both writes.
#[test]
fn latch_two_counters_one_waiter() {
    loom::model(|| {
        let latch = Arc::new(Latch::<System>::new(2));
        let data = Arc::new([Data::new(0), Data::new(0)]);

        let counters: Vec<_> = (0..2)
            .map(|i| {
                let (latch, data) = (latch.clone(), data.clone());
                thread::spawn(move || {
                    data[i].set(1);
                    latch.count_down(1);
                })
            })
            .collect();

        latch.wait();
        assert_eq!(data[0].get() + data[1].get(), 2);
        for counter in counters {
            counter.join().unwrap();
        }
    });
}

/// Two threads `arrive_and_wait`: each sees the other's write.
#[test]
fn latch_arrive_and_wait() {
    loom::model(|| {
        let latch = Arc::new(Latch::<System>::new(2));
        let data = Arc::new([Data::new(0), Data::new(0)]);

        let other = {
            let (latch, data) = (latch.clone(), data.clone());
            thread::spawn(move || {
                data[1].set(1);
                latch.arrive_and_wait(1);
                assert_eq!(data[0].get(), 1);
            })
        };

        data[0].set(1);
        latch.arrive_and_wait(1);
        assert_eq!(data[1].get(), 1);
        other.join().unwrap();
    });
}

/// Two count-downs that together exceed the counter race a waiter: one of them may
/// wrap the counter (it looked before the other subtracted) and must add its `n`
/// back; the counter ends as 2 less the successful ones, and once the main thread
/// counts down what is left the waiter is released. Lost wake-ups show as a loom
/// deadlock (a sleepers bit set on a wrapped counter is lost with the wrap: the
/// model fails that way).
#[test]
fn latch_count_downs_beyond_the_counter_are_taken_back() {
    loom::model(|| {
        let latch = Arc::new(Latch::<System>::new(2));
        let taken = Arc::new(AtomicU32::new(0));

        let waiter = {
            let latch = latch.clone();
            thread::spawn(move || latch.wait())
        };
        let racers: Vec<_> = [2, 1]
            .into_iter()
            .map(|n| {
                let (latch, taken) = (latch.clone(), taken.clone());
                thread::spawn(move || {
                    if latch.try_count_down(n).is_ok() {
                        taken.fetch_add(n, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for racer in racers {
            racer.join().unwrap();
        }
        let taken = taken.load(Ordering::Relaxed);
        assert!(taken == 1 || taken == 2, "took {taken}");
        assert_eq!(latch.try_wait(), taken == 2);
        if taken == 1 {
            latch.count_down(1);
        }
        waiter.join().unwrap();
    });
}
