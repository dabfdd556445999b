//! The project's own GPU kernels and the host sides of its GPU tests and measurements.
//!
//! Nothing here is part of the library: the kernels (`kernels/`: functional and
//! conformance tests, litmus shapes, cost kernels, codegen probes) are built by
//! `build.rs` with `sync-build` and loaded through the public runtime, the way a
//! user's own kernels are. The tests, benches, examples and the report binary use
//! [`Gpu`].

pub mod bus_demo;
pub mod host_device;
pub mod litmus;
pub mod litmus_host;
pub mod primitive_costs;

use std::ops::Deref;

use scoped_sync::cuda::{CudaError, EmbeddedModule, Kernel, KernelBuild, Module, Runtime};

/// The project's kernels, both builds (`SCOPED_SYNC_KERNELS=checked|release` picks;
/// a debug build of the program loads the checked one by default).
pub static KERNELS: EmbeddedModule = scoped_sync::include_kernels!("kernels");

/// Kernels built for sm_80 (PTX ISA 7.8) from `kernels/sm80`: what sync-device offers
/// before Hopper, both builds.
pub static KERNELS_SM80: EmbeddedModule = scoped_sync::include_kernels!("kernels_sm80");

/// The CUDA C++ test kernels (`kernels/cuda/*.cu`, through `scoped_sync.cuh`), linked
/// with the device library by nvcc: one cubin per build. Kernels that share a name with
/// a Rust kernel of [`KERNELS`] take the same parameters and do the same work, so the
/// host code of a test or measurement runs either ([`Gpu::open_cuda_cpp`]).
pub static CUDA_KERNELS: EmbeddedModule = scoped_sync::include_cuda!("cuda_kernels");

/// The multi-GPU barrier's kernels built with sync-device's `nvshmem` feature
/// (`kernels/nvshmem`), device-linked with the NVSHMEM shim and NVSHMEM's device library
/// (`sync_build::NvshmemShim`, against `$NVSHMEM_HOME` at build time): one cubin per
/// build, for `Nvshmem::load`.
pub static KERNELS_NVSHMEM: EmbeddedModule = scoped_sync::include_cuda!("kernels_nvshmem");

/// The PTX of the same kernels before the link, to read (`tests/nvshmem_link.rs`).
pub static KERNELS_NVSHMEM_PTX: EmbeddedModule = scoped_sync::include_kernels!("kernels_nvshmem");

/// The NVSHMEM shim's PTX, to read (`tests/nvshmem_link.rs`).
pub static NVSHMEM_SHIM_PTX: EmbeddedModule = scoped_sync::include_kernels!("scoped_sync_nvshmem");

/// The device library's PTX (both builds), for linking C++ code at run time.
pub static DEVICE_LIBRARY: EmbeddedModule = scoped_sync::include_kernels!("scoped_sync_device");

/// Which GPU the tests and measurements use: `SCOPED_SYNC_DEVICE` (an ordinal),
/// default 0.
pub const DEVICE_VARIABLE: &str = "SCOPED_SYNC_DEVICE";

/// A GPU with the project's kernels loaded. Dereferences to its [`Runtime`].
#[derive(Clone, Debug)]
pub struct Gpu {
    module: Module,
}

impl Gpu {
    /// Opens the GPU [`DEVICE_VARIABLE`] names (default 0) and loads the kernels in
    /// the build [`EmbeddedModule::default_build`] picks.
    pub fn open() -> Result<Self, CudaError> {
        let runtime = Runtime::open(device_ordinal())?;
        let module = runtime.load(&KERNELS)?;
        Ok(Self { module })
    }

    /// Opens GPU `ordinal` (whatever [`DEVICE_VARIABLE`] says) with the kernels in the
    /// build [`EmbeddedModule::default_build`] picks: for tests that use several GPUs.
    pub fn open_ordinal(ordinal: usize) -> Result<Self, CudaError> {
        let runtime = Runtime::open(ordinal)?;
        let module = runtime.load(&KERNELS)?;
        Ok(Self { module })
    }

    /// As [`open`](Self::open), with the given build of the kernels.
    pub fn open_build(build: KernelBuild) -> Result<Self, CudaError> {
        let runtime = Runtime::open(device_ordinal())?;
        let module = runtime.load_build(&KERNELS, build)?;
        Ok(Self { module })
    }

    /// As [`open`](Self::open), with the CUDA C++ kernels ([`CUDA_KERNELS`]) as the
    /// module, in the build [`EmbeddedModule::default_build`] picks.
    pub fn open_cuda_cpp() -> Result<Self, CudaError> {
        let runtime = Runtime::open(device_ordinal())?;
        let module = runtime.load(&CUDA_KERNELS)?;
        Ok(Self { module })
    }

    /// The same GPU with `module` in place of the kernels.
    pub fn with_module(module: Module) -> Self {
        Self { module }
    }

    /// A kernel of the project's module.
    pub fn kernel(&self, name: &str) -> Result<Kernel, CudaError> {
        self.module.kernel(name)
    }

    /// The loaded module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Which build of the kernels is loaded.
    pub fn kernel_build(&self) -> KernelBuild {
        self.module
            .build()
            .expect("loaded from the embedded kernels")
    }
}

impl Deref for Gpu {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        self.module.runtime()
    }
}

/// The ordinal in [`DEVICE_VARIABLE`], or 0.
fn device_ordinal() -> usize {
    std::env::var(DEVICE_VARIABLE)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}
