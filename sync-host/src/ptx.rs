//! The project's kernels as PTX, compiled by `build.rs` from `kernels/` for `sm_90`
//! (PTX ISA 8.6) and embedded in the host library, in two builds: [`KernelBuild`].

use std::fmt;

/// The embedded PTX modules (empty when they could not be built).
const RELEASE: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
const CHECKED: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels-checked.ptx"));
/// Why a module could not be built (empty when it was).
const RELEASE_ERROR: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx.err"));
const CHECKED_ERROR: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels-checked.ptx.err"));

/// The GPU architecture the PTX targets.
pub const ARCH: &str = "sm_90";

/// The environment variable that picks a [`KernelBuild`] at run time: `checked` or
/// `release`.
pub const KERNEL_BUILD_VARIABLE: &str = "SCOPED_SYNC_KERNELS";

/// Which build of the kernels a [`Runtime`](crate::cuda::Runtime) loads.
///
/// A debug build of the host program loads [`Checked`](Self::Checked), a release build
/// [`Release`](Self::Release); the environment variable [`KERNEL_BUILD_VARIABLE`]
/// (`SCOPED_SYNC_KERNELS=checked` or `=release`) overrides that without a rebuild.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelBuild {
    /// Optimized, no checks beyond the primitives' preconditions (whose violation
    /// traps the kernel without a message).
    Release,
    /// Debug assertions on: a `Block`-scope object used by two blocks of a launch, or a
    /// `Cluster`-scope one by two clusters, traps with a message naming the object, its
    /// scope and the offending thread; a broken precondition prints its message
    /// (operation, values, thread) before the trap.
    Checked,
}

impl KernelBuild {
    /// The build matching this binary's profile, unless [`KERNEL_BUILD_VARIABLE`]
    /// names one (an unknown value is ignored).
    pub fn from_environment() -> Self {
        match std::env::var(KERNEL_BUILD_VARIABLE).as_deref() {
            Ok("checked") => Self::Checked,
            Ok("release") => Self::Release,
            _ if cfg!(debug_assertions) => Self::Checked,
            _ => Self::Release,
        }
    }

    /// This build's PTX module, or why it is missing (with the command that fixes it).
    pub fn ptx(self) -> Result<&'static str, PtxUnavailable> {
        let (ptx, reason) = match self {
            Self::Release => (RELEASE, RELEASE_ERROR),
            Self::Checked => (CHECKED, CHECKED_ERROR),
        };
        if ptx.is_empty() {
            Err(PtxUnavailable { reason })
        } else {
            Ok(ptx)
        }
    }
}

/// The PTX was not built into this binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxUnavailable {
    reason: &'static str,
}

impl fmt::Display for PtxUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the kernels were not compiled to PTX when this binary was built: {}",
            self.reason
        )
    }
}

impl std::error::Error for PtxUnavailable {}

/// The PTX module of [`KernelBuild::from_environment`], or why it is missing.
pub fn kernels() -> Result<&'static str, PtxUnavailable> {
    KernelBuild::from_environment().ptx()
}
