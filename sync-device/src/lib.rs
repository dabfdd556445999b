//! The device (nvptx64) flavour of scoped-sync: the [`Gpu`] backend, the primitives at
//! every scope, and the hardware fast paths.
//!
//! | object | where | mechanism |
//! |---|---|---|
//! | [`BlockBarrier`] | whole block | `barrier.sync` (no memory) |
//! | [`SharedBarrier`] | block scope, shared memory | hardware `mbarrier`, warp-combined arrivals |
//! | [`ClusterBarrier`] | whole cluster | `barrier.cluster.arrive/wait` |
//! | [`Grid`] | whole grid, cooperative launch only | one release reduction per block per phase |
//! | [`Barrier`], [`Latch`], [`CountingSemaphore`], [`StopSource`] | any scope, shared or global memory | scoped PTX atomics, warp-combined arrivals; [`WholeBlock`] for one atomic per block |
//!
//! Block-shared variables are declared with [`shared!`]; cluster-scope objects in one
//! block's shared memory are reached by the others with [`SharedSlot::init_cluster`] or
//! [`map_to_block`].
//!
//! On host targets this crate is empty, so `cargo build` and `cargo test` of a
//! workspace that depends on it are unaffected.
//!
//! # Targets
//!
//! sm_90 (Hopper) with PTX ISA 8.6 has everything. Built for an older GPU (sm_70 to
//! sm_89, `sync_build::KernelCrate::arch("sm_80").ptx_isa(7, 8)`), the items that need
//! sm_90 instructions are left out, so that using one is a compile error rather than a
//! module the driver refuses: `ClusterBarrier`, `map_to_block`, `sync_cluster`,
//! `cluster_rank`, `SharedSlot::init_cluster`, `Cluster` scope, and `SharedBarrier`
//! (its `mbarrier.try_wait`). Acquire and release fences become `fence.acq_rel` (the
//! one-way forms are sm_90), and the checked build checks preconditions but not scope
//! misuse (its owner table needs a 128-bit CAS).
//!
//! # Writing a kernel crate
//!
//! A kernel crate is a `#![no_std]` library of its own workspace that depends on
//! `scoped-sync` (this crate's items on nvptx64) and that the host program's build
//! script compiles to PTX with `sync-build`. The README's section 2 shows one whole;
//! the kernel crate guide (`docs/kernel-crates.md`) says which crate attributes it
//! needs, how to update user data atomically, and which barriers need every block
//! resident at once and which launch gives that.
#![no_std]
// On host targets the items are compiled out, so the links above have no target there.
#![cfg_attr(not(target_arch = "nvptx64"), allow(rustdoc::broken_intra_doc_links))]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]

pub use sync_shared::bus::{
    BusArrivalToken, Consumer, GpuToGpu, GpuToHost, HostToGpu, Producer, WaitError, BUS_COUNT_MAX,
};
pub use sync_shared::{Block, Cluster, Device, Scope, System, Thread, WaiterSlot};

/// The target gate of the crate's items: each exists on nvptx64 only (on host targets
/// this crate is empty, so a host workspace that depends on it is unaffected).
macro_rules! on_nvptx {
    ($($item:item)*) => {
        $(
            #[cfg(target_arch = "nvptx64")]
            $item
        )*
    };
}

// The layers, bottom up: PTX instructions, PTX protocols, the backend, the device-only
// primitives. (Declared outside `on_nvptx!`: a `macro_export` macro of a module that a
// macro declares cannot be named by path in this crate, and the prelude names `shared!`.)
#[cfg(target_arch = "nvptx64")]
mod backend;
#[cfg(all(target_arch = "nvptx64", feature = "c-abi"))]
pub mod c_abi;
#[cfg(all(target_arch = "nvptx64", feature = "nvshmem"))]
pub mod nvshmem;
#[cfg(target_arch = "nvptx64")]
pub mod prelude;
#[cfg(target_arch = "nvptx64")]
mod primitives;
#[cfg(target_arch = "nvptx64")]
mod protocols;
#[cfg(target_arch = "nvptx64")]
mod ptx;

