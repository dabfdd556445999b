//! Regression tests for semaphore bugs found in other implementations.
//!
//! - libstdc++ PR 104928, "std::counting_semaphore on Linux can sleep forever": a
//!   waiter could miss the release meant for it and sleep for ever. Upstream tests
//!   `30_threads/semaphore/104928.cc` (10 acquiring and 10 releasing threads, every
//!   acquire variant) and `104928-2.cc` (Morris's starvation-free mutex built from
//!   semaphores). Full sizes (20 threads × 10⁶ iterations) are `#[ignore]`d; scaled
//!   versions run in CI.
//! - libstdc++ PR 100806, "deadlock in std::counting_semaphore": more threads than
//!   units, each acquiring, working and releasing one unit; a release woke nobody while
//!   others slept, and the program hung. Upstream test `30_threads/semaphore/100806.cc`.
//!   Also the variant with one releasing thread (`release(n)`) and several acquirers that
//!   use timed acquires, where a timed-out waiter must not swallow a release.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use scoped_sync::{Barrier, BinarySemaphore, CountingSemaphore, FairSemaphore, SEMAPHORE_MAX};

mod common;
use common::{hang_guard, Unsync};

/// The acquire variants of the upstream test.
#[derive(Clone, Copy, Debug)]
enum Acquire {
    /// `acquire()`.
    Blocking,
    /// `while !try_acquire() {}`.
    Try,
    /// `while !try_acquire_for(1h) {}`.
    TryFor,
    /// `while !try_acquire_until(now + 1h) {}`.
    TryUntil,
}

const VARIANTS: [Acquire; 4] = [
    Acquire::Blocking,
    Acquire::Try,
    Acquire::TryFor,
    Acquire::TryUntil,
];
const HOUR: Duration = Duration::from_secs(3600);

/// The operations the tests need, for both semaphore kinds.
trait Semaphore: Sync {
    fn acquire(&self);
    fn try_acquire(&self) -> bool;
    fn try_acquire_for(&self, timeout: Duration) -> bool;
    fn try_acquire_until(&self, deadline: Instant) -> bool;
    fn release(&self, n: u32);

    fn acquire_with(&self, how: Acquire) {
        match how {
            Acquire::Blocking => self.acquire(),
            Acquire::Try => {
                while !self.try_acquire() {
                    // Upstream spins bare; yielding keeps a 2-core CI machine moving.
                    thread::yield_now();
                }
            }
            Acquire::TryFor => while !self.try_acquire_for(HOUR) {},
            Acquire::TryUntil => while !self.try_acquire_until(Instant::now() + HOUR) {},
        }
    }
}

impl<const MAX: u32> Semaphore for CountingSemaphore<MAX> {
    fn acquire(&self) {
        CountingSemaphore::acquire(self)
    }
    fn try_acquire(&self) -> bool {
        CountingSemaphore::try_acquire(self)
    }
    fn try_acquire_for(&self, timeout: Duration) -> bool {
        CountingSemaphore::try_acquire_for(self, timeout)
    }
    fn try_acquire_until(&self, deadline: Instant) -> bool {
        CountingSemaphore::try_acquire_until(self, deadline)
    }
    fn release(&self, n: u32) {
        CountingSemaphore::release(self, n)
    }
}

impl<const MAX: u32> Semaphore for FairSemaphore<MAX> {
    fn acquire(&self) {
        FairSemaphore::acquire(self)
    }
    fn try_acquire(&self) -> bool {
        FairSemaphore::try_acquire(self)
    }
    fn try_acquire_for(&self, timeout: Duration) -> bool {
        FairSemaphore::try_acquire_for(self, timeout)
    }
    fn try_acquire_until(&self, deadline: Instant) -> bool {
        FairSemaphore::try_acquire_until(self, deadline)
    }
    fn release(&self, n: u32) {
        FairSemaphore::release(self, n)
    }
}

// ------------------------------------------------------------- PR 104928 (104928.cc)

