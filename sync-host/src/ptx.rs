//! The project's kernels as PTX, compiled by `build.rs` from `kernels/` for `sm_90`
//! (PTX ISA 8.6) and embedded in the host library.

use std::fmt;

/// The embedded PTX module (empty when it could not be built).
const KERNELS: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// Why the PTX could not be built (empty when it was).
const BUILD_ERROR: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx.err"));

/// The GPU architecture the PTX targets.
pub const ARCH: &str = "sm_90";

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

/// The kernels' PTX module, or why it is missing (with the command that fixes it).
pub fn kernels() -> Result<&'static str, PtxUnavailable> {
    if KERNELS.is_empty() {
        Err(PtxUnavailable {
            reason: BUILD_ERROR,
        })
    } else {
        Ok(KERNELS)
    }
}