on_nvptx! {
    pub use ptx::atomics as ptx_atomics;
    pub use ptx::warp;

    pub use primitives::block_barrier::{sync_block, sync_block_any, BlockBarrier};
    pub use backend::bus_side::DeviceWait;
    #[cfg(target_feature = "sm_90")]
    pub use primitives::cluster::{map_to_block, sync_cluster, ClusterArrival, ClusterBarrier};
    pub use ptx::device_print::{print_panic, trap};
    #[cfg(target_feature = "sm_90")]
    pub use ptx::geometry::cluster_rank;
    pub use ptx::geometry::{
        block_coordinates, block_count, block_dimensions, block_index, block_size, clock64,
        dynamic_shared_bytes, global_thread_count, global_thread_index, grid_dimensions,
        thread_coordinates, thread_in_block,
    };
    pub use backend::gpu::{GlobalTime, Gpu};
    pub use primitives::grid::Grid;
    #[cfg(target_feature = "sm_90")]
    pub use ptx::mbarrier::Mbarrier;
    pub use primitives::multi_grid::{
        MultiGrid, MultiGridError, MultiGridToken, MULTI_GRID_PATIENCE,
    };
    #[doc(hidden)]
    pub use primitives::shared::{shared_bytes, Placement, WriteOnly};
    pub use primitives::shared::{dynamic_shared, is_shared, SharedSlot};
    #[cfg(target_feature = "sm_90")]
    pub use primitives::shared_barrier::{SharedBarrier, SharedToken};
    pub use primitives::stop_callback_slot::{PlacedStopCallback, StopCallbackSlot};
    pub use primitives::whole_block::WholeBlock;

    /// [`sync_shared::Barrier`] on CUDA threads (scope defaults to `Device`).
    pub type Barrier<S = Device, F = sync_shared::NoCompletion> = sync_shared::Barrier<S, Gpu, F>;
    /// [`sync_shared::Latch`] on CUDA threads.
    pub type Latch<S = Device> = sync_shared::Latch<S, Gpu>;
    /// [`sync_shared::CountingSemaphore`] on CUDA threads.
    pub type CountingSemaphore<const MAX: u32 = { sync_shared::SEMAPHORE_MAX }, S = Device> =
        sync_shared::CountingSemaphore<S, Gpu, MAX>;
    /// [`sync_shared::BinarySemaphore`] on CUDA threads.
    pub type BinarySemaphore<S = Device> = sync_shared::BinarySemaphore<S, Gpu>;
    /// [`sync_shared::FairSemaphore`] on CUDA threads: first-come, first-served. A GPU
    /// thread's stack is private to it, so a thread that may have to wait queues in a
    /// [`WaiterSlot`](sync_shared::WaiterSlot) of its own in global (or, for a block's
    /// semaphore, shared) memory, through the `_in` methods (`acquire_in`,
    /// `try_acquire_for_in`, ...); `acquire` and the other stack-node methods do not
    /// compile here.
    pub type FairSemaphore<const MAX: u32 = { sync_shared::SEMAPHORE_MAX }, S = Device> =
        sync_shared::FairSemaphore<S, Gpu, MAX>;
    /// [`sync_shared::StopSource`] on CUDA threads (scope defaults to `Device`, as every
    /// device type's: its token then fits the default barrier's, latch's and semaphore's
    /// stoppable waits). Device memory holding a new one: `Runtime::new_stop_source` on
    /// the host. Between host and GPU threads, use a [`BusStopSource`].
    ///
    /// ```ignore
    /// #[no_mangle]
    /// pub unsafe extern "gpu-kernel" fn take_or_stop(
    ///     slots: *const CountingSemaphore,
    ///     stop: *const StopSource,
    /// ) {
    ///     // SAFETY: built by the host (`upload_object`, `new_stop_source`), alive for the launch.
    ///     let (slots, stop) = unsafe { (&*slots, &*stop) };
    ///     if slots.acquire_stoppable(stop.token()).is_ok() {
    ///         // ... use the unit ...
    ///         slots.release(1);
    ///     }
    /// }
    /// ```
    pub type StopSource<S = Device> = sync_shared::StopSource<S, Gpu>;
    /// [`sync_shared::StopToken`] on CUDA threads.
    pub type StopToken<'a, S = Device> = sync_shared::StopToken<'a, S, Gpu>;
    /// [`sync_shared::StopCallback`] on CUDA threads. A callback that a thread of another
    /// block may run must lie in global memory, not on the registering thread's stack
    /// (local memory, which no other thread can reach).
    pub type StopCallback<'a, F, S = Device> = sync_shared::StopCallback<'a, F, S, Gpu>;

    /// [`sync_shared::bus::HandoffSemaphore`] on CUDA threads: units handed across the bus.
    pub type HandoffSemaphore<D> = sync_shared::bus::HandoffSemaphore<D, Gpu>;
    /// [`sync_shared::bus::HandoffChannel`] on CUDA threads: a handoff semaphore each way.
    pub type HandoffChannel = sync_shared::bus::HandoffChannel<Gpu>;
    /// [`sync_shared::bus::BusLatch`] on CUDA threads.
    pub type BusLatch = sync_shared::bus::BusLatch<Gpu>;
    /// [`sync_shared::bus::BusBarrier`] on CUDA threads.
    pub type BusBarrier = sync_shared::bus::BusBarrier<Gpu>;
    /// [`sync_shared::bus::BusStopSource`] on CUDA threads.
    pub type BusStopSource = sync_shared::bus::BusStopSource<Gpu>;

    mod layout_checks {
        use super::*;
        use sync_shared::{assert_layout, layout};

        assert_layout!(Barrier, layout::BARRIER);
        assert_layout!(Latch, layout::LATCH);
        assert_layout!(CountingSemaphore, layout::COUNTING_SEMAPHORE);
        assert_layout!(FairSemaphore, layout::FAIR_SEMAPHORE);
        assert_layout!(StopSource, layout::STOP_SOURCE);
        assert_layout!(HandoffSemaphore<GpuToHost>, layout::HANDOFF_SEMAPHORE);
        assert_layout!(HandoffChannel, layout::HANDOFF_CHANNEL);
        assert_layout!(BusLatch, layout::BUS_LATCH);
        assert_layout!(BusBarrier, layout::BUS_BARRIER);
        assert_layout!(BusStopSource, layout::BUS_STOP_SOURCE);
        assert_layout!(MultiGrid, layout::MULTI_GRID);
    }
}
