//! The one launch path: a [`LaunchConfig`] (shape, stream and attributes) and
//! [`KernelArgs`] (typed arguments), the same for a plain, stream, dynamic-shared,
//! cooperative, cluster, grid-barrier, helper-thread or multi-GPU launch. Every launch
//! goes through `cuLaunchKernelEx` (CUDA Programming Guide 4.14: clusters,
//! cooperative launches and memory synchronization domains are launch attributes).

use std::ffi::c_void;

use cudarc::driver::{sys, CudaSlice, CudaStream, CudaView, DevicePtr, DeviceRepr, SyncOnDrop};

use super::beside::{Beside, Outcome};
use super::Stream;
use super::{CudaError, Dim3, Kernel, LaunchLimit, MappedBuffer, PeerMemory, Placed, Shareable};

/// The logical memory-synchronization domain of a launch (sm_90+; earlier GPUs have
/// one domain and ignore it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemSyncDomain {
    /// Domain of ordinary kernels: device-scope fences order their writes.
    #[default]
    Default,
    /// For kernels whose traffic is remote (peer GPUs, host memory): their writes are
    /// not waited for by fences of default-domain kernels, and ordering with them
    /// needs system-scope fences.
    Remote,
}

/// How a kernel is launched: grid and block, and what the launch adds to them.
///
/// [`new`](Self::new) gives a plain launch on the runtime's stream; the builder
/// methods add the rest. The fields are public, so a configuration can also be
/// written out or changed in place.
///
/// Counterpart: CUDA's `cudaLaunchConfig_t` with its attributes (`cudaLaunchKernelEx`).
///
/// # Examples
///
/// ```
/// use sync_host::cuda::{Dim3, LaunchConfig, MemSyncDomain};
///
/// let config = LaunchConfig::new(8, 256)
///     .cluster(2)
///     .shared_memory(64 * 1024)
///     .domain(MemSyncDomain::Remote);
/// assert_eq!(config.cluster, Some(Dim3::x(2)));
/// assert!(!config.cooperative && config.stream.is_none());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct LaunchConfig<'s> {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes (past 48 KiB the kernel is opted in
    /// first, up to [`Kernel::max_dynamic_shared_bytes`]).
    pub shared_memory_bytes: u32,
    /// The stream the kernel is queued on; `None`: the runtime's own stream.
    pub stream: Option<&'s Stream>,
    /// A cooperative launch (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`): the driver runs every
    /// block at once or refuses the launch, and the launch is first checked against
    /// [`Kernel::max_coresident_blocks`]. Device-scope barriers across blocks need it.
    pub cooperative: bool,
    /// Blocks per cluster (the grid must be a whole number of clusters in every
    /// dimension); `None`: no clusters.
    pub cluster: Option<Dim3>,
    /// The launch's memory-synchronization domain.
    pub domain: MemSyncDomain,
}

impl LaunchConfig<'static> {
    /// A plain launch of `grid × block` threads on the runtime's stream.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self {
            grid: grid.into(),
            block: block.into(),
            shared_memory_bytes: 0,
            stream: None,
            cooperative: false,
            cluster: None,
            domain: MemSyncDomain::Default,
        }
    }
}

impl<'s> LaunchConfig<'s> {
    /// On `stream` instead of the runtime's stream.
    pub fn on<'t>(self, stream: &'t Stream) -> LaunchConfig<'t> {
        LaunchConfig {
            stream: Some(stream),
            ..self
        }
    }

    /// With `bytes` of dynamic shared memory per block.
    pub fn shared_memory(self, bytes: u32) -> Self {
        Self {
            shared_memory_bytes: bytes,
            ..self
        }
    }

    /// Cooperative: every block co-resident, or the launch is refused.
    pub fn cooperative(self) -> Self {
        Self {
            cooperative: true,
            ..self
        }
    }

    /// In thread-block clusters of `blocks` blocks.
    pub fn cluster(self, blocks: impl Into<Dim3>) -> Self {
        Self {
            cluster: Some(blocks.into()),
            ..self
        }
    }

    /// In memory-synchronization domain `domain`.
    pub fn domain(self, domain: MemSyncDomain) -> Self {
        Self { domain, ..self }
    }
}

