//! Conformance tests for `scoped_sync::{StopSource, StopToken, StopCallback}` on CPU
//! threads, modelled on libc++'s `thread.stoptoken` tests: request_stop, stop_requested,
//! stop_possible, token equality, callbacks (registration after stop, running in the
//! requesting thread, deregistration, drop while running, self-drop, races).

use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use scoped_sync::{stop_callback, Barrier, Latch, StopCallback, StopSource, StopToken};

mod common;
use common::{hang_guard, spin_until, Unsync};

/// A boxed, registered callback whose closure is type-erased (so it can refer to its
/// own box).
type DynCallback<'a> = Pin<Box<StopCallback<'a, Box<dyn FnOnce() + Send + 'a>>>>;

#[test]
fn request_stop_returns_true_only_the_first_time() {
    let source = StopSource::new();
    assert!(!source.stop_requested());
    assert!(source.stop_possible());
    assert!(source.request_stop());
    assert!(source.stop_requested());
    assert!(!source.request_stop());
    assert!(!source.request_stop());
    assert!(source.stop_requested());
    assert!(source.stop_possible(), "still possible after the request");
}

#[test]
fn tokens_observe_their_source() {
    let source = StopSource::new();
    let token = source.token();
    let copy = token;
    assert!(token.stop_possible());
    assert!(!token.stop_requested());
    source.request_stop();
    assert!(token.stop_requested());
    assert!(copy.stop_requested());
    assert!(source.token().stop_requested());
}

#[test]
fn default_token_has_no_source() {
    let token: StopToken = StopToken::default();
    assert!(!token.stop_possible());
    assert!(!token.stop_requested());
    let none: StopToken = StopToken::none();
    assert!(!none.stop_possible());
    assert!(!none.stop_requested());
    let default_source: StopSource = StopSource::default();
    assert!(!default_source.stop_requested());
    assert!(default_source.token().stop_possible());
}

#[test]
fn token_equality() {
    let a = StopSource::new();
    let b = StopSource::new();
    assert_eq!(a.token(), a.token());
    let copy = a.token();
    assert_eq!(copy, a.token());
    assert_ne!(a.token(), b.token());
    assert_ne!(a.token(), StopToken::none());
    assert_ne!(StopToken::none(), b.token());
    assert_eq!(StopToken::none(), StopToken::default());
    // Equality is identity of the source, not its state.
    a.request_stop();
    assert_eq!(a.token(), copy);
    assert_ne!(a.token(), b.token());
}

