//! Kernels of the multi-GPU barrier (`MultiGrid`) that `tests/gpu_peer.rs`,
//! `tests/gpu_process.rs` and the report launch: the same source is built twice, here
//! and in `kernels/nvshmem` (sync-device's `nvshmem` feature, for barriers that cross
//! through NVSHMEM).

use core::time::Duration;

use sync_device::{global_thread_count, global_thread_index, Gpu, MultiGrid, MultiGridError};
use sync_shared::{Backend, Device, Ordering, System, Word};

use crate::count;

/// How long a thread waits for the other GPUs before it counts a failure and leaves
/// (a dead peer must end the test, not hang it).
const PATIENCE: Duration = Duration::from_secs(10);

/// `phases` phases of the launch's [`MultiGrid`] barrier, each waited for at most
/// `timeout_ms` (odd phases through `arrive` and `wait_for`). In phase `p` every thread writes `p` to its slot of buffer `p % 2`
/// (`slots`: two buffers of `ranks × threads per GPU` words in memory every GPU
/// reaches; this GPU's threads from `rank × threads per GPU`) with a plain store, syncs,
/// then reads the slot of the thread with its own index on the next GPU (a plain load)
/// and counts a failure in
/// `failures` unless it holds `p` (a write before the barrier on one GPU must be seen
/// after it on the other). A phase that fails counts in `timeouts` and ends the thread.
///
/// # Safety
///
/// Launched through `MultiGrid::launch` with the same grid on every GPU; `slots`
/// holds `2 · ranks · threads` words; `failures` and `timeouts` point to live words
/// of this GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn multi_grid_phases(
    mut gpus: MultiGrid,
    slots: *mut u32,
    phases: u32,
    timeout_ms: u32,
    failures: *mut u32,
    timeouts: *mut u32,
) {
    // SAFETY: the caller's contract.
    let (failures, timeouts) = unsafe { (Word::from_ptr(failures), Word::from_ptr(timeouts)) };
    let (threads, me) = (global_thread_count(), global_thread_index());
    // Wrapping arithmetic (the indices stay far below 2^32): the checked build's overflow
    // checks would keep more values live beside the barrier's.
    let all = threads.wrapping_mul(gpus.ranks());
    let mine = gpus.rank().wrapping_mul(threads).wrapping_add(me) as usize;
    let theirs = ((gpus.rank() + 1) % gpus.ranks())
        .wrapping_mul(threads)
        .wrapping_add(me) as usize;
    let timeout = Duration::from_millis(u64::from(timeout_ms));
    // Counted here and added once at the end: an atomic per phase would keep its
    // checks' values live beside the barrier's, and at 1024 threads a block a thread
    // has 64 registers.
    let mut stale = 0u32;
    for phase in 1..=phases {
        let buffer = (phase % 2).wrapping_mul(all) as usize;
        // Plain (weak) accesses, which the L1 may cache: only the barrier's fences make
        // the other GPU's write visible here.
        // SAFETY: `buffer + mine` is below `2 · all`, in `slots`; no other thread
        // touches this slot until the neighbour reads it after this phase's barrier.
        unsafe { slots.add(buffer.wrapping_add(mine)).write(phase) };
        // Odd phases split the barrier: between the arrival and the wait the thread
        // reads its own slot back (work that needs no other GPU).
        let passed = if phase % 2 == 0 {
            gpus.sync_for(timeout)
        } else {
            let arrival = gpus.arrive();
            // SAFETY: as above; this thread's own slot.
            stale += u32::from(unsafe { slots.add(buffer.wrapping_add(mine)).read() } != phase);
            gpus.wait_for(arrival, timeout)
        };
        if passed.is_err() {
            <Gpu as Backend<Device>>::fetch_add(timeouts, 1, Ordering::Relaxed);
            break;
        }
        // SAFETY: in `slots`; the barrier orders the other GPU's write of this slot
        // before this read, and its next write needs this thread's arrival in the phase
        // after next.
        stale += u32::from(unsafe { slots.add(buffer.wrapping_add(theirs)).read() } != phase);
    }
    if stale != 0 {
        <Gpu as Backend<Device>>::fetch_add(failures, stale, Ordering::Relaxed);
    }
}

/// `phases` phases of `MultiGrid::sync`; thread 0 of block 0 writes the time from the
/// start of phase 2 to the end of the last (`%globaltimer`, nanoseconds) to `elapsed`,
/// as `baselines/multi_gpu_baselines.cu` times its barriers.
///
/// # Safety
///
/// Launched through `MultiGrid::launch` with the same grid on every GPU; `elapsed`
/// points to a live word of this GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn multi_grid_timed(
    mut gpus: MultiGrid,
    phases: u32,
    elapsed: *mut u64,
) {
    let first = global_thread_index() == 0;
    let mut start = <Gpu as Backend<System>>::now();
    for phase in 1..=phases {
        if phase == 2 && first {
            start = <Gpu as Backend<System>>::now();
        }
        gpus.sync();
    }
    if first {
        // SAFETY: the caller's contract.
        unsafe { elapsed.write(<Gpu as Backend<System>>::now().0 - start.0) };
    }
}

/// `phases` phases of `MultiGrid::sync_for` (10 s each), then thread 0 of block 0
/// traps (the kernel dies with the GPU's context); the other threads return.
///
/// # Safety
///
/// Launched through `MultiGrid::launch` with the same grid on every GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn multi_grid_trap_after(mut gpus: MultiGrid, phases: u32) {
    for _ in 0..phases {
        if gpus.sync_for(PATIENCE).is_err() {
            return;
        }
    }
    if global_thread_index() == 0 {
        // SAFETY: `trap` aborts the kernel, which is the point.
        unsafe { core::arch::asm!("trap;", options(noreturn)) }
    }
}

/// Thread 0 of block 0 breaks the barrier (`MultiGrid::abort`) after `phases` phases;
/// every thread counts in `broken` a wait that ended with `Broken` and in `passed` one
/// that completed, waiting at most 10 s each, for `phases + 1` phases.
///
/// # Safety
///
/// Launched through `MultiGrid::launch` with the same grid on every GPU; `broken` and
/// `passed` point to live words of this GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn multi_grid_abort_after(
    mut gpus: MultiGrid,
    phases: u32,
    abort: u32,
    broken: *mut u32,
    passed: *mut u32,
) {
    for phase in 0..=phases {
        if phase == phases && abort != 0 && global_thread_index() == 0 {
            gpus.abort();
        }
        match gpus.sync_for(PATIENCE) {
            Ok(()) => count(passed),
            Err(MultiGridError::Broken) => count(broken),
            Err(MultiGridError::TimedOut) => return,
        }
    }
}
