//! Conformance tests for `scoped_sync::Barrier` on CPU threads.
//!
//! Modelled on libc++'s `thread.barrier` tests (arrive, arrive_and_wait, arrive_and_drop,
//! completion, max) plus the crate's additions: timed, parity and stoppable waits.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use scoped_sync::{Barrier, Latch, StopSource, Stopped, System};

mod common;
use common::{hang_guard, run_in_child, spin_until, Unsync};

#[test]
fn arrive_and_wait_many_phases() {
    const THREADS: u32 = 4;
    const PHASES: u32 = 300;
    hang_guard("arrive_and_wait_many_phases", 60, || {
        let barrier = Barrier::new(THREADS);
        let arrived = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for phase in 0..PHASES {
                        arrived.fetch_add(1, Ordering::Relaxed);
                        barrier.arrive_and_wait();
                        // Everybody arrived in this phase; nobody can have finished the
                        // next one, which needs this thread.
                        let seen = arrived.load(Ordering::Relaxed);
                        assert!(
                            seen >= THREADS * (phase + 1),
                            "phase {phase}: released after only {seen} arrivals"
                        );
                        assert!(
                            seen < THREADS * (phase + 2),
                            "phase {phase}: {seen} arrivals seen, the next phase ran without us"
                        );
                    }
                });
            }
        });
        assert_eq!(arrived.load(Ordering::Relaxed), THREADS * PHASES);
    });
}

#[test]
fn libcxx_arrive_and_wait_two_threads() {
    // libc++ arrive_and_wait.pass.cpp
    hang_guard("libcxx_arrive_and_wait_two_threads", 30, || {
        let barrier = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..10 {
                    barrier.arrive_and_wait();
                }
            });
            for _ in 0..10 {
                barrier.arrive_and_wait();
            }
        });
    });
}

#[test]
fn libcxx_arrive_then_wait() {
    // libc++ arrive.pass.cpp
    hang_guard("libcxx_arrive_then_wait", 30, || {
        let barrier = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                let token = barrier.arrive(1);
                barrier.wait(token);
            });
            let token = barrier.arrive(1);
            barrier.wait(token);
        });
    });
}

#[test]
fn split_arrive_and_wait_with_tokens() {
    hang_guard("split_arrive_and_wait_with_tokens", 30, || {
        let barrier = Barrier::new(2);
        let go = Latch::new(1);
        let other_arrived = AtomicBool::new(false);
        thread::scope(|s| {
            s.spawn(|| {
                go.wait();
                other_arrived.store(true, Ordering::Relaxed);
                let token = barrier.arrive(1);
                barrier.wait(token);
            });
            let token = barrier.arrive(1);
            // The other thread has not arrived: the phase cannot have completed.
            assert!(!barrier.try_wait(&token));
            assert!(!barrier.try_wait_for(&token, Duration::from_millis(1)));
            go.count_down(1);
            barrier.wait(token);
            assert!(other_arrived.load(Ordering::Relaxed));
        });
    });
}

#[test]
fn try_wait_before_and_after_completion() {
    let barrier = Barrier::new(2);
    let first = barrier.arrive(1);
    assert!(!barrier.try_wait(&first));
    assert!(
        !barrier.try_wait(&first),
        "try_wait must not change the phase"
    );
    let second = barrier.arrive(1);
    assert_eq!(first.parity(), second.parity(), "same phase, same parity");
    assert!(barrier.try_wait(&first));
    assert!(barrier.try_wait(&second));
    let parity = second.parity();
    // Waiting on a completed phase returns at once.
    barrier.wait(first);
    barrier.wait(second);

    // The next phase starts fresh, with the other parity.
    let third = barrier.arrive(1);
    assert_ne!(third.parity(), parity);
    assert!(!barrier.try_wait(&third));
    let fourth = barrier.arrive(1);
    assert!(barrier.try_wait(&third));
    assert!(barrier.try_wait(&fourth));
}

#[test]
fn consecutive_phases_alternate_parity() {
    let barrier = Barrier::new(1);
    let mut previous = barrier.arrive(1);
    assert!(barrier.try_wait(&previous));
    for _ in 0..10 {
        let token = barrier.arrive(1);
        assert!(barrier.try_wait(&token));
        assert_ne!(token.parity(), previous.parity());
        previous = token;
    }
}

