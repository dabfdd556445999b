//! Cooperative launches that hand the kernel its grid barrier (`sync_device::Grid`).

use cudarc::driver::{sys, CudaSlice, DeviceRepr, LaunchArgs, PushKernelArg};
use sync_shared::layout::grid;

use super::{CudaError, Dim3, Kernel, KernelParams, LaunchOptions, Stream};

/// The host's image of `sync_device::Grid`: the barrier words' device address and
/// the thread's phase count (zero at launch). Only [`Kernel::launch_grid`] and
/// [`Kernel::launch_grid_ex`] make one, so only a launch whose blocks are all
/// co-resident hands a kernel a grid barrier.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct GridParam {
    arrivals: u64,
    phase: u32,
    reserved: u32,
}

// SAFETY: plain old data with the layout of `sync_device::Grid` (`#[repr(C)]`: a
// pointer, then two u32).
unsafe impl DeviceRepr for GridParam {}

impl GridParam {
    /// The parameter as `KernelParams` words: 16 bytes, little-endian (the pointer,
    /// then `phase` and `reserved` in the second word's low and high halves).
    fn words(&self) -> [u64; 2] {
        [
            self.arrivals,
            u64::from(self.phase) | u64::from(self.reserved) << 32,
        ]
    }
}

/// A kernel's grid-barrier words and the parameter that points at them.
pub(super) struct GridBarrier {
    /// Owns the words `param` points to: enough for the largest grid the GPU can hold
    /// at once (`grid::words` of its SM count × most blocks per SM).
    words: CudaSlice<u32>,
    /// The most blocks `words` serves.
    most_blocks: u32,
    param: GridParam,
}