/// Upstream `test_acquire`: `threads / 2` threads acquire `loops` times each while as
/// many release `loops` times each; everything must finish and balance exactly.
fn acquirers_and_releasers(semaphore: &impl Semaphore, how: Acquire, threads: u32, loops: u32) {
    // All threads start together, so they really contend.
    let start = Barrier::new(threads / 2 * 2);
    thread::scope(|s| {
        for _ in 0..threads / 2 {
            s.spawn(|| {
                start.arrive_and_wait();
                for _ in 0..loops {
                    semaphore.acquire_with(how);
                }
            });
            s.spawn(|| {
                start.arrive_and_wait();
                for i in 0..loops {
                    if i % 64 == 0 {
                        // Let acquirers run dry and park now and then.
                        thread::yield_now();
                    }
                    semaphore.release(1);
                }
            });
        }
    });
    assert!(
        !semaphore.try_acquire(),
        "{how:?}: units left over after equal releases and acquires"
    );
}

fn pr104928_all_variants<const MAX: u32>(threads: u32, loops: u32) {
    for how in VARIANTS {
        let semaphore: CountingSemaphore<MAX> = CountingSemaphore::new(0);
        acquirers_and_releasers(&semaphore, how, threads, loops);
    }
    for how in VARIANTS {
        let semaphore: FairSemaphore<MAX> = FairSemaphore::new(0);
        acquirers_and_releasers(&semaphore, how, threads, loops);
    }
}

#[test]
fn pr104928_acquirers_and_releasers_scaled() {
    // Upstream's simulator size is 6 threads × 100 loops; a little more here.
    const THREADS: u32 = 6;
    const LOOPS: u32 = 100_000;
    hang_guard("pr104928_acquirers_and_releasers_scaled", 100, || {
        // MAX just large enough for every release to land before any acquire.
        pr104928_all_variants::<{ THREADS / 2 * LOOPS }>(THREADS, LOOPS);
        pr104928_all_variants::<SEMAPHORE_MAX>(THREADS, LOOPS);
    });
}

#[test]
#[ignore = "full upstream size: 20 threads × 10⁶ loops per variant (minutes)"]
fn pr104928_acquirers_and_releasers_full() {
    const THREADS: u32 = 20;
    const LOOPS: u32 = 1_000_000;
    hang_guard("pr104928_acquirers_and_releasers_full", 3600, || {
        pr104928_all_variants::<{ THREADS / 2 * LOOPS }>(THREADS, LOOPS);
        pr104928_all_variants::<SEMAPHORE_MAX>(THREADS, LOOPS);
    });
}

// ------------------------------------ PR 104928: a binary semaphore as a hammered lock

/// `threads` threads take a binary semaphore as a lock `iterations` times each, thread
/// `i` with acquire variant `i % 4`, and bump a non-atomic counter inside.
fn hammered_lock(lock: &impl Semaphore, threads: u64, iterations: u64) {
    let counter = Unsync::new(0u64);
    let inside = AtomicBool::new(false);
    let start = Barrier::new(threads as u32);
    thread::scope(|s| {
        for id in 0..threads {
            let (counter, inside, start) = (&counter, &inside, &start);
            s.spawn(move || {
                let how = VARIANTS[id as usize % VARIANTS.len()];
                start.arrive_and_wait();
                for i in 0..iterations {
                    lock.acquire_with(how);
                    assert!(!inside.swap(true, Ordering::Relaxed), "two holders");
                    counter.set(counter.get() + 1);
                    if i % 32 == 0 {
                        // Yield while holding the lock: the others pile up and park.
                        thread::yield_now();
                    }
                    inside.store(false, Ordering::Relaxed);
                    lock.release(1);
                }
            });
        }
    });
    assert_eq!(counter.get(), threads * iterations);
    assert!(lock.try_acquire(), "the lock is free at the end");
    assert!(!lock.try_acquire(), "and holds one unit only");
}

#[test]
fn pr104928_hammered_binary_semaphore_scaled() {
    hang_guard("pr104928_hammered_binary_semaphore_scaled", 100, || {
        let lock: BinarySemaphore = BinarySemaphore::new(1);
        hammered_lock(&lock, 20, 20_000);
        let fair: FairSemaphore<1> = FairSemaphore::new(1);
        hammered_lock(&fair, 20, 4_000);
    });
}

