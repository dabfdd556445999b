//! Owners of sync objects that host threads and kernels use at the same time:
//! [`Mapped`] (pinned host memory mapped into the GPU) and [`Managed`] (CUDA managed
//! memory), each checked against CUDA's atomicity rules for its memory before the
//! object is placed.

use std::ffi::c_void;
use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;

use cudarc::driver::sys;
use sync_shared::bus::{Direction, GpuSideLines, SideLine};

use super::{CudaError, Polled, Runtime};

/// A sync object that may sit in memory both sides reach.
///
/// # Safety
///
/// The type is `#[repr(C)]`, made of atomic words and fields that do not change after
/// construction (no pointers, closures or padding the device could misread), with the
/// same layout as its device flavour, `RMW_FROM_BOTH_SIDES` is `true` if its protocol
/// ever lets a host thread and a GPU thread read-modify-write one word, and
/// `gpu_side_lines` lists every line whose word GPU threads read-modify-write through
/// an attached address (a bus object's, `GpuSideLines`).
pub unsafe trait Shareable: Sync {
    /// Whether host and GPU threads both read-modify-write one of its words (the
    /// ordinary algorithms at `System` scope do; the bus objects never do).
    const RMW_FROM_BOTH_SIDES: bool;
    /// The type's name, for errors.
    const NAME: &'static str;
    /// What the host sees through the owner: the object itself when every host wait
    /// of it takes a [`HostWait`](super::HostWait) (the bus objects), [`Polled`]
    /// otherwise (the ordinary algorithms, whose own waits would park the thread where
    /// a kernel cannot wake it).
    type HostView: ?Sized;
    /// The host's view of the object.
    fn host_view(&self) -> &Self::HostView;
    /// The lines whose words GPU threads read-modify-write at the address the runtime
    /// attaches when it places the object (a bus object's); none for the ordinary
    /// algorithms, whose words kernels use in place.
    fn gpu_side_lines(&self) -> [Option<&SideLine>; 2] {
        [None, None]
    }
}

/// The `Shareable` items every bus object shares: the object is its own host view, and
/// its GPU side lines are its `GpuSideLines`.
macro_rules! bus_object {
    ($name:literal) => {
        const RMW_FROM_BOTH_SIDES: bool = false;
        const NAME: &'static str = $name;
        type HostView = Self;
        fn host_view(&self) -> &Self {
            self
        }
        fn gpu_side_lines(&self) -> [Option<&SideLine>; 2] {
            GpuSideLines::gpu_side_lines(self)
        }
    };
}

// SAFETY: bus objects: bus words are loaded and stored only, side words are touched by
// one side only, the GPU's through the lines `GpuSideLines` lists; layouts asserted in
// `crate::layout_checks` and in sync-device.
unsafe impl<D: Direction> Shareable for crate::HandoffSemaphore<D> {
    bus_object!("HandoffSemaphore");
}
// SAFETY: as above.
unsafe impl Shareable for crate::HandoffChannel {
    bus_object!("HandoffChannel");
}
// SAFETY: as above.
unsafe impl Shareable for crate::BusLatch {
    bus_object!("BusLatch");
}
// SAFETY: as above.
unsafe impl Shareable for crate::BusBarrier {
    bus_object!("BusBarrier");
}
// SAFETY: as above.
unsafe impl Shareable for crate::BusStopSource {
    bus_object!("BusStopSource");
}
// SAFETY: the ordinary algorithms: 32-bit atomic words (layouts asserted), updated by
// read-modify-writes from whichever side uses them.
unsafe impl Shareable for crate::Barrier {
    const RMW_FROM_BOTH_SIDES: bool = true;
    const NAME: &'static str = "Barrier<System>";
    type HostView = Polled<Self>;
    fn host_view(&self) -> &Polled<Self> {
        Polled::from_ref(self)
    }
}
// SAFETY: as above.
unsafe impl Shareable for crate::Latch {
    const RMW_FROM_BOTH_SIDES: bool = true;
    const NAME: &'static str = "Latch<System>";
    type HostView = Polled<Self>;
    fn host_view(&self) -> &Polled<Self> {
        Polled::from_ref(self)
    }
}
// SAFETY: as above.
unsafe impl<const MAX: u32> Shareable for crate::CountingSemaphore<MAX> {
    const RMW_FROM_BOTH_SIDES: bool = true;
    const NAME: &'static str = "CountingSemaphore<System>";
    type HostView = Polled<Self>;
    fn host_view(&self) -> &Polled<Self> {
        Polled::from_ref(self)
    }
}

