//! The peers our primitives are measured against: what a Rust program uses today
//! without this crate. `std::sync::Barrier` is used as it is; std has no counting
//! semaphore and no latch, so here are the textbook Mutex+Condvar ones.
//!
//! This file is shared: the report binary declares it as `report::peers`, and
//! `benches/host.rs` includes it with `#[path]`, so both measure the same peers.

use std::sync::{Condvar, Mutex, PoisonError};

/// A counting semaphore made of a `Mutex<u32>` and a `Condvar`: the usual stand-in for
/// C++20 `std::counting_semaphore` in Rust code that has no semaphore crate.
#[derive(Debug, Default)]
pub struct MutexCondvarSemaphore {
    count: Mutex<u32>,
    available: Condvar,
}

impl MutexCondvarSemaphore {
    /// A semaphore holding `initial` units.
    pub fn new(initial: u32) -> Self {
        Self {
            count: Mutex::new(initial),
            available: Condvar::new(),
        }
    }

    /// Takes one unit, sleeping while there is none.
    pub fn acquire(&self) {
        // A panic while holding this lock cannot leave the counter inconsistent (it is
        // one integer), so a poisoned lock is used as it is.
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        while *count == 0 {
            count = self
                .available
                .wait(count)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *count -= 1;
    }

    /// Adds `n` units and wakes as many sleepers as could now succeed.
    pub fn release(&self, n: u32) {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        *count += n;
        drop(count);
        // Notify after unlocking, so the woken thread does not block on the mutex again.
        if n == 1 {
            self.available.notify_one();
        } else {
            self.available.notify_all();
        }
    }
}

/// A single-use latch made of a `Mutex<u32>` and a `Condvar`: the usual stand-in for
/// C++20 `std::latch`.
#[derive(Debug, Default)]
pub struct MutexCondvarLatch {
    count: Mutex<u32>,
    released: Condvar,
}

impl MutexCondvarLatch {
    /// A latch that opens after `expected` count-downs.
    pub fn new(expected: u32) -> Self {
        Self {
            count: Mutex::new(expected),
            released: Condvar::new(),
        }
    }

    /// Decrements the counter by `n`; opens the latch when it reaches zero.
    ///
    /// # Panics
    ///
    /// If `n` exceeds the counter (undefined in C++; a bug either way).
    pub fn count_down(&self, n: u32) {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        *count = count
            .checked_sub(n)
            .expect("MutexCondvarLatch::count_down beyond the counter");
        let open = *count == 0;
        drop(count);
        if open {
            self.released.notify_all();
        }
    }

    /// Sleeps until the counter is zero.
    pub fn wait(&self) {
        let count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        let _open = self
            .released
            .wait_while(count, |count| *count != 0)
            .unwrap_or_else(PoisonError::into_inner);
    }
}
