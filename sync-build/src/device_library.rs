//! [`DeviceLibrary`]: scoped-sync's device functions for CUDA C++ kernels, built to
//! relocatable PTX.

use std::path::{Path, PathBuf};

use crate::{BuildError, Built, KernelCrate};

/// The stem of the device library's PTX in `OUT_DIR` (`scoped_sync_device.ptx`,
/// `scoped_sync_device-checked.ptx`): `include_kernels!("scoped_sync_device")` embeds it
/// for run-time linking.
pub const DEVICE_LIBRARY_STEM: &str = "scoped_sync_device";

/// The repository this sync-build was compiled from.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sync-build sits in the repository root")
        .to_owned()
}

/// The directory holding `scoped_sync.cuh`, for a C++ compiler's `-I`.
pub fn include_dir() -> PathBuf {
    repository().join("include")
}

/// scoped-sync's device library: every primitive's device side as `extern "C"`
/// functions (`ss_barrier_device_arrive_and_wait`, `ss_handoff_channel_consumer`, …)
/// in one PTX module without kernels, which CUDA C++ code calls through
/// `scoped_sync.cuh` once linked with it: offline by nvcc ([`CudaKernels`](crate::CudaKernels)
/// does it), or at run time by the driver's JIT linker (`Runtime::link_with_library`,
/// `Runtime::compile_cuda`).
///
/// It is the same Rust code a Rust kernel runs (sync-device with its `c-abi`
/// feature), so a C++ kernel, a Rust kernel and a host thread keep one protocol on one
/// object. The checked flavour traps a scope misuse or a broken precondition with the
/// same message as a checked Rust kernel.
///
/// # Examples
///
/// A build script that embeds the library for a host program that compiles its C++
/// with NVRTC at run time:
///
/// ```no_run
/// // build.rs
/// sync_build::DeviceLibrary::new().checked(true).build_or_record();
/// // main.rs:
/// // static LIBRARY: scoped_sync::cuda::EmbeddedModule =
/// //     scoped_sync::include_kernels!("scoped_sync_device");
/// ```
#[derive(Clone, Debug)]
pub struct DeviceLibrary {
    krate: KernelCrate,
}

impl DeviceLibrary {
    /// The library for the default architecture ([`DEFAULT_ARCH`](crate::DEFAULT_ARCH)),
    /// release flavour only.
    pub fn new() -> Self {
        let repository = repository();
        Self {
            krate: KernelCrate::new(repository.join("sync-device/library"))
                .name(DEVICE_LIBRARY_STEM)
                .library(true)
                .locked(true)
                .remap_path_prefix(&repository),
        }
    }

    /// The GPU architecture (see [`KernelCrate::arch`]).
    pub fn arch(mut self, arch: &str) -> Self {
        self.krate = self.krate.arch(arch);
        self
    }

    /// The PTX ISA version (see [`KernelCrate::ptx_isa`]).
    pub fn ptx_isa(mut self, major: u32, minor: u32) -> Self {
        self.krate = self.krate.ptx_isa(major, minor);
        self
    }

    /// Also builds the checked flavour.
    pub fn checked(mut self, checked: bool) -> Self {
        self.krate = self.krate.checked(checked);
        self
    }

    /// A missing toolchain fails the build (see [`KernelCrate::required`]).
    pub fn required(mut self, required: bool) -> Self {
        self.krate = self.krate.required(required);
        self
    }

    /// The stem of the output files (default [`DEVICE_LIBRARY_STEM`]); one per
    /// architecture where a build script builds it for several.
    pub fn name(mut self, stem: &str) -> Self {
        self.krate = self.krate.name(stem);
        self
    }

    /// Builds the library's PTX into `OUT_DIR` (see [`KernelCrate::build`]).
    ///
    /// # Errors
    ///
    /// As [`KernelCrate::build`].
    pub fn build(&self) -> Result<Built, BuildError> {
        self.krate.build()
    }

    /// Builds it, or records why not (see [`KernelCrate::build_or_record`]).
    ///
    /// # Panics
    ///
    /// As [`KernelCrate::build_or_record`].
    pub fn build_or_record(&self) -> Option<Built> {
        self.krate.build_or_record()
    }

    #[cfg(test)]
    pub(crate) fn kernel_crate(&self) -> &KernelCrate {
        &self.krate
    }
}

impl Default for DeviceLibrary {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_crate_and_header_ship_with_sync_build() {
        assert!(repository()
            .join("sync-device/library/Cargo.toml")
            .is_file());
        assert!(include_dir().join("scoped_sync.cuh").is_file());
        let library = DeviceLibrary::new().arch("sm_80").ptx_isa(7, 8);
        assert!(library.kernel_crate().library);
        assert_eq!(library.kernel_crate().stem().unwrap(), DEVICE_LIBRARY_STEM);
    }
}