/// Why an object could not be placed.
#[derive(Debug)]
#[non_exhaustive]
pub enum PlacementError {
    /// The object's protocol needs read-modify-writes on one word from both the CPU and
    /// the GPU, and this memory on this machine does not make them atomic.
    NotAtomic {
        /// The object's type.
        object: &'static str,
        /// `"mapped"` or `"managed"`.
        memory: &'static str,
        /// The device attribute that says so (it is 0 here).
        attribute: &'static str,
    },
    /// A GPU's kernels cannot use another GPU's memory as the object needs: the driver's
    /// peer-to-peer attribute `attribute` from `user` to `owner` is 0
    /// (`CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED`: no access at all;
    /// `..._NATIVE_ATOMIC_SUPPORTED`: `user`'s atomics there are not atomic with the
    /// owner's, which an object that read-modify-writes from every party needs). See
    /// [`Runtime::place_for_peers`](super::Runtime::place_for_peers).
    PeerAttribute {
        /// The object's type.
        object: &'static str,
        /// The GPU whose kernels would use the memory.
        user: usize,
        /// The GPU the memory belongs to.
        owner: usize,
        /// The peer attribute that is 0.
        attribute: &'static str,
    },
    /// A driver call failed.
    Cuda(CudaError),
}

impl fmt::Display for PlacementError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacementError::NotAtomic {
                object,
                memory,
                attribute,
            } => write!(
                f,
                "{object} read-modify-writes its words from both CPU and GPU, which is not \
                 atomic in {memory} memory on this device ({attribute} = 0); use a bus \
                 object (HandoffSemaphore, HandoffChannel, BusLatch, BusBarrier, BusStopSource) or managed \
                 memory"
            ),
            PlacementError::PeerAttribute {
                object,
                user,
                owner,
                attribute,
            } => write!(
                f,
                "{object} in the memory of GPU {owner} cannot be used by kernels on GPU \
                 {user}: {attribute} = 0 from GPU {user} to GPU {owner}; keep the object \
                 in memory every party reaches with native atomics, or use one object per \
                 GPU"
            ),
            PlacementError::Cuda(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for PlacementError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PlacementError::Cuda(error) => Some(error),
            PlacementError::NotAtomic { .. } | PlacementError::PeerAttribute { .. } => None,
        }
    }
}

impl From<CudaError> for PlacementError {
    fn from(error: CudaError) -> Self {
        PlacementError::Cuda(error)
    }
}

/// The device attribute names of the atomicity rules.
const HOST_NATIVE_ATOMIC: &str = "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED";
const CONCURRENT_MANAGED: &str = "CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS";

/// Where an object lives and how it is freed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Memory {
    Mapped,
    Managed,
}

/// A `T` in memory both the host and kernels reach: dereferences to the host flavour
/// (a bus object) or to its [`Polled`] view (an ordinary `Latch`, `Barrier` or
/// `CountingSemaphore`, whose host waits then take a
/// [`HostWait`](super::HostWait)), and [`device_address`](Self::device_address) is the
/// kernel argument for the device flavour. Made by [`Runtime::place_mapped`] or [`Runtime::place_managed`].
///
/// Dropping it waits for the context's work (kernels may still use the object), then
/// drops and frees the object and its GPU side words.
///
/// # Examples
///
/// A semaphore the host releases and a kernel acquires (`consume(semaphore)` takes the
/// device flavour of the same object):
///
/// ```no_run
/// use sync_host::cuda::{KernelArgs, LaunchConfig, Runtime};
/// use sync_host::{HandoffSemaphore, HostToGpu};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let units = runtime.place_mapped(HandoffSemaphore::<HostToGpu>::new(0))?;
/// let kernel = runtime.load_file("my-kernels.ptx")?.kernel("consume")?;
/// let stream = runtime.new_stream()?;
/// let args = KernelArgs::new().arg(&units);
/// // SAFETY: `consume` takes the semaphore's address; `units` outlives it (its drop
/// // waits for the context's work).
/// unsafe { kernel.launch(LaunchConfig::new(1, 1).on(&stream), args) }?;
/// units.producer().expect("the only producer").release(1);
/// stream.synchronize()?;
/// # Ok(())
/// # }
/// ```
pub struct Placed<'r, T: Shareable> {
    runtime: &'r Runtime,
    host: NonNull<T>,
    device: sys::CUdeviceptr,
    memory: Memory,
    /// Device memory holding the GPU side words of an object in mapped memory, one
    /// 64-byte line each (0: none).
    gpu_words: sys::CUdeviceptr,
}

