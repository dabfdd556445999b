//! [`MappedBuffer`]: pinned host memory mapped into the GPU's address space.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use cudarc::driver::sys;

use super::{CudaError, Runtime};

/// Page-locked host memory that kernels reach through a device address
/// (`cuMemHostAlloc` with `CU_MEMHOSTALLOC_DEVICEMAP`).
///
/// On a PCIe machine only aligned loads and stores are atomic across the bus: the
/// host and the GPU must not both read-modify-write one word of it.
///
/// # Examples
///
/// Host and kernel exchange words through the buffer; the kernel gets
/// [`device_address`](Self::device_address):
///
/// ```no_run
/// use sync_host::cuda::{KernelArgs, LaunchConfig, Runtime};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let buffer = runtime.mapped(64)?; // 64 words of 32 bits, zeroed
/// buffer.write_u64(0, 42); // words 0 and 1
/// let kernel = runtime.load_file("my-kernels.ptx")?.kernel("double_first")?;
/// let stream = runtime.new_stream()?;
/// let args = KernelArgs::new().arg(&buffer);
/// // SAFETY: `double_first` takes one u64 pointer; the buffer outlives it.
/// unsafe { kernel.launch(LaunchConfig::new(1, 1).on(&stream), args) }?;
/// stream.synchronize()?;
/// assert_eq!(buffer.read_u64(0), 84);
/// # Ok(())
/// # }
/// ```
pub struct MappedBuffer<'a> {
    runtime: &'a Runtime,
    host: *mut u32,
    device: sys::CUdeviceptr,
    words: usize,
}

impl<'a> MappedBuffer<'a> {
    pub(super) fn new(runtime: &'a Runtime, words: usize) -> Result<Self, CudaError> {
        runtime.bind()?;
        let (host, device) = super::placement::allocate_mapped(words * 4)?;
        let host = host.as_ptr();
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

// SAFETY: the buffer is only read and written through volatile or atomic accesses of
// whole aligned words, which threads may do concurrently.
unsafe impl Sync for MappedBuffer<'_> {}

impl MappedBuffer<'_> {
    /// The words as host atomics (kernels may read and write them concurrently; loads
    /// and stores of aligned words are atomic across the bus, read-modify-writes are not).
    pub fn host_words(&self) -> &[AtomicU32] {
        // SAFETY: `words` aligned u32s alive until drop; `AtomicU32` has `u32`'s layout.
        unsafe { std::slice::from_raw_parts(self.host.cast::<AtomicU32>(), self.words) }
    }

    /// Reads the `index`-th `u64` (words `2 index` and `2 index + 1`), atomically.
    pub fn read_u64(&self, index: usize) -> u64 {
        self.u64_at(index).load(Ordering::Acquire)
    }

    /// Writes the `index`-th `u64`, atomically.
    pub fn write_u64(&self, index: usize, value: u64) {
        self.u64_at(index).store(value, Ordering::Release)
    }

    fn u64_at(&self, index: usize) -> &AtomicU64 {
        assert!(
            index < self.words / 2,
            "MappedBuffer: u64 index {index} out of {} words",
            self.words
        );
        // SAFETY: in bounds; the allocation is page-aligned, so every even word is
        // 8-byte aligned; alive until drop.
        unsafe { &*self.host.cast::<AtomicU64>().add(index) }
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
