//! The CUDA side: a [`Runtime`] on any GPU (or on a cudarc context the program
//! already has), [`Module`]s loaded from the user's PTX or cubin (or a kernel crate
//! embedded with [`include_kernels!`](crate::include_kernels)), typed [`Kernel`]
//! launches through one [`LaunchConfig`] and [`KernelArgs`] (3-D, dynamic shared memory,
//! any stream, cooperative with a `Grid`, clusters, memory-synchronization domains, a
//! helper thread beside the host's side), sync objects placed where host and GPU
//! both reach them, and host waits that cannot hang on a dead kernel.
//!
//! CUDA C++ kernels reach the same objects through `include/scoped_sync.cuh` and the
//! device library (`sync_build::DeviceLibrary`): linked by nvcc at build time
//! ([`include_cuda!`](crate::include_cuda)), or here at run time with the driver's JIT
//! linker ([`Runtime::link_with_library`]) after NVRTC ([`Runtime::compile_cuda`]).
//!
//! Built on cudarc with dynamic loading: everything here compiles without CUDA, and
//! [`Runtime::open`] returns [`CudaError::NoDriver`] on a machine without a driver.
//! This crate embeds no kernels of its own.
//!
//! The README's host program (section 2) loads and launches the kernel crate its
//! build script built (`ignore`: `include_kernels!` reads that build's output; the
//! program is compiled as `examples/doc-blocks`):
//!
//! ```ignore
//! use scoped_sync::cuda::{EmbeddedModule, KernelArgs, LaunchConfig, Runtime};
//!
//! static KERNELS: EmbeddedModule = scoped_sync::include_kernels!("my_kernels");
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let runtime = Runtime::open(0)?;
//!     let module = runtime.load(&KERNELS)?;
//!     let relax = module.kernel("relax")?;
//! # Ok(()) }
//! ```

pub mod beside;
mod core_pin;
mod error;
mod grid;
mod host_wait;
mod kernel;
mod launch;
mod link;
mod mapped;
mod module;
mod multi_grid;
mod multi_grid_host;
#[cfg(target_os = "linux")]
mod multi_grid_process;
mod nvrtc;
#[cfg(target_os = "linux")]
mod nvshmem;
mod peer;
mod placement;
mod polled;
#[cfg(target_os = "linux")]
mod process_host_memory;
#[cfg(target_os = "linux")]
mod process_memory;
mod runtime;
mod stream;
mod stream_wait;
mod timing;

pub use core_pin::CorePin;
/// The cudarc this crate is built on, for [`Runtime::from_cudarc`] and raw driver
/// calls at the same version.
pub use cudarc;
pub use error::CudaError;
pub use host_wait::{HostWait, HostWaitError, QUERY_PERIOD};
pub use kernel::{Dim3, Kernel, LaunchLimit};
pub use launch::{KernelArg, KernelArgs, LaunchConfig, MemSyncDomain};
pub use link::LinkInput;
pub use mapped::MappedBuffer;
pub use module::{EmbeddedModule, KernelBuild, Module, PtxUnavailable, KERNEL_BUILD_VARIABLE};
pub use multi_grid::MultiGrid;
pub use multi_grid_host::{HostParty, HostPartyError};
pub use nvrtc::{CudaSource, CUDA_HEADER, CUDA_HEADER_NAME};
#[cfg(target_os = "linux")]
pub use nvshmem::{
    Nvshmem, NvshmemError, SymmetricMemory, SymmetricObject, HOME_VARIABLE as NVSHMEM_HOME_VARIABLE,
};
pub use peer::{PeerLink, PeerMemory};
pub use placement::{GpuWords, Managed, Mapped, Placed, PlacementError, Shareable};
pub use polled::Polled;
#[cfg(target_os = "linux")]
pub use process_host_memory::ProcessHostMemory;
#[cfg(target_os = "linux")]
pub use process_memory::ProcessMemory;
pub use runtime::{DeviceObject, Runtime};
pub use stream::Stream;
pub use stream_wait::{StreamMemOpError, WaitCondition};