/// A [`Placed`] object in pinned mapped host memory.
pub type Mapped<'r, T> = Placed<'r, T>;
/// A [`Placed`] object in managed memory.
pub type Managed<'r, T> = Placed<'r, T>;

// SAFETY: `T: Sync` and the owner only hands out shared references.
unsafe impl<T: Shareable> Sync for Placed<'_, T> {}
// SAFETY: as above; freeing from another thread is fine for the driver.
unsafe impl<T: Shareable + Send> Send for Placed<'_, T> {}

impl<'r, T: Shareable> Placed<'r, T> {
    /// The address kernels use for the object.
    pub fn device_address(&self) -> sys::CUdeviceptr {
        self.device
    }

    /// Whether it is in mapped (`true`) or managed (`false`) memory.
    pub fn is_mapped(&self) -> bool {
        self.memory == Memory::Mapped
    }

    fn place(runtime: &'r Runtime, value: T, memory: Memory) -> Result<Self, PlacementError> {
        let size = std::mem::size_of::<T>().max(1);
        assert!(
            std::mem::align_of::<T>() <= 256,
            "CUDA allocations are 256-byte aligned"
        );
        runtime.bind()?;
        let (host, device) = match memory {
            Memory::Mapped => allocate_mapped(size)?,
            Memory::Managed => allocate_managed(size)?,
        };
        let host = host.cast::<T>();
        // SAFETY: a fresh, suitably aligned allocation of `size_of::<T>()` bytes that
        // no kernel uses yet.
        unsafe { host.as_ptr().write(value) };
        // From here on, dropping `placed` frees what is allocated so far.
        let mut placed = Self {
            runtime,
            host,
            device,
            memory,
            gpu_words: 0,
        };
        let lines = placed.object().gpu_side_lines();
        match memory {
            // Managed memory: the GPU read-modify-writes its words in place, at the same
            // address as the host's.
            Memory::Managed => {
                for line in lines.into_iter().flatten() {
                    // SAFETY: the line's own word in managed memory, alive as long as
                    // the object; no kernel uses the object yet.
                    unsafe { line.attach_gpu_word(std::ptr::from_ref(line.word()) as u64) };
                }
            }
            Memory::Mapped => placed.gpu_words = attach_device_words(&lines)?,
        }
        Ok(placed)
    }
}

impl<T: Shareable> Placed<'_, T> {
    fn object(&self) -> &T {
        // SAFETY: initialized in `place`, alive until drop, only shared references.
        unsafe { self.host.as_ref() }
    }
}

impl<T: Shareable> Deref for Placed<'_, T> {
    type Target = T::HostView;
    fn deref(&self) -> &T::HostView {
        self.object().host_view()
    }
}

impl<T: Shareable> Drop for Placed<'_, T> {
    fn drop(&mut self) {
        // Kernels and stream waits (`Stream::wait_released`) may still use it, on any
        // stream of the context: wait for all of them first. (The runtime's own stream
        // would not cover the non-blocking streams of `Runtime::new_stream`; the free
        // below waits for running kernels anyway, measured in tests/gpu_host_device.rs.)
        let _ = self.runtime.context.synchronize();
        // SAFETY: initialized in `place`, dropped once; no kernel runs any more.
        unsafe { self.host.as_ptr().drop_in_place() };
        let _ = self.runtime.bind();
        // SAFETY: allocated by the matching call in `place`, freed once.
        unsafe {
            match self.memory {
                Memory::Mapped => sys::cuMemFreeHost(self.host.as_ptr().cast()),
                Memory::Managed => sys::cuMemFree_v2(self.device),
            };
            if self.gpu_words != 0 {
                sys::cuMemFree_v2(self.gpu_words);
            }
        }
    }
}

