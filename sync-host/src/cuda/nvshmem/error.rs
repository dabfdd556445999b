//! [`NvshmemError`]: why NVSHMEM could not be used.

use std::fmt;

use super::library::{HOME_VARIABLE, LIBRARY_NAME};

/// Why NVSHMEM could not be loaded, started or used.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NvshmemError {
    /// The host library (`libnvshmem_host.so.3`) is in none of the places tried.
    NotFound {
        /// Each place tried, with the loader's reason.
        tried: Vec<String>,
    },
    /// The library lacks a function this crate calls (not NVSHMEM 3.x).
    MissingSymbol {
        /// The library's path.
        library: String,
        /// The function.
        symbol: &'static str,
        /// The loader's reason.
        reason: String,
    },
    /// An NVSHMEM call returned an error status (its own log, on standard error, says
    /// more; `NVSHMEM_DEBUG=INFO` says the most).
    Failed {
        /// The function.
        function: &'static str,
        /// Its status.
        status: i32,
    },
    /// NVSHMEM is already running in this process: an [`Nvshmem`](super::Nvshmem) is
    /// alive, or was (NVSHMEM starts once per process).
    AlreadyStarted,
    /// NVSHMEM numbered this process otherwise than its process group.
    NotTheGroupsRank {
        /// NVSHMEM's PE number and count.
        pe: usize,
        /// NVSHMEM's count of PEs.
        pes: usize,
        /// The group's rank and size.
        rank: usize,
        /// The group's size.
        size: usize,
    },
    /// The symmetric heap has no room for an allocation (`NVSHMEM_SYMMETRIC_SIZE` sets
    /// its size).
    OutOfMemory {
        /// The bytes asked for.
        bytes: usize,
    },
    /// A peer's symmetric memory is not load/store reachable from this GPU
    /// (`nvshmem_ptr` gave no pointer: another machine, or no peer access).
    NotReachable {
        /// The peer's PE number.
        pe: usize,
    },
    /// A module given to [`Nvshmem::load`](super::Nvshmem::load) lacks the NVSHMEM shim:
    /// it was not linked by `sync_build::NvshmemShim`.
    ShimMissing {
        /// The module's name.
        module: String,
    },
    /// The shim was compiled against another NVSHMEM release than the one loaded: its
    /// inlined code would read NVSHMEM's device state by another layout.
    ReleaseMismatch {
        /// The release of the headers the shim was compiled with (major, minor, patch).
        shim: (i32, i32, i32),
        /// The loaded host library's release.
        library: (i32, i32, i32),
    },
}

impl fmt::Display for NvshmemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound { tried } => write!(
                f,
                "NVSHMEM's host library {LIBRARY_NAME} was not found (set {HOME_VARIABLE} to \
                 the installation whose lib/ holds it, e.g. the nvidia/nvshmem folder of the \
                 Python environment with PyTorch's nvidia-nvshmem-cu13 wheel); tried: {}",
                tried.join("; ")
            ),
            Self::MissingSymbol {
                library,
                symbol,
                reason,
            } => write!(
                f,
                "{library} has no {symbol} (NVSHMEM 3.x is needed): {reason}"
            ),
            Self::Failed { function, status } => write!(
                f,
                "{function} failed with status {status} (NVSHMEM_DEBUG=INFO prints why)"
            ),
            Self::AlreadyStarted => f.write_str(
                "NVSHMEM already runs in this process: it starts once per process, so keep \
                 one Nvshmem and share it",
            ),
            Self::NotTheGroupsRank {
                pe,
                pes,
                rank,
                size,
            } => write!(
                f,
                "NVSHMEM made this process PE {pe} of {pes}, its process group rank {rank} of {size}"
            ),
            Self::OutOfMemory { bytes } => write!(
                f,
                "the symmetric heap has no room for {bytes} bytes (NVSHMEM_SYMMETRIC_SIZE sets its size)"
            ),
            Self::NotReachable { pe } => write!(
                f,
                "PE {pe}'s symmetric memory is not load/store reachable from this GPU \
                 (nvshmem_ptr gave no pointer: another machine, or no peer access); \
                 MultiGrid::join_nvshmem_signals crosses through NVSHMEM's operations instead"
            ),
            Self::ShimMissing { module } => write!(
                f,
                "module `{module}` was linked without the NVSHMEM shim: link it with \
                 sync_build::NvshmemShim::new().link(\"{module}\") in build.rs"
            ),
            Self::ReleaseMismatch { shim, library } => write!(
                f,
                "the NVSHMEM shim was compiled against NVSHMEM {}.{}.{}, the loaded host library \
                 is {}.{}.{}: build with {HOME_VARIABLE} naming the installation the program \
                 loads, or point {HOME_VARIABLE} at the release the shim was built with",
                shim.0, shim.1, shim.2, library.0, library.1, library.2
            ),
        }
    }
}

impl std::error::Error for NvshmemError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_says_what_to_do_or_what_differs() {
        let cases = [
            (
                NvshmemError::AlreadyStarted,
                "starts once per process, so keep one Nvshmem and share it",
            ),
            (
                NvshmemError::NotTheGroupsRank {
                    pe: 1,
                    pes: 2,
                    rank: 0,
                    size: 2,
                },
                "PE 1 of 2, its process group rank 0 of 2",
            ),
            (
                NvshmemError::OutOfMemory { bytes: 4096 },
                "4096 bytes (NVSHMEM_SYMMETRIC_SIZE sets its size)",
            ),
            (
                NvshmemError::NotReachable { pe: 3 },
                "PE 3's symmetric memory is not load/store reachable",
            ),
            (
                NvshmemError::ReleaseMismatch {
                    shim: (3, 8, 0),
                    library: (3, 4, 5),
                },
                "compiled against NVSHMEM 3.8.0, the loaded host library is 3.4.5",
            ),
            (
                NvshmemError::ShimMissing {
                    module: "mine".into(),
                },
                "module `mine` was linked without the NVSHMEM shim",
            ),
            (
                NvshmemError::Failed {
                    function: "nvshmemx_hostlib_init_attr",
                    status: 7,
                },
                "nvshmemx_hostlib_init_attr failed with status 7 (NVSHMEM_DEBUG=INFO",
            ),
        ];
        for (error, expected) in cases {
            let message = error.to_string();
            assert!(message.contains(expected), "{message}");
        }
    }
}
