//! The device examples of the library's rustdoc: the `ignore` blocks that rustdoc
//! cannot build for the host, compiled here as written there (`tests/doc_blocks.rs`
//! keeps them equal). Each sits in a kernel or function that gives it the names it
//! uses; the kernels are never launched.
// The examples leave some parameters unread (`// ...` stands for the user's work).
#![allow(dead_code, unused_variables, unused_mut)]

use scoped_sync::prelude::*;
use scoped_sync::{BusStopSource, Consumer, DeviceWait, Gpu, MultiGrid, WaitError};

/// `Barrier::uses_hardware`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn doc_barrier_uses_hardware() {
    let slot = scoped_sync::shared!(STAGE: Barrier<Block>);
    // SAFETY: every thread of the block runs this once.
    let stage = unsafe { slot.init_block(Barrier::new(scoped_sync::block_size())) };
    assert!(stage.uses_hardware());
}

/// `Barrier::init_in_place`, launched with dynamic shared memory for the barrier.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn doc_barrier_init_in_place() {
    use scoped_sync::{dynamic_shared, sync_block, thread_in_block, Barrier, Block};

    let barrier = dynamic_shared::<Barrier<Block>>();
    if thread_in_block() == 0 {
        // SAFETY: the launch asked for enough dynamic shared memory; the block
        // barrier below orders the placing before any other thread's use.
        unsafe {
            barrier.write(Barrier::new(scoped_sync::block_size()));
            (*barrier).init_in_place();
        }
    }
    sync_block();
    // SAFETY: placed above.
    unsafe { (*barrier).arrive_and_wait() };
}

/// `SharedBarrier` (split arrive and wait).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn doc_shared_barrier() {
    let slot = scoped_sync::shared!(ARRIVALS: SharedBarrier);
    // SAFETY: every thread of the block runs this once.
    let stage = unsafe { SharedBarrier::init(&slot, scoped_sync::block_size()) };
    let token = stage.arrive(1);
    // ... independent work overlaps the other threads' arrivals ...
    stage.wait(token);
}

/// `SharedBarrier::arrive_and_wait_parity`.
fn doc_shared_barrier_parity(barrier: &SharedBarrier, steps: u32) {
    let mut parity = false;
    for _ in 0..steps {
        // ... this thread's part of the step ...
        barrier.arrive_and_wait_parity(parity);
        parity = !parity;
    }
}

/// `shared!`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn doc_shared(steps: u32) {
    let slot = scoped_sync::shared!(PHASES: SharedBarrier);
    // SAFETY: every thread of the block runs this once.
    let barrier = unsafe { SharedBarrier::init(&slot, scoped_sync::block_size()) };
    doc_shared_barrier_parity(barrier, steps);
}

/// `BlockBarrier`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn doc_block_barrier(phases: u32) {
    let mut barrier = BlockBarrier::with_completion(|| { /* once per phase */ });
    for _ in 0..phases {
        // ... write this thread's part ...
        barrier.arrive_and_wait();
    }
}

/// `Grid`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn solve(mut grid: Grid, data: *mut f32) {
    for _step in 0..100 {
        // ... every thread updates its part of `data` ...
        grid.sync();
    }
}

/// `MultiGrid`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn exchange(mut gpus: MultiGrid, halo: *mut f32) {
    for _ in 0..100 {
        // ... write this GPU's halo into the neighbour's memory ...
        gpus.sync();
    }
}

/// The prelude.
mod prelude {
    use scoped_sync::prelude::*;

    #[no_mangle]
    pub unsafe extern "gpu-kernel" fn halve(mut grid: Grid, data: *mut f32) {
        let i = global_thread_index() as usize;
        // SAFETY: `data` holds one value per thread of the grid.
        unsafe { *data.add(i) *= 0.5 };
        grid.sync();
    }
}

/// `DeviceWait`.
fn doc_device_wait(work: &mut Consumer<'_, Gpu>, stop: &BusStopSource) -> Result<u64, WaitError> {
    let unit = work.acquire(DeviceWait::new().stop(stop))?;
    Ok(unit)
}

// docs/kernel-crates.md, atomics on the user's own data:
/// Counts the values of `data` into `bins` (one word per bin, zeroed by the host).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn histogram(data: *const u32, n: u32, bins: *mut u32) {
    let i = global_thread_index();
    if i < n {
        // SAFETY: `data` holds `n` values, `bins` 256 words.
        unsafe {
            let bin = *data.add(i as usize) % 256;
            Device::red_add_u32(bins.add(bin as usize), 1, Ordering::Relaxed);
        }
    }
}

/// `StopSource`: the default scopes fit together.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn take_or_stop(
    slots: *const CountingSemaphore,
    stop: *const StopSource,
) {
    // SAFETY: built by the host (`upload_object`, `new_stop_source`), alive for the launch.
    let (slots, stop) = unsafe { (&*slots, &*stop) };
    if slots.acquire_stoppable(stop.token()).is_ok() {
        // ... use the unit ...
        slots.release(1);
    }
}

/// docs/multi-gpu.md: the ring slots of one direction of a channel between two GPUs.
const RING: u64 = 16;

/// docs/multi-gpu.md: what unit `k` carries.
fn payload(k: u32) -> u32 {
    k.wrapping_mul(0x9E37_79B9)
}

/// docs/multi-gpu.md: one direction of a channel between two GPUs.
fn gpu_to_gpu(
    work: &HandoffSemaphore<GpuToGpu>,
    credits: &HandoffSemaphore<GpuToGpu>,
    stop: &BusStopSource,
    slots: &mut [u32],
    units: u32,
    patience: core::time::Duration,
) -> Result<(), WaitError> {
    // GPU 0, one thread: units to GPU 1 through `work` (in GPU 1's memory), slots handed
    // back through `credits` (in GPU 0's memory).
    let (mut out, mut back) = (work.producer().unwrap(), credits.consumer().unwrap());
    for k in 0..units {
        back.acquire(DeviceWait::new().timeout(patience))?;
        out.release_with(1, |unit| slots[(unit % RING) as usize] = payload(k));
    }
    stop.request_stop();
    Ok(())
}

/// `StopCallbackSlot`.
mod stop_callback_slot {
    use scoped_sync::backend::Word;
    use scoped_sync::prelude::*;
    use scoped_sync::{Backend, Gpu};

    #[no_mangle]
    pub unsafe extern "gpu-kernel" fn wait_or_stop(
        stop: *const StopSource,
        slots: *const StopCallbackSlot,
        stopped: *mut u32,
    ) {
        // SAFETY: built by the host (`new_stop_source`, zeroed slots), alive for the launch.
        let (stop, slot) = unsafe { (&*stop, &*slots.add(block_index() as usize)) };
        if thread_in_block() == 0 {
            // SAFETY: one word the host zeroed, used atomically by every block.
            let seen = unsafe { Word::from_ptr(stopped) };
            let placed = slot.place(stop.token(), || {
                <Gpu as Backend<Device>>::fetch_add(seen, 1, Ordering::Relaxed);
            });
            let _registered = placed.expect("one callback per slot");
            // ... work until stop is requested; dropping `_registered` deregisters ...
        }
    }
}
