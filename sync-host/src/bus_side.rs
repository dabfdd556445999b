//! The host's [`Side`] of bus objects: `core::sync::atomic` 64-bit operations.

use sync_shared::bus::{BusWord, Side, SideKind};
use sync_shared::Ordering;

use crate::Host;

/// Spin rounds of a wait for a host publisher ahead in line before yielding (it may
/// have been descheduled between reserving and publishing).
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 64;

// SAFETY: host atomics are system-scope on ordinary and pinned memory. Side words are
// touched by host threads only; bus words are only loaded and stored (aligned 8-byte
// accesses, which CUDA's rule makes atomic on mapped memory).
unsafe impl Side for Host {
    const KIND: SideKind = SideKind::Host;

    #[inline(always)]
    fn load_bus(word: &BusWord, order: Ordering) -> u64 {
        word.load(order)
    }
    #[inline(always)]
    fn store_bus(word: &BusWord, value: u64, order: Ordering) {
        word.store(value, order)
    }
    #[inline(always)]
    fn load_side(word: &BusWord, order: Ordering) -> u64 {
        word.load(order)
    }
    #[inline(always)]
    fn store_side(word: &BusWord, value: u64, order: Ordering) {
        word.store(value, order)
    }
    #[inline(always)]
    fn fetch_add_side(word: &BusWord, value: u64, order: Ordering) -> u64 {
        word.fetch_add(value, order)
    }
    #[inline(always)]
    fn compare_exchange_side(
        word: &BusWord,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        word.compare_exchange(current, new, success, failure)
    }
    fn pause(round: &mut u32) {
        // Under loom a spin is a yield to loom's scheduler: it runs the publisher the
        // caller waits for (loom would otherwise keep running the spinning thread and
        // stop at its branch limit).
        #[cfg(loom)]
        {
            let _ = round;
            loom::thread::yield_now();
        }
        #[cfg(not(loom))]
        if *round < SPIN_ROUNDS {
            *round += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}
