//! Per-primitive cost kernels, shaped like the kernels of
//! `baselines/gpu_baselines.cu` (same loop, same launch shapes, timed the same
//! way: GPU events around the launch), so the report can put each beside its anchor.
//!
//! Each loop mixes `acc += thread ^ i` into the barrier loop like the anchor, and stores
//! `acc` only if it equals a value it never has, so the work is not optimized away.

use sync_device::{
    block_size, shared, thread_in_block, BlockBarrier, Grid, SharedBarrier, WholeBlock,
};
use sync_device::{Barrier, CountingSemaphore, Latch};
use sync_shared::{Block, Completion};

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

/// `iterations` phases of the generic `Barrier<Block>` in shared memory, which takes
/// its hardware form (the `mbarrier`) at its first arrival (anchor:
/// `baseline_block_barrier`, libcu++ `cuda::barrier<thread_scope_block>`).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_generic_block_barrier(iterations: u32, out: *mut u32) {
    let slot = shared!(COST_GENERIC_BLOCK_BARRIER: Barrier<Block>);
    // SAFETY: every thread of the block runs this once.
    let barrier = unsafe { slot.init_block(Barrier::new(block_size())) };
    phases(iterations, out, || barrier.arrive_and_wait());
}

/// The completion of [`cost_generic_block_barrier_completion`]: counts phases in the
/// sink word.
struct CountPhases(*mut u32);

impl Completion for CountPhases {
    #[inline]
    fn on_phase_complete(&mut self) {
        // SAFETY: the host's live sink word; one completing thread at a time.
        unsafe {
            self.0
                .write_volatile(self.0.read_volatile().wrapping_add(1))
        };
    }
}

/// [`cost_generic_block_barrier`] with a completion function (the hardware form's
/// reserved arrival, taken by the thread that runs the completion).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_generic_block_barrier_completion(
    iterations: u32,
    out: *mut u32,
) {
    let slot = shared!(COST_GENERIC_BLOCK_BARRIER_COMPLETION: Barrier<Block, CountPhases>);
    // SAFETY: every thread of the block runs this once.
    let barrier =
        unsafe { slot.init_block(Barrier::with_completion(block_size(), CountPhases(out))) };
    phases(iterations, out, || barrier.arrive_and_wait());
}

/// Latches in rotation: three, so that the one thread that rebuilds latch `i + 1`
/// during round `i` knows every thread has left its last use, round `i − 2` (they all
/// arrived in round `i − 1` since). Each round every thread counts down once and
/// waits.
#[inline(always)]
fn latch_rounds<S: sync_shared::Scope>(
    latches: *mut [sync_shared::Latch<S, sync_device::Gpu>; 3],
    count: u32,
    rebuilds: bool,
    iterations: u32,
    out: *mut u32,
) where
    sync_device::Gpu: sync_shared::Backend<S>,
{
    let mut round = 0_usize;
    phases(iterations, out, || {
        if rebuilds {
            // SAFETY: nobody uses latch `round + 1` until this thread's count-down in
            // this round (release) has been seen, and nobody uses it since round − 2.
            unsafe { (*latches)[(round + 1) % 3] = sync_shared::Latch::new(count) };
        }
        // SAFETY: a live latch of the rotation.
        unsafe { (*latches)[round % 3].arrive_and_wait(1) };
        round += 1;
    });
}

/// `iterations` rounds of a block latch in shared memory (anchor:
/// `baseline_latch_block`, libcu++ `cuda::latch<thread_scope_block>`).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_block_latch(iterations: u32, out: *mut u32) {
    let slot = shared!(COST_BLOCK_LATCHES: [Latch<Block>; 3]);
    let count = block_size();
    // SAFETY: every thread of the block runs this once.
    unsafe { slot.init_block([Latch::new(count), Latch::new(count), Latch::new(count)]) };
    latch_rounds(
        slot.as_ptr(),
        count,
        thread_in_block() == 0,
        iterations,
        out,
    );
}

/// `iterations` rounds of a device latch in global memory counted down by every
/// thread of the grid (anchor: `baseline_latch_device`). `latches` points to three
/// latches expecting every thread.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_device_latch(
    latches: *mut [Latch; 3],
    iterations: u32,
    out: *mut u32,
) {
    let count = sync_device::global_thread_count();
    let rebuilds = sync_device::global_thread_index() == 0;
    latch_rounds(latches, count, rebuilds, iterations, out);
}

/// Block-scope semaphore ping-pong between thread 0 and thread 32 of one block, through
/// two semaphores in shared memory, `iterations` round trips (anchor:
/// `baseline_semaphore_ping_pong_block`).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_block_semaphore_ping_pong(iterations: u32, out: *mut u32) {
    let _ = out;
    let slot = shared!(COST_BLOCK_SEMAPHORES: [CountingSemaphore<{ sync_shared::SEMAPHORE_MAX }, Block>; 2]);
    // SAFETY: every thread of the block runs this once.
    let [ping, pong] =
        unsafe { slot.init_block([CountingSemaphore::new(0), CountingSemaphore::new(0)]) };
    ping_pong(ping, pong, thread_in_block(), iterations);
}

/// Thread `0` releases `ping` and acquires `pong`, thread `32` the other way round,
/// `iterations` times; other threads return.
#[inline(always)]
fn ping_pong<S: sync_shared::Scope>(
    ping: &sync_shared::CountingSemaphore<S, sync_device::Gpu, { sync_shared::SEMAPHORE_MAX }>,
    pong: &sync_shared::CountingSemaphore<S, sync_device::Gpu, { sync_shared::SEMAPHORE_MAX }>,
    thread: u32,
    iterations: u32,
) where
    sync_device::Gpu: sync_shared::Backend<S>,
{
    for _ in 0..iterations {
        match thread {
            0 => {
                ping.release(1);
                pong.acquire();
            }
            32 => {
                ping.acquire();
                pong.release(1);
            }
            _ => return,
        }
    }
}

/// `iterations` grid barriers of a cooperative launch (anchor: `baseline_grid_sync`,
/// `cg::this_grid().sync()`).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_grid_sync(mut grid: Grid, iterations: u32, out: *mut u32) {
    phases(iterations, out, || grid.sync());
}

/// The floor under any grid barrier of this shape, measured by one thread: per
/// iteration a device-scope release fence, one atomic add whose reply it waits for, and
/// one relaxed load of the same word (the arrival and the poll that sees the last
/// arrival). `out` is the word.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cost_grid_lower_bound(iterations: u32, out: *mut u32) {
    use sync_device::ptx_atomics::PtxScope;
    use sync_shared::{Device, Ordering};
    if sync_device::global_thread_index() != 0 {
        return;
    }
    let mut seen = 0_u32;
    for _ in 0..iterations {
        Device::fence(Ordering::Release);
        // SAFETY: the host's live sink word; only this thread touches it.
        let before = unsafe { Device::fetch_add_u32(out, 1, Ordering::Relaxed) };
        // SAFETY: as above.
        seen = seen.wrapping_add(before ^ unsafe { Device::load_u32(out, Ordering::Relaxed) });
    }
    if seen == NEVER {
        // SAFETY: as above.
        unsafe { out.add(1).write_volatile(seen) };
    }
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
    // Block 0's thread plays thread 0, block 1's thread 32.
    let player = if sync_device::block_index() == 0 {
        0
    } else {
        32
    };
    ping_pong(ping, pong, player, iterations);
}
