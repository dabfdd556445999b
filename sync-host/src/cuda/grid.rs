//! The grid barrier a launch hands a kernel (`sync_device::Grid`): its words, zeroed
//! before each launch in stream order.

use cudarc::driver::{sys, CudaSlice, DeviceRepr};
use sync_shared::layout::grid;

use super::{CudaError, Dim3, Kernel};

/// The host's image of `sync_device::Grid`: the barrier words' device address and
/// the thread's phase count (zero at launch). Only a launch with
/// [`KernelArgs::grid_barrier`](super::KernelArgs::grid_barrier) makes one, and it
/// refuses a grid whose blocks cannot all be co-resident.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(super) struct GridParam {
    arrivals: u64,
    phase: u32,
    reserved: u32,
}

// SAFETY: plain old data with the layout of `sync_device::Grid` (`#[repr(C)]`: a
// pointer, then two u32).
unsafe impl DeviceRepr for GridParam {}

impl GridParam {
    /// The parameter as the launch's 8-byte words: 16 bytes, little-endian (the pointer,
    /// then `phase` and `reserved` in the second word's low and high halves).
    pub(super) fn words(&self) -> [u64; 2] {
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
    pub(super) fn zeroed_grid_barrier(
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
