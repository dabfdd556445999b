//! The device library for CUDA C++ kernels: sync-device's C ABI (`sync_device::c_abi`),
//! linked into one relocatable PTX module with no kernels of its own. CUDA C++ code
//! declares its functions through `include/scoped_sync.cuh`.
#![no_std]

pub use sync_device::c_abi;

sync_device::panic_handler!();
