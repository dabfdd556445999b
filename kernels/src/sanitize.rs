//! Kernels of `tests/gpu_sanitize.rs`: cases whose verdict comes from a
//! compute-sanitizer tool as much as from the kernel. The bundle's `sanitize.sh`
//! expects `initcheck` to report exactly the case that reads a primitive the host never
//! initialised, and every tool to find the same kernel clean on an initialised one
//! (`docs/sanitizers.md`).

use sync_device::Gpu;
use sync_shared::{Device, Latch};

/// Thread 0 asks whether the `Device`-scope latch at `latch` is open (`try_wait`: one
/// atomic load of its word) and writes 1 (open) or 0 to `out`. Launched with one
/// thread.
///
/// # Safety
///
/// `latch` points to four live, aligned bytes of global memory (a latch's size), and
/// `out` to a live word. The host may pass bytes it never wrote, on purpose (the
/// uninitialised-object case): any value of the word is a latch state that `try_wait`
/// reads without acting on it.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn sanitize_latch_try_wait(
    latch: *const Latch<Device, Gpu>,
    out: *mut u32,
) {
    // SAFETY: the caller's contract.
    let latch = unsafe { &*latch };
    let open = latch.try_wait();
    // SAFETY: the caller's contract.
    unsafe { out.write_volatile(u32::from(open)) };
}
