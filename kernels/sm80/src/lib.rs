//! Kernels built for sm_80 (PTX ISA 7.8): the part of sync-device that works before
//! Hopper, compiled the way a user targeting an A100 would. `harness/build.rs` builds
//! it; `tests/ptx_codegen.rs` assembles it for sm_80 and checks that no sm_90
//! instruction slipped in; `tests/gpu_runtime.rs` runs it (a Hopper GPU JIT-compiles
//! sm_80 PTX).
#![no_std]
#![feature(abi_gpu_kernel)]
#![allow(improper_gpu_kernel_arg)]

use sync_device::ptx_atomics::PtxScope;
use sync_device::{global_thread_count, global_thread_index, Gpu, Grid};
use sync_shared::{Barrier, CountingSemaphore, Device, Ordering};

sync_device::panic_handler!();

/// Phases of a grid barrier: each thread writes its phase to its slot, meets the grid,
/// and checks its neighbour's slot; a stale slot counts in `errors`. Cooperative launch.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn sm80_grid_phases(
    mut grid: Grid,
    slots: *mut u32,
    phases: u32,
    errors: *mut u32,
) {
    check_phases(slots, phases, errors, || grid.sync());
}

/// As [`sm80_grid_phases`], through the generic `Barrier<Device>` in global memory
/// (every thread arriving); the host builds the barrier for every thread of the grid.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn sm80_barrier_phases(
    barrier: *const Barrier<Device, Gpu>,
    slots: *mut u32,
    phases: u32,
    errors: *mut u32,
) {
    // SAFETY: the host passes a barrier with the shared layout, for every thread.
    let barrier = unsafe { &*barrier };
    check_phases(slots, phases, errors, || barrier.arrive_and_wait());
}

/// Every thread takes one of the semaphore's permits `rounds` times; while it holds
/// one it counts itself in `inside` (device-scope atomics) and records the most it saw
/// in `most`, which must never exceed the permits.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn sm80_semaphore_exclusion(
    permits: *const CountingSemaphore<Device, Gpu>,
    inside: *mut u32,
    most: *mut u32,
    rounds: u32,
) {
    // SAFETY: a semaphore with the shared layout, from the host.
    let permits = unsafe { &*permits };
    for _ in 0..rounds {
        permits.acquire();
        // SAFETY: two live device words, touched only by these atomics.
        unsafe {
            let now = Device::fetch_add_u32(inside, 1, Ordering::Relaxed) + 1;
            Device::fetch_max_u32(most, now, Ordering::Relaxed);
            Device::fetch_sub_u32(inside, 1, Ordering::Relaxed);
        }
        permits.release(1);
    }
}

/// Each thread writes `phase` to its slot, meets the others (`meet`), checks that its
/// neighbour's slot holds `phase` (a stale value counts in `errors`), and meets them
/// again before the next phase's write.
fn check_phases(slots: *mut u32, phases: u32, errors: *mut u32, mut meet: impl FnMut()) {
    let me = global_thread_index() as usize;
    let neighbour = (me + 1) % global_thread_count() as usize;
    for phase in 1..=phases {
        // SAFETY: one slot per thread of the grid and a live error word (the kernels'
        // contract); every access is a device-scope atomic.
        unsafe { Device::store_u32(slots.add(me), phase, Ordering::Relaxed) };
        meet();
        // SAFETY: as above.
        if unsafe { Device::load_u32(slots.add(neighbour), Ordering::Relaxed) } != phase {
            // SAFETY: as above.
            unsafe { Device::fetch_add_u32(errors, 1, Ordering::Relaxed) };
        }
        meet();
    }
}
