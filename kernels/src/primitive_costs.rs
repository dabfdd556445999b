//! Per-primitive cost kernels, shaped like the kernels of
//! `baselines/gpu_baselines.cu` (same loop, same launch shapes, timed the same
//! way: GPU events around the launch), so the report can put each beside its anchor.
//!
//! Each loop mixes `acc += thread ^ i` into the barrier loop like the anchor, and stores
//! `acc` only if it equals a value it never has, so the work is not optimized away.

use sync_device::{
    block_size, shared, thread_in_block, BlockBarrier, Grid, SharedBarrier, WholeBlock,
};
use sync_device::{Barrier, CountingSemaphore};
use sync_shared::Block;

/// Never equal to the accumulator (the anchor's sink condition).
const NEVER: u32 = 123_456_789;

/// The anchor's loop: `iterations` times, `acc += thread ^ i` then one `phase`; at
/// the end `acc` goes to `sink` only if it equals [`NEVER`], which keeps it alive.
#[inline(always)]
fn phases(iterations: u32, sink: *mut u32, mut phase: impl FnMut()) {
    let mut acc = 0_u32;
    for i in 0..iterations {
        acc = acc.wrapping_add(thread_in_block() ^ i);
        phase();
    }
    if acc == NEVER {
        // SAFETY: the host passes a live word.
        unsafe { sink.write_volatile(acc) };
    }
}

/// `iterations` full-block barriers on `barrier.sync` (anchor: `baseline_syncthreads`).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_block_barrier(iterations: u32, out: *mut u32) {
    let mut barrier = BlockBarrier::new();
    phases(iterations, out, || barrier.arrive_and_wait());
}

/// `iterations` phases of the block's split-phase hardware barrier (`mbarrier`) in
/// shared memory, every thread arriving (anchor: `baseline_block_barrier`, libcu++
/// `cuda::barrier<thread_scope_block>`).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_shared_barrier(iterations: u32, out: *mut u32) {
    let slot = shared!(COST_SHARED_BARRIER: SharedBarrier);
    // SAFETY: every thread of the block runs this once.
    let barrier = unsafe { SharedBarrier::init(&slot, block_size()) };
    phases(iterations, out, || barrier.arrive_and_wait());
}

/// [`cost_shared_barrier`] with the thread keeping the phase parity
/// (`arrive_and_wait_parity`), the hardware object's fastest loop.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_shared_barrier_parity(iterations: u32, out: *mut u32) {
    let slot = shared!(COST_SHARED_BARRIER_PARITY: SharedBarrier);
    // SAFETY: every thread of the block runs this once.
    let barrier = unsafe { SharedBarrier::init(&slot, block_size()) };
    let mut parity = false;
    phases(iterations, out, || {
        barrier.arrive_and_wait_parity(parity);
        parity = !parity;
    });
}

/// `iterations` phases of the generic algorithm at block scope in shared memory (the
/// portable path a `Barrier<Block>` takes; for comparison with the hardware paths).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_generic_block_barrier(iterations: u32, out: *mut u32) {
    let slot = shared!(COST_GENERIC_BLOCK_BARRIER: Barrier<Block>);
    // SAFETY: every thread of the block runs this once.
    let barrier = unsafe { slot.init_block(Barrier::new(block_size())) };
    phases(iterations, out, || barrier.arrive_and_wait());
}

/// `iterations` grid barriers of a cooperative launch (anchor: `baseline_grid_sync`,
/// `cg::this_grid().sync()`).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_grid_sync(mut grid: Grid, iterations: u32, out: *mut u32) {
    phases(iterations, out, || grid.sync());
}

/// `iterations` phases of a device-scope barrier in global memory with one arrival per
/// block (anchor: `baseline_device_barrier_leader`), through [`WholeBlock`].
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_device_barrier_block(
    barrier: *const Barrier,
    iterations: u32,
    out: *mut u32,
) {
    // SAFETY: the host passes a barrier expecting every thread of the grid.
    let barrier = unsafe { &*barrier };
    phases(iterations, out, || barrier.block_arrive_and_wait());
}

/// `iterations` phases of a device-scope barrier in global memory, every thread
/// arriving on its own (anchor: `baseline_device_barrier_all`; warps are combined).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_device_barrier_all(
    barrier: *const Barrier,
    iterations: u32,
    out: *mut u32,
) {
    // SAFETY: the host passes a barrier expecting every thread of the grid.
    let barrier = unsafe { &*barrier };
    phases(iterations, out, || barrier.arrive_and_wait());
}

/// Device-scope semaphore ping-pong between thread 0 of block 0 and of block 1,
/// `iterations` round trips (anchor: `baseline_semaphore_ping_pong`). `semaphores` points to two
/// semaphores at 0.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_semaphore_ping_pong(
    semaphores: *const CountingSemaphore,
    iterations: u32,
) {
    if thread_in_block() != 0 {
        return;
    }
    // SAFETY: the host passes two semaphores.
    let (ping, pong) = unsafe { (&*semaphores, &*semaphores.add(1)) };
    let first = sync_device::block_index() == 0;
    for _ in 0..iterations {
        if first {
            ping.release(1);
            pong.acquire();
        } else {
            ping.acquire();
            pong.release(1);
        }
    }
}
