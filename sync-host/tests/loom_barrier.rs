//! loom models of `Barrier`, on the host flavour (how they run: `loom_support`).
#![cfg(loom)]

mod loom_support;

// std's Arc, not loom's: a failing model then reports its first panic instead of
// aborting in loom's Arc destructor during unwinding. Every model orders its last use
// of shared state before the end of the iteration by `join`.
use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use loom_support::{on, Data, Seen};
use sync_host::{Barrier, System};

/// Two threads, two phases: the completion runs exactly once per phase, before either
/// waiter is released, and sees both threads' writes made before arriving; its write
/// and those are visible to both waiters. Phase 1 uses split `arrive`/`wait` on one
/// side.
#[test]
fn barrier_two_phases_completion() {
    const MAIN_COMPLETES: u32 = 1;
    const OTHER_COMPLETES: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let main = thread::current().id();
        let phases = Arc::new(Data::new(0));
        // `written[phase][thread]`: each thread's write before arriving in a phase.
        let written = Arc::new([[Data::new(0), Data::new(0)], [Data::new(0), Data::new(0)]]);
        let barrier = {
            let phases = phases.clone();
            let written = written.clone();
            Arc::new(Barrier::<System, _>::with_completion(2, move || {
                let phase = phases.get();
                assert_eq!(written[phase as usize][0].get(), 1);
                assert_eq!(written[phase as usize][1].get(), 1);
                phases.set(phase + 1);
                SEEN.mark(if on(main) {
                    MAIN_COMPLETES
                } else {
                    OTHER_COMPLETES
                });
            }))
        };

        let other = {
            let (barrier, phases, written) = (barrier.clone(), phases.clone(), written.clone());
            thread::spawn(move || {
                written[0][1].set(1);
                barrier.arrive_and_wait();
                assert_eq!(phases.get(), 1);
                assert_eq!(written[0][0].get(), 1);
                written[1][1].set(1);
                barrier.arrive_and_wait();
                assert_eq!(phases.get(), 2);
                assert_eq!(written[1][0].get(), 1);
            })
        };

        written[0][0].set(1);
        let token = barrier.arrive(1);
        barrier.wait(token);
        assert_eq!(phases.get(), 1);
        assert_eq!(written[0][1].get(), 1);
        written[1][0].set(1);
        barrier.arrive_and_wait();
        assert_eq!(phases.get(), 2);
        assert_eq!(written[1][1].get(), 1);

        other.join().unwrap();
    });
    SEEN.assert_all(MAIN_COMPLETES | OTHER_COMPLETES);
}

/// Each of two threads writes its own slot, then arrives: the completion reads both
/// slots (arrivals happen before the completion) and each thread reads the other's
/// slot after the wait (arrivals happen before every return from the wait). Arrivals
/// release and only the last one acquires, with a fence: this checks that is enough.
#[test]
fn barrier_publishes_arrivals_to_completion_and_waiters() {
    loom::model(|| {
        let slots = Arc::new([Data::new(0), Data::new(0)]);
        let barrier = {
            let slots = slots.clone();
            Arc::new(Barrier::<System, _>::with_completion(2, move || {
                assert_eq!(slots[0].get() + slots[1].get(), 3);
            }))
        };
        let other = {
            let (barrier, slots) = (barrier.clone(), slots.clone());
            thread::spawn(move || {
                slots[1].set(2);
                barrier.arrive_and_wait();
                assert_eq!(slots[0].get(), 1);
            })
        };
        slots[0].set(1);
        barrier.arrive_and_wait();
        assert_eq!(slots[1].get(), 2);
        other.join().unwrap();
    });
}

/// Three threads, two phases of `arrive_and_wait`: the completion runs once per phase
/// and every thread sees its count after each phase.
#[test]
fn barrier_three_threads() {
    loom::model(|| {
        let phases = Arc::new(Data::new(0));
        let barrier = {
            let phases = phases.clone();
            Arc::new(Barrier::<System, _>::with_completion(3, move || {
                phases.bump()
            }))
        };

        let others: Vec<_> = (0..2)
            .map(|_| {
                let (barrier, phases) = (barrier.clone(), phases.clone());
                thread::spawn(move || {
                    barrier.arrive_and_wait();
                    assert_eq!(phases.get(), 1);
                    barrier.arrive_and_wait();
                    assert_eq!(phases.get(), 2);
                })
            })
            .collect();

        barrier.arrive_and_wait();
        assert_eq!(phases.get(), 1);
        barrier.arrive_and_wait();
        assert_eq!(phases.get(), 2);
        for other in others {
            other.join().unwrap();
        }
    });
}

