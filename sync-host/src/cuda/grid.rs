//! Cooperative launches that hand the kernel its grid barrier (`sync_device::Grid`).

use cudarc::driver::{sys, CudaSlice, DeviceRepr, LaunchArgs, PushKernelArg};

use super::{CudaError, Kernel};

/// The host's image of `sync_device::Grid`: the arrival counter's device address and
/// the thread's phase count (zero at launch). Only [`Kernel::launch_grid`] makes one,
/// so only a cooperative launch hands a kernel a grid barrier.
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

/// A kernel's grid-barrier counter and the parameter that points at it.
pub(super) struct GridBarrier {
    /// Owns the word `param` points to.
    _counter: CudaSlice<u32>,
    param: GridParam,
}

impl Kernel<'_> {
    /// A cooperative launch of a kernel whose first parameter is a
    /// `sync_device::Grid`: the launch zeroes the kernel's arrival counter (in stream
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
        grid: u32,
        block: u32,
        args: impl FnOnce(&mut LaunchArgs<'a>),
    ) -> Result<(), CudaError> {
        let barrier = match self.grid_barrier.get() {
            Some(barrier) => barrier,
            None => {
                let counter = self.runtime.zeros::<u32>(1)?;
                let param = GridParam {
                    arrivals: self.runtime.address(&counter),
                    phase: 0,
                    reserved: 0,
                };
                self.grid_barrier.get_or_init(|| GridBarrier {
                    _counter: counter,
                    param,
                })
            }
        };
        // SAFETY: zeroes the one live word `param.arrivals` points to, in stream order
        // before the launch (and after any earlier launch using it).
        unsafe {
            sys::cuMemsetD32Async(
                barrier.param.arrivals,
                0,
                1,
                self.runtime.stream.cu_stream(),
            )
        }
        .result()
        .map_err(CudaError::driver("zero the grid barrier"))?;
        let param = &barrier.param;
        // SAFETY: the caller vouches for the kernel's parameters; the counter lives as
        // long as the kernel object.
        unsafe {
            self.launch_cooperative(grid, block, |builder| {
                builder.arg(param);
                args(builder);
            })
        }
    }
}