impl Kernel {
    /// A cooperative launch of a kernel whose first parameter is a
    /// `sync_device::Grid`: the launch zeroes the kernel's grid-barrier words (in stream
    /// order, so back-to-back launches each start from zero) and passes it, then `args`
    /// pushes the remaining parameters. Refuses a grid larger than
    /// [`max_coresident_blocks`](Self::max_coresident_blocks) with
    /// [`CudaError::GridTooLarge`], as a grid barrier could never complete there.
    ///
    /// # Safety
    ///
    /// The kernel's first parameter is a `sync_device::Grid`, and the rest match
    /// `args` in number, order and type.
    pub unsafe fn launch_grid<'a>(
        &'a self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        args: impl FnOnce(&mut LaunchArgs<'a>),
    ) -> Result<(), CudaError> {
        let stream = &self.runtime.stream;
        // SAFETY: the caller vouches for the kernel's parameters.
        unsafe { self.launch_grid_typed(stream, grid.into(), block.into(), 0, args) }
    }

    /// As [`launch_grid`](Self::launch_grid), on `stream` and with
    /// `dynamic_shared_bytes` of dynamic shared memory per block (which counts against
    /// co-residency).
    ///
    /// # Safety
    ///
    /// As for [`launch_grid`](Self::launch_grid); launches of this kernel object on
    /// other streams have finished (they share its barrier words, which this launch
    /// zeroes).
    pub unsafe fn launch_grid_on<'a>(
        &'a self,
        stream: &'a Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        dynamic_shared_bytes: u32,
        args: impl FnOnce(&mut LaunchArgs<'a>),
    ) -> Result<(), CudaError> {
        // SAFETY: the caller vouches for the kernel's parameters.
        unsafe {
            self.launch_grid_typed(
                &stream.inner,
                grid.into(),
                block.into(),
                dynamic_shared_bytes,
                args,
            )
        }
    }

    /// The typed cooperative launch with the grid parameter first.
    ///
    /// # Safety
    ///
    /// As for [`launch_grid_on`](Self::launch_grid_on).
    unsafe fn launch_grid_typed<'a>(
        &'a self,
        stream: &'a cudarc::driver::CudaStream,
        grid: Dim3,
        block: Dim3,
        dynamic_shared_bytes: u32,
        args: impl FnOnce(&mut LaunchArgs<'a>),
    ) -> Result<(), CudaError> {
        self.check_fits(grid, block, dynamic_shared_bytes)?;
        self.check_coresident(grid, block, None, dynamic_shared_bytes)?;
        let param = self.zeroed_grid_barrier(stream.cu_stream(), grid)?;
        // SAFETY: the caller vouches for the kernel's parameters; the words live as
        // long as the kernel object.
        unsafe {
            self.launch_typed(stream, grid, block, dynamic_shared_bytes, true, |builder| {
                builder.arg(param);
                args(builder);
            })
        }
    }

    /// As [`launch_grid`](Self::launch_grid), through `cuLaunchKernelEx` on `stream`
    /// with `options`: thread-block clusters, say. The grid barrier only needs every
    /// block co-resident, which the `cooperative` option makes the driver guarantee;
    /// without it the launch relies on the size check alone (every block fits at once,
    /// so on an otherwise idle GPU every block runs at once, but nothing guarantees
    /// it). Refuses a grid larger than
    /// [`max_coresident_blocks`](Self::max_coresident_blocks), or with clusters
    /// [`max_coresident_clusters`](Self::max_coresident_clusters) × the cluster size,
    /// with [`CudaError::GridTooLarge`].
    ///
    /// # Safety
    ///
    /// The kernel's first parameter is a `sync_device::Grid`, and the rest match
    /// `params` in number, order and size, pointing at memory that outlives the kernel.
    /// Launches of this kernel object on other streams have finished (they share its
    /// barrier words, which this launch zeroes).
    pub unsafe fn launch_grid_ex(
        &self,
        stream: &Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        options: LaunchOptions,
        params: KernelParams,
    ) -> Result<(), CudaError> {
        let (grid, block) = (grid.into(), block.into());
        // A cooperative launch_ex checks co-residency itself; without the attribute
        // the size check is all a grid barrier has (see above). A grid beyond the
        // barrier's words (more blocks than SMs × the most an SM holds) can never be
        // co-resident: the size check refuses it with the kernel's real limit.
        let beyond_words = grid.count().unwrap_or(u32::MAX) > self.grid_barrier()?.most_blocks;
        if !options.cooperative || beyond_words {
            self.check_coresident(grid, block, options.cluster, options.shared_memory_bytes)?;
        }
        let param = self.zeroed_grid_barrier(stream.raw(), grid)?;
        let params = KernelParams::default().words(&param.words()).append(params);
        // SAFETY: the grid parameter comes first, as the kernel takes it; the caller
        // vouches for the rest; the words live as long as the kernel object.
        unsafe { self.launch_ex(stream, grid, block, options, params) }
    }

    /// The kernel's grid-barrier words, allocated at first use for the largest grid the
    /// GPU holds at once.
    fn grid_barrier(&self) -> Result<&GridBarrier, CudaError> {
        if let Some(barrier) = self.grid_barrier.get() {
            return Ok(barrier);
        }
        let most_blocks = self
            .runtime
            .sm_count()?
            .saturating_mul(self.runtime.attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
                "read the most blocks per SM",
            )?);
        let words = self.runtime.zeros::<u32>(grid::words(most_blocks))?;
        let param = GridParam {
            arrivals: self.runtime.address(&words),
            phase: 0,
            reserved: 0,
        };
        Ok(self.grid_barrier.get_or_init(|| GridBarrier {
            words,
            most_blocks,
            param,
        }))
    }

    /// The kernel's grid-barrier parameter, with the words a grid of `grid` blocks uses
    /// zeroed on `stream` (in stream order, so back-to-back launches each start from
    /// zero). Callers have refused grids that cannot be co-resident, which the words
    /// always cover.
    fn zeroed_grid_barrier(
        &self,
        stream: sys::CUstream,
        grid: Dim3,
    ) -> Result<&GridParam, CudaError> {
        let barrier = self.grid_barrier()?;
        let blocks = grid.count().unwrap_or(u32::MAX);
        let used = grid::words(blocks);
        assert!(
            used <= barrier.words.len(),
            "a grid of {blocks} blocks passed the co-residency checks but needs more barrier words than {} blocks do",
            barrier.most_blocks
        );
        self.runtime.bind()?;
        // SAFETY: zeroes live words of the allocation `param.arrivals` points to (`used`
        // of them, within it as asserted above), in stream order before the launch (and
        // after any earlier launch using them on that stream).
        unsafe { sys::cuMemsetD32Async(barrier.param.arrivals, 0, used, stream) }
            .result()
            .map_err(CudaError::driver("zero the grid barrier"))?;
        Ok(&barrier.param)
    }
}
