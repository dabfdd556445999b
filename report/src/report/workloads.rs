//! The timed workloads, one function per operation, each generic over the primitive so
//! that ours and its peer run exactly the same code.
//!
//! Their shape mirrors `baselines/host_baselines.cpp` (libstdc++'s C++20
//! primitives), so that the numbers can be put side by side: the same iteration
//! counts (chosen by the caller), barrier and ping-pong timed from the first thread
//! spawn to the last join, a fresh latch per iteration, a stack-pinned stop callback.
//! Each function returns the wall time of `n` iterations; the caller divides.
//!
//! This file is shared: the report binary declares it as `report::workloads`, and
//! `benches/host.rs` includes it with `#[path]` (criterion's `iter_custom` takes
//! exactly "the time of `n` iterations").

use std::hint::black_box;
use std::pin::pin;
use std::thread;
use std::time::{Duration, Instant};

use scoped_sync::{FairSemaphore, StopCallback, StopSource};

use super::peers::{MutexCondvarLatch, MutexCondvarSemaphore};

/// A barrier for a fixed set of threads, reused phase after phase.
pub trait PhaseBarrier: Sync {
    /// A barrier for `threads` threads.
    fn for_threads(threads: usize) -> Self;
    /// Arrives and waits for the other threads of this phase.
    fn arrive_and_wait(&self);
}

impl PhaseBarrier for scoped_sync::Barrier {
    fn for_threads(threads: usize) -> Self {
        Self::new(u32::try_from(threads).expect("thread count fits in u32"))
    }
    fn arrive_and_wait(&self) {
        scoped_sync::Barrier::arrive_and_wait(self);
    }
}

impl PhaseBarrier for std::sync::Barrier {
    fn for_threads(threads: usize) -> Self {
        Self::new(threads)
    }
    fn arrive_and_wait(&self) {
        // The leader flag is C++'s "completion" in disguise; nobody needs it here.
        let _leader = self.wait();
    }
}

/// A counting semaphore, acquired and released one unit at a time.
pub trait Semaphore: Sync {
    /// A semaphore holding `units` units.
    fn with_units(units: u32) -> Self;
    /// Takes one unit, waiting while there is none.
    fn acquire(&self);
    /// Returns one unit.
    fn release(&self);
}

impl Semaphore for scoped_sync::CountingSemaphore {
    fn with_units(units: u32) -> Self {
        Self::new(units)
    }
    fn acquire(&self) {
        scoped_sync::CountingSemaphore::acquire(self);
    }
    fn release(&self) {
        scoped_sync::CountingSemaphore::release(self, 1);
    }
}

impl Semaphore for FairSemaphore {
    fn with_units(units: u32) -> Self {
        Self::new(units)
    }
    fn acquire(&self) {
        FairSemaphore::acquire(self);
    }
    fn release(&self) {
        FairSemaphore::release(self, 1);
    }
}

impl Semaphore for MutexCondvarSemaphore {
    fn with_units(units: u32) -> Self {
        Self::new(units)
    }
    fn acquire(&self) {
        MutexCondvarSemaphore::acquire(self);
    }
    fn release(&self) {
        MutexCondvarSemaphore::release(self, 1);
    }
}

/// A single-use latch.
pub trait CountDownLatch {
    /// A latch that opens after `count` count-downs.
    fn with_count(count: u32) -> Self;
    /// Counts down by one.
    fn count_down(&self);
    /// Waits until the latch is open.
    fn wait(&self);
}

impl CountDownLatch for scoped_sync::Latch {
    fn with_count(count: u32) -> Self {
        Self::new(count)
    }
    fn count_down(&self) {
        scoped_sync::Latch::count_down(self, 1);
    }
    fn wait(&self) {
        scoped_sync::Latch::wait(self);
    }
}

impl CountDownLatch for MutexCondvarLatch {
    fn with_count(count: u32) -> Self {
        Self::new(count)
    }
    fn count_down(&self) {
        MutexCondvarLatch::count_down(self, 1);
    }
    fn wait(&self) {
        MutexCondvarLatch::wait(self);
    }
}

/// `threads` threads each pass `phases` phases of one barrier. Timed from before the
/// first spawn to after the last join, as the anchor does, so thread start-up is in
/// the figure (it is small next to 200k phases).
pub fn barrier_phases<B: PhaseBarrier>(threads: usize, phases: u64) -> Duration {
    let barrier = B::for_threads(threads);
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..phases {
                    black_box(&barrier).arrive_and_wait();
                }
            });
        }
    });
    start.elapsed()
}

/// Two threads hand a token back and forth through two semaphores, `round_trips`
/// times: the cost of one wake-up in each direction.
pub fn ping_pong<S: Semaphore>(round_trips: u64) -> Duration {
    let (ping, pong) = (S::with_units(0), S::with_units(0));
    let start = Instant::now();
    thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..round_trips {
                ping.acquire();
                pong.release();
            }
        });
        for _ in 0..round_trips {
            ping.release();
            pong.acquire();
        }
    });
    start.elapsed()
}

