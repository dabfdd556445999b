//! [`BuildError`]: why a kernel crate could not be compiled to PTX.

use std::fmt;
use std::path::PathBuf;

/// Why [`KernelCrate::build`](crate::KernelCrate::build) did not produce PTX.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The toolchain cannot be run (not installed, or broken).
    Toolchain {
        /// The toolchain asked for.
        toolchain: String,
        /// What failed.
        detail: String,
    },
    /// The toolchain has neither the `rust-src` component (for `-Zbuild-std=core`) nor
    /// a prebuilt `core` for the nvptx target.
    RustSrcMissing {
        /// The toolchain asked for.
        toolchain: String,
    },
    /// No build was attempted in this kind of build (Miri, loom, docs.rs).
    Skipped {
        /// Which kind.
        reason: String,
    },
    /// The kernel crate did not compile.
    Compile {
        /// The kernel crate.
        dir: PathBuf,
        /// The nested cargo's diagnostics.
        stderr: String,
    },
    /// The build produced PTX that the driver could not load alone.
    NotSelfContained {
        /// The PTX file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// No nvcc for [`CudaKernels`](crate::CudaKernels) (see [`nvcc`](crate::nvcc)).
    NvccMissing {
        /// Where it was looked for.
        detail: String,
    },
    /// No NVSHMEM headers for [`NvshmemShim`](crate::NvshmemShim): `NVSHMEM_HOME` is
    /// unset or names no installation.
    NvshmemMissing {
        /// What was looked at.
        detail: String,
    },
    /// nvcc rejected a CUDA C++ file or the device link failed.
    Nvcc {
        /// The command.
        command: String,
        /// nvcc's diagnostics.
        stderr: String,
    },
    /// A setting of the [`KernelCrate`](crate::KernelCrate) is wrong.
    Settings(String),
    /// Reading or writing a file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
}

impl BuildError {
    /// Whether a host build may go on without the PTX (and report this when the module
    /// is loaded): a missing toolchain or component, or a build that skips kernels.
    pub fn can_be_recorded(&self) -> bool {
        matches!(
            self,
            BuildError::Toolchain { .. }
                | BuildError::RustSrcMissing { .. }
                | BuildError::Skipped { .. }
                | BuildError::NvccMissing { .. }
                | BuildError::NvshmemMissing { .. }
        )
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Toolchain { toolchain, detail } => write!(
                f,
                "toolchain `{toolchain}` is not usable ({detail}); install it with \
                 `rustup toolchain install {toolchain} --component rust-src`, then rebuild"
            ),
            BuildError::RustSrcMissing { toolchain } => write!(
                f,
                "the `rust-src` component of `{toolchain}` is missing (the kernels build \
                 `core` for nvptx64 from source); install it with `rustup component add \
                 rust-src --toolchain {toolchain}`, then rebuild"
            ),
            BuildError::Skipped { reason } => write!(f, "the kernels were {reason}"),
            BuildError::Compile { dir, stderr } => {
                write!(
                    f,
                    "the kernel crate {} did not compile:\n{stderr}",
                    dir.display()
                )
            }
            BuildError::NotSelfContained { path, detail } => {
                write!(
                    f,
                    "{} is not a self-contained PTX module: {detail}",
                    path.display()
                )
            }
            BuildError::NvccMissing { detail } => write!(
                f,
                "nvcc not found ({detail}): install the CUDA toolkit, or `pip install \
                 nvidia-cuda-nvcc nvidia-cuda-crt nvidia-nvvm nvidia-cuda-runtime` and set \
                 `NVCC` to its `nvidia/cu13/bin/nvcc`, then rebuild"
            ),
            BuildError::NvshmemMissing { detail } => write!(
                f,
                "NVSHMEM's headers not found ({detail}): set `NVSHMEM_HOME` to the NVSHMEM 3 \
                 installation the program will load (its include/ and lib/), e.g. the \
                 nvidia/nvshmem folder of `pip install nvidia-nvshmem-cu13`, then rebuild"
            ),
            BuildError::Nvcc { command, stderr } => write!(f, "nvcc failed: {command}\n{stderr}"),
            BuildError::Settings(message) => f.write_str(message),
            BuildError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}
