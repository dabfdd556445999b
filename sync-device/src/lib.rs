//! The device (nvptx64) flavour of scoped-sync: the [`Gpu`] backend and the
//! primitives at every scope.
//!
//! On host targets this crate is empty, so `cargo build` and `cargo test` of the
//! workspace are unaffected; it is compiled to PTX by the kernel build
//! (`kernels/`, driven by `sync-host/build.rs`).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]

pub use sync_shared::{Block, Cluster, Device, Scope, System, Thread};

#[cfg(target_arch = "nvptx64")]
mod gpu;
#[cfg(target_arch = "nvptx64")]
pub mod ptx_atomics;

#[cfg(target_arch = "nvptx64")]
pub use gpu::{
    block_count, clock64, cluster_rank, global_thread_count, global_thread_index, GlobalTime, Gpu,
};

/// [`sync_shared::Barrier`] on CUDA threads (scope defaults to `Device`).
#[cfg(target_arch = "nvptx64")]
pub type Barrier<S = Device, F = sync_shared::NoCompletion> = sync_shared::Barrier<S, Gpu, F>;
/// [`sync_shared::Latch`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type Latch<S = Device> = sync_shared::Latch<S, Gpu>;
/// [`sync_shared::CountingSemaphore`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type CountingSemaphore<const MAX: u32 = { sync_shared::SEMAPHORE_MAX }, S = Device> =
    sync_shared::CountingSemaphore<S, Gpu, MAX>;
/// [`sync_shared::StopSource`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type StopSource<S = System> = sync_shared::StopSource<S, Gpu>;
/// [`sync_shared::StopToken`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type StopToken<'a, S = System> = sync_shared::StopToken<'a, S, Gpu>;

#[cfg(target_arch = "nvptx64")]
mod layout_checks {
    use super::*;
    use sync_shared::{assert_layout, layout};

    assert_layout!(Barrier, layout::BARRIER);
    assert_layout!(Latch, layout::LATCH);
    assert_layout!(CountingSemaphore, layout::COUNTING_SEMAPHORE);
    assert_layout!(StopSource, layout::STOP_SOURCE);
}
