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
//! `scoped-sync` (this crate's items on nvptx64) and is compiled to PTX by the host
//! program's build script with `sync-build`. Its `Cargo.toml`:
//!
//! ```toml
//! [package]
//! name = "my-kernels"
//! edition = "2021"
//!
//! [dependencies]
//! scoped-sync = "0.1"
//!
//! [workspace]   # its own: the host workspace must never build it for the host
//! ```
//!
//! Its `src/lib.rs`, with the crate attributes every kernel crate needs and one kernel
//! per kind of device object (`examples/user-kernels` compiles and runs the same grid,
//! block-and-cluster and handoff kernels, and checks their results):
//!
//! ```ignore
//! #![no_std]
//! #![feature(abi_gpu_kernel)]
//! // `shared!` declares a `.shared` variable with inline assembly:
//! #![feature(asm_experimental_arch)]
//! #![allow(improper_gpu_kernel_arg)]
//!
//! use scoped_sync::prelude::*;
//!
//! scoped_sync::panic_handler!();
//!
//! /// A grid barrier between steps: launched with `Kernel::launch_grid`, which passes
//! /// the `Grid` and refuses a grid whose blocks cannot all be co-resident.
//! #[no_mangle]
//! pub unsafe extern "gpu-kernel" fn smooth(mut grid: Grid, a: *mut f32, b: *mut f32, n: u32) {
//!     let (src, dst) = (a, b);
//!     let mut i = grid.thread_rank() + 1;
//!     while i + 1 < n {
//!         // SAFETY: 0 < i < n - 1, inside both buffers of n cells.
//!         unsafe { *dst.add(i as usize) = 0.5 * (*src.add(i as usize - 1) + *src.add(i as usize + 1)) };
//!         i += grid.size();
//!     }
//!     grid.sync(); // every write of this step is visible to every thread after it
//! }
//!
//! /// A block barrier in shared memory (the hardware mbarrier) and a cluster barrier.
//! #[no_mangle]
//! pub unsafe extern "gpu-kernel" fn neighbours(out: *mut u32) {
//!     let slot = shared!(VALUES: [u32; 1024]);
//!     let barrier_slot = shared!(PHASE: SharedBarrier);
//!     // SAFETY: every thread of the block runs this once, before any use.
//!     let barrier = unsafe { SharedBarrier::init(&barrier_slot, block_size()) };
//!     let t = thread_in_block();
//!     // SAFETY: one slot per thread of a block of at most 1024.
//!     unsafe { (*slot.as_ptr())[t as usize] = t * 7 };
//!     barrier.arrive_and_wait();
//!     let next = (t + 1) % block_size();
//!     // SAFETY: written before the barrier by thread `next`.
//!     let mine = unsafe { (*slot.as_ptr())[next as usize] };
//!     let cluster = ClusterBarrier::new();
//!     cluster.wait(cluster.arrive()); // the partner block's writes are visible now
//!     let partner = map_to_block(slot.as_ptr(), cluster_rank().0 ^ 1);
//!     // SAFETY: the partner block's array, alive until the second cluster barrier.
//!     let theirs = unsafe { (*partner)[t as usize] };
//!     cluster.wait(cluster.arrive()); // no block leaves while its partner reads
//!     // SAFETY: one output per thread of the grid.
//!     unsafe { *out.add(global_thread_index() as usize) = mine + theirs };
//! }
//!
//! /// A device-scope latch and semaphore in global memory (built on the host with
//! /// `Runtime::upload_object`), and a stop token ending a wait early.
//! #[no_mangle]
//! pub unsafe extern "gpu-kernel" fn producers(
//!     ready: *const Latch<Device>,
//!     slots: *const CountingSemaphore,
//!     stop: *const StopSource<Device>,
//! ) {
//!     // SAFETY: live objects for the whole launch, placed by the host.
//!     let (ready, slots, stop) = unsafe { (&*ready, &*slots, &*stop) };
//!     ready.arrive_and_wait(1); // every thread has started
//!     if slots.acquire_stoppable(stop.token()).is_ok() {
//!         // ... use the slot ...
//!         slots.release(1);
//!     }
//! }
//!
//! /// A persistent worker the host feeds through a `HandoffChannel` in mapped memory
//! /// and stops through a `BusStopSource` (see `HandoffChannel` and `DeviceWait`).
//! #[no_mangle]
//! pub unsafe extern "gpu-kernel" fn worker(channel: *const HandoffChannel, stop: *const BusStopSource) {
//!     // SAFETY: placed by the host (`Runtime::place_mapped`), alive for the launch.
//!     let (channel, stop) = unsafe { (&*channel, &*stop) };
//!     // The endpoints are exclusive: one thread of the launch gets them.
//!     let (Some(mut work), Some(mut results)) = (channel.consumer(), channel.producer()) else {
//!         return;
//!     };
//!     while let Ok(seq) = work.acquire(DeviceWait::new().stop(stop)) {
//!         // ... do item `seq` (its data sits in a mapped ring at `seq % len`) ...
//!         results.release(1);
//!     }
//! }
//! ```
//!
//! The host program's `build.rs` builds it (`sync_build::KernelCrate::new("../kernels")
//! .build_or_record()`), and the program embeds and loads it with
//! `scoped_sync::include_kernels!("my_kernels")` and `Runtime::load`.
#![no_std]
// On host targets the items are compiled out, so the links above have no target there.
#![cfg_attr(not(target_arch = "nvptx64"), allow(rustdoc::broken_intra_doc_links))]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]
// `SharedSlot::init_block` places a `Barrier` into its hardware form and writes any
// other type as it is: a default method specialized for the barrier (shared.rs).
#![cfg_attr(target_arch = "nvptx64", feature(specialization))]
#![cfg_attr(target_arch = "nvptx64", allow(incomplete_features))]

