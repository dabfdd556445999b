//! NVSHMEM's operations for the objects that cross PEs (`MultiGrid` joined with
//! `cuda::MultiGrid::join_nvshmem_signals`, bus objects placed by `cuda::Nvshmem`):
//! the shim's, where the kernel crate was built with sync-device's `nvshmem` feature,
//! and otherwise stand-ins that say how to build it and trap. An object reaches these
//! only where the runtime placed it for NVSHMEM, so a kernel that never meets one pays
//! nothing but the branch that tells.

#[cfg(feature = "nvshmem")]
pub(crate) use crate::nvshmem::{compare_swap, fenced_signal_set, fetch, or, quiet, signal_add};

#[cfg(not(feature = "nvshmem"))]
pub(crate) use without_nvshmem::{compare_swap, fenced_signal_set, fetch, or, quiet, signal_add};

/// Stand-ins with the shim's signatures, for kernels built without the feature.
#[cfg(not(feature = "nvshmem"))]
mod without_nvshmem {
    const WITHOUT_NVSHMEM: &str = "this object crosses PEs through NVSHMEM (placed by \
        `cuda::Nvshmem` or joined with `cuda::MultiGrid::join_nvshmem_signals`), but the \
        kernel was built without sync-device's `nvshmem` feature: turn it on in the kernel \
        crate and load the module with `cuda::Nvshmem::load`";

    #[cold]
    pub(crate) unsafe fn signal_add(_: *mut u64, _: u64, _: u32) {
        panic!("{WITHOUT_NVSHMEM}")
    }

    #[cold]
    pub(crate) unsafe fn fenced_signal_set(_: *mut u64, _: u64, _: u32) {
        panic!("{WITHOUT_NVSHMEM}")
    }

    #[cold]
    pub(crate) unsafe fn or(_: *mut u64, _: u64, _: u32) {
        panic!("{WITHOUT_NVSHMEM}")
    }

    #[cold]
    pub(crate) unsafe fn fetch(_: *mut u64, _: u32) -> u64 {
        panic!("{WITHOUT_NVSHMEM}")
    }

    #[cold]
    pub(crate) unsafe fn compare_swap(_: *mut u64, _: u64, _: u64, _: u32) -> u64 {
        panic!("{WITHOUT_NVSHMEM}")
    }

    #[cold]
    pub(crate) fn quiet() {
        panic!("{WITHOUT_NVSHMEM}")
    }
}