#[test]
fn timed_waits_time_out_on_a_pending_phase() {
    hang_guard("timed_waits_time_out_on_a_pending_phase", 30, || {
        let barrier = Barrier::new(2);
        let token = barrier.arrive(1);
        for timeout in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(100),
            Duration::from_micros(1),
            Duration::from_micros(100),
            Duration::from_millis(1),
            Duration::from_millis(10),
        ] {
            assert!(
                !barrier.try_wait_for(&token, timeout),
                "try_wait_for({timeout:?}) succeeded on a pending phase"
            );
        }
        let now = Instant::now();
        assert!(!barrier.try_wait_until(&token, now));
        assert!(!barrier.try_wait_until(&token, now - Duration::from_millis(5)));
        assert!(!barrier.try_wait_until(&token, Instant::now() + Duration::from_millis(3)));
        // Timing out changed nothing: the phase still needs exactly one arrival.
        assert!(!barrier.try_wait(&token));
        let last = barrier.arrive(1);
        assert!(barrier.try_wait(&token));
        assert!(barrier.try_wait_for(&last, Duration::ZERO));
        assert!(barrier.try_wait_until(&last, Instant::now() - Duration::from_millis(5)));
    });
}

#[test]
fn timed_waits_succeed_when_the_phase_completes() {
    hang_guard("timed_waits_succeed_when_the_phase_completes", 60, || {
        let barrier = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(20));
                barrier.arrive_and_wait();
                thread::sleep(Duration::from_millis(20));
                barrier.arrive_and_wait();
            });
            let token = barrier.arrive(1);
            assert!(barrier.try_wait_for(&token, Duration::from_secs(30)));
            let token = barrier.arrive(1);
            assert!(barrier.try_wait_until(&token, Instant::now() + Duration::from_secs(30)));
        });
    });
}

#[test]
fn completion_runs_once_per_phase_before_any_waiter_is_released() {
    const THREADS: u32 = 3;
    const PHASES: u32 = 200;
    hang_guard("completion_runs_once_per_phase", 60, || {
        let runs = AtomicU32::new(0);
        // Written only by the completion, read by waiters after their wait: the
        // barrier must order the two.
        let published = Unsync::new(0u32);
        let barrier = Barrier::with_completion(THREADS, || {
            let run = runs.fetch_add(1, Ordering::Relaxed) + 1;
            published.set(run);
        });
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for phase in 0..PHASES {
                        barrier.arrive_and_wait();
                        assert_eq!(
                            runs.load(Ordering::Relaxed),
                            phase + 1,
                            "completion must have run exactly once per phase so far"
                        );
                        assert_eq!(
                            published.get(),
                            phase + 1,
                            "a waiter was released before the completion's write"
                        );
                    }
                });
            }
        });
        assert_eq!(runs.load(Ordering::Relaxed), PHASES);
    });
}