/// A kernel's arguments, in the order of its parameters, each typed: scalars, device
/// buffers (cudarc's `CudaSlice`/`CudaView`), mapped buffers, placed sync objects, peer
/// memory, and `#[repr(C)]` values ([`value`](Self::value)). A kernel with a
/// `sync_device::Grid` parameter gets it with [`grid_barrier`](Self::grid_barrier).
///
/// A device buffer's address is taken at launch, on the launch's stream, as cudarc's
/// own launches take it (so cudarc's stream-ordering of the buffer holds). A list can
/// be cloned for launches that repeat it.
///
/// # Examples
///
/// ```no_run
/// use sync_host::cuda::{KernelArgs, LaunchConfig, Runtime};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let module = runtime.load_file("my-kernels.ptx")?;
/// let scaled = module.kernel("scaled")?; // (words: *mut u32, n: u32, scale: f32)
/// let words = runtime.zeros::<u32>(1024)?;
/// let args = KernelArgs::new().arg(&words).arg(1024_u32).arg(0.5_f32);
/// // SAFETY: the arguments match `scaled`; `words` outlives it (synchronized below).
/// unsafe { scaled.launch(LaunchConfig::new(4, 256), args) }?;
/// runtime.synchronize()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct KernelArgs<'a> {
    params: Vec<Param<'a>>,
}

impl std::fmt::Debug for KernelArgs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelArgs")
            .field("parameters", &self.params.len())
            .finish()
    }
}

/// One parameter, as the launch will pass it (public only to the sealed trait).
#[derive(Clone)]
pub enum Param<'a> {
    /// The parameter's bytes, little-endian in 8-byte slots (the driver copies the
    /// parameter's size from the front).
    Words(Vec<u64>),
    /// A device buffer, whose address is taken on the launch's stream.
    Buffer(&'a (dyn BufferAddress + Sync)),
    /// The kernel's `sync_device::Grid`, filled in by the launch.
    GridBarrier,
}

impl<'a> KernelArgs<'a> {
    /// No arguments yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `value` as the next parameter. An integer literal without a suffix is
    /// an `i32`: write `64_u32` for a `u32` parameter, `0_u64` for a null pointer.
    pub fn arg(mut self, value: impl KernelArg<'a>) -> Self {
        self.params.push(value.param());
        self
    }

    /// Appends a `#[repr(C)]` value (alignment at most 8) as the next parameter, by
    /// value: the kernel takes a `T` of the same layout.
    ///
    /// # Panics
    ///
    /// If `T`'s alignment is more than 8 bytes.
    pub fn value<T: DeviceRepr>(mut self, value: &T) -> Self {
        assert!(
            std::mem::align_of::<T>() <= 8,
            "KernelArgs::value: a parameter is aligned to at most 8 bytes, {} has {}",
            std::any::type_name::<T>(),
            std::mem::align_of::<T>()
        );
        let size = std::mem::size_of::<T>();
        let mut words = vec![0_u64; size.div_ceil(8).max(1)];
        // SAFETY: `words` holds at least `size` bytes; `T: DeviceRepr` is plain data
        // whose bytes the kernel reads as they are.
        unsafe {
            std::ptr::copy_nonoverlapping(
                std::ptr::from_ref(value).cast::<u8>(),
                words.as_mut_ptr().cast::<u8>(),
                size,
            );
        }
        self.params.push(Param::Words(words));
        self
    }

    /// Appends the kernel's grid barrier (a `sync_device::Grid` parameter): the
    /// launch zeroes the kernel object's barrier words in stream order and passes
    /// them, and refuses a grid whose blocks cannot all be co-resident with
    /// [`CudaError::GridTooLarge`], as the barrier could never complete there. Make
    /// the launch [`cooperative`](LaunchConfig::cooperative) for the driver to
    /// guarantee co-residency; without it only that check stands.
    pub fn grid_barrier(mut self) -> Self {
        self.params.push(Param::GridBarrier);
        self
    }

    /// Appends a parameter given as its 8-byte words (a barrier's own parameter).
    pub(super) fn words(mut self, words: &[u64]) -> Self {
        self.params.push(Param::Words(words.to_vec()));
        self
    }

    /// Appends every argument of `rest`.
    pub(super) fn append(mut self, rest: KernelArgs<'a>) -> Self {
        self.params.extend(rest.params);
        self
    }

    fn has_grid_barrier(&self) -> bool {
        self.params
            .iter()
            .any(|param| matches!(param, Param::GridBarrier))
    }
}