/// `threads / 2` independent pairs ping-pong at once, `round_trips` each: the wake-up
/// path while other threads are busy waking each other (the scheduler and the futex
/// hash are shared). The time of the whole run; per pair's round trip after dividing by
/// `round_trips`.
///
/// # Panics
///
/// If `threads` is odd or zero.
pub fn ping_pong_pairs<S: Semaphore>(threads: usize, round_trips: u64) -> Duration {
    assert!(
        threads >= 2 && threads % 2 == 0,
        "ping-pong needs pairs of threads"
    );
    let pairs: Vec<(S, S)> = (0..threads / 2)
        .map(|_| (S::with_units(0), S::with_units(0)))
        .collect();
    let start = Instant::now();
    thread::scope(|s| {
        for (ping, pong) in &pairs {
            s.spawn(move || {
                for _ in 0..round_trips {
                    ping.acquire();
                    pong.release();
                }
            });
            s.spawn(move || {
                for _ in 0..round_trips {
                    ping.release();
                    pong.acquire();
                }
            });
        }
    });
    start.elapsed()
}

/// Every one of `threads` threads acquires and releases one semaphore holding
/// [`CONTENDED_UNITS`] units, `pairs` times: the contended fast and slow paths. The time
/// of the whole run; per thread's acquire+release after dividing by `pairs`.
pub fn acquire_release_contended<S: Semaphore>(threads: usize, pairs: u64) -> Duration {
    let semaphore = S::with_units(CONTENDED_UNITS);
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..pairs {
                    black_box(&semaphore).acquire();
                    semaphore.release();
                }
            });
        }
    });
    start.elapsed()
}

/// Units of the contended semaphore (as the measurement in the issue that asked for the
/// scaling table).
pub const CONTENDED_UNITS: u32 = 4;

/// `rounds` fresh latches expecting `threads` count-downs; every thread counts each down
/// and waits on it, in turn: a single-use rendezvous per round. With one thread this is
/// [`count_down_wait`] (construction plus the fast paths).
pub fn latch_rounds<L: CountDownLatch + Sync>(threads: usize, rounds: u64) -> Duration {
    if threads == 1 {
        return count_down_wait::<L>(rounds);
    }
    let count = u32::try_from(threads).expect("thread count fits in u32");
    let latches: Vec<L> = (0..rounds).map(|_| L::with_count(count)).collect();
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for latch in &latches {
                    latch.count_down();
                    latch.wait();
                }
            });
        }
    });
    start.elapsed()
}

/// [`latch_rounds`] with `crossbeam_utils::sync::WaitGroup` in the latch's place: its
/// `wait` is a count-down and a wait in one, and each thread holds a clone per round
/// (made before the clock starts, as the latches are).
pub fn wait_group_rounds(threads: usize, rounds: u64) -> Duration {
    use crossbeam_utils::sync::WaitGroup;

    if threads == 1 {
        let start = Instant::now();
        for _ in 0..rounds {
            black_box(WaitGroup::new()).wait();
        }
        return start.elapsed();
    }
    let groups: Vec<WaitGroup> = (0..rounds).map(|_| WaitGroup::new()).collect();
    let mut members: Vec<Vec<WaitGroup>> = (0..threads)
        .map(|_| groups.iter().map(WaitGroup::clone).collect())
        .collect();
    drop(groups);
    let start = Instant::now();
    thread::scope(|s| {
        for rounds in members.drain(..) {
            s.spawn(move || {
                for member in rounds {
                    member.wait();
                }
            });
        }
    });
    start.elapsed()
}

/// One thread acquires and releases a semaphore that always has a unit: the fast path.
pub fn acquire_release_uncontended<S: Semaphore>(iterations: u64) -> Duration {
    let semaphore = S::with_units(1);
    let semaphore = black_box(&semaphore);
    let start = Instant::now();
    for _ in 0..iterations {
        semaphore.acquire();
        semaphore.release();
    }
    start.elapsed()
}

/// A fresh latch of one, counted down and waited on, per iteration: construction plus
/// the fast paths (the anchor builds a `std::latch` per iteration too).
pub fn count_down_wait<L: CountDownLatch>(iterations: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iterations {
        let latch = black_box(L::with_count(1));
        latch.count_down();
        latch.wait();
    }
    start.elapsed()
}

/// Polls `stop_requested` on a token whose source was never stopped. The sum keeps
/// the loads alive, as the anchor's does.
pub fn stop_requested(polls: u64) -> Duration {
    let source = StopSource::new();
    // Hide the source, not the token: a token passed through `black_box` lives in
    // memory whose address escaped, so every poll would also reload the token itself.
    let token = black_box(&source).token();
    let mut stopped = 0_u64;
    let start = Instant::now();
    for _ in 0..polls {
        stopped += u64::from(token.stop_requested());
    }
    let elapsed = start.elapsed();
    black_box(stopped);
    elapsed
}

/// Registers and deregisters a no-op callback, pinned on the stack like the anchor's
/// `std::stop_callback` local: no allocation, just the source's lock and list.
pub fn stop_callback_register_drop(iterations: u64) -> Duration {
    let source = StopSource::new();
    let token = black_box(source.token());
    let start = Instant::now();
    for _ in 0..iterations {
        let callback = pin!(StopCallback::new(token, || {}));
        callback.as_ref().register();
        // Dropped here: deregistration is half of the measured cost.
    }
    start.elapsed()
}
