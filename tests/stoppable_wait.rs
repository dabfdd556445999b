//! Stoppable waits sleep until woken: an idle stoppable waiter does not wake to look at
//! its stop token, and a stop request still ends its wait. (The wake-up latency of a
//! stop is a benchmark: `cargo bench --bench host -- stop_wake`.)

use std::sync::atomic::{AtomicI32, Ordering};
use std::thread;
use std::time::Duration;

use scoped_sync::{Barrier, CountingSemaphore, FairSemaphore, Latch, StopSource, Stopped};

mod common;
use common::{hang_guard, spin_until};

/// The number of times the kernel switched away from thread `tid` of this process
/// because it slept (`voluntary_ctxt_switches`): each wake-up from a sleep and the
/// sleep after it count one.
#[cfg(target_os = "linux")]
fn voluntary_switches(tid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
        .expect("read the thread's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
        .expect("a voluntary_ctxt_switches line")
        .trim()
        .parse()
        .expect("a count")
}

/// The calling thread's id in the kernel: `/proc/thread-self` links to
/// `PID/task/TID`.
#[cfg(target_os = "linux")]
fn current_tid() -> i32 {
    let link = std::fs::read_link("/proc/thread-self").expect("read /proc/thread-self");
    link.file_name()
        .and_then(|tid| tid.to_str())
        .and_then(|tid| tid.parse().ok())
        .expect("a thread id")
}

/// Runs `wait` (a stoppable wait on an object nobody releases) in a thread, counts how
/// often that thread wakes while it idles for `idle`, then requests stop and checks
/// that the wait ends with `Stopped`. Returns the count.
#[cfg(target_os = "linux")]
fn wakes_while_idle(wait: impl FnOnce(&StopSource) -> Result<(), Stopped> + Send) -> u64 {
    let source = StopSource::new();
    let tid = AtomicI32::new(0);
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            tid.store(current_tid(), Ordering::SeqCst);
            wait(&source)
        });
        spin_until(|| tid.load(Ordering::SeqCst) != 0);
        let tid = tid.load(Ordering::SeqCst);
        // Let it spin, yield and settle into its sleep first.
        thread::sleep(Duration::from_millis(50));
        let before = voluntary_switches(tid);
        thread::sleep(Duration::from_millis(500));
        let wakes = voluntary_switches(tid) - before;
        // Shown with --nocapture: the figure the docs quote.
        eprintln!("{wakes} wake-ups in 500 ms of idling");
        assert!(source.request_stop());
        assert_eq!(waiter.join().expect("waiter"), Err(Stopped));
        wakes
    })
}

/// At most this many wake-ups in 500 ms of idling (a signal or the scheduler may
/// cause one or two); the periodic recheck of the stop token that this replaced woke
/// about 240 times in that time.
#[cfg(target_os = "linux")]
const IDLE_WAKES_ALLOWED: u64 = 3;

#[cfg(target_os = "linux")]
#[test]
fn an_idle_stoppable_semaphore_acquire_does_not_wake() {
    hang_guard("idle_semaphore_acquire", 30, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        let wakes = wakes_while_idle(|source| semaphore.acquire_stoppable(source.token()));
        assert!(wakes <= IDLE_WAKES_ALLOWED, "woke {wakes} times while idle");
    });
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_stoppable_fair_semaphore_acquire_does_not_wake() {
    hang_guard("idle_fair_semaphore_acquire", 30, || {
        let semaphore: FairSemaphore = FairSemaphore::new(0);
        let wakes = wakes_while_idle(|source| semaphore.acquire_stoppable(source.token()));
        assert!(wakes <= IDLE_WAKES_ALLOWED, "woke {wakes} times while idle");
    });
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_stoppable_latch_wait_does_not_wake() {
    hang_guard("idle_latch_wait", 30, || {
        let latch = Latch::new(1);
        let wakes = wakes_while_idle(|source| latch.wait_stoppable(source.token()));
        assert!(wakes <= IDLE_WAKES_ALLOWED, "woke {wakes} times while idle");
    });
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_stoppable_barrier_wait_does_not_wake() {
    hang_guard("idle_barrier_wait", 30, || {
        let barrier = Barrier::new(2);
        let wakes = wakes_while_idle(|source| barrier.arrive_and_wait_stoppable(source.token()));
        assert!(wakes <= IDLE_WAKES_ALLOWED, "woke {wakes} times while idle");
    });
}

/// Many stops, each racing a waiter that is about to sleep: every wait ends (a lost
/// wake-up would leave one asleep for ever, and the hang guard would fail the test).
#[test]
fn a_stop_racing_the_sleep_always_ends_the_wait() {
    hang_guard("stop_racing_the_sleep", 120, || {
        for round in 0..2000u32 {
            let source = StopSource::new();
            let semaphore: CountingSemaphore = CountingSemaphore::new(0);
            thread::scope(|s| {
                let waiter = s.spawn(|| semaphore.acquire_stoppable(source.token()));
                // Vary where the stop lands: before, during or after the waiter's sleep.
                for _ in 0..round % 64 {
                    std::hint::spin_loop();
                }
                if round % 3 == 0 {
                    thread::yield_now();
                }
                source.request_stop();
                assert_eq!(waiter.join().expect("waiter"), Err(Stopped));
            });
        }
    });
}
