//! Conformance tests for `scoped_sync::Latch` on CPU threads.
//!
//! Modelled on libc++'s `thread.latch` tests (count_down, try_wait, arrive_and_wait,
//! max) plus timed and stoppable waits.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use scoped_sync::{Latch, StopSource, StopToken, Stopped, System, UsageErrorKind};

mod common;
use common::{hang_guard, spin_until, Unsync};

#[test]
fn libcxx_count_down_and_wait() {
    // libc++ count_down.pass.cpp
    hang_guard("libcxx_count_down_and_wait", 30, || {
        let latch = Latch::new(2);
        latch.count_down(1);
        assert!(!latch.try_wait());
        thread::scope(|s| {
            s.spawn(|| latch.count_down(1));
        });
        latch.wait();
        assert!(latch.try_wait());
    });
}

#[test]
fn libcxx_arrive_and_wait() {
    // libc++ arrive_and_wait.pass.cpp
    hang_guard("libcxx_arrive_and_wait", 30, || {
        let latch = Latch::new(2);
        thread::scope(|s| {
            s.spawn(|| latch.arrive_and_wait(1));
            latch.arrive_and_wait(1);
        });
        assert!(latch.try_wait());
    });
}

#[test]
fn libcxx_try_wait() {
    // libc++ try_wait.pass.cpp
    let latch = Latch::new(1);
    assert!(!latch.try_wait());
    latch.count_down(1);
    assert!(latch.try_wait());
    assert!(latch.try_wait(), "a latch stays open");
}

#[test]
fn count_down_by_several_threads() {
    const THREADS: u32 = 8;
    hang_guard("count_down_by_several_threads", 30, || {
        let latch = Latch::new(THREADS);
        let counted = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    counted.fetch_add(1, Ordering::Relaxed);
                    latch.count_down(1);
                });
            }
            latch.wait();
            assert_eq!(counted.load(Ordering::Relaxed), THREADS);
        });
    });
}

#[test]
fn count_down_by_more_than_one() {
    let latch = Latch::new(5);
    latch.count_down(2);
    assert!(!latch.try_wait());
    latch.count_down(2);
    assert!(!latch.try_wait());
    latch.count_down(1);
    assert!(latch.try_wait());
    latch.wait();
}

#[test]
fn count_down_zero() {
    let latch = Latch::new(2);
    latch.count_down(0);
    assert!(!latch.try_wait(), "count_down(0) must not open the latch");
    latch.count_down(2);
    assert!(latch.try_wait());
    latch.count_down(0);
    assert!(
        latch.try_wait(),
        "count_down(0) on an open latch is allowed"
    );
    assert_eq!(latch.try_count_down(0), Ok(()));
}

#[test]
fn latch_of_zero_is_open() {
    let latch = Latch::new(0);
    assert!(latch.try_wait());
    latch.wait();
    latch.arrive_and_wait(0);
    assert!(latch.try_wait_for(Duration::ZERO));
}

#[test]
fn arrive_and_wait_with_n() {
    const THREADS: u32 = 3;
    hang_guard("arrive_and_wait_with_n", 30, || {
        let latch = Latch::new(THREADS * 2);
        let done = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    latch.arrive_and_wait(2);
                    assert!(latch.try_wait());
                    done.fetch_add(1, Ordering::Relaxed);
                });
            }
        });
        assert_eq!(done.load(Ordering::Relaxed), THREADS);
    });
}

#[test]
fn waiters_are_not_released_early() {
    const WAITERS: u32 = 6;
    hang_guard("waiters_are_not_released_early", 30, || {
        let latch = Latch::new(3);
        let released = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..WAITERS {
                s.spawn(|| {
                    latch.wait();
                    released.fetch_add(1, Ordering::Relaxed);
                });
            }
            latch.count_down(1);
            latch.count_down(1);
            thread::sleep(Duration::from_millis(30));
            assert_eq!(released.load(Ordering::Relaxed), 0);
            latch.count_down(1);
        });
        assert_eq!(released.load(Ordering::Relaxed), WAITERS);
    });
}

