//! [`CudaError`]: why a GPU operation could not be done.

use std::fmt;

use crate::ptx::PtxUnavailable;

/// A failed GPU operation. Driver failures carry the CUDA error name.
#[derive(Debug)]
#[non_exhaustive]
pub enum CudaError {
    /// No CUDA driver library (`libcuda.so`) on this machine.
    NoDriver,
    /// The kernels' PTX was not built into this binary.
    Ptx(PtxUnavailable),
    /// A driver call failed.
    Driver {
        /// What we were doing.
        operation: &'static str,
        /// The driver's error, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
        error: cudarc::driver::DriverError,
    },
    /// A benchmark's precondition did not hold (e.g. two kernels did not overlap).
    Measurement(&'static str),
    /// A cooperative launch asked for more blocks than can be co-resident, which would
    /// deadlock a grid-wide barrier.
    GridTooLarge {
        /// Blocks asked for.
        requested: u32,
        /// Blocks that fit at once: occupancy per SM × SM count.
        max: u32,
    },
}

impl CudaError {
    pub(crate) fn driver(
        operation: &'static str,
    ) -> impl FnOnce(cudarc::driver::DriverError) -> Self {
        move |error| Self::Driver { operation, error }
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoDriver => f.write_str("no CUDA driver (libcuda) found on this machine"),
            Self::Ptx(missing) => missing.fmt(f),
            Self::Driver { operation, error } => write!(f, "{operation}: {error}"),
            Self::Measurement(what) => write!(f, "measurement invalid: {what}"),
            Self::GridTooLarge { requested, max } => write!(
                f,
                "cooperative launch of {requested} blocks refused: at most {max} blocks can be co-resident on this GPU (a grid-wide barrier would deadlock)"
            ),
        }
    }
}

impl std::error::Error for CudaError {}

impl From<PtxUnavailable> for CudaError {
    fn from(missing: PtxUnavailable) -> Self {
        Self::Ptx(missing)
    }
}
