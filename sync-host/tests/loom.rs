//! loom models of every primitive, on the host flavour.
//!
//! Under `--cfg loom`, sync-shared's atomics are loom's and the `Host` backend parks
//! on a loom Mutex+Condvar and never spins, so loom explores the interleavings (up to
//! the preemption bound) of the algorithms, checks each load against its model of the
//! C11 memory model, reports unordered accesses to plain data through
//! `loom::cell::UnsafeCell`, and reports a lost wake-up as a deadlock.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p sync-host --test loom --release
//! ```
//!
//! (`scripts/loom.sh` runs exactly that.) Models use two or three threads: loom's state
//! space grows too fast beyond. Timed waits are not modelled: loom has no clock, so the
//! backend's timed park returns at once and such waits spin; loom then finds schedules
//! where the spinning waiter and the stop source's spin lock starve each other, and
//! gives up ("exceeded maximum number of branches"). Stoppable waits without a deadline
//! are: their sleep checks the stop word under the bucket lock and has no timeout, so a
//! stop that could slip past it shows as a deadlock (`stop_ends_a_sleeping_stoppable_acquire`;
//! with the check of the stop word removed from `parking::wait_either`, loom reports
//! exactly that deadlock).
//!
//! The counting semaphore pairs a store with a load of another word in each thread
//! (store buffering) and relies on sequential consistency there. loom lets a SeqCst
//! load read a value older than the latest SeqCst store (tokio-rs/loom#180), so the
//! `Host` backend makes its SeqCst loads acquire read-modify-writes under loom (they
//! read the latest value); without that, these models report false lost wake-ups.
//!
//! loom's partial-order reduction does not try every order of every pair of
//! operations, so the models that race two outcomes also record (in a std atomic
//! outside the model: loom runs one thread at a time) which outcomes their iterations
//! reached, and assert after `loom::model` that each one was explored.
#![cfg(loom)]

use std::pin::{pin, Pin};
// std's Arc, not loom's: a failing model then reports its first panic instead of
// aborting in loom's Arc destructor during unwinding. Every model orders its last use
// of shared state before the end of the iteration by `join`.
use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::sync::Mutex;
use loom::thread::{self, ThreadId};
use sync_host::{
    Barrier, BinarySemaphore, CountingSemaphore, FairSemaphore, Latch, StopCallback, StopSource,
    System,
};

/// Plain (non-atomic) data: loom reports any pair of accesses to it that are not
/// ordered by happens-before, so reading it after a wait proves the wait synchronized.
struct Data(UnsafeCell<u32>);

// SAFETY: the models only access the cell where a primitive under test orders the
// accesses; loom checks that it does and fails the model otherwise.
unsafe impl Sync for Data {}

impl Data {
    fn new(value: u32) -> Self {
        Self(UnsafeCell::new(value))
    }

    fn get(&self) -> u32 {
        // SAFETY: loom checks that no write races with this read.
        self.0.with(|value| unsafe { *value })
    }

    fn set(&self, new: u32) {
        // SAFETY: loom checks that no access races with this write.
        self.0.with_mut(|value| unsafe { *value = new });
    }

    /// A non-atomic read-modify-write: overlapping ones are reported as races.
    fn bump(&self) {
        self.set(self.get() + 1);
    }
}

/// The outcomes a model reached across its iterations, as bits.
struct Seen(std::sync::atomic::AtomicU32);

impl Seen {
    const fn new() -> Self {
        Self(std::sync::atomic::AtomicU32::new(0))
    }

    fn mark(&self, outcome: u32) {
        self.0.fetch_or(outcome, Ordering::Relaxed);
    }

    /// Asserts that every outcome in `outcomes` was reached by some iteration.
    #[track_caller]
    fn assert_all(&self, outcomes: u32) {
        let seen = self.0.load(Ordering::Relaxed);
        assert_eq!(
            seen & outcomes,
            outcomes,
            "loom did not explore every outcome (seen {seen:#b}, wanted {outcomes:#b})"
        );
    }
}

