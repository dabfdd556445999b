//! [`Kernel`]: one function of a loaded [`Module`](super::Module), its launch limits
//! and how many of its blocks fit on the GPU at once (its launches: `launch.rs`).

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use cudarc::driver::sys::{self, CUfunction_attribute_enum as FunctionAttribute};
use cudarc::driver::CudaFunction;

use super::grid::GridBarrier;
use super::launch::cluster_attribute;
use super::{CudaError, Runtime};

/// Grid, block or cluster dimensions: `x × y × z`. A `u32` is `(x, 1, 1)`; pairs and
/// triples convert too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent in x.
    pub x: u32,
    /// Extent in y.
    pub y: u32,
    /// Extent in z.
    pub z: u32,
}

impl Dim3 {
    /// `x × y × z`.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Self { x, y, z }
    }

    /// `x × 1 × 1`.
    pub const fn x(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }

    /// `x × y × z`, or `None` on overflow.
    pub fn count(self) -> Option<u32> {
        self.x.checked_mul(self.y)?.checked_mul(self.z)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self::x(x)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Self { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self { x, y, z }
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}×{}×{}", self.x, self.y, self.z)
    }
}

/// Which limit a launch exceeded ([`CudaError::LaunchDoesNotFit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchLimit {
    /// A grid, block or cluster extent of zero.
    EmptyDimension,
    /// Threads per block, for this kernel (its register use lowers the device's 1024).
    ThreadsPerBlock,
    /// A block extent in x, y or z (1024, 1024, 64 on current GPUs).
    BlockDimension,
    /// A grid extent in x, y or z (2³¹−1, 65535, 65535).
    GridDimension,
    /// Static plus dynamic shared memory per block (the device's opt-in maximum).
    SharedMemory,
    /// The grid is not a whole number of clusters in some dimension.
    ClusterShape,
}

impl fmt::Display for LaunchLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LaunchLimit::EmptyDimension => "an extent of zero",
            LaunchLimit::ThreadsPerBlock => "threads per block",
            LaunchLimit::BlockDimension => "block extent",
            LaunchLimit::GridDimension => "grid extent",
            LaunchLimit::SharedMemory => "shared memory per block (bytes)",
            LaunchLimit::ClusterShape => "grid extent that is a multiple of the cluster's",
        })
    }
}

/// What a kernel may be launched with, read once when the kernel is looked up.
#[derive(Clone, Copy, Debug)]
struct Limits {
    threads_per_block: u32,
    static_shared_bytes: u32,
    max_block: Dim3,
    max_grid: Dim3,
    /// The device's opt-in maximum of shared memory per block.
    max_shared_bytes: u32,
}

/// Checks a launch shape against `limits`, in the order a user reads them: no empty
/// dimension, then the block's thread count (a `2048×1×1` block is "too many threads
/// per block", not "too wide"), each block extent, each grid extent, and shared
/// memory. `Err` names the limit, what was asked and what is allowed.
fn check_shape(
    limits: &Limits,
    grid: Dim3,
    block: Dim3,
    dynamic_shared_bytes: u32,
) -> Result<(), (LaunchLimit, u64, u64)> {
    for dims in [grid, block] {
        if dims.x == 0 || dims.y == 0 || dims.z == 0 {
            return Err((LaunchLimit::EmptyDimension, 0, 1));
        }
    }
    let threads = u64::from(block.x) * u64::from(block.y) * u64::from(block.z);
    if threads > u64::from(limits.threads_per_block) {
        let allowed = limits.threads_per_block.into();
        return Err((LaunchLimit::ThreadsPerBlock, threads, allowed));
    }
    let exceeds = |dims: Dim3, max: Dim3| {
        [(dims.x, max.x), (dims.y, max.y), (dims.z, max.z)]
            .into_iter()
            .find(|(extent, limit)| extent > limit)
    };
    if let Some((extent, limit)) = exceeds(block, limits.max_block) {
        return Err((LaunchLimit::BlockDimension, extent.into(), limit.into()));
    }
    if let Some((extent, limit)) = exceeds(grid, limits.max_grid) {
        return Err((LaunchLimit::GridDimension, extent.into(), limit.into()));
    }
    let shared = u64::from(limits.static_shared_bytes) + u64::from(dynamic_shared_bytes);
    if shared > u64::from(limits.max_shared_bytes) {
        let allowed = limits.max_shared_bytes.into();
        return Err((LaunchLimit::SharedMemory, shared, allowed));
    }
    Ok(())
}

