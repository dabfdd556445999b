//! [`CudaError`]: why a GPU operation could not be done.

use std::fmt;

use cudarc::driver::sys;

use super::{LaunchLimit, PtxUnavailable};

/// A failed GPU operation. Driver failures carry the CUDA error name.
#[derive(Debug)]
#[non_exhaustive]
pub enum CudaError {
    /// No CUDA driver library (`libcuda.so`) on this machine.
    NoDriver,
    /// No GPU of that ordinal.
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// GPUs the driver sees.
        count: usize,
    },
    /// An embedded kernel crate's PTX was not built into this program (the toolchain
    /// was missing when it was built, say): the message says why and how to fix it.
    Ptx(PtxUnavailable),
    /// The driver refused a module: not PTX, cubin or fatbin, built for another GPU, or
    /// a PTX version newer than the driver.
    BadModule {
        /// The module's name or path.
        module: String,
        /// The driver's error, if it got that far.
        error: Option<cudarc::driver::DriverError>,
        /// The JIT compiler's log, or what else went wrong.
        log: String,
    },
    /// NVRTC could not compile CUDA C++ source, or is not installed (`libnvrtc.so`
    /// was not found).
    Compile {
        /// The name the source was given.
        name: String,
        /// NVRTC's log (the compiler's errors and warnings), or what else went wrong.
        log: String,
    },
    /// A module has no kernel of that name.
    NoSuchKernel {
        /// The module's name.
        module: String,
        /// The name asked for.
        kernel: String,
    },
    /// A launch shape beyond the kernel's or the device's limits.
    LaunchDoesNotFit {
        /// The kernel.
        kernel: String,
        /// Which limit.
        limit: LaunchLimit,
        /// What the launch asked for.
        requested: u64,
        /// The most (or, for an empty extent, the least) allowed.
        allowed: u64,
    },
    /// A driver call failed.
    Driver {
        /// What we were doing.
        operation: &'static str,
        /// The driver's error, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
        error: cudarc::driver::DriverError,
    },
    /// A benchmark's precondition did not hold (e.g. two kernels did not overlap).
    Measurement(&'static str),
    /// A kernel ended on a `trap`: a broken precondition of a primitive on the device
    /// (`arrive(0)`, more arrivals than the phase expects, a latch counted down past
    /// zero, a semaphore released past its maximum) or, with
    /// [`KernelBuild::Checked`](crate::cuda::KernelBuild::Checked) kernels, a scope
    /// misuse. The checked kernels print why on the program's standard output first.
    /// The CUDA context is lost (the error is sticky): later calls on it fail too.
    ///
    /// The driver reports a trap as `CUDA_ERROR_LAUNCH_FAILED` (a Hopper GPU, sm_90,
    /// with driver 580) or `CUDA_ERROR_ILLEGAL_INSTRUCTION`; both map here, so another
    /// device exception reported with one of those codes lands here too.
    KernelTrapped {
        /// What we were doing when the driver reported it.
        operation: &'static str,
        /// The driver's error.
        error: cudarc::driver::DriverError,
    },
    /// A cooperative launch asked for more blocks than can be co-resident, which would
    /// deadlock a grid-wide barrier.
    GridTooLarge {
        /// Blocks asked for.
        requested: u32,
        /// Blocks that fit at once: occupancy per SM × SM count.
        max: u32,
    },
    /// A collective of the process group failed (a process died or aborted, the group
    /// timed out, the processes' launches differ in shape).
    #[cfg(target_os = "linux")]
    ProcessGroup(crate::process::ProcessGroupError),
    /// The GPU of another process of the group is not visible in this one
    /// (`CUDA_VISIBLE_DEVICES` hides it), so its memory cannot be checked and mapped.
    PeerNotVisible {
        /// The rank of the process whose GPU it is.
        rank: usize,
        /// Its UUID, as `nvidia-smi -L` prints it.
        uuid: String,
    },
    /// NVSHMEM is missing, failed, or cannot do what was asked.
    #[cfg(target_os = "linux")]
    Nvshmem(super::NvshmemError),
    /// The operating system refused host memory to share between processes
    /// (`memfd_create`, `ftruncate`, `mmap`).
    HostMemory {
        /// What was being done.
        operation: &'static str,
        /// The system's error.
        error: std::io::Error,
    },
}

