//! The CUDA runtime side: a context on the first GPU with the project's kernels
//! loaded, device memory for sync objects, and typed launches.
//!
//! Built on cudarc with dynamic loading: everything here compiles without CUDA, and
//! [`Runtime::open`] returns [`CudaError::NoDriver`] on a machine without a driver.

pub mod beside;
pub mod bus_demo;
mod core_pin;
mod error;
mod grid;
mod host_wait;
mod launch_ex;
pub mod litmus;
pub mod litmus_host;
mod mapped;
mod placement;
mod polled;
pub mod primitive_costs;
mod timing;

use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    LaunchArgs, LaunchConfig, ValidAsZeroBits,
};

pub use crate::ptx::KernelBuild;
pub use core_pin::CorePin;
/// Kernel arguments are pushed with `args.arg(&value)` (cudarc's trait).
pub use cudarc::driver::{LaunchArgs as KernelArgs, PushKernelArg};
pub use error::CudaError;
pub use host_wait::{HostWait, HostWaitError, QUERY_PERIOD};
pub use launch_ex::{KernelParams, LaunchOptions, MemSyncDomain};
pub use mapped::MappedBuffer;
pub use placement::{Managed, Mapped, Placed, PlacementError, Shareable};
pub use polled::Polled;

/// The first GPU, with the embedded kernels loaded.
pub struct Runtime {
    context: Arc<CudaContext>,
    module: Arc<CudaModule>,
    stream: Arc<CudaStream>,
    build: KernelBuild,
}

impl Runtime {
    /// Opens GPU 0 and loads the embedded PTX of [`KernelBuild::from_environment`]:
    /// the checked kernels in a debug build of this program, the optimized ones in a
    /// release build, unless `SCOPED_SYNC_KERNELS` says otherwise.
    pub fn open() -> Result<Self, CudaError> {
        Self::open_build(KernelBuild::from_environment())
    }

    /// Opens GPU 0 and loads the given build of the kernels.
    pub fn open_build(build: KernelBuild) -> Result<Self, CudaError> {
        // SAFETY: only probes whether the driver library can be loaded.
        if !unsafe { sys::is_culib_present() } {
            return Err(CudaError::NoDriver);
        }
        let ptx = build.ptx()?;
        let context =
            CudaContext::new(0).map_err(CudaError::driver("create a context on GPU 0"))?;
        let module = context
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(CudaError::driver("load the kernels' PTX"))?;
        let stream = context.default_stream();
        Ok(Self {
            context,
            module,
            stream,
            build,
        })
    }

    /// The build of the kernels this runtime loaded.
    pub fn kernel_build(&self) -> KernelBuild {
        self.build
    }