/// Device memory holding the GPU side words of a bus object that lies in memory the
/// caller manages (a [`MappedBuffer`](super::MappedBuffer), say), made by
/// [`Runtime::attach_gpu_words`]. Dropping it waits for the context's work, detaches
/// the words (a kernel that uses the object afterwards traps: "not placed by the
/// runtime") and frees them.
pub struct GpuWords<'a> {
    runtime: &'a Runtime,
    lines: [Option<&'a SideLine>; 2],
    device: sys::CUdeviceptr,
}

impl fmt::Debug for GpuWords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuWords")
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl Drop for GpuWords<'_> {
    fn drop(&mut self) {
        let _ = self.runtime.context.synchronize();
        for line in self.lines.iter().flatten() {
            // SAFETY: 0 attaches nothing (a GPU thread traps); no kernel runs any more.
            unsafe { line.attach_gpu_word(0) };
        }
        if self.device != 0 {
            let _ = self.runtime.bind();
            // SAFETY: allocated by `attach_device_words`, freed once, no longer attached.
            unsafe { sys::cuMemFree_v2(self.device) };
        }
    }
}

/// For an object in mapped host memory: device memory with a 64-byte line for each of
/// `lines`, holding its word's value, attached to it (the GPU then never
/// read-modify-writes the mapped object). Returns the allocation (0 when there are no
/// lines). The caller has bound the context.
fn attach_device_words(lines: &[Option<&SideLine>; 2]) -> Result<sys::CUdeviceptr, CudaError> {
    const LINE: usize = 64;
    let lines: Vec<&SideLine> = lines.iter().flatten().copied().collect();
    if lines.is_empty() {
        return Ok(0);
    }
    let mut words = vec![0_u64; lines.len() * LINE / 8];
    for (index, line) in lines.iter().enumerate() {
        words[index * LINE / 8] = line.word().load(std::sync::atomic::Ordering::Relaxed);
    }
    let mut device: sys::CUdeviceptr = 0;
    let bytes = words.len() * 8;
    // SAFETY: an out-pointer to a local; `bytes` is not 0.
    unsafe { sys::cuMemAlloc_v2(&mut device, bytes) }
        .result()
        .map_err(CudaError::driver(
            "allocate the GPU side words of a bus object",
        ))?;
    // SAFETY: the fresh allocation holds `bytes` bytes; `words` as many.
    let copied = unsafe { sys::cuMemcpyHtoD_v2(device, words.as_ptr().cast(), bytes) }.result();
    if let Err(error) = copied {
        // SAFETY: allocated above, not used by anything yet.
        unsafe { sys::cuMemFree_v2(device) };
        return Err(CudaError::driver("copy the GPU side words of a bus object")(error));
    }
    for (index, line) in lines.iter().enumerate() {
        // SAFETY: a live, 64-byte aligned word of device memory holding the line's value,
        // freed only after the object (`Placed::drop`); no kernel uses the object yet.
        unsafe { line.attach_gpu_word(device + (index * LINE) as sys::CUdeviceptr) };
    }
    Ok(device)
}

impl<T: Shareable + fmt::Debug> fmt::Debug for Placed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Placed")
            .field("memory", &self.memory)
            .field("object", self.object())
            .finish()
    }
}