#[test]
#[ignore = "full size: 20 threads × 10⁶ lock round trips (minutes)"]
fn pr104928_hammered_binary_semaphore_full() {
    hang_guard("pr104928_hammered_binary_semaphore_full", 3600, || {
        let lock: BinarySemaphore = BinarySemaphore::new(1);
        hammered_lock(&lock, 20, 1_000_000);
        let fair: FairSemaphore<1> = FairSemaphore::new(1);
        hammered_lock(&fair, 20, 1_000_000);
    });
}

// ------------------------------------------------------------ PR 104928 (104928-2.cc)

/// Morris's starvation-free mutex from two semaphores, as in upstream 104928-2.cc; each
/// thread passes the critical region `rounds` times.
struct Morris<S> {
    sem1: S,
    sem2: S,
    room1: AtomicU32,
    room2: Unsync<u32>,
    counter: Unsync<u64>,
}

impl<S: Semaphore> Morris<S> {
    fn run(&self, how: Acquire, rounds: u64) {
        for round in 0..rounds {
            self.room1.fetch_add(1, Ordering::SeqCst);

            self.sem1.acquire_with(how);
            self.room2.set(self.room2.get() + 1);
            if self.room1.fetch_sub(1, Ordering::SeqCst) == 1 {
                self.sem2.release(1);
            } else {
                self.sem1.release(1);
            }

            self.sem2.acquire_with(how);
            self.room2.set(self.room2.get() - 1);

            // Critical region.
            self.counter.set(self.counter.get() + 1);
            if round % 64 == 0 {
                thread::yield_now();
            }

            if self.room2.get() == 0 {
                self.sem1.release(1);
            } else {
                self.sem2.release(1);
            }
        }
    }
}

fn morris_all_variants<const MAX: u32>(threads: u64, rounds: u64) {
    for how in VARIANTS {
        let morris = Morris {
            sem1: CountingSemaphore::<MAX>::new(1),
            sem2: CountingSemaphore::<MAX>::new(0),
            room1: AtomicU32::new(0),
            room2: Unsync::new(0),
            counter: Unsync::new(0),
        };
        let start = Barrier::new(threads as u32);
        thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    start.arrive_and_wait();
                    morris.run(how, rounds);
                });
            }
        });
        assert_eq!(morris.counter.get(), threads * rounds, "{how:?}");
        assert_eq!(morris.room2.get(), 0, "{how:?}");
    }
}

#[test]
fn pr104928_morris_mutex_scaled() {
    hang_guard("pr104928_morris_mutex_scaled", 100, || {
        morris_all_variants::<1>(2, 50_000); // binary semaphore
        morris_all_variants::<1000>(2, 50_000);
        morris_all_variants::<1>(4, 10_000);
    });
}

#[test]
#[ignore = "full size: about the work of upstream's 2 s per variant (minutes)"]
fn pr104928_morris_mutex_full() {
    hang_guard("pr104928_morris_mutex_full", 3600, || {
        morris_all_variants::<1>(2, 1_000_000);
        morris_all_variants::<1000>(2, 1_000_000);
        morris_all_variants::<1>(20, 100_000);
    });
}

// ----------------------------------------------------------------------- PR 100806

#[test]
fn pr100806_more_threads_than_units() {
    // Upstream: 10 threads share a semaphore of a few units; each acquires, works for a
    // while, releases one. The last releases must still wake the last sleepers.
    const THREADS: u32 = 10;
    const UNITS: u32 = 4;
    const ROUNDS: u32 = 5;
    hang_guard("pr100806_more_threads_than_units", 60, || {
        for _ in 0..ROUNDS {
            let semaphore: CountingSemaphore = CountingSemaphore::new(UNITS);
            let finished = AtomicU32::new(0);
            let inside = AtomicU32::new(0);
            thread::scope(|s| {
                for _ in 0..THREADS {
                    s.spawn(|| {
                        semaphore.acquire();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= UNITS, "{now} threads inside {UNITS} units");
                        thread::sleep(Duration::from_millis(10));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        semaphore.release(1);
                        finished.fetch_add(1, Ordering::SeqCst);
                    });
                }
            });
            assert_eq!(finished.load(Ordering::SeqCst), THREADS);
            let mut left = 0;
            while semaphore.try_acquire() {
                left += 1;
            }
            assert_eq!(left, UNITS, "units were lost or invented");
        }
    });
}

