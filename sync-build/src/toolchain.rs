//! Finds the toolchain of the nested build and what it can build `core` from.

use std::path::{Path, PathBuf};

use crate::{command, BuildError, TARGET};

/// A toolchain that can build a kernel crate.
pub(crate) struct Found {
    /// Its name, as `cargo +name` takes it.
    pub(crate) toolchain: String,
    /// Its sysroot (the nested build's dep-info names `core`'s sources there).
    pub(crate) sysroot: PathBuf,
    /// It ships a prebuilt `core` for the nvptx target: no `-Zbuild-std` needed.
    pub(crate) prebuilt_core: bool,
}

/// `toolchain` if it runs and can build `core` for nvptx64: with a prebuilt one
/// (`rustup target add nvptx64-nvidia-cuda`) or from `rust-src`.
pub(crate) fn probe(toolchain: &str, dir: &Path) -> Result<Found, BuildError> {
    let output = command::nested("rustc", toolchain, dir)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|error| BuildError::Toolchain {
            toolchain: toolchain.to_owned(),
            detail: format!("cannot run `rustc +{toolchain}`: {error}"),
        })?;
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr);
        return Err(BuildError::Toolchain {
            toolchain: toolchain.to_owned(),
            detail: why
                .lines()
                .next()
                .unwrap_or("rustc failed")
                .trim()
                .to_owned(),
        });
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let prebuilt_core = has_prebuilt_core(&sysroot);
    let has_source = sysroot
        .join("lib/rustlib/src/rust/library/Cargo.lock")
        .is_file();
    if !prebuilt_core && !has_source {
        return Err(BuildError::RustSrcMissing {
            toolchain: toolchain.to_owned(),
        });
    }
    Ok(Found {
        toolchain: toolchain.to_owned(),
        sysroot,
        prebuilt_core,
    })
}

/// Whether the sysroot has `libcore-*.rlib` for the nvptx target.
fn has_prebuilt_core(sysroot: &Path) -> bool {
    let lib = sysroot.join("lib/rustlib").join(TARGET).join("lib");
    std::fs::read_dir(lib).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("libcore-") && name.ends_with(".rlib")
        })
    })
}
