//! Launches through `cuLaunchKernelEx`: thread-block clusters, cooperative launches and
//! memory synchronization domains (CUDA Programming Guide 4.14), on a chosen stream.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::{CudaError, Dim3, Kernel, LaunchLimit, Stream};

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

/// What a `cuLaunchKernelEx` launch adds to grid and block.
///
/// ```
/// use sync_host::cuda::{Dim3, LaunchOptions, MemSyncDomain};
///
/// let options = LaunchOptions {
///     cluster: Some(Dim3::x(2)),
///     shared_memory_bytes: 64 * 1024,
///     domain: MemSyncDomain::Remote,
///     ..LaunchOptions::default()
/// };
/// assert!(!options.cooperative);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Blocks per cluster (the grid must be a whole number of clusters in every
    /// dimension); `None`: no clusters.
    pub cluster: Option<Dim3>,
    /// Dynamic shared memory per block, in bytes (past 48 KiB the kernel is opted in
    /// first, up to [`Kernel::max_dynamic_shared_bytes`]).
    pub shared_memory_bytes: u32,
    /// A cooperative launch (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`): the driver runs every
    /// block at once or refuses the launch. Grid barriers need it
    /// ([`Kernel::launch_grid_ex`]).
    pub cooperative: bool,
    /// The launch's memory-synchronization domain.
    pub domain: MemSyncDomain,
}

/// Kernel parameters for `cuLaunchKernelEx`: each value is kept in one or more 8-byte
/// slots here, and the driver gets an array of pointers to each parameter's first slot
/// (taken at launch, when the vector no longer grows).
#[derive(Default)]
///
/// # Examples
///
/// A cluster launch of a kernel taking `(words: *mut u32, n: u32, scale: f32)`:
///
/// ```no_run
/// use sync_host::cuda::{Dim3, KernelParams, LaunchOptions, Runtime};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let module = runtime.load_file("my-kernels.ptx")?;
/// let kernel = module.kernel("scaled")?;
/// let words = runtime.zeros::<u32>(1024)?;
/// let params = KernelParams::new().pointer(runtime.address(&words)).u32(1024).f32(0.5);
/// let options = LaunchOptions { cluster: Some(Dim3::x(2)), ..LaunchOptions::default() };
/// let stream = runtime.new_stream()?;
/// // SAFETY: the parameters match `scaled`; `words` outlives it (synchronized below).
/// unsafe { kernel.launch_ex(&stream, 8, 256, options, params) }?;
/// stream.synchronize()?;
/// # Ok(())
/// # }
/// ```
pub struct KernelParams {
    values: Vec<u64>,
    /// Index in `values` of each parameter's first slot.
    starts: Vec<usize>,
}

impl KernelParams {
    /// No parameters yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an `i32` parameter.
    pub fn i32(self, value: i32) -> Self {
        self.u32(value as u32)
    }

    /// Appends an `f32` parameter.
    pub fn f32(self, value: f32) -> Self {
        self.u32(value.to_bits())
    }

    /// Appends an `f64` parameter.
    pub fn f64(self, value: f64) -> Self {
        self.u64(value.to_bits())
    }

    /// Appends a `u32` parameter.
    pub fn u32(self, value: u32) -> Self {
        // The driver copies the parameter's size (4 bytes) from the front of the
        // 8-byte slot; x86-64 and the GPU are both little-endian.
        self.words(&[u64::from(value)])
    }

    /// Appends a `u64` parameter.
    pub fn u64(self, value: u64) -> Self {
        self.words(&[value])
    }

    /// Appends a device pointer (a `CUdeviceptr`).
    pub fn pointer(self, address: sys::CUdeviceptr) -> Self {
        self.words(&[address])
    }

    /// Appends one parameter of `8 × words.len()` bytes (a `#[repr(C)]` struct whose
    /// alignment is at most 8), given as its little-endian 64-bit words in order.
    pub(super) fn words(mut self, words: &[u64]) -> Self {
        self.starts.push(self.values.len());
        self.values.extend_from_slice(words);
        self
    }

    /// Appends every parameter of `rest`.
    pub(super) fn append(mut self, rest: KernelParams) -> Self {
        let offset = self.values.len();
        self.starts
            .extend(rest.starts.into_iter().map(|start| start + offset));
        self.values.extend(rest.values);
        self
    }
}

/// A launch attribute setting thread-block clusters of `blocks` blocks.
fn cluster_attribute(blocks: Dim3) -> sys::CUlaunchAttribute {
    // SAFETY: an all-zero attribute is a valid starting value (plain C data).
    let mut cluster: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    cluster.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = blocks.x;
    cluster.value.clusterDim.y = blocks.y;
    cluster.value.clusterDim.z = blocks.z;
    cluster
}

