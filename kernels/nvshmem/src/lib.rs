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
