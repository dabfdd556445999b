//! [`MappedBuffer`]: pinned host memory mapped into the GPU's address space.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::{CudaError, Runtime};

/// Page-locked host memory that kernels reach through a device address
/// (`cuMemHostAlloc` with `CU_MEMHOSTALLOC_DEVICEMAP`).
///
/// On a PCIe machine only aligned loads and stores are atomic across the bus: the
/// host and the GPU must not both read-modify-write one word of it.
pub struct MappedBuffer<'a> {
    runtime: &'a Runtime,
    host: *mut u32,
    device: sys::CUdeviceptr,
    words: usize,
}

impl<'a> MappedBuffer<'a> {
    pub(super) fn new(runtime: &'a Runtime, words: usize) -> Result<Self, CudaError> {
        runtime.bind()?;
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the size is what we ask for.
        unsafe { sys::cuMemHostAlloc(&mut host, words * 4, sys::CU_MEMHOSTALLOC_DEVICEMAP) }
            .result()
            .map_err(CudaError::driver("allocate mapped host memory"))?;
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` was just allocated with DEVICEMAP.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) }.result();
        if let Err(error) = mapped {
            // SAFETY: `host` came from cuMemHostAlloc and is not used afterwards.
            unsafe { sys::cuMemFreeHost(host) };
            return Err(CudaError::driver("map host memory into the GPU")(error));
        }
        // SAFETY: fresh allocation of `words` u32s, exclusively ours.
        unsafe { std::ptr::write_bytes(host.cast::<u32>(), 0, words) };
        Ok(Self {
            runtime,
            host: host.cast(),
            device,
            words,
        })
    }

    /// The device address kernels use.
    pub fn device_address(&self) -> sys::CUdeviceptr {
        self.device
    }

    /// Number of 32-bit words.
    pub fn len(&self) -> usize {
        self.words
    }

    /// Whether the buffer has no words.
    pub fn is_empty(&self) -> bool {
        self.words == 0
    }

    /// Reads word `index` (a volatile load: a kernel may write it concurrently).
    pub fn read(&self, index: usize) -> u32 {
        assert!(
            index < self.words,
            "MappedBuffer::read: index {index} out of {} words",
            self.words
        );
        // SAFETY: in bounds, aligned, and alive until drop.
        unsafe { self.host.add(index).read_volatile() }
    }
}

impl Drop for MappedBuffer<'_> {
    fn drop(&mut self) {
        // Kernels may still use it: wait for them before freeing.
        let _ = self.runtime.context.synchronize();
        // SAFETY: allocated by cuMemHostAlloc in `new`, freed once.
        unsafe { sys::cuMemFreeHost(self.host.cast()) };
    }
}
