//! Parking without futexes: a fixed table of Mutex+Condvar buckets keyed by the word's
//! address (the idea of parking_lot's parking lot, much simplified). Used on targets
//! other than Linux, and under `--cfg loom`, where loom's Mutex and Condvar let it
//! explore every interleaving of a park with the wake-ups around it.

#[cfg(loom)]
use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use sync_shared::{Ordering, Word};

/// One bucket: waiters on any word hashing here share its lock and condition variable.
struct Bucket {
    lock: Mutex<()>,
    wakeups: Condvar,
}

#[cfg(not(loom))]
const BUCKETS: usize = 64;

#[cfg(not(loom))]
fn bucket(word: &Word) -> &'static Bucket {
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Bucket = Bucket {
        lock: Mutex::new(()),
        wakeups: Condvar::new(),
    };
    static TABLE: [Bucket; BUCKETS] = [EMPTY; BUCKETS];
    let address = std::ptr::from_ref(word) as usize;
    &TABLE[(address >> 2) % BUCKETS]
}

#[cfg(loom)]
fn bucket(_word: &Word) -> &'static Bucket {
    loom::lazy_static! {
        static ref TABLE: Bucket = Bucket { lock: Mutex::new(()), wakeups: Condvar::new() };
    }
    &TABLE
}

/// Sleeps while `*word == expected`, at most `timeout`.
pub(crate) fn wait(word: &Word, expected: u32, timeout: Option<Duration>) {
    let bucket = bucket(word);
    let guard = bucket
        .lock
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    // Checking under the bucket lock makes the check and the sleep atomic with respect
    // to `wake`, which takes the same lock after the word changed.
    if word.load(Ordering::SeqCst) != expected {
        return;
    }
    sleep(bucket, guard, timeout);
}

/// Sleeps while `*word == expected` and `*other == other_expected`, at most `timeout`;
/// returns `true` (a bucket can always check two words). Both are compared under the
/// bucket lock of `word`, which a `wake` of `word` takes after the stop request changed
/// `other`: the check and the sleep are atomic with respect to that wake-up.
pub(crate) fn wait_either(
    word: &Word,
    expected: u32,
    other: &Word,
    other_expected: u32,
    timeout: Option<Duration>,
) -> bool {
    let bucket = bucket(word);
    let guard = bucket
        .lock
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    if word.load(Ordering::SeqCst) != expected || other.load(Ordering::SeqCst) != other_expected {
        return true;
    }
    sleep(bucket, guard, timeout);
    true
}

/// Waits on `bucket`'s condition variable, releasing `guard` while asleep.
fn sleep(bucket: &Bucket, guard: MutexGuard<'_, ()>, timeout: Option<Duration>) {
    #[cfg(not(loom))]
    match timeout {
        Some(timeout) => drop(bucket.wakeups.wait_timeout(guard, timeout)),
        None => drop(bucket.wakeups.wait(guard)),
    }
    #[cfg(loom)]
    {
        // loom cannot model time: a timed park returns at once (a spurious wake-up).
        if timeout.is_none() {
            drop(bucket.wakeups.wait(guard));
        }
    }
}

/// Wakes the threads parked on `word` (all of them: buckets are shared, and a waiter
/// whose word did not change simply parks again).
pub(crate) fn wake(word: &Word, _count: i32) {
    let bucket = bucket(word);
    drop(
        bucket
            .lock
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()),
    );
    bucket.wakeups.notify_all();
}