/// A value a kernel takes as one parameter ([`KernelArgs::arg`]), by value or by
/// reference: the scalars (`u8` to `u64`, `i8` to `i64`, `usize`, `isize`, `f32`,
/// `f64`, `bool`; a raw device address is a `u64`), device buffers (`&CudaSlice<T>`,
/// `&CudaView<T>`), mapped buffers, placed objects and peer memory. Other `#[repr(C)]`
/// values go through [`KernelArgs::value`]. Sealed.
pub trait KernelArg<'a>: sealed::ToParam<'a> {}

mod sealed {
    /// The parameter a value becomes.
    pub trait ToParam<'a> {
        fn param(self) -> super::Param<'a>;
    }
}

macro_rules! scalar_args {
    ($($scalar:ty),*) => {$(
        impl<'a> sealed::ToParam<'a> for $scalar {
            fn param(self) -> Param<'a> {
                Param::from_bytes(&self.to_le_bytes())
            }
        }
        impl<'a> KernelArg<'a> for $scalar {}
        // A scalar is copied: the borrow ends with the call.
        impl<'a> sealed::ToParam<'a> for &$scalar {
            fn param(self) -> Param<'a> {
                (*self).param()
            }
        }
        impl<'a> KernelArg<'a> for &$scalar {}
    )*};
}

scalar_args!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

impl<'a> sealed::ToParam<'a> for bool {
    fn param(self) -> Param<'a> {
        Param::Words(vec![u64::from(self)])
    }
}
impl<'a> KernelArg<'a> for bool {}
impl<'a> sealed::ToParam<'a> for &bool {
    fn param(self) -> Param<'a> {
        (*self).param()
    }
}
impl<'a> KernelArg<'a> for &bool {}

impl Param<'_> {
    /// A one-slot parameter with `bytes` (at most 8) at its front.
    fn from_bytes(bytes: &[u8]) -> Self {
        let mut word = [0_u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        Param::Words(vec![u64::from_le_bytes(word)])
    }
}

/// A device buffer's address on a stream, with cudarc's guard for its ordering.
pub trait BufferAddress {
    fn address<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>);
}

impl<T> BufferAddress for CudaSlice<T> {
    fn address<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

impl<T> BufferAddress for CudaView<'_, T> {
    fn address<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

impl<'a, T> sealed::ToParam<'a> for &'a CudaSlice<T> {
    fn param(self) -> Param<'a> {
        Param::Buffer(self)
    }
}
impl<'a, T> KernelArg<'a> for &'a CudaSlice<T> {}

impl<'a, T> sealed::ToParam<'a> for &'a CudaView<'_, T>
where
    CudaView<'a, T>: Sync,
{
    fn param(self) -> Param<'a> {
        Param::Buffer(self)
    }
}
impl<'a, T> KernelArg<'a> for &'a CudaView<'_, T> where CudaView<'a, T>: Sync {}

/// Objects whose device address is fixed: the parameter is the address itself.
macro_rules! addressed_args {
    ($(impl[$($generics:tt)*] $object:ty;)*) => {$(
        impl<'a, $($generics)*> sealed::ToParam<'a> for &$object {
            fn param(self) -> Param<'a> {
                Param::Words(vec![self.device_address()])
            }
        }
        impl<'a, $($generics)*> KernelArg<'a> for &$object {}
    )*};
}

addressed_args! {
    impl[] MappedBuffer<'_>;
    impl[T: Shareable] Placed<'_, T>;
    impl[] PeerMemory;
}

#[cfg(target_os = "linux")]
addressed_args! {
    impl[] super::ProcessMemory;
}

/// A launch attribute setting thread-block clusters of `blocks` blocks.
pub(super) fn cluster_attribute(blocks: Dim3) -> sys::CUlaunchAttribute {
    // SAFETY: an all-zero attribute is a valid starting value (plain C data).
    let mut cluster: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    cluster.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = blocks.x;
    cluster.value.clusterDim.y = blocks.y;
    cluster.value.clusterDim.z = blocks.z;
    cluster
}

