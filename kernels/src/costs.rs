//! Per-scope cost kernels, shaped like `baselines/gpu_baselines.cu` so the two
//! can be run side by side: one thread, a dependent chain of `iterations`
//! operations between two `%clock64` readings.

use sync_device::{clock64, ptx_atomics::PtxScope};
use sync_shared::scope::{Block, Device, System};
use sync_shared::Ordering;

/// `v = fetch_add(p, v & 1 | 1, AcqRel)`, `iterations` times: each add depends on the
/// previous result (the anchor's `baseline_atomic_chain_*`).
#[inline(always)]
unsafe fn atomic_chain<S: PtxScope>(p: *mut u32, iterations: u32, cycles: *mut u64) {
    let mut value = 0_u32;
    let start = clock64();
    for _ in 0..iterations {
        // SAFETY: the host passes a live device word (two, see below).
        value = unsafe { S::fetch_add_u32(p, (value & 1) | 1, Ordering::AcqRel) };
    }
    let end = clock64();
    // SAFETY: the host passes one u64 for the cycles and two words at `p`.
    unsafe {
        *cycles = end - start;
        *p.add(1) = value;
    }
}

/// `p[0] = i; fence(SeqCst)`, `iterations` times (the anchor's `baseline_fence_*`).
#[inline(always)]
unsafe fn store_fence<S: PtxScope>(iterations: u32, cycles: *mut u64, p: *mut u32) {
    let start = clock64();
    for i in 0..iterations {
        // SAFETY: the host passes a live device word.
        unsafe { p.write_volatile(i) };
        S::fence(Ordering::SeqCst);
    }
    let end = clock64();
    // SAFETY: the host passes one u64 for the cycles.
    unsafe { *cycles = end - start };
}

macro_rules! cost_kernels {
    ($($scope:ty => $chain:ident, $fence:ident;)*) => {$(
        /// Dependent acq_rel fetch_add chain at this scope.
        #[no_mangle]
        pub unsafe extern "gpu-kernel" fn $chain(p: *mut u32, iterations: u32, cycles: *mut u64) {
            // SAFETY: forwarded from the host's launch.
            unsafe { atomic_chain::<$scope>(p, iterations, cycles) }
        }
        /// Store + seq_cst fence at this scope.
        #[no_mangle]
        pub unsafe extern "gpu-kernel" fn $fence(iterations: u32, cycles: *mut u64, p: *mut u32) {
            // SAFETY: forwarded from the host's launch.
            unsafe { store_fence::<$scope>(iterations, cycles, p) }
        }
    )*};
}

cost_kernels! {
    Block => cost_atomic_chain_block, cost_fence_block;
    Device => cost_atomic_chain_device, cost_fence_device;
    System => cost_atomic_chain_system, cost_fence_system;
}
