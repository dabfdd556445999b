//! How a [`MultiGrid`](super::multi_grid::MultiGrid) block reaches another GPU's
//! counter line, by the barrier's crossing (`layout::multi_grid::CROSSING_*`): the
//! GPU's own atomics through a peer address, or NVSHMEM's on this PE's copy of the line
//! for PE `rank`.
//!
//! NVSHMEM's atomics are atomic only with NVSHMEM's atomics on the same word (a NIC's
//! are not the GPU's), so with NVSHMEM every read-modify-write of a counter line goes
//! through it, this GPU's own line too; plain loads (the polls) stay loads.

use sync_shared::layout::multi_grid::{CROSSING_PEER_ATOMICS, POISONED};
use sync_shared::{Ordering, System};

use crate::ptx::atomics::PtxScope;
use crate::ptx::global_atomics;

/// Adds `value` to GPU `rank`'s counter: a relaxed system-scope reduction, or NVSHMEM's
/// signal add.
///
/// # Safety
///
/// `counter` is GPU `rank`'s live counter as this GPU reaches it by `crossing`.
#[inline(always)]
pub(super) unsafe fn add_to_counter(crossing: u32, counter: *mut u64, rank: u32, value: u64) {
    if crossing == CROSSING_PEER_ATOMICS {
        // SAFETY: the caller's contract.
        unsafe { global_atomics::red_add_relaxed_sys(counter, value) };
    } else {
        // SAFETY: as above.
        unsafe { nvshmem_crossing::signal_add(counter, value, rank) };
    }
}

/// Marks GPU `rank`'s counter broken ([`POISONED`]).
///
/// # Safety
///
/// As [`add_to_counter`].
pub(super) unsafe fn mark_counter(crossing: u32, counter: *mut u64, rank: u32) {
    if crossing == CROSSING_PEER_ATOMICS {
        // SAFETY: the caller's contract.
        unsafe { System::fetch_or_u64(counter, POISONED, Ordering::Relaxed) };
    } else {
        // SAFETY: as above.
        unsafe { nvshmem_crossing::or(counter, POISONED, rank) };
    }
}

/// A word of GPU `rank`'s counter line, read atomically.
///
/// # Safety
///
/// `word` is a live `u64` of GPU `rank`'s counter line as this GPU reaches it by
/// `crossing`.
pub(super) unsafe fn load_counter(crossing: u32, word: *mut u64, rank: u32) -> u64 {
    if crossing == CROSSING_PEER_ATOMICS {
        // SAFETY: the caller's contract.
        unsafe { System::load_u64(word, Ordering::Relaxed) }
    } else {
        // SAFETY: as above.
        unsafe { nvshmem_crossing::fetch(word, rank) }
    }
}

/// Compare-and-swap on a word of GPU `rank`'s counter line: the value it held.
///
/// # Safety
///
/// As [`load_counter`].
pub(super) unsafe fn compare_swap_counter(
    crossing: u32,
    word: *mut u64,
    rank: u32,
    expected: u64,
    desired: u64,
) -> u64 {
    if crossing == CROSSING_PEER_ATOMICS {
        // SAFETY: the caller's contract.
        unsafe { System::cas_u64(word, expected, desired, Ordering::Relaxed) }
    } else {
        // SAFETY: as above.
        unsafe { nvshmem_crossing::compare_swap(word, expected, desired, rank) }
    }
}

use crate::backend::pe_crossing as nvshmem_crossing;