#[test]
fn completion_sees_every_arrivals_writes() {
    const THREADS: usize = 4;
    const PHASES: usize = 100;
    hang_guard("completion_sees_every_arrivals_writes", 60, || {
        let slots: [Unsync<usize>; THREADS] = std::array::from_fn(|_| Unsync::new(0));
        let phase = AtomicU32::new(0);
        let bad = AtomicU32::new(0);
        let barrier = Barrier::with_completion(THREADS as u32, || {
            let expected = phase.fetch_add(1, Ordering::Relaxed) as usize + 1;
            for slot in &slots {
                if slot.get() != expected {
                    bad.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        thread::scope(|s| {
            for slot in &slots {
                let barrier = &barrier;
                s.spawn(move || {
                    for p in 1..=PHASES {
                        slot.set(p);
                        barrier.arrive_and_wait();
                    }
                });
            }
        });
        assert_eq!(bad.load(Ordering::Relaxed), 0);
        assert_eq!(phase.load(Ordering::Relaxed) as usize, PHASES);
    });
}

#[test]
fn completion_with_split_arrivals_in_one_thread() {
    let runs = AtomicU32::new(0);
    let barrier = Barrier::with_completion(3, || {
        runs.fetch_add(1, Ordering::Relaxed);
    });
    let a = barrier.arrive(1);
    let b = barrier.arrive(1);
    assert_eq!(runs.load(Ordering::Relaxed), 0);
    let c = barrier.arrive(1);
    assert_eq!(
        runs.load(Ordering::Relaxed),
        1,
        "the last arrival runs the completion"
    );
    assert!(barrier.try_wait(&a) && barrier.try_wait(&b) && barrier.try_wait(&c));
    let _ = barrier.arrive(3);
    assert_eq!(runs.load(Ordering::Relaxed), 2);
}

#[test]
fn arrive_with_n_greater_than_one() {
    let barrier = Barrier::new(4);
    let token = barrier.arrive(3);
    assert!(!barrier.try_wait(&token));
    let last = barrier.arrive(1);
    assert!(barrier.try_wait(&token));
    assert!(barrier.try_wait(&last));
    // A whole phase in one arrival.
    let whole = barrier.arrive(4);
    assert!(barrier.try_wait(&whole));
    // 2 + 2.
    let first = barrier.arrive(2);
    assert!(!barrier.try_wait(&first));
    let second = barrier.arrive(2);
    assert!(barrier.try_wait(&first) && barrier.try_wait(&second));
}

#[test]
fn arrive_n_across_threads() {
    // libc++ arrive.pass.cpp uses arrive(n) too: two threads, each counting for two.
    const PHASES: u32 = 100;
    hang_guard("arrive_n_across_threads", 60, || {
        let runs = AtomicU32::new(0);
        let barrier = Barrier::with_completion(4, || {
            runs.fetch_add(1, Ordering::Relaxed);
        });
        thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for phase in 0..PHASES {
                        let token = barrier.arrive(2);
                        barrier.wait(token);
                        assert_eq!(runs.load(Ordering::Relaxed), phase + 1);
                    }
                });
            }
        });
        assert_eq!(runs.load(Ordering::Relaxed), PHASES);
    });
}

#[test]
fn arrive_and_drop_single_thread() {
    // libc++ arrive_and_drop.pass.cpp
    let barrier = Barrier::new(2);
    barrier.arrive_and_drop();
    // This phase still needs one arrival; later phases need one.
    let token = barrier.arrive(1);
    assert!(barrier.try_wait(&token));
    let token = barrier.arrive(1);
    assert!(
        barrier.try_wait(&token),
        "later phases expect one arrival only"
    );
}

#[test]
fn arrive_and_drop_reduces_later_phases() {
    const PHASES: u32 = 100;
    hang_guard("arrive_and_drop_reduces_later_phases", 60, || {
        let runs = AtomicU32::new(0);
        let barrier = Barrier::with_completion(3, || {
            runs.fetch_add(1, Ordering::Relaxed);
        });
        thread::scope(|s| {
            s.spawn(|| barrier.arrive_and_drop());
            for _ in 0..2 {
                s.spawn(|| {
                    // Phase 0 (with the dropping thread), then 100 phases of two.
                    for phase in 0..=PHASES {
                        barrier.arrive_and_wait();
                        assert_eq!(runs.load(Ordering::Relaxed), phase + 1);
                    }
                });
            }
        });
        assert_eq!(runs.load(Ordering::Relaxed), PHASES + 1);
    });
}

#[test]
fn arrive_and_drop_in_a_later_phase() {
    const PHASES: u32 = 100;
    const DROP_AFTER: u32 = 10;
    hang_guard("arrive_and_drop_in_a_later_phase", 60, || {
        let runs = AtomicU32::new(0);
        let barrier = Barrier::with_completion(3, || {
            runs.fetch_add(1, Ordering::Relaxed);
        });
        thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..DROP_AFTER {
                    barrier.arrive_and_wait();
                }
                barrier.arrive_and_drop();
            });
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..PHASES {
                        barrier.arrive_and_wait();
                    }
                });
            }
        });
        assert_eq!(runs.load(Ordering::Relaxed), PHASES);
    });
}

#[test]
fn every_thread_drops_in_turn() {
    // Threads leave one after another; the remaining ones keep going.
    const THREADS: u32 = 4;
    hang_guard("every_thread_drops_in_turn", 60, || {
        let runs = AtomicU32::new(0);
        let barrier = Barrier::with_completion(THREADS, || {
            runs.fetch_add(1, Ordering::Relaxed);
        });
        thread::scope(|s| {
            for id in 0..THREADS {
                let barrier = &barrier;
                s.spawn(move || {
                    // Thread `id` takes part in phases 0..=id*10, dropping in the last.
                    for _ in 0..id * 10 {
                        barrier.arrive_and_wait();
                    }
                    barrier.arrive_and_drop();
                });
            }
        });
        assert_eq!(runs.load(Ordering::Relaxed), (THREADS - 1) * 10 + 1);
    });
}