fn on(thread: ThreadId) -> bool {
    thread::current().id() == thread
}

// ---------------------------------------------------------------------------------
// Barrier
// ---------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------
// Latch
// ---------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------
// CountingSemaphore / BinarySemaphore
// ---------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------
// FairSemaphore
// ---------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------
// StopSource / StopToken / StopCallback
// ---------------------------------------------------------------------------------

/// `request_stop` races a callback's registration: the callback runs exactly once
/// (in the requester, or at once in the registering thread), and the requester's write
/// before `request_stop` is visible to it.
#[test]
fn stop_request_races_registration() {
    const RAN_IN_REQUESTER: u32 = 1;
    const RAN_IN_REGISTRANT: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let main = thread::current().id();
        let source = Arc::new(StopSource::<System>::new());
        let before_stop = Arc::new(Data::new(0));
        let runs = Arc::new(AtomicU32::new(0));

        let requester = {
            let (source, before_stop) = (source.clone(), before_stop.clone());
            thread::spawn(move || {
                before_stop.set(1);
                assert!(source.request_stop());
            })
        };

        {
            let (runs, before_stop) = (&*runs, &*before_stop);
            let callback = pin!(StopCallback::new(source.token(), move || {
                assert_eq!(before_stop.get(), 1);
                runs.fetch_add(1, Ordering::Relaxed);
                SEEN.mark(if on(main) {
                    RAN_IN_REGISTRANT
                } else {
                    RAN_IN_REQUESTER
                });
            }));
            callback.as_ref().register();
            requester.join().unwrap();
            assert_eq!(runs.load(Ordering::Relaxed), 1);
        }
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        assert!(source.token().stop_requested());
    });
    SEEN.assert_all(RAN_IN_REQUESTER | RAN_IN_REGISTRANT);
}

/// `request_stop` races the drop of a registered callback: the callback runs at most
/// once, and if it runs, the drop returns only after it has returned (the closure's
/// write to plain data never races with the owner's accesses after the drop). The
/// case where the drop starts while the closure runs on the other thread (the drop
/// parks) is explored.
#[test]
fn stop_request_races_callback_drop() {
    const DROPPED_WHILE_RUNNING: u32 = 1;
    const DROPPED_BEFORE_RUN: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let source = Arc::new(StopSource::<System>::new());
        let ran = Arc::new(Data::new(0));
        // A loom atomic, so that loom orders its accesses against the callback's.
        let running = Arc::new(AtomicBool::new(false));

        let callback = {
            let (ran, running) = (ran.clone(), running.clone());
            Box::pin(StopCallback::new(source.token(), move || {
                running.store(true, Ordering::Relaxed);
                ran.bump();
                running.store(false, Ordering::Relaxed);
            }))
        };
        callback.as_ref().register();

        let requester = {
            let source = source.clone();
            thread::spawn(move || assert!(source.request_stop()))
        };

        if running.load(Ordering::Relaxed) {
            SEEN.mark(DROPPED_WHILE_RUNNING);
        }
        drop(callback);
        // After the drop, the closure has returned if it ever started.
        let runs = ran.get();
        assert!(runs <= 1);
        if runs == 0 {
            SEEN.mark(DROPPED_BEFORE_RUN);
        }
        ran.set(10);

        requester.join().unwrap();
        assert_eq!(ran.get(), 10);
    });
    SEEN.assert_all(DROPPED_WHILE_RUNNING | DROPPED_BEFORE_RUN);
}