#[test]
fn callback_runs_once_on_request_stop() {
    let source = StopSource::new();
    let runs = AtomicU32::new(0);
    let callback = pin!(StopCallback::new(source.token(), || {
        runs.fetch_add(1, Ordering::Relaxed);
    }));
    callback.as_ref().register();
    assert_eq!(runs.load(Ordering::Relaxed), 0, "ran before stop");
    assert!(source.request_stop());
    assert_eq!(
        runs.load(Ordering::Relaxed),
        1,
        "request_stop returned before the callback"
    );
    assert!(!source.request_stop());
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

#[test]
fn unregistered_callback_never_runs() {
    let source = StopSource::new();
    let runs = AtomicU32::new(0);
    {
        let _callback = pin!(StopCallback::new(source.token(), || {
            runs.fetch_add(1, Ordering::Relaxed);
        }));
        // Never registered.
        source.request_stop();
    }
    assert_eq!(runs.load(Ordering::Relaxed), 0);
}

#[test]
fn registering_twice_registers_once() {
    let source = StopSource::new();
    let runs = AtomicU32::new(0);
    let callback = pin!(StopCallback::new(source.token(), || {
        runs.fetch_add(1, Ordering::Relaxed);
    }));
    callback.as_ref().register();
    callback.as_ref().register();
    source.request_stop();
    callback.as_ref().register();
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

#[test]
fn callback_with_a_token_without_source_never_runs() {
    let runs = AtomicU32::new(0);
    let callback = pin!(StopCallback::new(StopToken::none(), || {
        runs.fetch_add(1, Ordering::Relaxed);
    }));
    callback.as_ref().register();
    assert_eq!(runs.load(Ordering::Relaxed), 0);
}

#[test]
fn callback_registered_after_stop_runs_at_once_in_the_registering_thread() {
    let source = StopSource::new();
    // Stop requested by another thread.
    thread::scope(|s| {
        s.spawn(|| assert!(source.request_stop()));
    });
    let ran_on: Mutex<Option<ThreadId>> = Mutex::new(None);
    let callback = pin!(StopCallback::new(source.token(), || {
        *ran_on.lock().unwrap() = Some(thread::current().id());
    }));
    assert!(
        ran_on.lock().unwrap().is_none(),
        "constructing must not run it"
    );
    callback.as_ref().register();
    assert_eq!(*ran_on.lock().unwrap(), Some(thread::current().id()));

    // The same through the boxed helper, from yet another thread.
    let ran_on = &ran_on;
    thread::scope(|s| {
        s.spawn(|| {
            let _callback = stop_callback(source.token(), || {
                *ran_on.lock().unwrap() = Some(thread::current().id());
            });
            assert_eq!(*ran_on.lock().unwrap(), Some(thread::current().id()));
        });
    });
}

#[test]
fn callback_runs_in_the_requesting_thread() {
    hang_guard("callback_runs_in_the_requesting_thread", 30, || {
        let source = StopSource::new();
        let ran_on: Mutex<Option<ThreadId>> = Mutex::new(None);
        let callback = stop_callback(source.token(), || {
            *ran_on.lock().unwrap() = Some(thread::current().id());
        });
        let requester = thread::scope(|s| {
            let handle = s.spawn(|| {
                assert!(source.request_stop());
                // request_stop runs the callbacks before returning.
                assert_eq!(*ran_on.lock().unwrap(), Some(thread::current().id()));
            });
            let id = handle.thread().id();
            handle.join().unwrap();
            id
        });
        assert_eq!(*ran_on.lock().unwrap(), Some(requester));
        assert_ne!(requester, thread::current().id());
        drop(callback);
    });
}

#[test]
fn callback_dropped_before_stop_never_runs() {
    let source = StopSource::new();
    let runs = AtomicU32::new(0);
    let callback = stop_callback(source.token(), || {
        runs.fetch_add(1, Ordering::Relaxed);
    });
    drop(callback);
    assert!(source.request_stop());
    assert_eq!(runs.load(Ordering::Relaxed), 0);

    // Also on the stack, deregistered by scope exit.
    let source = StopSource::new();
    {
        let callback = pin!(StopCallback::new(source.token(), || {
            runs.fetch_add(1, Ordering::Relaxed);
        }));
        callback.as_ref().register();
    }
    source.request_stop();
    assert_eq!(runs.load(Ordering::Relaxed), 0);
}

#[test]
fn drop_while_running_on_another_thread_waits_for_it() {
    hang_guard(
        "drop_while_running_on_another_thread_waits_for_it",
        30,
        || {
            let source = StopSource::new();
            let started = AtomicBool::new(false);
            let finished = AtomicBool::new(false);
            let callback = stop_callback(source.token(), || {
                started.store(true, Ordering::SeqCst);
                thread::sleep(Duration::from_millis(50));
                finished.store(true, Ordering::SeqCst);
            });
            thread::scope(|s| {
                s.spawn(|| source.request_stop());
                spin_until(|| started.load(Ordering::SeqCst));
                drop(callback);
                assert!(
                    finished.load(Ordering::SeqCst),
                    "the drop returned while the callback was still running"
                );
            });
        },
    );
}

#[test]
fn drop_of_a_stack_callback_while_it_runs_elsewhere_waits() {
    hang_guard(
        "drop_of_a_stack_callback_while_it_runs_elsewhere_waits",
        30,
        || {
            let source = StopSource::new();
            let started = AtomicBool::new(false);
            let finished = AtomicBool::new(false);
            thread::scope(|s| {
                {
                    let callback = pin!(StopCallback::new(source.token(), || {
                        started.store(true, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(50));
                        finished.store(true, Ordering::SeqCst);
                    }));
                    callback.as_ref().register();
                    s.spawn(|| source.request_stop());
                    spin_until(|| started.load(Ordering::SeqCst));
                    // `callback` is dropped here, while it runs on the other thread.
                }
                assert!(finished.load(Ordering::SeqCst));
            });
        },
    );
}

#[test]
fn callback_may_drop_itself() {
    hang_guard("callback_may_drop_itself", 30, || {
        let source = StopSource::new();
        let slot: Arc<Mutex<Option<DynCallback<'_>>>> = Arc::new(Mutex::new(None));
        let ran = Arc::new(AtomicBool::new(false));
        let callback = {
            let (slot, ran) = (Arc::clone(&slot), Arc::clone(&ran));
            stop_callback(
                source.token(),
                Box::new(move || {
                    let own = slot.lock().unwrap().take();
                    assert!(own.is_some(), "the callback's own box is in the slot");
                    // Deregisters (and frees) the running callback from inside it.
                    drop(own);
                    ran.store(true, Ordering::SeqCst);
                }) as Box<dyn FnOnce() + Send + '_>,
            )
        };
        *slot.lock().unwrap() = Some(callback);
        assert!(source.request_stop());
        assert!(ran.load(Ordering::SeqCst));
        assert!(slot.lock().unwrap().is_none());
    });
}

#[test]
fn callback_may_drop_itself_when_stop_comes_from_another_thread() {
    hang_guard("callback_may_drop_itself_other_thread", 30, || {
        let source = StopSource::new();
        let slot: Arc<Mutex<Option<DynCallback<'_>>>> = Arc::new(Mutex::new(None));
        let others = AtomicU32::new(0);
        // Callbacks before and after it in the list still run.
        let before = stop_callback(source.token(), || {
            others.fetch_add(1, Ordering::SeqCst);
        });
        let callback = {
            let slot = Arc::clone(&slot);
            stop_callback(
                source.token(),
                Box::new(move || drop(slot.lock().unwrap().take()))
                    as Box<dyn FnOnce() + Send + '_>,
            )
        };
        *slot.lock().unwrap() = Some(callback);
        let after = stop_callback(source.token(), || {
            others.fetch_add(1, Ordering::SeqCst);
        });
        thread::scope(|s| {
            s.spawn(|| assert!(source.request_stop()));
        });
        assert!(slot.lock().unwrap().is_none());
        assert_eq!(others.load(Ordering::SeqCst), 2);
        drop((before, after));
    });
}

#[test]
fn callback_may_drop_another_callback() {
    // A running callback drops a different, still registered callback: that one must
    // then never run.
    hang_guard("callback_may_drop_another_callback", 30, || {
        let source = StopSource::new();
        let victim_runs = Arc::new(AtomicU32::new(0));
        let victim_slot: Arc<Mutex<Option<DynCallback<'_>>>> = Arc::new(Mutex::new(None));
        // The order in which callbacks run is unspecified: the victim may run before
        // the killer drops it, but at most once, and never after the drop.
        let victim = {
            let runs = Arc::clone(&victim_runs);
            stop_callback(
                source.token(),
                Box::new(move || {
                    runs.fetch_add(1, Ordering::SeqCst);
                }) as Box<dyn FnOnce() + Send + '_>,
            )
        };
        *victim_slot.lock().unwrap() = Some(victim);
        let runs_when_dropped = Arc::new(AtomicU32::new(u32::MAX));
        let killer = {
            let (slot, runs, at_drop) = (
                Arc::clone(&victim_slot),
                Arc::clone(&victim_runs),
                Arc::clone(&runs_when_dropped),
            );
            stop_callback(source.token(), move || {
                drop(slot.lock().unwrap().take());
                at_drop.store(runs.load(Ordering::SeqCst), Ordering::SeqCst);
            })
        };
        assert!(source.request_stop());
        let at_drop = runs_when_dropped.load(Ordering::SeqCst);
        assert!(at_drop <= 1);
        assert_eq!(
            victim_runs.load(Ordering::SeqCst),
            at_drop,
            "a callback ran after it was dropped"
        );
        drop(killer);
    });
}

#[test]
fn request_stop_inside_a_callback_returns_false() {
    hang_guard("request_stop_inside_a_callback_returns_false", 30, || {
        let source = StopSource::new();
        let inner = AtomicU32::new(0);
        let callback = pin!(StopCallback::new(source.token(), || {
            assert!(!source.request_stop());
            inner.fetch_add(1, Ordering::SeqCst);
        }));
        callback.as_ref().register();
        assert!(source.request_stop());
        assert_eq!(inner.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn callback_registered_inside_a_callback_runs_at_once() {
    hang_guard(
        "callback_registered_inside_a_callback_runs_at_once",
        30,
        || {
            let source = StopSource::new();
            let nested = AtomicBool::new(false);
            let callback = pin!(StopCallback::new(source.token(), || {
                let inner = pin!(StopCallback::new(source.token(), || {
                    nested.store(true, Ordering::SeqCst);
                }));
                inner.as_ref().register();
                assert!(nested.load(Ordering::SeqCst), "must run during register");
            }));
            callback.as_ref().register();
            assert!(source.request_stop());
            assert!(nested.load(Ordering::SeqCst));
        },
    );
}

#[test]
fn racing_request_stop_exactly_one_wins_and_every_callback_runs_once() {
    const REGISTRARS: usize = 4;
    const PER_REGISTRAR: usize = 25;
    const REQUESTERS: usize = 10;
    const ROUNDS: usize = 20;
    hang_guard("racing_request_stop", 60, || {
        for _ in 0..ROUNDS {
            let source = StopSource::new();
            let runs: Vec<AtomicU32> = (0..REGISTRARS * PER_REGISTRAR)
                .map(|_| AtomicU32::new(0))
                .collect();
            // Register 100 callbacks from several threads; keep them alive here.
            let callbacks: Vec<_> = thread::scope(|s| {
                let handles: Vec<_> = runs
                    .chunks(PER_REGISTRAR)
                    .map(|chunk| {
                        let source = &source;
                        s.spawn(move || {
                            chunk
                                .iter()
                                .map(|counter| {
                                    stop_callback(source.token(), move || {
                                        counter.fetch_add(1, Ordering::SeqCst);
                                    })
                                })
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap())
                    .collect()
            });
            let start = Barrier::new(REQUESTERS as u32);
            let winners = AtomicU32::new(0);
            thread::scope(|s| {
                for _ in 0..REQUESTERS {
                    s.spawn(|| {
                        start.arrive_and_wait();
                        if source.request_stop() {
                            winners.fetch_add(1, Ordering::SeqCst);
                        }
                        // Whoever returns, stop is visible afterwards.
                        assert!(source.stop_requested());
                    });
                }
            });
            assert_eq!(winners.load(Ordering::SeqCst), 1);
            for (i, counter) in runs.iter().enumerate() {
                assert_eq!(counter.load(Ordering::SeqCst), 1, "callback {i}");
            }
            drop(callbacks);
        }
    });
}

#[test]
fn registration_racing_request_stop_runs_every_callback_once() {
    const REGISTRARS: usize = 4;
    const PER_REGISTRAR: usize = 25;
    const REQUESTERS: usize = 10;
    const ROUNDS: usize = 20;
    hang_guard("registration_racing_request_stop", 60, || {
        for _ in 0..ROUNDS {
            let source = StopSource::new();
            let runs: Vec<AtomicU32> = (0..REGISTRARS * PER_REGISTRAR)
                .map(|_| AtomicU32::new(0))
                .collect();
            let start = Barrier::new((REGISTRARS + REQUESTERS) as u32);
            // Counted down once each requester's `request_stop` returned (the winner's
            // after running every callback registered in time).
            let requested = Latch::new(REQUESTERS as u32);
            let winners = AtomicU32::new(0);
            thread::scope(|s| {
                for chunk in runs.chunks(PER_REGISTRAR) {
                    let (source, start, requested) = (&source, &start, &requested);
                    s.spawn(move || {
                        start.arrive_and_wait();
                        let callbacks: Vec<_> = chunk
                            .iter()
                            .map(|counter| {
                                stop_callback(source.token(), move || {
                                    counter.fetch_add(1, Ordering::SeqCst);
                                })
                            })
                            .collect();
                        // Keep them registered until the requests are over: a callback
                        // dropped before it ran is deregistered and never runs.
                        requested.wait();
                        drop(callbacks);
                    });
                }
                for _ in 0..REQUESTERS {
                    s.spawn(|| {
                        start.arrive_and_wait();
                        if source.request_stop() {
                            winners.fetch_add(1, Ordering::SeqCst);
                        }
                        requested.count_down(1);
                    });
                }
            });
            assert_eq!(winners.load(Ordering::SeqCst), 1);
            for (i, counter) in runs.iter().enumerate() {
                assert_eq!(counter.load(Ordering::SeqCst), 1, "callback {i}");
            }
        }
    });
}

#[test]
fn deregistering_middle_callbacks() {
    const CALLBACKS: usize = 10;
    let source = StopSource::new();
    let runs: Vec<AtomicU32> = (0..CALLBACKS).map(|_| AtomicU32::new(0)).collect();
    let mut callbacks: Vec<Option<_>> = runs
        .iter()
        .map(|counter| {
            Some(stop_callback(source.token(), move || {
                counter.fetch_add(1, Ordering::Relaxed);
            }))
        })
        .collect();
    // Drop the middle ones, in a scattered order; keep the ends.
    for i in [5, 3, 7, 4, 6] {
        callbacks[i] = None;
    }
    assert!(source.request_stop());
    for (i, counter) in runs.iter().enumerate() {
        let expected = u32::from(!(3..=7).contains(&i));
        assert_eq!(counter.load(Ordering::Relaxed), expected, "callback {i}");
    }
    drop(callbacks);
}

#[test]
fn deregistering_head_and_tail() {
    const CALLBACKS: usize = 6;
    let source = StopSource::new();
    let runs: Vec<AtomicU32> = (0..CALLBACKS).map(|_| AtomicU32::new(0)).collect();
    let mut callbacks: Vec<Option<_>> = runs
        .iter()
        .map(|counter| {
            Some(stop_callback(source.token(), move || {
                counter.fetch_add(1, Ordering::Relaxed);
            }))
        })
        .collect();
    callbacks[0] = None;
    callbacks[CALLBACKS - 1] = None;
    // Re-register a new one after removals.
    let extra = AtomicU32::new(0);
    let late = stop_callback(source.token(), || {
        extra.fetch_add(1, Ordering::Relaxed);
    });
    assert!(source.request_stop());
    for (i, counter) in runs.iter().enumerate() {
        let expected = u32::from(i != 0 && i != CALLBACKS - 1);
        assert_eq!(counter.load(Ordering::Relaxed), expected, "callback {i}");
    }
    assert_eq!(extra.load(Ordering::Relaxed), 1);
    drop((callbacks, late));
}

#[test]
fn many_callbacks_all_run_once() {
    const CALLBACKS: usize = 1_000;
    let source = StopSource::new();
    let runs = AtomicU32::new(0);
    let callbacks: Vec<_> = (0..CALLBACKS)
        .map(|_| {
            stop_callback(source.token(), || {
                runs.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    assert!(source.request_stop());
    assert_eq!(runs.load(Ordering::Relaxed), CALLBACKS as u32);
    drop(callbacks);
    assert_eq!(runs.load(Ordering::Relaxed), CALLBACKS as u32);
}

#[test]
fn concurrent_drops_during_request_stop_never_run_after_drop() {
    const CALLBACKS: usize = 64;
    const ROUNDS: usize = 50;
    hang_guard("concurrent_drops_during_request_stop", 60, || {
        for _ in 0..ROUNDS {
            let source = StopSource::new();
            let runs: Vec<AtomicU32> = (0..CALLBACKS).map(|_| AtomicU32::new(0)).collect();
            let mut callbacks: Vec<_> = runs
                .iter()
                .map(|counter| {
                    stop_callback(source.token(), move || {
                        counter.fetch_add(1, Ordering::SeqCst);
                    })
                })
                .collect();
            let mut at_drop = vec![0; CALLBACKS];
            thread::scope(|s| {
                s.spawn(|| source.request_stop());
                // Drop from the oldest (run last) to the newest, racing the requester.
                for i in 0..CALLBACKS {
                    drop(callbacks.remove(0));
                    at_drop[i] = runs[i].load(Ordering::SeqCst);
                }
            });
            for (i, counter) in runs.iter().enumerate() {
                let now = counter.load(Ordering::SeqCst);
                assert!(now <= 1, "callback {i} ran {now} times");
                assert_eq!(now, at_drop[i], "callback {i} ran after its drop returned");
            }
        }
    });
}

#[test]
fn stop_request_publishes_earlier_writes() {
    const ROUNDS: usize = 200;
    hang_guard("stop_request_publishes_earlier_writes", 60, || {
        for round in 0..ROUNDS {
            let source = StopSource::new();
            let data = Unsync::new(0usize);
            thread::scope(|s| {
                s.spawn(|| {
                    // Written before `request_stop`, read only after
                    // `stop_requested()` returned true.
                    data.set(round + 1);
                    source.request_stop();
                });
                spin_until(|| source.token().stop_requested());
                assert_eq!(data.get(), round + 1);
            });
        }
    });
}

static STATIC_SOURCE: StopSource = StopSource::new();

#[test]
fn stop_source_in_a_static() {
    let runs = AtomicU32::new(0);
    let callback = stop_callback(STATIC_SOURCE.token(), || {
        runs.fetch_add(1, Ordering::Relaxed);
    });
    assert!(!STATIC_SOURCE.stop_requested());
    thread::scope(|s| {
        s.spawn(|| assert!(STATIC_SOURCE.request_stop()));
    });
    assert_eq!(runs.load(Ordering::Relaxed), 1);
    assert!(STATIC_SOURCE.token().stop_requested());
    drop(callback);
}

#[test]
fn debug_output() {
    let source = StopSource::new();
    let text = format!("{source:?} {:?}", source.token());
    assert!(text.contains("StopSource"), "{text}");
    assert!(text.contains("stop_requested: false"), "{text}");
    source.request_stop();
    assert!(format!("{:?}", source.token()).contains("stop_requested: true"));
}

/// `Runtime::new_stop_source` hands kernels zeroed device memory as a new stop source:
/// all-zero bytes must be a new source (no stop requested, no callbacks, working).
/// (The fields do not depend on the scope or backend, so the host's `System` source
/// stands for the device's; the bytes of `StopSource::new()` cannot be compared, as
/// the state word is followed by padding.)
#[test]
fn zeroed_memory_is_a_new_stop_source() {
    // SAFETY: every field of a stop source is an integer, an atomic integer, a raw
    // pointer or zero-sized, for which all-zero bytes are a valid value.
    let source: StopSource = unsafe { std::mem::MaybeUninit::zeroed().assume_init() };
    assert_eq!(
        std::mem::size_of::<StopSource>(),
        scoped_sync::layout::STOP_SOURCE.size
    );
    assert!(!source.stop_requested());
    let ran = AtomicBool::new(false);
    let callback = pin!(StopCallback::new(source.token(), || ran.store(true, Ordering::Relaxed)));
    callback.as_ref().register();
    assert!(source.request_stop(), "the first request");
    assert!(ran.load(Ordering::Relaxed), "the registered callback ran");
    assert!(!source.request_stop());
}
