//! Conformance tests for `scoped_sync::Latch` on CPU threads.
//!
//! Modelled on libc++'s `thread.latch` tests (count_down, try_wait, arrive_and_wait,
//! max) plus timed and stoppable waits.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use scoped_sync::{Latch, StopSource, StopToken, Stopped, System};

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

/// Count-downs beyond the counter race the count-downs that open the latch: every one
/// beyond fails and is taken back, every rightful one succeeds, and a waiter released
/// by the latch sees the writes of all the rightful count-downs. With the take-back
/// removed a beyond count-down leaves the counter wrapped and the waiter hangs; with
/// the wait for a wrapped counter removed a rightful one fails.
#[test]
fn count_downs_beyond_the_counter_race_the_rightful_ones() {
    const ROUNDS: usize = 300;
    const COUNTERS: usize = 3;
    hang_guard("count-downs beyond the counter", 60, || {
        let mut beyond_count_downs = 0;
        for _ in 0..ROUNDS {
            let latch = Latch::<System>::new(COUNTERS as u32);
            let written: [AtomicU32; COUNTERS] = Default::default();
            thread::scope(|s| {
                let beyond = s.spawn(|| {
                    let mut tries = 0;
                    while !latch.try_wait() || tries == 0 {
                        let refused = latch.try_count_down(COUNTERS as u32 + 1).is_err();
                        assert!(refused, "a count-down beyond the counter succeeded");
                        tries += 1;
                    }
                    tries
                });
                for slot in &written {
                    let latch = &latch;
                    s.spawn(move || {
                        slot.store(1, Ordering::Relaxed);
                        latch.count_down(1);
                    });
                }
                latch.wait();
                for slot in &written {
                    assert_eq!(slot.load(Ordering::Relaxed), 1, "released before a write");
                }
                beyond_count_downs += beyond.join().unwrap();
            });
            assert!(latch.try_wait());
            assert!(
                latch.try_count_down(1).is_err(),
                "an open latch takes nothing"
            );
        }
        assert!(beyond_count_downs >= ROUNDS);
    });
}