    /// The GPU's name.
    pub fn name(&self) -> Result<String, CudaError> {
        self.context
            .name()
            .map_err(CudaError::driver("read the device name"))
    }

    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> Result<u32, CudaError> {
        self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "read the SM count",
        )
    }

    /// The SM clock rate the driver reports, in MHz (`%clock64` ticks at it).
    pub fn clock_mhz(&self) -> Result<u32, CudaError> {
        let khz = self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
            "read the clock rate",
        )?;
        Ok(khz / 1000)
    }

    /// Memory-synchronization domains the GPU has (4 on Hopper, 1 before).
    pub fn domain_count(&self) -> Result<u32, CudaError> {
        self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT,
            "read the memory-sync domain count",
        )
    }

    /// A non-negative device attribute.
    fn attribute(
        &self,
        attribute: sys::CUdevice_attribute,
        operation: &'static str,
    ) -> Result<u32, CudaError> {
        let value = self
            .context
            .attribute(attribute)
            .map_err(CudaError::driver(operation))?;
        Ok(u32::try_from(value).unwrap_or(0))
    }

    /// A new stream, for work that must run beside the default stream's.
    pub fn new_stream(&self) -> Result<Stream, CudaError> {
        let inner = self
            .context
            .new_stream()
            .map_err(CudaError::driver("create a stream"))?;
        Ok(Stream { inner })
    }

    /// The default stream.
    pub fn default_stream(&self) -> Stream {
        Stream {
            inner: self.stream.clone(),
        }
    }

    /// `words` zeroed words of pinned host memory mapped into the GPU.
    pub fn mapped(&self, words: usize) -> Result<MappedBuffer<'_>, CudaError> {
        MappedBuffer::new(self, words)
    }

    /// The device address of `slice` (for [`KernelParams`]).
    pub fn address<T>(&self, slice: &CudaSlice<T>) -> sys::CUdeviceptr {
        let (address, _sync) = slice.device_ptr(&self.stream);
        address
    }

    /// Makes the context current on this thread (raw driver calls need it).
    fn bind(&self) -> Result<(), CudaError> {
        self.context
            .bind_to_thread()
            .map_err(CudaError::driver("bind the context"))
    }

    /// A kernel of the embedded module.
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>, CudaError> {
        let function = self
            .module
            .load_function(name)
            .map_err(CudaError::driver("find a kernel"))?;
        Ok(Kernel {
            runtime: self,
            function,
            name: name.to_owned(),
            grid_barrier: std::cell::OnceCell::new(),
        })
    }

    /// Device memory holding `values`.
    pub fn upload<T: DeviceRepr>(&self, values: &[T]) -> Result<CudaSlice<T>, CudaError> {
        self.stream
            .clone_htod(values)
            .map_err(CudaError::driver("copy to the device"))
    }

    /// Device memory holding a copy of `object`, a sync object built on the host: the
    /// device flavour of the same primitive has the same bytes (the shared layouts are
    /// asserted at compile time on both sides), so a kernel takes the pointer as a
    /// `*const sync_device::Barrier` (or `Latch`, ...).
    pub fn upload_object<T: DeviceObject>(&self, object: &T) -> Result<CudaSlice<u8>, CudaError> {
        // SAFETY: `DeviceObject` types are plain words without padding or pointers.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                std::ptr::from_ref(object).cast::<u8>(),
                std::mem::size_of::<T>(),
            )
        };
        self.upload(bytes)
    }

    /// Zeroed device memory for `len` values.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>, CudaError> {
        self.stream
            .alloc_zeros(len)
            .map_err(CudaError::driver("allocate device memory"))
    }

    /// The values of `slice`, after the stream's work so far.
    pub fn download<T: DeviceRepr + Default + Clone>(
        &self,
        slice: &CudaSlice<T>,
    ) -> Result<Vec<T>, CudaError> {
        self.stream
            .clone_dtoh(slice)
            .map_err(CudaError::driver("copy from the device"))
    }

    /// Waits for the stream's work; a kernel fault shows up here.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.stream
            .synchronize()
            .map_err(CudaError::driver("synchronize the stream"))
    }
}

/// A CUDA stream: work on different streams may run concurrently.
pub struct Stream {
    inner: Arc<CudaStream>,
}

impl Stream {
    /// Waits for the stream's work; a kernel fault shows up here.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.inner
            .synchronize()
            .map_err(CudaError::driver("synchronize a stream"))
    }

    /// Maps this stream's logical memory-synchronization domains to physical ones
    /// (`default` for [`MemSyncDomain::Default`] launches, `remote` for
    /// [`MemSyncDomain::Remote`]); below [`Runtime::domain_count`].
    pub fn set_domain_map(&self, default: u8, remote: u8) -> Result<(), CudaError> {
        self.bind()?;
        // SAFETY: an all-zero attribute value is valid plain C data.
        let mut value: sys::CUstreamAttrValue = unsafe { std::mem::zeroed() };
        value.memSyncDomainMap.default_ = default;
        value.memSyncDomainMap.remote = remote;
        // SAFETY: a live stream of this context and a value that outlives the call.
        unsafe {
            sys::cuStreamSetAttribute(
                self.raw(),
                sys::CUstreamAttrID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
                &value,
            )
        }
        .result()
        .map_err(CudaError::driver("set a stream's memory-sync domain map"))
    }

    /// This stream's domain map as `(default, remote)` physical domains.
    pub fn domain_map(&self) -> Result<(u8, u8), CudaError> {
        self.bind()?;
        // SAFETY: as above; the driver fills the value.
        let mut value: sys::CUstreamAttrValue = unsafe { std::mem::zeroed() };
        // SAFETY: a live stream of this context and a value to fill.
        unsafe {
            sys::cuStreamGetAttribute(
                self.raw(),
                sys::CUstreamAttrID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
                &mut value,
            )
        }
        .result()
        .map_err(CudaError::driver("read a stream's memory-sync domain map"))?;
        // SAFETY: the driver wrote the domain-map member of the union.
        let map = unsafe { value.memSyncDomainMap };
        Ok((map.default_, map.remote))
    }

    fn bind(&self) -> Result<(), CudaError> {
        self.inner
            .context()
            .bind_to_thread()
            .map_err(CudaError::driver("bind the context"))
    }

    /// Whether work queued on the stream is still running (`cuStreamQuery`).
    pub fn is_busy(&self) -> Result<bool, CudaError> {
        self.bind()?;
        self.query_bound()
    }

    fn raw(&self) -> sys::CUstream {
        self.inner.cu_stream()
    }
}

