//! [`Nvshmem::load`]: kernels that call NVSHMEM's device operations, linked with
//! NVSHMEM's device library, loaded and initialized for it.
//!
//! NVSHMEM's device API is inline C++; Rust kernels reach it through the shim that
//! `sync_build::NvshmemShim` compiles against NVSHMEM's headers
//! (`include/scoped_sync_nvshmem.cu`) and device-links, with
//! `libnvshmem_device.a`, into each kernel crate's cubin (nvcc's device linker, as
//! `sync_build::CudaKernels` links CUDA C++ kernels with scoped-sync's device library).
//! Loading it, `nvshmemx_cumodule_init` fills in the module's copy of NVSHMEM's device
//! state.

use std::ffi::c_int;
use std::sync::Arc;

use cudarc::driver::sys;

use super::{check, Nvshmem, NvshmemError};
use crate::cuda::module::BeforeUnload;
use crate::cuda::{CudaError, EmbeddedModule, KernelBuild, Module};

/// The shim's empty kernel, by which the host finds a linked module's handle.
const SHIM_KERNEL: &str = "scoped_sync_nvshmem_shim";

/// The shim's record of the NVSHMEM release whose headers it was compiled with: three
/// `int`s, major, minor, patch.
const SHIM_RELEASE: &std::ffi::CStr = c"scoped_sync_nvshmem_release";

impl Nvshmem {
    /// Loads kernels that call NVSHMEM: a kernel crate built with sync-device's
    /// `nvshmem` feature (a `MultiGrid` joined with
    /// [`MultiGrid::join_nvshmem_signals`](crate::cuda::MultiGrid::join_nvshmem_signals),
    /// or `sync_device::nvshmem::quiet`) and linked by `sync_build::NvshmemShim`
    /// (`include_cuda!` of its stem), in the build [`EmbeddedModule::default_build`]
    /// picks. It checks that the shim was compiled against the loaded NVSHMEM's release
    /// (major and minor) and initializes the module's NVSHMEM device state
    /// (`nvshmemx_cumodule_init`). The module keeps NVSHMEM running while it lives and
    /// is finalized for NVSHMEM (`nvshmemx_cumodule_finalize`) when its last clone is
    /// dropped: drop its kernels first.
    ///
    /// Counterpart: `cuModuleLoad` of a cubin device-linked with `-lnvshmem_device`,
    /// then `nvshmemx_cumodule_init`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use sync_host::cuda::{CudaError, EmbeddedModule, Module, Nvshmem};
    ///
    /// // build.rs: sync_build::NvshmemShim::new().link("my_kernels").build_or_record();
    /// // static KERNELS: EmbeddedModule = include_cuda!("my_kernels");
    /// fn load(shmem: &Nvshmem, kernels: &EmbeddedModule) -> Result<Module, CudaError> {
    ///     let module = shmem.load(kernels)?;
    ///     module.kernel("step")?;
    ///     Ok(module)
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::Ptx`] when that build was not linked into the program (the reason
    /// with it: no NVSHMEM at build time, say), [`NvshmemError::ShimMissing`] for a
    /// module without the shim, [`NvshmemError::ReleaseMismatch`], the driver's
    /// refusal ([`CudaError::BadModule`]), or a failed NVSHMEM call.
    pub fn load(&self, kernels: &EmbeddedModule) -> Result<Module, CudaError> {
        self.load_build(kernels, kernels.default_build())
    }

    /// [`load`](Self::load) in the given build.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn load_build(
        &self,
        kernels: &EmbeddedModule,
        build: KernelBuild,
    ) -> Result<Module, CudaError> {
        let gpu = self.gpu();
        let mut module = gpu.load_build(kernels, build)?;
        let handle = match module.kernel(SHIM_KERNEL) {
            Ok(kernel) => {
                let mut handle = std::ptr::null_mut();
                // SAFETY: a live function of the module just loaded.
                unsafe { sys::cuFuncGetModule(&mut handle, kernel.function.cu_function()) }
                    .result()
                    .map_err(CudaError::driver("find a loaded module's handle"))?;
                handle
            }
            Err(CudaError::NoSuchKernel { .. }) => {
                return Err(NvshmemError::ShimMissing {
                    module: kernels.name().to_owned(),
                }
                .into())
            }
            Err(error) => return Err(error),
        };
        self.check_shim_release(kernels.name(), handle)?;
        let functions = self.started.functions;
        gpu.bind()?;
        // SAFETY: NVSHMEM runs on this GPU; `handle` is a live module of its context,
        // linked with NVSHMEM's device library.
        check("nvshmemx_cumodule_init", unsafe {
            (functions.cumodule_init)(handle)
        })?;
        let (shmem, handle) = (self.clone(), handle as usize);
        module.before_unload = Some(Arc::new(BeforeUnload(Box::new(move || {
            if shmem.started.gpu.bind().is_ok() {
                // SAFETY: the module initialized above, still loaded (this runs before
                // it is unloaded), and NVSHMEM still runs (`shmem` keeps it).
                unsafe { (functions.cumodule_finalize)(handle as sys::CUmodule) };
            }
        }))));
        Ok(module)
    }

    /// Compares the shim's release (read from the loaded module) with the loaded host
    /// library's, by major and minor.
    fn check_shim_release(&self, name: &str, module: sys::CUmodule) -> Result<(), CudaError> {
        let mut address = 0;
        let mut bytes = 0;
        // SAFETY: a live module; the name is NUL-terminated.
        unsafe {
            sys::cuModuleGetGlobal_v2(&mut address, &mut bytes, module, SHIM_RELEASE.as_ptr())
        }
        .result()
        .map_err(CudaError::driver("read the NVSHMEM shim's release"))?;
        let mut shim = [0 as c_int; 3];
        if bytes != size_of_val(&shim) {
            return Err(CudaError::BadModule {
                module: name.to_owned(),
                error: None,
                log: format!(
                    "{} is {bytes} bytes, not the shim's 3 ints: another definition of the name",
                    SHIM_RELEASE.to_string_lossy()
                ),
            });
        }
        // SAFETY: `bytes` (checked) device bytes at a live global into a buffer as large.
        unsafe { sys::cuMemcpyDtoH_v2(shim.as_mut_ptr().cast(), address, bytes) }
            .result()
            .map_err(CudaError::driver("read the NVSHMEM shim's release"))?;
        let library = self.release();
        let shim = (shim[0], shim[1], shim[2]);
        if (shim.0, shim.1) != (library.0, library.1) {
            return Err(NvshmemError::ReleaseMismatch { shim, library }.into());
        }
        Ok(())
    }

    /// The loaded NVSHMEM's release: major, minor, patch
    /// (`nvshmemx_vendor_get_version_info`).
    pub fn release(&self) -> (i32, i32, i32) {
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: three live ints; NVSHMEM's library is loaded.
        unsafe {
            (self.started.functions.vendor_get_version_info)(&mut major, &mut minor, &mut patch)
        };
        (major, minor, patch)
    }
}
