//! How long the report measures: iteration counts, repetitions, and the best-of rule.

use std::time::Duration;

/// The iteration counts of one operation, as in `baselines/host_baselines.cpp`.
pub mod iterations {
    /// Barrier phases per measurement (anchor: 200k).
    pub const BARRIER_PHASES: u64 = 200_000;
    /// Semaphore ping-pong round trips (anchor: 200k).
    pub const PING_PONG_ROUND_TRIPS: u64 = 200_000;
    /// Uncontended acquire+release pairs (anchor: 10M).
    pub const ACQUIRE_RELEASE: u64 = 10_000_000;
    /// Fresh latches counted down and waited on (anchor: 100k).
    pub const LATCH_COUNT_DOWN_WAIT: u64 = 100_000;
    /// `stop_requested` polls (anchor: 1M).
    pub const STOP_REQUESTED_POLLS: u64 = 1_000_000;
    /// Stop callbacks registered and dropped (anchor: 100k).
    pub const STOP_CALLBACKS: u64 = 100_000;
    /// Acquire+release pairs per thread on the contended semaphore (the figure:
    /// 20k; no CPU anchor before it).
    pub const CONTENDED_ACQUIRE_RELEASE: u64 = 20_000;
    /// Rendezvous latches per measurement with several threads (each costs about a
    /// barrier phase).
    pub const LATCH_ROUNDS: u64 = 20_000;
    /// Atomic operations or fences per ordering (no anchor on the CPU; enough for a
    /// few milliseconds even for the slowest, a sequentially consistent fence).
    pub const ATOMIC_OPS: u64 = 1_000_000;
}

/// How much to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Repetitions of each measurement; the report keeps the fastest.
    pub repetitions: u32,
    /// Every iteration count is divided by this (1 for a full run).
    pub divisor: u64,
}

impl Plan {
    /// The full run: the anchor's iteration counts, best of 3.
    pub const FULL: Self = Self {
        repetitions: 3,
        divisor: 1,
    };
    /// A smoke run of about a second (CI): a twentieth of the iterations, once. Its
    /// figures carry start-up costs and noise; use them to see that everything runs.
    pub const QUICK: Self = Self {
        repetitions: 1,
        divisor: 20,
    };

    /// `full` iterations scaled down by the plan's divisor (at least one).
    pub fn scale(self, full: u64) -> u64 {
        (full / self.divisor).max(1)
    }
}

/// Nanoseconds per operation of `iterations` operations that took `elapsed`.
pub fn ns_per_op(elapsed: Duration, iterations: u64) -> f64 {
    elapsed.as_secs_f64() * 1e9 / iterations as f64
}