impl Kernel {
    /// Launches the kernel as `config` says, with `args`.
    ///
    /// Checked before the driver sees it, in this order: the shape against the
    /// kernel's and the device's limits (threads per block, then each block and grid
    /// dimension, then shared memory), the grid against the cluster shape, and, for a
    /// cooperative launch or one with a [grid barrier](KernelArgs::grid_barrier), that
    /// every block can be co-resident.
    ///
    /// # Errors
    ///
    /// [`CudaError::LaunchDoesNotFit`] naming the limit a shape exceeds (a grid that is
    /// not a whole number of clusters among them), [`CudaError::GridTooLarge`] for a
    /// cooperative or grid-barrier launch whose blocks cannot all be co-resident; a
    /// driver error otherwise.
    ///
    /// # Safety
    ///
    /// `args` must match the kernel's parameters in number, order and type, and point
    /// at memory that outlives the kernel. A kernel with a grid barrier: launches of
    /// this kernel object on other streams have finished (they share its barrier
    /// words, which this launch zeroes).
    ///
    /// # Examples
    ///
    /// A cooperative launch on a stream of a kernel `relax(grid: Grid, cells: *mut f32)`:
    ///
    /// ```no_run
    /// use sync_host::cuda::{KernelArgs, LaunchConfig, Runtime};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = Runtime::open(0)?;
    /// let relax = runtime.load_file("my-kernels.ptx")?.kernel("relax")?;
    /// let cells = runtime.zeros::<f32>(1 << 20)?;
    /// let stream = runtime.new_stream()?;
    /// let blocks = relax.max_coresident_blocks(256)?;
    /// let config = LaunchConfig::new(blocks, 256).cooperative().on(&stream);
    /// // SAFETY: `relax` takes its grid barrier, then one f32 pointer; `cells`
    /// // outlives it (synchronized below).
    /// unsafe { relax.launch(config, KernelArgs::new().grid_barrier().arg(&cells)) }?;
    /// stream.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    pub unsafe fn launch(
        &self,
        config: LaunchConfig<'_>,
        args: KernelArgs<'_>,
    ) -> Result<(), CudaError> {
        let LaunchConfig {
            grid,
            block,
            shared_memory_bytes,
            cluster,
            ..
        } = config;
        let stream: &CudaStream = config
            .stream
            .map_or(&self.runtime.stream, |stream| &stream.inner);
        self.check_fits(grid, block, shared_memory_bytes)?;
        if let Some(cluster) = cluster {
            self.check_cluster_shape(grid, cluster)?;
        }
        if config.cooperative || args.has_grid_barrier() {
            self.check_coresident(grid, block, cluster, shared_memory_bytes)?;
        }
        let mut values: Vec<u64> = Vec::new();
        let mut starts = Vec::with_capacity(args.params.len());
        // cudarc's ordering guards of the buffers, dropped once the launch is queued
        // (as cudarc's own launch does).
        let mut guards = Vec::new();
        for param in &args.params {
            starts.push(values.len());
            match param {
                Param::Words(words) => values.extend_from_slice(words),
                Param::Buffer(buffer) => {
                    let (address, guard) = buffer.address(stream);
                    values.push(address);
                    guards.push(guard);
                }
                Param::GridBarrier => {
                    let barrier = self.zeroed_grid_barrier(stream.cu_stream(), grid)?;
                    values.extend_from_slice(&barrier.words());
                }
            }
        }
        let mut attributes = launch_attributes(&config);
        let config = sys::CUlaunchConfig {
            gridDimX: grid.x,
            gridDimY: grid.y,
            gridDimZ: grid.z,
            blockDimX: block.x,
            blockDimY: block.y,
            blockDimZ: block.z,
            sharedMemBytes: shared_memory_bytes,
            hStream: stream.cu_stream(),
            attrs: attributes.as_mut_ptr(),
            numAttrs: attributes.len() as u32,
        };
        // Taken now that `values` no longer grows.
        let mut pointers: Vec<*mut c_void> = starts
            .iter()
            .map(|&start| {
                std::ptr::from_ref(&values[start])
                    .cast_mut()
                    .cast::<c_void>()
            })
            .collect();
        self.runtime.bind()?;
        // SAFETY: the config, attributes and parameter pointers live across the call;
        // the caller vouches that the parameters match the kernel.
        let launched = unsafe {
            sys::cuLaunchKernelEx(
                &config,
                self.function.cu_function(),
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        drop(guards);
        launched
            .result()
            .map_err(CudaError::driver("launch a kernel"))
    }

    /// [`launch`](Self::launch)es the kernel from a helper thread while `host` plays
    /// the host's side of its work on the calling thread ([`beside`](super::beside)
    /// says why: a kernel the host feeds must not wait for a launch call that, with
    /// `CUDA_LAUNCH_BLOCKING=1`, returns only when the kernel ends). `host` waits for
    /// the kernel through the [`Beside`] it gets and must let the kernel end on every
    /// path (a persistent kernel's stop request, say); returns when both have
    /// returned, with what `host` returned and how the launch call ended. If the
    /// launch fails, `host`'s waits end with
    /// [`HostWaitError::KernelFinished`](super::HostWaitError::KernelFinished) and
    /// [`Outcome::launch`] has the error. Waiting for the kernel to end is left to the
    /// caller (the stream's `synchronize`), who may still want the stream's results.
    ///
    /// The helper thread inherits the calling thread's CPU affinity. Where launches
    /// block it waits inside the launch call for the whole kernel, so a host's side
    /// that must keep a core to itself pins it inside `host`
    /// ([`CorePin`](super::CorePin)).
    ///
    /// # Panics
    ///
    /// Resumes a panic of `host`, or else of the launch, once both threads are done.
    ///
    /// # Safety
    ///
    /// As for [`launch`](Self::launch).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use sync_host::cuda::{KernelArgs, LaunchConfig, Runtime};
    /// use sync_host::{GpuToHost, HandoffSemaphore};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = Runtime::open(0)?;
    /// let results = runtime.place_mapped(HandoffSemaphore::<GpuToHost>::new(0))?;
    /// let kernel = runtime.load_file("my-kernels.ptx")?.kernel("release_one")?;
    /// let stream = runtime.new_stream()?;
    /// let config = LaunchConfig::new(1, 1).on(&stream);
    /// let args = KernelArgs::new().arg(&results); // (semaphore: *const HandoffSemaphore)
    /// // SAFETY: `release_one` takes the semaphore's address; `results` outlives it.
    /// let run = unsafe { kernel.launch_beside(config, args, |gpu| results.acquire(gpu.wait())) };
    /// stream.synchronize()?;
    /// run.launch?;
    /// run.host?;
    /// # Ok(()) }
    /// ```
    pub unsafe fn launch_beside<R>(
        &self,
        config: LaunchConfig<'_>,
        args: KernelArgs<'_>,
        host: impl FnOnce(&Beside<'_>) -> R,
    ) -> Outcome<R> {
        let default_stream;
        let stream = match config.stream {
            Some(stream) => stream,
            None => {
                default_stream = self.runtime.default_stream();
                &default_stream
            }
        };
        // SAFETY: the caller vouches for the arguments.
        let launch = || unsafe { self.launch(config, args) };
        super::beside::run_beside(stream, launch, host)
    }

    /// Refuses a grid that is not a whole number of clusters.
    fn check_cluster_shape(&self, grid: Dim3, cluster: Dim3) -> Result<(), CudaError> {
        let pairs = [
            (grid.x, cluster.x),
            (grid.y, cluster.y),
            (grid.z, cluster.z),
        ];
        for (grid_extent, cluster_extent) in pairs {
            if cluster_extent == 0 {
                return Err(CudaError::LaunchDoesNotFit {
                    kernel: self.name().to_owned(),
                    limit: LaunchLimit::EmptyDimension,
                    requested: 0,
                    allowed: 1,
                });
            }
            if grid_extent % cluster_extent != 0 {
                return Err(CudaError::LaunchDoesNotFit {
                    kernel: self.name().to_owned(),
                    limit: LaunchLimit::ClusterShape,
                    requested: grid_extent.into(),
                    allowed: cluster_extent.into(),
                });
            }
        }
        Ok(())
    }
}

/// The launch attributes `config` asks for: clusters, cooperative, and the domain.
fn launch_attributes(config: &LaunchConfig<'_>) -> Vec<sys::CUlaunchAttribute> {
    let mut attributes = Vec::new();
    if let Some(blocks) = config.cluster {
        attributes.push(cluster_attribute(blocks));
    }
    if config.cooperative {
        // SAFETY: as in `cluster_attribute`.
        let mut cooperative: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        cooperative.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        cooperative.value.cooperative = 1;
        attributes.push(cooperative);
    }
    // SAFETY: as in `cluster_attribute`.
    let mut domain: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    domain.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
    domain.value.memSyncDomain = match config.domain {
        MemSyncDomain::Default => sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT,
        MemSyncDomain::Remote => sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE,
    };
    attributes.push(domain);
    attributes
}

#[cfg(test)]
mod tests {
    use super::{KernelArgs, LaunchConfig, MemSyncDomain, Param};
    use crate::cuda::Dim3;

    fn words(args: &KernelArgs<'_>) -> Vec<Vec<u64>> {
        args.params
            .iter()
            .map(|param| match param {
                Param::Words(words) => words.clone(),
                Param::Buffer(_) => vec![u64::MAX],
                Param::GridBarrier => vec![],
            })
            .collect()
    }

    #[test]
    fn scalars_fill_the_front_of_one_little_endian_slot_each() {
        let args = KernelArgs::new()
            .arg(0x1234_u16)
            .arg(-1_i32)
            .arg(1.5_f32)
            .arg(u64::MAX)
            .arg(true);
        let expected = [
            vec![0x1234],
            vec![0xffff_ffff],
            vec![u64::from(1.5_f32.to_bits())],
            vec![u64::MAX],
            vec![1],
        ];
        assert_eq!(words(&args), expected);
        // A scalar by reference is copied the same way (borrowed only for the call).
        let (short, signed, float, wide, flag) = (0x1234_u16, -1_i32, 1.5_f32, u64::MAX, true);
        #[allow(clippy::needless_borrows_for_generic_args)]
        let args = KernelArgs::new()
            .arg(&short)
            .arg(&signed)
            .arg(&float)
            .arg(&wide)
            .arg(&flag);
        assert_eq!(words(&args), expected);
    }

    #[test]
    fn values_keep_their_bytes_in_order_across_slots() {
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Pair {
            pointer: u64,
            phase: u32,
            rank: u32,
        }
        // SAFETY: plain data.
        unsafe impl cudarc::driver::DeviceRepr for Pair {}
        let pair = Pair {
            pointer: 0xdead_beef,
            phase: 7,
            rank: 3,
        };
        let args = KernelArgs::new().value(&pair).value(&5_u8);
        assert_eq!(words(&args), [vec![0xdead_beef, 7 | 3 << 32], vec![5]]);
    }

    #[test]
    #[should_panic(expected = "aligned to at most 8 bytes")]
    fn values_aligned_past_eight_bytes_are_refused() {
        #[repr(C, align(16))]
        #[derive(Clone, Copy)]
        struct Wide(u64);
        // SAFETY: plain data.
        unsafe impl cudarc::driver::DeviceRepr for Wide {}
        let _ = KernelArgs::new().value(&Wide(1));
    }

    #[test]
    fn a_cloned_list_passes_the_same_parameters() {
        let args = KernelArgs::new().arg(7_u32).grid_barrier().arg(-2_i64);
        assert_eq!(words(&args.clone()), words(&args));
        assert!(args.clone().has_grid_barrier());
    }

    #[test]
    fn the_grid_barrier_is_a_parameter_in_its_place() {
        let args = KernelArgs::new().arg(1_u32).grid_barrier().arg(2_u32);
        assert!(args.has_grid_barrier());
        assert_eq!(words(&args), [vec![1], vec![], vec![2]]);
        assert!(!KernelArgs::new().arg(1_u32).has_grid_barrier());
    }

    #[test]
    fn the_builder_sets_each_attribute_and_keeps_the_rest() {
        let config = LaunchConfig::new((4, 2), 128);
        assert_eq!(
            (config.grid, config.block),
            (Dim3::new(4, 2, 1), Dim3::x(128))
        );
        assert!(!config.cooperative && config.cluster.is_none() && config.stream.is_none());
        assert_eq!(config.shared_memory_bytes, 0);
        let config = config
            .cooperative()
            .cluster((2, 2))
            .shared_memory(1024)
            .domain(MemSyncDomain::Remote);
        assert!(config.cooperative);
        assert_eq!(config.cluster, Some(Dim3::new(2, 2, 1)));
        assert_eq!(config.shared_memory_bytes, 1024);
        assert_eq!(config.domain, MemSyncDomain::Remote);
        assert_eq!(config.grid, Dim3::new(4, 2, 1));
    }
}