#[test]
fn arrival_during_the_completion_counts_in_the_next_phase() {
    hang_guard("arrival_during_the_completion", 30, || {
        let in_completion = AtomicBool::new(false);
        let runs = AtomicU32::new(0);
        let barrier = Barrier::with_completion(2, || {
            in_completion.store(true, Ordering::Release);
            thread::sleep(Duration::from_millis(30));
            runs.fetch_add(1, Ordering::Relaxed);
        });
        let first = barrier.arrive(1);
        thread::scope(|s| {
            s.spawn(|| barrier.arrive(1));
            spin_until(|| in_completion.load(Ordering::Acquire));
            // Phase 0's completion is running: this arrival belongs to phase 1.
            let second = barrier.arrive(1);
            assert_eq!(
                runs.load(Ordering::Relaxed),
                1,
                "arrived before phase 0 ended"
            );
            assert_ne!(first.parity(), second.parity());
            assert!(barrier.try_wait(&first));
            assert!(!barrier.try_wait(&second), "phase 1 has one arrival of two");
            let third = barrier.arrive(1);
            assert!(barrier.try_wait(&second) && barrier.try_wait(&third));
        });
        assert_eq!(runs.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn parity_waits() {
    hang_guard("parity_waits", 30, || {
        let barrier = Barrier::new(2);
        let token = barrier.arrive(1);
        let parity = token.parity();
        assert!(!barrier.try_wait_parity(parity), "the phase is pending");
        assert!(
            barrier.try_wait_parity(!parity),
            "the phase before the current one has completed"
        );
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(10));
                barrier.arrive(1)
            });
            barrier.wait_parity(parity);
        });
        assert!(barrier.try_wait_parity(parity));
        assert!(barrier.try_wait(&token));
        let next = barrier.arrive(1);
        assert_eq!(next.parity(), !parity);
        assert!(!barrier.try_wait_parity(!parity));
        assert!(barrier.try_wait_parity(parity));
        // wait_parity on a completed phase returns at once.
        barrier.wait_parity(parity);
        let _ = barrier.arrive(1);
        barrier.wait_parity(!parity);
    });
}

#[test]
fn parity_waits_across_threads_many_phases() {
    const PHASES: u32 = 100;
    hang_guard("parity_waits_across_threads_many_phases", 60, || {
        let barrier = Barrier::new(2);
        thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..PHASES {
                        let parity = barrier.arrive(1).parity();
                        barrier.wait_parity(parity);
                        assert!(barrier.try_wait_parity(parity));
                    }
                });
            }
        });
    });
}

#[test]
fn max_is_the_documented_limit() {
    assert_eq!(Barrier::<System>::max(), (1 << 28) - 1);
    let barrier = Barrier::new(Barrier::<System>::max());
    let token = barrier.arrive(Barrier::<System>::max() - 1);
    assert!(!barrier.try_wait(&token));
    let last = barrier.arrive(1);
    assert!(barrier.try_wait(&last));
    let whole = barrier.arrive(Barrier::<System>::max());
    assert!(barrier.try_wait(&whole));
}

#[test]
fn wait_stoppable_returns_stopped_when_stop_is_requested() {
    hang_guard("wait_stoppable_returns_stopped", 30, || {
        let barrier = Barrier::new(2);
        let source = StopSource::new();
        let waiting = AtomicBool::new(false);
        thread::scope(|s| {
            let waiter = s.spawn(|| {
                waiting.store(true, Ordering::Relaxed);
                barrier.arrive_and_wait_stoppable(source.token())
            });
            spin_until(|| waiting.load(Ordering::Relaxed));
            // Give the waiter time to park (the result must not depend on it).
            thread::sleep(Duration::from_millis(20));
            assert!(source.request_stop());
            assert_eq!(waiter.join().unwrap(), Err(Stopped));
        });
        // The stopped thread had arrived: one more arrival completes the phase.
        let token = barrier.arrive(1);
        assert!(barrier.try_wait(&token));
    });
}

#[test]
fn wait_stoppable_with_a_token_stopped_beforehand() {
    let barrier = Barrier::new(2);
    let source = StopSource::new();
    source.request_stop();
    let token = barrier.arrive(1);
    assert_eq!(barrier.wait_stoppable(token, source.token()), Err(Stopped));
    // A completed phase is reported as completed even with a stopped token.
    let token = barrier.arrive(1);
    assert_eq!(barrier.wait_stoppable(token, source.token()), Ok(()));
}

