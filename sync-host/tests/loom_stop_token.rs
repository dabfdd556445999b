//! loom models of `StopSource`, `StopToken` and `StopCallback`, on the host flavour
//! (how they run: `loom_support`).
#![cfg(loom)]

mod loom_support;

use std::pin::{pin, Pin};
// std's Arc, not loom's: a failing model then reports its first panic instead of
// aborting in loom's Arc destructor during unwinding. Every model orders its last use
// of shared state before the end of the iteration by `join`.
use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::sync::Mutex;
use loom::thread;
use loom_support::{on, Data, Seen};
use sync_host::{CountingSemaphore, StopCallback, StopSource, System};

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