/// Two threads race `request_stop`: exactly one gets `true`, and the registered
/// callback runs exactly once, before that call returns.
#[test]
fn stop_two_requesters_one_wins() {
    const MAIN_WINS: u32 = 1;
    const OTHER_WINS: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let source = Arc::new(StopSource::<System>::new());
        let runs = Arc::new(Data::new(0));

        let callback = {
            let runs = runs.clone();
            Box::pin(StopCallback::new(source.token(), move || runs.bump()))
        };
        callback.as_ref().register();

        let other = {
            let (source, runs) = (source.clone(), runs.clone());
            thread::spawn(move || {
                let won = source.request_stop();
                if won {
                    assert_eq!(runs.get(), 1);
                }
                won
            })
        };

        let won_here = source.request_stop();
        if won_here {
            assert_eq!(runs.get(), 1);
        }
        let won_there = other.join().unwrap();
        assert!(
            won_here ^ won_there,
            "exactly one request_stop returns true"
        );
        SEEN.mark(if won_here { MAIN_WINS } else { OTHER_WINS });
        assert_eq!(runs.get(), 1);
        drop(callback);
    });
    SEEN.assert_all(MAIN_WINS | OTHER_WINS);
}

/// A callback whose closure drops the callback itself, while two threads race
/// `request_stop`: the drop inside the closure returns at once (no self-deadlock),
/// and the closure runs exactly once.
#[test]
fn stop_callback_drops_itself() {
    type Slot<'a> = Mutex<Option<Pin<Box<dyn Send + 'a>>>>;
    loom::model(|| {
        let source = Arc::new(StopSource::<System>::new());
        let runs = Arc::new(AtomicU32::new(0));
        let slot: Arc<Slot<'_>> = Arc::new(Mutex::new(None));

        let callback = {
            let (slot, runs) = (slot.clone(), runs.clone());
            Box::pin(StopCallback::new(source.token(), move || {
                runs.fetch_add(1, Ordering::Relaxed);
                // Drops this very callback (the closure itself was moved out first).
                let this = slot.lock().unwrap().take();
                assert!(this.is_some());
                drop(this);
            }))
        };
        callback.as_ref().register();
        *slot.lock().unwrap() = Some(callback);

        let other = {
            let source = source.clone();
            thread::spawn(move || source.request_stop())
        };
        let won_here = source.request_stop();
        let won_there = other.join().unwrap();
        assert!(won_here ^ won_there);
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        assert!(slot.lock().unwrap().is_none());
    });
}

/// A thread that sees `stop_requested() == true` sees what the requester wrote before
/// `request_stop`.
#[test]
fn stop_requested_publishes() {
    loom::model(|| {
        let source = Arc::new(StopSource::<System>::new());
        let data = Arc::new(Data::new(0));

        let requester = {
            let (source, data) = (source.clone(), data.clone());
            thread::spawn(move || {
                data.set(1);
                source.request_stop();
            })
        };

        let token = source.token();
        while !token.stop_requested() {
            thread::yield_now();
        }
        assert_eq!(data.get(), 1);
        requester.join().unwrap();
    });
}

/// A stop request races a stoppable acquire on a semaphore nobody releases, whose
/// thread registers its waker callback, looks at the token and goes to sleep (on the
/// bucket of its word, checking the stop word under the bucket lock, with no timeout:
/// under loom a sleep that could miss the stop would sleep for ever, which loom
/// reports as a deadlock). The wait always ends with `Stopped`, and sees the
/// requester's write before the request.
#[test]
fn stop_ends_a_sleeping_stoppable_acquire() {
    loom::model(|| {
        let source = Arc::new(StopSource::<System>::new());
        let semaphore = Arc::new(CountingSemaphore::<1>::new(0));
        let data = Arc::new(Data::new(0));

        let waiter = {
            let (source, semaphore, data) = (source.clone(), semaphore.clone(), data.clone());
            thread::spawn(move || {
                assert_eq!(
                    semaphore.acquire_stoppable(source.token()),
                    Err(sync_host::Stopped)
                );
                assert_eq!(data.get(), 1);
            })
        };

        data.set(1);
        assert!(source.request_stop());
        waiter.join().unwrap();
    });
}
