//! The multi-GPU barrier's kernels (`../src/multi_grid.rs`, the same source as the
//! project's main kernel crate) built with sync-device's `nvshmem` feature: their
//! `MultiGrid` can cross through NVSHMEM's device operations
//! (`MultiGrid::join_nvshmem_signals`), so the module calls the NVSHMEM shim and is
//! loaded with `Nvshmem::load`, which links it with NVSHMEM's device library.
#![no_std]
#![feature(abi_gpu_kernel, asm_experimental_arch)]
#![allow(improper_gpu_kernel_arg)]

sync_device::panic_handler!();

#[path = "../../src/multi_grid.rs"]
mod multi_grid;

use sync_device::ptx_atomics::PtxScope;
use sync_shared::scope::Device;
use sync_shared::Ordering;

/// Adds 1 to a counter word of this GPU (as the main kernel crate's `count`).
fn count(word: *mut u32) {
    // SAFETY: callers pass a live word that is only touched atomically.
    unsafe { <Device as PtxScope>::fetch_add_u32(word, 1, Ordering::Relaxed) };
}

#[path = "../../src/handoff_ends.rs"]
mod handoff_ends;

use sync_device::{global_thread_index, nvshmem, BusStopSource, GpuToGpu, HandoffSemaphore};

/// The producing PE's end of a handoff across PEs (`Nvshmem::handoff`), in thread 0:
/// as the main crate's `peer_handoff_produce`, with each payload put into PE
/// `consumer`'s copy of `slots` by NVSHMEM (`nvshmem::put_u64`), which the release
/// after it delivers first.
///
/// # Safety
///
/// `work` (PE `consumer`'s from this PE), `credits` (this PE's from PE `consumer`,
/// holding `HANDOFF_RING` units) and `stop` are live objects placed by `Nvshmem`;
/// `slots` holds `HANDOFF_RING` words of the symmetric heap; `failures` is a live word
/// of this GPU. One launch uses them at a time, beside one `nvshmem_handoff_consume`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn nvshmem_handoff_produce(
    work: *const HandoffSemaphore<GpuToGpu>,
    credits: *const HandoffSemaphore<GpuToGpu>,
    slots: *mut u64,
    consumer: u32,
    units: u64,
    stop: *const BusStopSource,
    failures: *mut u32,
) {
    if global_thread_index() != 0 {
        return;
    }
    let put = |slot: usize, value: u64| {
        // SAFETY: `slot < HANDOFF_RING`, within `slots`; the consumer handed it back.
        unsafe { nvshmem::put_u64(slots.add(slot), value, consumer) }
    };
    // SAFETY: the caller's contract.
    unsafe { handoff_ends::produce(work, credits, units, stop, failures, put) };
}

/// The consuming PE's end (`nvshmem_handoff_produce`'s other end), in thread 0: as the
/// main crate's `peer_handoff_consume`, reading this PE's copy of `slots`.
///
/// # Safety
///
/// As `nvshmem_handoff_produce`, from this end; `result` holds three live words of
/// this GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn nvshmem_handoff_consume(
    work: *const HandoffSemaphore<GpuToGpu>,
    credits: *const HandoffSemaphore<GpuToGpu>,
    slots: *const u64,
    stop: *const BusStopSource,
    result: *mut u64,
) {
    if global_thread_index() == 0 {
        // SAFETY: the caller's contract.
        unsafe { handoff_ends::consume(work, credits, slots, stop, result) };
    }
}

/// One PE's thread 0 of a round trip across PEs (`Nvshmem::handoff` each way): as the
/// main crate's `peer_ping_pong`.
///
/// # Safety
///
/// As `peer_ping_pong`, with the two semaphores placed by `Nvshmem::handoff`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn nvshmem_ping_pong(
    outgoing: *const HandoffSemaphore<GpuToGpu>,
    incoming: *const HandoffSemaphore<GpuToGpu>,
    first: u32,
    rounds: u32,
    spin: u32,
    elapsed: *mut u64,
) {
    if global_thread_index() == 0 {
        // SAFETY: the caller's contract.
        unsafe {
            handoff_ends::ping_pong(outgoing, incoming, first != 0, rounds, spin != 0, elapsed)
        };
    }
}