/// Without a completion, the last arrival's add flips the phase and the completing
/// thread reopens it afterwards: two threads, two phases, each writing before it
/// arrives and reading the other's write after its wait. A thread released by the
/// first phase can arrive in the second before the reopening, on top of a zero count;
/// the model checks that such an arrival is neither lost nor completes the phase early.
#[test]
fn barrier_without_completion_reopens_behind_early_arrivals() {
    loom::model(|| {
        let barrier = Arc::new(Barrier::<System>::new(2));
        let (mine, theirs) = (
            Arc::new([Data::new(0), Data::new(0)]),
            Arc::new([Data::new(0), Data::new(0)]),
        );

        let other = {
            let (barrier, mine, theirs) = (barrier.clone(), mine.clone(), theirs.clone());
            thread::spawn(move || {
                for phase in 0..2 {
                    theirs[phase].set(1);
                    barrier.arrive_and_wait();
                    assert_eq!(mine[phase].get(), 1);
                }
            })
        };

        for phase in 0..2 {
            mine[phase].set(1);
            barrier.arrive_and_wait();
            assert_eq!(theirs[phase].get(), 1);
        }
        other.join().unwrap();
    });
}

/// A barrier of one without completion, used by two threads: every arrival completes
/// a phase and reopens the next, so an arrival can find the reopening pending (the
/// checked arrival waits for it). Each arrival completes exactly one phase: after two
/// arrivals the phase parity is back where it started. (No `wait`: a token two phases
/// old is outside `wait`'s contract, as in C++.)
#[test]
fn barrier_without_completion_arrival_during_reopening() {
    loom::model(|| {
        let barrier = Arc::new(Barrier::<System>::new(1));
        let other = {
            let barrier = barrier.clone();
            thread::spawn(move || {
                let _token = barrier.arrive(1);
            })
        };
        let _token = barrier.arrive(1);
        other.join().unwrap();
        let token = barrier.arrive(1);
        assert!(!token.parity(), "two phases completed before this one");
        barrier.wait(token);
    });
}

/// `arrive_and_drop` without completion: the dropper's write reaches the waiter, and
/// the waiter then passes later phases alone (the reopening reads the lowered count).
#[test]
fn barrier_without_completion_arrive_and_drop() {
    loom::model(|| {
        let barrier = Arc::new(Barrier::<System>::new(2));
        let data = Arc::new(Data::new(0));
        let dropper = {
            let (barrier, data) = (barrier.clone(), data.clone());
            thread::spawn(move || {
                data.set(1);
                barrier.arrive_and_drop();
            })
        };
        barrier.arrive_and_wait();
        assert_eq!(data.get(), 1);
        barrier.arrive_and_wait();
        barrier.arrive_and_wait();
        dropper.join().unwrap();
    });
}

/// A barrier of one, used by two threads: each arrival completes a phase, so an
/// arrival that comes while the other thread's completion step runs (remaining == 0)
/// must wait for the next phase and count there. The completion never runs twice at
/// once, and runs once per arrival. (No `wait`: a token two phases old is outside
/// `wait`'s contract, as in C++.)
#[test]
fn barrier_arrival_during_completion() {
    const OVERLAPPED: u32 = 1;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let runs = Arc::new(Data::new(0));
        // A loom atomic, so that loom orders its accesses against the completion's.
        let running = Arc::new(AtomicBool::new(false));
        let barrier = {
            let (runs, running) = (runs.clone(), running.clone());
            Arc::new(Barrier::<System, _>::with_completion(1, move || {
                running.store(true, Ordering::Relaxed);
                runs.bump();
                running.store(false, Ordering::Relaxed);
            }))
        };

        let other = {
            let (barrier, running) = (barrier.clone(), running.clone());
            thread::spawn(move || {
                if running.load(Ordering::Relaxed) {
                    SEEN.mark(OVERLAPPED);
                }
                let _token = barrier.arrive(1);
            })
        };

        let _token = barrier.arrive(1);
        other.join().unwrap();
        assert_eq!(runs.get(), 2);
    });
    SEEN.assert_all(OVERLAPPED);
}

/// `arrive_and_drop` by one thread: its arrival counts in phase 1 (its write is
/// published to the other thread's wait), and the other thread then passes later
/// phases alone.
#[test]
fn barrier_arrive_and_drop() {
    const DROPPER_COMPLETES: u32 = 1;
    const WAITER_COMPLETES: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let main = thread::current().id();
        let barrier = Arc::new(Barrier::<System, _>::with_completion(2, move || {
            SEEN.mark(if on(main) {
                WAITER_COMPLETES
            } else {
                DROPPER_COMPLETES
            });
        }));
        let data = Arc::new(Data::new(0));

        let dropper = {
            let (barrier, data) = (barrier.clone(), data.clone());
            thread::spawn(move || {
                data.set(1);
                barrier.arrive_and_drop();
            })
        };

        barrier.arrive_and_wait();
        assert_eq!(data.get(), 1);
        // The next phases expect only this thread.
        barrier.arrive_and_wait();
        barrier.arrive_and_wait();

        dropper.join().unwrap();
    });
    SEEN.assert_all(DROPPER_COMPLETES | WAITER_COMPLETES);
}