/// One thread releases `total` units in batches of 1..=5 (so both the wake-one and the
/// wake-all paths run); several threads take them, some with short timed acquires that
/// time out again and again, some blocking. Every unit must be taken exactly once, and
/// the blocking takers must not sleep through a release a timed-out taker woke up for.
fn one_releaser_many_timed_acquirers(semaphore: &impl Semaphore, blocking: u32, timed: u32) {
    const PER_THREAD: u32 = 3_000;
    let total = (blocking + timed) * PER_THREAD;
    let taken = AtomicU64::new(0);
    let timeouts = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..blocking {
            s.spawn(|| {
                for _ in 0..PER_THREAD {
                    semaphore.acquire();
                    taken.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for id in 0..timed {
            let (taken, timeouts) = (&taken, &timeouts);
            s.spawn(move || {
                // Timeouts from 1 ns to ~100 µs.
                let timeout = Duration::from_nanos(10u64.pow(id % 6));
                for _ in 0..PER_THREAD {
                    while !semaphore.try_acquire_for(timeout) {
                        timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                    taken.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let mut left = total;
        let mut batch = 0;
        while left > 0 {
            let n = (batch % 5 + 1).min(left);
            semaphore.release(n);
            left -= n;
            batch += 1;
            if batch % 16 == 0 {
                // Let takers drain and park, so timeouts and wake-ups interleave.
                thread::sleep(Duration::from_micros(50));
            }
        }
    });
    assert_eq!(taken.load(Ordering::Relaxed), u64::from(total));
    assert!(
        !semaphore.try_acquire(),
        "a unit was released twice or invented"
    );
}

#[test]
fn pr100806_timed_acquirers_do_not_lose_releases() {
    hang_guard("pr100806_timed_acquirers_do_not_lose_releases", 100, || {
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        one_releaser_many_timed_acquirers(&semaphore, 0, 4);
        let semaphore: CountingSemaphore = CountingSemaphore::new(0);
        one_releaser_many_timed_acquirers(&semaphore, 2, 3);
        let semaphore: CountingSemaphore<5> = CountingSemaphore::new(0);
        // With MAX = 5 the releaser may find the semaphore full: wait for room.
        one_releaser_bounded(&semaphore);
    });
}

#[test]
fn pr100806_timed_acquirers_do_not_lose_releases_fair() {
    hang_guard(
        "pr100806_timed_acquirers_do_not_lose_releases_fair",
        100,
        || {
            let semaphore: FairSemaphore = FairSemaphore::new(0);
            one_releaser_many_timed_acquirers(&semaphore, 0, 4);
            let semaphore: FairSemaphore = FairSemaphore::new(0);
            one_releaser_many_timed_acquirers(&semaphore, 2, 3);
        },
    );
}

/// As [`one_releaser_many_timed_acquirers`] with a small `MAX`: releases that would
/// overflow are retried with `try_release` until takers make room.
fn one_releaser_bounded(semaphore: &CountingSemaphore<5>) {
    const TAKERS: u32 = 3;
    const PER_THREAD: u32 = 3_000;
    let total = TAKERS * PER_THREAD;
    thread::scope(|s| {
        for id in 0..TAKERS {
            s.spawn(move || {
                for _ in 0..PER_THREAD {
                    if id == 0 {
                        semaphore.acquire();
                    } else {
                        while !semaphore.try_acquire_for(Duration::from_micros(u64::from(id))) {}
                    }
                }
            });
        }
        let mut left = total;
        let mut batch = 0;
        while left > 0 {
            let n = (batch % 5 + 1).min(left);
            if semaphore.try_release(n).is_ok() {
                left -= n;
                batch += 1;
            } else {
                thread::yield_now();
            }
        }
    });
    assert!(!semaphore.try_acquire());
}
