//! What every loom model of the host flavour shares: how the models run, plain data
//! whose unordered accesses loom reports, and the record of outcomes reached.
//!
//! Under `--cfg loom`, sync-shared's atomics are loom's and the `Host` backend parks
//! on a loom Mutex+Condvar and never spins, so loom explores the interleavings (up to
//! the preemption bound) of the algorithms, checks each load against its model of the
//! C11 memory model, reports unordered accesses to plain data through
//! `loom::cell::UnsafeCell`, and reports a lost wake-up as a deadlock.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p sync-host --test 'loom_*' --release
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
// Each test binary uses some of these.
#![allow(dead_code)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::Ordering;
use loom::thread::{self, ThreadId};

/// Plain (non-atomic) data: loom reports any pair of accesses to it that are not
/// ordered by happens-before, so reading it after a wait proves the wait synchronized.
pub struct Data(UnsafeCell<u32>);

// SAFETY: the models only access the cell where a primitive under test orders the
// accesses; loom checks that it does and fails the model otherwise.
unsafe impl Sync for Data {}

impl Data {
    pub fn new(value: u32) -> Self {
        Self(UnsafeCell::new(value))
    }

    pub fn get(&self) -> u32 {
        // SAFETY: loom checks that no write races with this read.
        self.0.with(|value| unsafe { *value })
    }

    pub fn set(&self, new: u32) {
        // SAFETY: loom checks that no access races with this write.
        self.0.with_mut(|value| unsafe { *value = new });
    }

    /// A non-atomic read-modify-write: overlapping ones are reported as races.
    pub fn bump(&self) {
        self.set(self.get() + 1);
    }
}

/// The outcomes a model reached across its iterations, as bits.
pub struct Seen(std::sync::atomic::AtomicU32);

impl Seen {
    pub const fn new() -> Self {
        Self(std::sync::atomic::AtomicU32::new(0))
    }

    pub fn mark(&self, outcome: u32) {
        self.0.fetch_or(outcome, Ordering::Relaxed);
    }

    /// Asserts that every outcome in `outcomes` was reached by some iteration.
    #[track_caller]
    pub fn assert_all(&self, outcomes: u32) {
        let seen = self.0.load(Ordering::Relaxed);
        assert_eq!(
            seen & outcomes,
            outcomes,
            "loom did not explore every outcome (seen {seen:#b}, wanted {outcomes:#b})"
        );
    }
}

/// Whether the running thread is `thread`.
pub fn on(thread: ThreadId) -> bool {
    thread::current().id() == thread
}