/// A host-built sync object whose bytes a kernel may use as the device flavour's.
///
/// # Safety
///
/// The type is `#[repr(C)]`, made of 32-bit atomic words only (no padding, pointers or
/// closures), with the same layout as its device flavour.
pub unsafe trait DeviceObject {}

// SAFETY: state and expected words; the layout is asserted in `crate::layout_checks`.
unsafe impl DeviceObject for crate::Barrier {}
// SAFETY: one word; asserted likewise.
unsafe impl DeviceObject for crate::Latch {}
// SAFETY: count and waiter words; asserted likewise.
unsafe impl<const MAX: u32> DeviceObject for crate::CountingSemaphore<MAX> {}
// SAFETY: an array of such objects has their layout back to back, without padding
// (each size is a multiple of its alignment).
unsafe impl<T: DeviceObject, const N: usize> DeviceObject for [T; N] {}

/// One kernel of the module, ready to launch.
pub struct Kernel<'a> {
    runtime: &'a Runtime,
    function: CudaFunction,
    name: String,
    /// The arrival counter of `launch_grid`'s grid barrier, allocated at first use.
    grid_barrier: std::cell::OnceCell<grid::GridBarrier>,
}

impl Kernel<'_> {
    /// The kernel's name in the PTX module.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Blocks of `block_threads` threads that fit on the GPU at once (occupancy per SM
    /// × SM count): the most a cooperative launch may ask for.
    pub fn max_coresident_blocks(&self, block_threads: u32) -> Result<u32, CudaError> {
        let per_sm = self
            .function
            .occupancy_max_active_blocks_per_multiprocessor(block_threads, 0, None)
            .map_err(CudaError::driver("query occupancy"))?;
        Ok(per_sm * self.runtime.sm_count()?)
    }

    /// Launches on `grid × block` threads; `args` pushes the kernel's arguments.
    ///
    /// # Safety
    ///
    /// The arguments must match the kernel's parameters in number, order and type.
    pub unsafe fn launch<'a>(
        &'a self,
        grid: u32,
        block: u32,
        args: impl FnOnce(&mut LaunchArgs<'a>),
    ) -> Result<(), CudaError> {
        // SAFETY: the caller vouches for the arguments.
        unsafe { self.launch_with(grid, block, false, args) }
    }

    /// A cooperative launch: every block co-resident, so grid-wide barriers are safe.
    /// Refuses a grid larger than [`max_coresident_blocks`](Self::max_coresident_blocks)
    /// with [`CudaError::GridTooLarge`] instead of deadlocking.
    ///
    /// # Safety
    ///
    /// As for [`launch`](Self::launch).
    pub unsafe fn launch_cooperative<'a>(
        &'a self,
        grid: u32,
        block: u32,
        args: impl FnOnce(&mut LaunchArgs<'a>),
    ) -> Result<(), CudaError> {
        let max = self.max_coresident_blocks(block)?;
        if grid > max {
            return Err(CudaError::GridTooLarge {
                requested: grid,
                max,
            });
        }
        // SAFETY: the caller vouches for the arguments.
        unsafe { self.launch_with(grid, block, true, args) }
    }

    /// The one launch path of [`launch`](Self::launch) and
    /// [`launch_cooperative`](Self::launch_cooperative).
    ///
    /// # Safety
    ///
    /// As for [`launch`](Self::launch).
    unsafe fn launch_with<'a>(
        &'a self,
        grid: u32,
        block: u32,
        cooperative: bool,
        args: impl FnOnce(&mut LaunchArgs<'a>),
    ) -> Result<(), CudaError> {
        let mut builder = self.runtime.stream.launch_builder(&self.function);
        args(&mut builder);
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the caller vouches for the arguments.
        let launched = unsafe {
            if cooperative {
                builder.launch_cooperative(config)
            } else {
                builder.launch(config)
            }
        };
        launched.map_err(CudaError::driver("launch a kernel"))?;
        Ok(())
    }
}