#[test]
fn writes_before_count_down_are_visible_after_wait() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 200;
    hang_guard("writes_before_count_down_are_visible", 60, || {
        for round in 0..ROUNDS {
            let slots: [Unsync<usize>; THREADS] = std::array::from_fn(|_| Unsync::new(0));
            let latch = Latch::new(THREADS as u32);
            thread::scope(|s| {
                for (i, slot) in slots.iter().enumerate() {
                    let latch = &latch;
                    s.spawn(move || {
                        slot.set(round * 100 + i + 1);
                        latch.count_down(1);
                    });
                }
                latch.wait();
                for (i, slot) in slots.iter().enumerate() {
                    assert_eq!(slot.get(), round * 100 + i + 1);
                }
            });
        }
    });
}

#[test]
fn timed_waits_time_out_on_a_closed_latch() {
    hang_guard("timed_waits_time_out_on_a_closed_latch", 30, || {
        let latch = Latch::new(1);
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
                !latch.try_wait_for(timeout),
                "try_wait_for({timeout:?}) succeeded on a closed latch"
            );
        }
        let now = Instant::now();
        assert!(!latch.try_wait_until(now));
        assert!(!latch.try_wait_until(now - Duration::from_millis(5)));
        assert!(!latch.try_wait_until(Instant::now() + Duration::from_millis(3)));
        // The timeouts changed nothing.
        assert!(!latch.try_wait());
        latch.count_down(1);
        assert!(latch.try_wait_for(Duration::ZERO));
        assert!(latch.try_wait_until(Instant::now() - Duration::from_millis(5)));
    });
}

#[test]
fn timed_waits_succeed_when_the_latch_opens() {
    hang_guard("timed_waits_succeed_when_the_latch_opens", 60, || {
        let first = Latch::new(1);
        let second = Latch::new(1);
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(20));
                first.count_down(1);
                thread::sleep(Duration::from_millis(20));
                second.count_down(1);
            });
            assert!(first.try_wait_for(Duration::from_secs(30)));
            assert!(second.try_wait_until(Instant::now() + Duration::from_secs(30)));
        });
    });
}

#[test]
fn many_timed_waiters_see_the_opening() {
    const WAITERS: u32 = 6;
    hang_guard("many_timed_waiters_see_the_opening", 60, || {
        let latch = Latch::new(1);
        let opened = AtomicU32::new(0);
        thread::scope(|s| {
            for _ in 0..WAITERS {
                s.spawn(|| {
                    // Short timed waits in a loop: timeouts must not lose the wake-up.
                    while !latch.try_wait_for(Duration::from_micros(50)) {}
                    opened.fetch_add(1, Ordering::Relaxed);
                });
            }
            thread::sleep(Duration::from_millis(20));
            latch.count_down(1);
        });
        assert_eq!(opened.load(Ordering::Relaxed), WAITERS);
    });
}

#[test]
fn wait_stoppable_returns_stopped_when_stop_is_requested() {
    hang_guard("wait_stoppable_returns_stopped", 30, || {
        let latch = Latch::new(1);
        let source = StopSource::new();
        let waiting = AtomicBool::new(false);
        thread::scope(|s| {
            let waiter = s.spawn(|| {
                waiting.store(true, Ordering::Relaxed);
                latch.wait_stoppable(source.token())
            });
            spin_until(|| waiting.load(Ordering::Relaxed));
            thread::sleep(Duration::from_millis(20));
            assert!(source.request_stop());
            assert_eq!(waiter.join().unwrap(), Err(Stopped));
        });
        // The stopped wait left the counter alone.
        assert!(!latch.try_wait());
        latch.count_down(1);
        assert!(latch.try_wait());
    });
}

#[test]
fn wait_stoppable_returns_ok_when_the_latch_opens() {
    hang_guard("wait_stoppable_returns_ok", 30, || {
        let latch = Latch::new(1);
        let source = StopSource::new();
        thread::scope(|s| {
            let waiter = s.spawn(|| latch.wait_stoppable(source.token()));
            thread::sleep(Duration::from_millis(10));
            latch.count_down(1);
            assert_eq!(waiter.join().unwrap(), Ok(()));
        });
        // Open latch, stopped token: the condition wins.
        source.request_stop();
        assert_eq!(latch.wait_stoppable(source.token()), Ok(()));
        // Closed latch, stopped token: returns at once.
        let closed = Latch::new(1);
        assert_eq!(closed.wait_stoppable(source.token()), Err(Stopped));
        // No source: waits for the latch.
        assert_eq!(latch.wait_stoppable(StopToken::none()), Ok(()));
    });
}

