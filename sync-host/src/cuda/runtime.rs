//! [`Runtime`]: a context and a stream on one GPU, and device memory for sync objects.

use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits,
};

use super::{CudaError, Stream};

/// One GPU: a CUDA context and the stream its plain launches and copies use.
///
/// Open one by ordinal ([`open`](Self::open)), or wrap a cudarc stream the program
/// already has ([`from_cudarc`](Self::from_cudarc)), then [`load`](Self::load) modules.
/// Cloning is cheap and shares the context and stream.
///
/// ```no_run
/// use sync_host::cuda::{CudaError, KernelArgs, LaunchConfig, Runtime};
///
/// // Any PTX: from a kernel crate (`include_kernels!`), nvcc, NVRTC, or written by hand.
/// const PTX: &str = r#"
/// .version 8.0
/// .target sm_90
/// .address_size 64
/// .visible .entry add_one(.param .u64 data) {
///     .reg .u64 %rd<2>;
///     .reg .u32 %r<2>;
///     ld.param.u64 %rd0, [data];
///     cvta.to.global.u64 %rd1, %rd0;
///     ld.global.u32 %r0, [%rd1];
///     add.u32 %r1, %r0, 1;
///     st.global.u32 [%rd1], %r1;
///     ret;
/// }
/// "#;
///
/// # fn main() -> Result<(), CudaError> {
/// let runtime = match Runtime::open(0) {
///     Err(CudaError::NoDriver) => return Ok(()), // no GPU here
///     opened => opened?,
/// };
/// let module = runtime.load_ptx("add_one", PTX)?;
/// let add_one = module.kernel("add_one")?;
/// let data = runtime.upload(&[41_u32])?;
/// // SAFETY: `add_one` takes one pointer to a u32.
/// unsafe { add_one.launch(LaunchConfig::new(1, 1), KernelArgs::new().arg(&data)) }?;
/// assert_eq!(runtime.download(&data)?, [42]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runtime {
    pub(super) context: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("ordinal", &self.ordinal())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Opens GPU `ordinal` (its primary context) with its default stream.
    ///
    /// # Errors
    ///
    /// [`CudaError::NoDriver`] on a machine without a CUDA driver,
    /// [`CudaError::NoSuchDevice`] for an ordinal past the last GPU.
    pub fn open(ordinal: usize) -> Result<Self, CudaError> {
        let count = Self::device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoSuchDevice { ordinal, count });
        }
        let context = CudaContext::new(ordinal).map_err(CudaError::driver("create a context"))?;
        let stream = context.default_stream();
        Ok(Self { context, stream })
    }

    /// How many GPUs the driver sees.
    ///
    /// # Errors
    ///
    /// [`CudaError::NoDriver`] on a machine without a CUDA driver.
    pub fn device_count() -> Result<usize, CudaError> {
        // SAFETY: only probes whether the driver library can be loaded.
        if !unsafe { sys::is_culib_present() } {
            return Err(CudaError::NoDriver);
        }
        let count = CudaContext::device_count().map_err(CudaError::driver("count the GPUs"))?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// A runtime on the context of `stream`, a cudarc stream the program already uses:
    /// plain launches, copies and [`gpu_time`](Self::gpu_time) go to that stream.
    pub fn from_cudarc(stream: Arc<CudaStream>) -> Self {
        Self {
            context: stream.context().clone(),
            stream,
        }
    }

    /// The GPU's ordinal.
    pub fn ordinal(&self) -> usize {
        self.context.ordinal()
    }

    /// The cudarc context.
    pub fn cudarc_context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The cudarc stream of plain launches and copies.
    pub fn cudarc_stream(&self) -> &Arc<CudaStream> {
        &self.stream
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
    pub(super) fn attribute(
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

    /// The stream of plain launches and copies.
    pub fn default_stream(&self) -> Stream {
        Stream {
            inner: self.stream.clone(),
        }
    }

    /// `words` zeroed words of pinned host memory mapped into the GPU.
    pub fn mapped(&self, words: usize) -> Result<super::MappedBuffer<'_>, CudaError> {
        super::MappedBuffer::new(self, words)
    }

    /// The device address of `slice` (a kernel argument is the slice itself:
    /// [`KernelArgs::arg`](super::KernelArgs::arg)).
    pub fn address<T>(&self, slice: &CudaSlice<T>) -> sys::CUdeviceptr {
        let (address, _sync) = slice.device_ptr(&self.stream);
        address
    }

    /// Makes the context current on this thread (raw driver calls need it).
    pub(super) fn bind(&self) -> Result<(), CudaError> {
        self.context
            .bind_to_thread()
            .map_err(CudaError::driver("bind the context"))
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
        let mut memory = self.zeros::<u8>(std::mem::size_of::<T>().max(1))?;
        let bytes = device_bytes(object);
        self.stream
            .memcpy_htod(&bytes, &mut memory)
            .map_err(CudaError::driver("copy to the device"))?;
        Ok(memory)
    }

    /// Device memory holding a new stop source (stop not requested, no callbacks) for
    /// kernels: a kernel takes the pointer as a `*const sync_device::StopSource<S>` of
    /// any scope `S` (`Device` by default there). A stop source links its registered
    /// callbacks by pointer, so one built on the host is not a [`DeviceObject`] and
    /// cannot be uploaded; its new state is all zero bytes, which this allocates.
    /// Between host and GPU threads use a `BusStopSource` placed with
    /// [`place_mapped`](Self::place_mapped).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn main() -> Result<(), sync_host::cuda::CudaError> {
    /// let runtime = sync_host::cuda::Runtime::open(0)?;
    /// let stop = runtime.new_stop_source()?; // a kernel's `*const StopSource`
    /// # Ok(()) }
    /// ```
    pub fn new_stop_source(&self) -> Result<CudaSlice<u8>, CudaError> {
        self.zeros::<u8>(sync_shared::layout::STOP_SOURCE.size)
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

/// A host-built sync object whose bytes a kernel may use as the device flavour's.
///
/// # Safety
///
/// The type is `#[repr(C)]`, made of atomic words only (32- or 64-bit; no padding,
/// pointers or closures), with the same layout as its device flavour, and has no
/// destructor; `attach_in_gpu_memory` only stores to GPU side words.
pub unsafe trait DeviceObject {
    /// Prepares the host's copy of the bytes that will lie in GPU memory (device,
    /// managed or peer memory): a bus object's GPU side words are marked as the lines'
    /// own (`sync_shared::bus::ITS_OWN_WORD`: the bytes read the same at any address,
    /// so every process may map them where it likes); nothing for the others.
    ///
    /// # Safety
    ///
    /// `self` is that copy, and its bytes are copied to GPU memory before any kernel
    /// uses them.
    unsafe fn attach_in_gpu_memory(&self) {}
}

/// The bytes of a bitwise copy of `object` that will lie in GPU memory, with its GPU
/// side words attached there.
pub(super) fn device_bytes<T: DeviceObject>(object: &T) -> Vec<u8> {
    // SAFETY: `copy` is the host's copy of the bytes the caller puts in GPU memory.
    device_bytes_with(object, |copy| unsafe { copy.attach_in_gpu_memory() })
}

/// The bytes of a bitwise copy of `object`, after `attach` marked the copy's GPU side
/// lines for the memory the bytes go to.
pub(super) fn device_bytes_with<T: DeviceObject>(object: &T, attach: impl FnOnce(&T)) -> Vec<u8> {
    let mut copy = Box::<T>::new_uninit();
    // SAFETY: room for one `T`; `DeviceObject` types are plain words, so a bitwise copy
    // is a valid object.
    let copy = unsafe {
        std::ptr::copy_nonoverlapping(object, copy.as_mut_ptr(), 1);
        copy.assume_init_ref()
    };
    attach(copy);
    // SAFETY: `size_of::<T>()` initialized bytes without padding (`DeviceObject`).
    unsafe {
        std::slice::from_raw_parts(
            std::ptr::from_ref(copy).cast::<u8>(),
            std::mem::size_of::<T>(),
        )
    }
    .to_vec()
}

/// The `DeviceObject` methods of a bus object: its GPU side lines point at themselves.
macro_rules! attach_bus_lines {
    () => {
        unsafe fn attach_in_gpu_memory(&self) {
            // SAFETY: the caller's contract, which is `GpuSideLines`' too.
            unsafe { sync_shared::bus::GpuSideLines::attach_own_words(self) }
        }
    };
}

// SAFETY: state and expected words; the layout is asserted in `crate::layout_checks`.
unsafe impl DeviceObject for crate::Barrier {}
// SAFETY: one word; asserted likewise.
unsafe impl DeviceObject for crate::Latch {}
// SAFETY: count and waiter words; asserted likewise.
unsafe impl<const MAX: u32> DeviceObject for crate::CountingSemaphore<MAX> {}
// SAFETY: bus objects: 64-bit atomic words on lines of their own and a zero-sized
// marker (layouts asserted in `crate::layout_checks`); the `GpuToGpu` semaphore and the
// stop source are the bus objects whose both ends may be GPUs.
unsafe impl DeviceObject for crate::HandoffSemaphore<crate::GpuToGpu> {
    attach_bus_lines!();
}
// SAFETY: as above.
unsafe impl DeviceObject for crate::BusStopSource {
    attach_bus_lines!();
}
// SAFETY: an array of such objects has their layout back to back, without padding
// (each size is a multiple of its alignment).
unsafe impl<T: DeviceObject, const N: usize> DeviceObject for [T; N] {
    unsafe fn attach_in_gpu_memory(&self) {
        for element in self {
            // SAFETY: each element lies in the GPU memory the array lies in.
            unsafe { element.attach_in_gpu_memory() };
        }
    }
}