pub use sync_shared::bus::{
    BusArrivalToken, Consumer, GpuToGpu, GpuToHost, HostToGpu, Producer, WaitError, BUS_COUNT_MAX,
};
pub use sync_shared::{Block, Cluster, Device, Scope, System, Thread, WaiterSlot};

#[cfg(target_arch = "nvptx64")]
mod block_barrier;
#[cfg(target_arch = "nvptx64")]
mod bus_side;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod cluster;
#[cfg(target_arch = "nvptx64")]
mod device_print;
#[cfg(target_arch = "nvptx64")]
mod geometry;
#[cfg(target_arch = "nvptx64")]
mod global_atomics;
#[cfg(target_arch = "nvptx64")]
mod gpu;
#[cfg(target_arch = "nvptx64")]
mod grid;
#[cfg(target_arch = "nvptx64")]
mod grid_arrival;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod mbarrier;
#[cfg(target_arch = "nvptx64")]
mod multi_grid;
#[cfg(target_arch = "nvptx64")]
pub mod prelude;
#[cfg(target_arch = "nvptx64")]
pub mod ptx_atomics;
#[cfg(target_arch = "nvptx64")]
mod scope_check;
#[cfg(target_arch = "nvptx64")]
mod shared;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod shared_barrier;
#[cfg(target_arch = "nvptx64")]
pub mod warp;
#[cfg(target_arch = "nvptx64")]
mod warp_barrier_phase;
#[cfg(target_arch = "nvptx64")]
mod warp_latch_phase;
#[cfg(target_arch = "nvptx64")]
mod whole_block;

#[cfg(target_arch = "nvptx64")]
pub use block_barrier::{sync_block, sync_block_any, BlockBarrier};
#[cfg(target_arch = "nvptx64")]
pub use bus_side::DeviceWait;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use cluster::{map_to_block, sync_cluster, ClusterArrival, ClusterBarrier};
#[cfg(target_arch = "nvptx64")]
pub use device_print::{print_panic, trap};
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use geometry::cluster_rank;
#[cfg(target_arch = "nvptx64")]
pub use geometry::{
    block_coordinates, block_count, block_dimensions, block_index, block_size, clock64,
    dynamic_shared_bytes, global_thread_count, global_thread_index, grid_dimensions,
    thread_coordinates, thread_in_block,
};
#[cfg(target_arch = "nvptx64")]
pub use gpu::{GlobalTime, Gpu};
#[cfg(target_arch = "nvptx64")]
pub use grid::Grid;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use mbarrier::Mbarrier;
#[cfg(target_arch = "nvptx64")]
pub use multi_grid::{MultiGrid, MultiGridError, MultiGridToken, MULTI_GRID_PATIENCE};
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
pub use shared::shared_bytes;
#[cfg(target_arch = "nvptx64")]
pub use shared::{dynamic_shared, is_shared, SharedSlot};
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use shared_barrier::{SharedBarrier, SharedToken};
#[cfg(target_arch = "nvptx64")]
pub use whole_block::WholeBlock;

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
/// [`sync_shared::BinarySemaphore`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type BinarySemaphore<S = Device> = sync_shared::BinarySemaphore<S, Gpu>;
/// [`sync_shared::FairSemaphore`] on CUDA threads: first-come, first-served. A GPU
/// thread's stack is private to it, so a thread that may have to wait queues in a
/// [`WaiterSlot`](sync_shared::WaiterSlot) of its own in global (or, for a block's
/// semaphore, shared) memory, through the `_in` methods (`acquire_in`,
/// `try_acquire_for_in`, ...); `acquire` and the other stack-node methods do not
/// compile here.
#[cfg(target_arch = "nvptx64")]
pub type FairSemaphore<const MAX: u32 = { sync_shared::SEMAPHORE_MAX }, S = Device> =
    sync_shared::FairSemaphore<S, Gpu, MAX>;
/// [`sync_shared::StopSource`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type StopSource<S = System> = sync_shared::StopSource<S, Gpu>;
/// [`sync_shared::StopToken`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type StopToken<'a, S = System> = sync_shared::StopToken<'a, S, Gpu>;

/// [`sync_shared::bus::HandoffSemaphore`] on CUDA threads: units handed across the bus.
#[cfg(target_arch = "nvptx64")]
pub type HandoffSemaphore<D> = sync_shared::bus::HandoffSemaphore<D, Gpu>;
/// [`sync_shared::bus::HandoffChannel`] on CUDA threads: a handoff semaphore each way.
#[cfg(target_arch = "nvptx64")]
pub type HandoffChannel = sync_shared::bus::HandoffChannel<Gpu>;
/// [`sync_shared::bus::BusLatch`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type BusLatch = sync_shared::bus::BusLatch<Gpu>;
/// [`sync_shared::bus::BusBarrier`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type BusBarrier = sync_shared::bus::BusBarrier<Gpu>;
/// [`sync_shared::bus::BusStopSource`] on CUDA threads.
#[cfg(target_arch = "nvptx64")]
pub type BusStopSource = sync_shared::bus::BusStopSource<Gpu>;

#[cfg(target_arch = "nvptx64")]
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