#[test]
fn max_is_the_documented_limit() {
    assert_eq!(Latch::<System>::max(), (1 << 30) - 1);
    let latch = Latch::new(Latch::<System>::max());
    latch.count_down(Latch::<System>::max() - 1);
    assert!(!latch.try_wait());
    latch.count_down(1);
    assert!(latch.try_wait());
    let latch = Latch::new(Latch::<System>::max());
    latch.count_down(Latch::<System>::max());
    assert!(latch.try_wait());
}

#[test]
fn max_count_with_parked_waiters() {
    // The largest counter shares its word with the sleepers bit: opening it with a
    // waiter parked must still wake the waiter.
    hang_guard("max_count_with_parked_waiters", 30, || {
        let latch = Latch::new(Latch::<System>::max());
        thread::scope(|s| {
            let waiter = s.spawn(|| latch.wait());
            thread::sleep(Duration::from_millis(20));
            latch.count_down(Latch::<System>::max() - 1);
            thread::sleep(Duration::from_millis(5));
            assert!(!waiter.is_finished());
            latch.count_down(1);
            waiter.join().unwrap();
        });
    });
}

static STATIC_LATCH: Latch = Latch::new(2);

#[test]
fn latch_in_a_static() {
    hang_guard("latch_in_a_static", 30, || {
        thread::scope(|s| {
            s.spawn(|| STATIC_LATCH.arrive_and_wait(1));
            s.spawn(|| STATIC_LATCH.arrive_and_wait(1));
        });
        assert!(STATIC_LATCH.try_wait());
    });
}

#[test]
fn debug_output_shows_the_count() {
    let latch = Latch::new(7);
    latch.count_down(3);
    let text = format!("{latch:?}");
    assert!(text.contains("Latch"), "{text}");
    assert!(text.contains("count: 4"), "{text}");
}

/// Count-downs that together exceed the counter race each other: the counter ends
/// as the initial count less the successful ones, every failure names a count below
/// its `n`, and the latch opens exactly when the successes add up to its count. A
/// count-down that wraps the counter (it looked before another took the units) must
/// add its `n` back, or the final count is wrong.
#[test]
fn count_downs_beyond_the_counter_are_taken_back() {
    const ROUNDS: usize = 2_000;
    const DEMANDS: [u32; 4] = [2, 2, 2, 1];
    hang_guard("count-downs beyond the counter", 60, || {
        let mut failures = 0;
        for _ in 0..ROUNDS {
            let latch = Latch::<System>::new(3);
            let taken = AtomicU32::new(0);
            let start = std::sync::Barrier::new(DEMANDS.len());
            thread::scope(|s| {
                for n in DEMANDS {
                    let (latch, taken, start) = (&latch, &taken, &start);
                    s.spawn(move || {
                        start.wait();
                        match latch.try_count_down(n) {
                            Ok(()) => {
                                taken.fetch_add(n, Ordering::Relaxed);
                            }
                            Err(error) => match error.kind {
                                UsageErrorKind::CountDownExceedsCount { count, .. } => {
                                    assert!(count < n, "refused {n} from a count of {count}")
                                }
                                kind => panic!("unexpected {kind:?}"),
                            },
                        }
                    });
                }
            });
            let taken = taken.load(Ordering::Relaxed);
            failures += usize::from(taken < DEMANDS.iter().sum::<u32>());
            assert!(taken <= 3, "count-downs took {taken} from a count of 3");
            let left = 3 - taken;
            assert!(
                format!("{latch:?}").contains(&format!("count: {left}")),
                "{latch:?}"
            );
            assert_eq!(latch.try_wait(), left == 0);
        }
        assert_eq!(
            failures, ROUNDS,
            "demands of 7 from 3 always fail somewhere"
        );
    });
}

/// Count-downs on an open latch from several threads at once all fail and never make
/// it look closed (the GPU conformance kernels do the same at grid scale).
#[test]
fn count_downs_on_an_open_latch_fail_and_leave_it_open() {
    const TRIES: usize = 20_000;
    let latch = Latch::<System>::new(1);
    latch.count_down(1);
    hang_guard("count-downs on an open latch", 60, || {
        thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..TRIES {
                        assert!(latch.try_count_down(1).is_err());
                        assert!(latch.try_wait(), "an open latch looked closed");
                    }
                });
            }
        });
    });
}