impl CudaError {
    pub(crate) fn driver(
        operation: &'static str,
    ) -> impl FnOnce(cudarc::driver::DriverError) -> Self {
        move |error| {
            // What `trap` ends a kernel with: `CUDA_ERROR_LAUNCH_FAILED` on a Hopper
            // GPU (sm_90) with driver 580 (measured, tests/gpu_device_checks.rs),
            // illegal instruction on other GPUs and drivers. The project's kernels
            // trap on broken preconditions and scope misuse.
            if matches!(
                error.0,
                sys::CUresult::CUDA_ERROR_LAUNCH_FAILED
                    | sys::CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            ) {
                Self::KernelTrapped { operation, error }
            } else {
                Self::Driver { operation, error }
            }
        }
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoDriver => f.write_str("no CUDA driver (libcuda) found on this machine"),
            Self::NoSuchDevice { ordinal, count } => write!(
                f,
                "no GPU {ordinal}: the driver sees {count} (ordinals 0 to {})",
                count.saturating_sub(1)
            ),
            Self::Ptx(missing) => missing.fmt(f),
            Self::BadModule { module, error, log } => {
                write!(f, "the driver refused module `{module}`")?;
                if let Some(error) = error {
                    write!(f, " ({error})")?;
                }
                if !log.is_empty() {
                    write!(f, ": {log}")?;
                }
                Ok(())
            }
            Self::Compile { name, log } => write!(f, "cannot compile CUDA C++ `{name}`: {log}"),
            Self::NoSuchKernel { module, kernel } => write!(
                f,
                "module `{module}` has no kernel `{kernel}` (is it `#[no_mangle] pub unsafe extern \"gpu-kernel\"`, and reached from the crate root?)"
            ),
            Self::LaunchDoesNotFit {
                kernel,
                limit: LaunchLimit::EmptyDimension,
                ..
            } => write!(f, "launch of `{kernel}` refused: a grid, block or cluster extent is zero"),
            Self::LaunchDoesNotFit {
                kernel,
                limit: LaunchLimit::ClusterShape,
                requested,
                allowed,
            } => write!(
                f,
                "launch of `{kernel}` refused: a grid extent of {requested} blocks is not a multiple of the cluster's {allowed}"
            ),
            Self::LaunchDoesNotFit {
                kernel,
                limit,
                requested,
                allowed,
            } => write!(
                f,
                "launch of `{kernel}` refused: {limit} {requested} exceeds {allowed}"
            ),
            Self::Driver { operation, error } => write!(f, "{operation}: {error}"),
            Self::KernelTrapped { operation, error } => write!(
                f,
                "{operation}: a kernel ended with a fault the driver reports as a trap ({error}): a broken precondition on the device, a scope misuse the checked kernels caught (they print which on standard output), or, under compute-sanitizer, the tool ending a kernel in which it reported an error; the CUDA context is lost"
            ),
            Self::Measurement(what) => write!(f, "measurement invalid: {what}"),
            #[cfg(target_os = "linux")]
            Self::ProcessGroup(error) => error.fmt(f),
            #[cfg(target_os = "linux")]
            Self::Nvshmem(error) => error.fmt(f),
            Self::HostMemory { operation, error } => write!(f, "{operation}: {error}"),
            Self::PeerNotVisible { rank, uuid } => write!(
                f,
                "the GPU of rank {rank} ({uuid}) is not visible in this process: every process \
                 of the group must see every GPU of the group (leave CUDA_VISIBLE_DEVICES \
                 unset, or list them all, and pick this process's GPU by its local rank)"
            ),
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