/// One kernel of a [`Module`](super::Module), ready to launch.
///
/// Launch shapes are checked against the kernel's and the device's limits before the
/// driver sees them: a launch that cannot fit fails with
/// [`CudaError::LaunchDoesNotFit`] naming the limit, and a cooperative one whose
/// blocks cannot all be co-resident with [`CudaError::GridTooLarge`].
///
/// # Examples
///
/// A kernel of the user's own module (`count(words: *mut u32)` adds one per thread):
///
/// ```no_run
/// use sync_host::cuda::{KernelArgs, LaunchConfig, Runtime};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let module = runtime.load_file("target/my-kernels.ptx")?;
/// let count = module.kernel("count")?;
/// let words = runtime.zeros::<u32>(1)?;
/// // SAFETY: `count` takes one u32 pointer; `words` outlives the launch (the download
/// // below waits for it).
/// unsafe { count.launch(LaunchConfig::new(4, 128), KernelArgs::new().arg(&words)) }?;
/// assert_eq!(runtime.download(&words)?[0], 4 * 128);
/// # Ok(())
/// # }
/// ```
pub struct Kernel {
    pub(super) runtime: Runtime,
    pub(super) function: CudaFunction,
    name: String,
    limits: Limits,
    /// The dynamic shared memory the function is currently allowed (raised on demand
    /// past the default 48 KiB).
    dynamic_shared_allowed: AtomicU32,
    /// The words of the kernel's grid barrier ([`KernelArgs::grid_barrier`](super::KernelArgs::grid_barrier)), allocated at first use.
    pub(super) grid_barrier: OnceLock<GridBarrier>,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Kernel {
    pub(super) fn new(
        runtime: Runtime,
        function: CudaFunction,
        name: &str,
    ) -> Result<Self, CudaError> {
        let read = |attribute| {
            function
                .get_attribute(attribute)
                .map(|value| u32::try_from(value).unwrap_or(0))
                .map_err(CudaError::driver("read a kernel's attributes"))
        };
        use sys::CUdevice_attribute::*;
        let device = |attribute| runtime.attribute(attribute, "read the device's launch limits");
        let limits = Limits {
            threads_per_block: read(FunctionAttribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            static_shared_bytes: read(FunctionAttribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            max_block: Dim3::new(
                device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ),
            max_grid: Dim3::new(
                device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ),
            max_shared_bytes: device(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        };
        let dynamic_allowed =
            read(FunctionAttribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
        Ok(Self {
            runtime,
            function,
            name: name.to_owned(),
            limits,
            dynamic_shared_allowed: AtomicU32::new(dynamic_allowed),
            grid_barrier: OnceLock::new(),
        })
    }

    /// The kernel's name in its module.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The most threads a block of this kernel may have (its register use can make
    /// this less than the device's 1024).
    pub fn max_threads_per_block(&self) -> u32 {
        self.limits.threads_per_block
    }

    /// The most dynamic shared memory a block of this kernel may ask for: the device's
    /// opt-in maximum less the kernel's static shared memory.
    pub fn max_dynamic_shared_bytes(&self) -> u32 {
        self.limits
            .max_shared_bytes
            .saturating_sub(self.limits.static_shared_bytes)
    }

    /// The cudarc function, for cudarc's own launch builder.
    pub fn cudarc(&self) -> &CudaFunction {
        &self.function
    }

    /// Blocks of `block_threads` threads that fit on the GPU at once (occupancy per SM
    /// × SM count): the most a cooperative launch may ask for.
    pub fn max_coresident_blocks(&self, block_threads: u32) -> Result<u32, CudaError> {
        self.max_coresident_blocks_with(block_threads, 0)
    }

    /// As [`max_coresident_blocks`](Self::max_coresident_blocks), for blocks that also
    /// take `dynamic_shared_bytes` of dynamic shared memory.
    pub fn max_coresident_blocks_with(
        &self,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, CudaError> {
        self.runtime.bind()?;
        let per_sm = self
            .function
            .occupancy_max_active_blocks_per_multiprocessor(
                block_threads,
                dynamic_shared_bytes as usize,
                None,
            )
            .map_err(CudaError::driver("query occupancy"))?;
        Ok(per_sm * self.runtime.sm_count()?)
    }

    /// Checks a launch shape against the kernel's and the device's limits, and allows
    /// the kernel `dynamic_shared_bytes` past the default 48 KiB where the device can.
    pub(super) fn check_fits(
        &self,
        grid: Dim3,
        block: Dim3,
        dynamic_shared_bytes: u32,
    ) -> Result<(), CudaError> {
        check_shape(&self.limits, grid, block, dynamic_shared_bytes).map_err(
            |(limit, requested, allowed)| CudaError::LaunchDoesNotFit {
                kernel: self.name.clone(),
                limit,
                requested,
                allowed,
            },
        )?;
        // Relaxed: a stale value only repeats the driver call, which is idempotent.
        if dynamic_shared_bytes > self.dynamic_shared_allowed.load(Ordering::Relaxed) {
            self.allow_dynamic_shared(dynamic_shared_bytes)?;
        }
        Ok(())
    }

    /// Opts the kernel into `bytes` of dynamic shared memory (past 48 KiB a kernel must
    /// ask: `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    #[cold]
    fn allow_dynamic_shared(&self, bytes: u32) -> Result<(), CudaError> {
        // Never lower what another thread's launch was allowed.
        let bytes = bytes.max(self.dynamic_shared_allowed.load(Ordering::Relaxed));
        self.runtime.bind()?;
        self.function
            .set_attribute(
                FunctionAttribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                i32::try_from(bytes).unwrap_or(i32::MAX),
            )
            .map_err(CudaError::driver(
                "allow a kernel more dynamic shared memory",
            ))?;
        self.dynamic_shared_allowed
            .fetch_max(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Refuses a cooperative launch whose blocks (in clusters of `cluster`, if any)
    /// cannot all be on the GPU at once.
    pub(super) fn check_coresident(
        &self,
        grid: Dim3,
        block: Dim3,
        cluster: Option<Dim3>,
        dynamic_shared_bytes: u32,
    ) -> Result<(), CudaError> {
        let blocks = grid.count().unwrap_or(u32::MAX);
        let threads = block.count().unwrap_or(u32::MAX);
        let max = match cluster {
            Some(cluster) => self
                .max_coresident_clusters_with(threads, cluster, dynamic_shared_bytes)?
                .saturating_mul(cluster.count().unwrap_or(u32::MAX)),
            None => self.max_coresident_blocks_with(threads, dynamic_shared_bytes)?,
        };
        if blocks > max {
            return Err(CudaError::GridTooLarge {
                requested: blocks,
                max,
            });
        }
        Ok(())
    }

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
}

#[cfg(test)]
mod tests {
    use super::{check_shape, Dim3, LaunchLimit, Limits};

    #[test]
    fn dimensions_from_numbers_and_tuples() {
        assert_eq!(Dim3::from(7), Dim3::new(7, 1, 1));
        assert_eq!(Dim3::from((2, 3)), Dim3::new(2, 3, 1));
        assert_eq!(Dim3::from((2, 3, 4)).count(), Some(24));
        assert_eq!(Dim3::new(u32::MAX, 2, 1).count(), None);
        assert_eq!(Dim3::new(2, 3, 4).to_string(), "2×3×4");
    }

    /// The limits a Hopper GPU reports (sm_90).
    const HOPPER: Limits = Limits {
        threads_per_block: 1024,
        static_shared_bytes: 0,
        max_block: Dim3 {
            x: 1024,
            y: 1024,
            z: 64,
        },
        max_grid: Dim3 {
            x: i32::MAX as u32,
            y: 65535,
            z: 65535,
        },
        max_shared_bytes: 232_448,
    };

    #[test]
    fn launch_shapes_are_refused_in_the_order_a_user_reads_them() {
        let check = |grid: Dim3, block: Dim3, shared| check_shape(&HOPPER, grid, block, shared);
        assert_eq!(check(Dim3::x(132), Dim3::x(1024), 0), Ok(()));
        // Too many threads is said before a too-wide extent that follows from it.
        assert_eq!(
            check(Dim3::x(1), Dim3::x(2048), 0),
            Err((LaunchLimit::ThreadsPerBlock, 2048, 1024))
        );
        assert_eq!(
            check(Dim3::x(1), Dim3::new(1024, 2, 1), 0),
            Err((LaunchLimit::ThreadsPerBlock, 2048, 1024))
        );
        assert_eq!(
            check(Dim3::x(1), Dim3::new(1, 1, 128), 0),
            Err((LaunchLimit::BlockDimension, 128, 64))
        );
        assert_eq!(
            check(Dim3::new(1, 70_000, 1), Dim3::x(32), 0),
            Err((LaunchLimit::GridDimension, 70_000, 65535))
        );
        assert_eq!(
            check(Dim3::x(0), Dim3::x(32), 0),
            Err((LaunchLimit::EmptyDimension, 0, 1))
        );
        assert_eq!(
            check(Dim3::x(1), Dim3::x(32), 232_449),
            Err((LaunchLimit::SharedMemory, 232_449, 232_448))
        );
    }
}