impl Runtime {
    /// Whether CPU and GPU read-modify-writes on one word of mapped memory are atomic
    /// (`hostNativeAtomicSupported`; 0 on PCIe machines).
    pub fn host_native_atomics(&self) -> Result<bool, CudaError> {
        Ok(self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED,
            "read hostNativeAtomicSupported",
        )? != 0)
    }

    /// Whether the CPU may use managed memory while kernels run, with system-scope
    /// atomics atomic across both (`concurrentManagedAccess`).
    pub fn concurrent_managed_access(&self) -> Result<bool, CudaError> {
        Ok(self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
            "read concurrentManagedAccess",
        )? != 0)
    }

    /// Whether kernels may use ordinary (pageable) host memory (`pageableMemoryAccess`).
    pub fn pageable_memory_access(&self) -> Result<bool, CudaError> {
        Ok(self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
            "read pageableMemoryAccess",
        )? != 0)
    }

    /// Places `value` in pinned mapped host memory, after checking that its protocol is
    /// atomic there: an object that read-modify-writes one word from both sides needs
    /// `hostNativeAtomicSupported`, and is refused with [`PlacementError::NotAtomic`]
    /// naming it otherwise. A bus object's GPU side words get a home in device memory
    /// (see `sync_shared::bus::SideLine`): no GPU read-modify-write crosses the bus.
    pub fn place_mapped<T: Shareable>(&self, value: T) -> Result<Mapped<'_, T>, PlacementError> {
        if T::RMW_FROM_BOTH_SIDES && !self.host_native_atomics()? {
            return Err(PlacementError::NotAtomic {
                object: T::NAME,
                memory: "mapped",
                attribute: HOST_NATIVE_ATOMIC,
            });
        }
        Placed::place(self, value, Memory::Mapped)
    }

    /// Gives the GPU side words of `object`, a bus object that lies in mapped memory the
    /// caller allocated (a [`MappedBuffer`](super::MappedBuffer), say), a home in this
    /// GPU's memory, as [`place_mapped`](Self::place_mapped) does for the objects it
    /// places: the kernels' read-modify-writes then never cross the bus (see
    /// `sync_shared::bus::SideLine`). Attach before launching a kernel that uses the
    /// object, and keep the returned [`GpuWords`] while kernels use it.
    ///
    /// The words start from the object's counts now.
    ///
    /// # Errors
    ///
    /// A failed driver call.
    pub fn attach_gpu_words<'a, T: Shareable>(
        &'a self,
        object: &'a T,
    ) -> Result<GpuWords<'a>, CudaError> {
        self.bind()?;
        let lines = object.gpu_side_lines();
        let device = attach_device_words(&lines)?;
        Ok(GpuWords {
            runtime: self,
            lines,
            device,
        })
    }

    /// Places `value` in managed memory, which needs `concurrentManagedAccess` for the
    /// host to use it while kernels run (and which then makes system-scope atomics
    /// atomic across CPU and GPU, so the ordinary algorithms are allowed).
    pub fn place_managed<T: Shareable>(&self, value: T) -> Result<Managed<'_, T>, PlacementError> {
        if !self.concurrent_managed_access()? {
            return Err(PlacementError::NotAtomic {
                object: T::NAME,
                memory: "managed",
                attribute: CONCURRENT_MANAGED,
            });
        }
        Placed::place(self, value, Memory::Managed)
    }
}

/// Pinned host memory mapped into the GPU: (host pointer, device address). The caller
/// has bound the context. Portable: every context of the process may map it (at the
/// same address, with unified addressing), which the host parties of a multi-GPU
/// barrier need.
pub(super) fn allocate_mapped(bytes: usize) -> Result<(NonNull<u8>, sys::CUdeviceptr), CudaError> {
    let mut host: *mut c_void = std::ptr::null_mut();
    // SAFETY: out-pointer to a local; the size is what we ask for.
    unsafe {
        sys::cuMemHostAlloc(
            &mut host,
            bytes,
            sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
        )
    }
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
    let host = NonNull::new(host.cast::<u8>()).expect("cuMemHostAlloc returned success");
    Ok((host, device))
}

/// Managed memory, attached globally: (host pointer, device address), the same address.
fn allocate_managed(bytes: usize) -> Result<(NonNull<u8>, sys::CUdeviceptr), CudaError> {
    let mut device: sys::CUdeviceptr = 0;
    // SAFETY: out-pointer to a local; the size is what we ask for.
    unsafe {
        sys::cuMemAllocManaged(
            &mut device,
            bytes,
            sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32,
        )
    }
    .result()
    .map_err(CudaError::driver("allocate managed memory"))?;
    let host = NonNull::new(device as *mut u8).expect("cuMemAllocManaged returned success");
    Ok((host, device))
}