impl Kernel {
    /// Clusters of `cluster` blocks of `block_threads` threads that fit on the GPU at
    /// once (`cuOccupancyMaxActiveClusters`): the most a cooperative cluster launch
    /// may ask for. Zero if such a cluster cannot run at all.
    pub fn max_coresident_clusters(
        &self,
        block_threads: u32,
        cluster: impl Into<Dim3>,
    ) -> Result<u32, CudaError> {
        self.max_coresident_clusters_with(block_threads, cluster, 0)
    }

    /// As [`max_coresident_clusters`](Self::max_coresident_clusters), for blocks that
    /// also take `dynamic_shared_bytes` of dynamic shared memory.
    pub fn max_coresident_clusters_with(
        &self,
        block_threads: u32,
        cluster: impl Into<Dim3>,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, CudaError> {
        let cluster = cluster.into();
        let mut attribute = cluster_attribute(cluster);
        let config = sys::CUlaunchConfig {
            gridDimX: cluster.x,
            gridDimY: cluster.y,
            gridDimZ: cluster.z,
            blockDimX: block_threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: dynamic_shared_bytes,
            hStream: std::ptr::null_mut(),
            attrs: &mut attribute,
            numAttrs: 1,
        };
        let mut clusters: std::ffi::c_int = 0;
        self.runtime.bind()?;
        // SAFETY: a live function of this context, a config and attribute that outlive
        // the call, and an integer for the driver to fill.
        unsafe {
            sys::cuOccupancyMaxActiveClusters(&mut clusters, self.function.cu_function(), &config)
        }
        .result()
        .map_err(CudaError::driver("query cluster occupancy"))?;
        Ok(u32::try_from(clusters).unwrap_or(0))
    }

    /// Launches on `stream` with clusters, dynamic shared memory, cooperatively,
    /// and/or in a memory-synchronization domain.
    ///
    /// # Errors
    ///
    /// [`CudaError::LaunchDoesNotFit`] for a shape beyond the kernel's or the device's
    /// limits (a grid that is not a whole number of clusters among them),
    /// [`CudaError::GridTooLarge`] for a cooperative launch whose blocks cannot all be
    /// co-resident; a driver error otherwise.
    ///
    /// # Safety
    ///
    /// `params` must match the kernel's parameters in number, order and size, and
    /// point at memory that outlives the kernel.
    pub unsafe fn launch_ex(
        &self,
        stream: &Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        options: LaunchOptions,
        params: KernelParams,
    ) -> Result<(), CudaError> {
        let (grid, block) = (grid.into(), block.into());
        self.check_fits(grid, block, options.shared_memory_bytes)?;
        if let Some(cluster) = options.cluster {
            self.check_cluster_shape(grid, cluster)?;
        }
        if options.cooperative {
            self.check_coresident(grid, block, options.cluster, options.shared_memory_bytes)?;
        }
        let mut attributes = Vec::new();
        if let Some(blocks) = options.cluster {
            attributes.push(cluster_attribute(blocks));
        }
        if options.cooperative {
            // SAFETY: as in `cluster_attribute`.
            let mut cooperative: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            cooperative.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            cooperative.value.cooperative = 1;
            attributes.push(cooperative);
        }
        // SAFETY: as above.
        let mut domain: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        domain.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
        domain.value.memSyncDomain = match options.domain {
            MemSyncDomain::Default => sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT,
            MemSyncDomain::Remote => sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE,
        };
        attributes.push(domain);
        let config = sys::CUlaunchConfig {
            gridDimX: grid.x,
            gridDimY: grid.y,
            gridDimZ: grid.z,
            blockDimX: block.x,
            blockDimY: block.y,
            blockDimZ: block.z,
            sharedMemBytes: options.shared_memory_bytes,
            hStream: stream.raw(),
            attrs: attributes.as_mut_ptr(),
            numAttrs: attributes.len() as u32,
        };
        let mut pointers: Vec<*mut c_void> = params
            .starts
            .iter()
            .map(|&start| {
                std::ptr::from_ref(&params.values[start])
                    .cast_mut()
                    .cast::<c_void>()
            })
            .collect();
        self.runtime.bind()?;
        // SAFETY: the config, attributes and parameter pointers live across the call;
        // the caller vouches that the parameters match the kernel.
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                self.function.cu_function(),
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(CudaError::driver("launch a kernel with cuLaunchKernelEx"))
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