#[test]
fn wait_stoppable_returns_ok_when_the_phase_completes() {
    hang_guard("wait_stoppable_returns_ok", 30, || {
        let barrier = Barrier::new(2);
        let source = StopSource::new();
        thread::scope(|s| {
            let waiter = s.spawn(|| {
                let mut results = Vec::new();
                for _ in 0..20 {
                    results.push(barrier.arrive_and_wait_stoppable(source.token()));
                }
                results
            });
            for _ in 0..20 {
                barrier.arrive_and_wait();
            }
            assert!(waiter.join().unwrap().iter().all(Result::is_ok));
        });
        assert!(!source.stop_requested());
    });
}

#[test]
fn wait_stoppable_with_a_token_without_source_waits_for_the_phase() {
    hang_guard("wait_stoppable_token_none", 30, || {
        let barrier = Barrier::new(2);
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(10));
                barrier.arrive_and_wait();
            });
            assert_eq!(
                barrier.arrive_and_wait_stoppable(scoped_sync::StopToken::none()),
                Ok(())
            );
        });
    });
}

static STATIC_BARRIER: Barrier = Barrier::new(2);
static STATIC_RUNS: AtomicU32 = AtomicU32::new(0);

fn count_static_run() {
    STATIC_RUNS.fetch_add(1, Ordering::Relaxed);
}

static STATIC_BARRIER_WITH_COMPLETION: Barrier<System, fn()> =
    Barrier::with_completion(2, count_static_run as fn());

#[test]
fn barrier_in_a_static() {
    hang_guard("barrier_in_a_static", 30, || {
        thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..50 {
                    STATIC_BARRIER.arrive_and_wait();
                    STATIC_BARRIER_WITH_COMPLETION.arrive_and_wait();
                }
            });
            for _ in 0..50 {
                STATIC_BARRIER.arrive_and_wait();
                STATIC_BARRIER_WITH_COMPLETION.arrive_and_wait();
            }
        });
        assert_eq!(STATIC_RUNS.load(Ordering::Relaxed), 50);
    });
}

#[test]
fn many_waiters_on_one_phase_are_all_released() {
    const WAITERS: u32 = 8;
    hang_guard("many_waiters_on_one_phase", 30, || {
        let barrier = Barrier::new(WAITERS + 1);
        let released = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..WAITERS {
                s.spawn(|| {
                    barrier.arrive_and_wait();
                    released.fetch_add(1, Ordering::Relaxed);
                });
            }
            // Let them park; then the last arrival must wake every one.
            thread::sleep(Duration::from_millis(30));
            assert_eq!(released.load(Ordering::Relaxed), 0);
            barrier.arrive_and_wait();
        });
        assert_eq!(released.load(Ordering::Relaxed), WAITERS);
    });
}

#[test]
fn debug_output_names_the_barrier() {
    let barrier = Barrier::new(3);
    let _ = barrier.arrive(1);
    let text = format!("{barrier:?}");
    assert!(text.contains("Barrier"), "{text}");
    assert!(text.contains("remaining: 2"), "{text}");
}

/// Set in the child process of `panicking_completion_aborts_instead_of_hanging`.
const ABORT_CHILD: &str = "SCOPED_SYNC_COMPLETION_PANIC_CHILD";

#[test]
fn panicking_completion_aborts_instead_of_hanging() {
    if std::env::var_os(ABORT_CHILD).is_some() {
        // The child: the other thread would wait for ever if the phase stayed open.
        let barrier = Barrier::with_completion(2, || panic!("completion failed"));
        thread::scope(|s| {
            s.spawn(|| barrier.arrive_and_wait());
            barrier.arrive_and_wait();
        });
        unreachable!("the process must abort before the phase completes");
    }
    // A regression would leave the child's other thread blocked for ever: the helper
    // kills it after a generous while and fails.
    let (status, stderr) = run_in_child(
        "panicking_completion_aborts_instead_of_hanging",
        ABORT_CHILD,
    );
    assert!(!status.success(), "the child must not succeed: {stderr}");
    assert!(
        stderr.contains("the completion function panicked"),
        "the abort explains itself: {stderr}"
    );
}
