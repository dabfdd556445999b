//! The nested cargo and rustc: the toolchain named explicitly, the outer build's
//! variables removed, a target directory of its own.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The profile a self-contained PTX module needs, whatever the kernel crate's
/// manifest says (`--config` profiles win over the manifest's).
pub(crate) const PROFILE: [&str; 10] = [
    "--config",
    "profile.release.lto=\"fat\"",
    "--config",
    "profile.release.codegen-units=1",
    "--config",
    "profile.release.panic=\"abort\"",
    "--config",
    "profile.release.opt-level=3",
    "--config",
    "profile.release.debug=false",
];

/// `program +<toolchain>` through the rustup proxy in `dir`, without the outer build's
/// variables (which name the stable toolchain, its flags, its target and its target
/// directory).
pub(crate) fn nested(program: &str, toolchain: &str, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command.arg(format!("+{toolchain}")).current_dir(dir);
    for (key, _) in env::vars_os() {
        if let Some(key) = key.to_str() {
            if is_outer_variable(key) {
                command.env_remove(key);
            }
        }
    }
    // Never download a toolchain from inside a build script.
    command.env("RUSTUP_AUTO_INSTALL", "0");
    command
}

/// Whether the nested build must not see `key`: it belongs to the outer build.
fn is_outer_variable(key: &str) -> bool {
    // Shared on purpose: where crates and the network are, and the jobserver.
    let keep = matches!(key, "CARGO_HOME" | "CARGO_NET_OFFLINE" | "CARGO_MAKEFLAGS")
        || key.starts_with("CARGO_REGISTRIES_")
        || key.starts_with("CARGO_HTTP_");
    let outer = key.starts_with("CARGO")
        || key.starts_with("RUSTC")
        || key.starts_with("RUSTDOC")
        || key.starts_with("RUSTUP_TOOLCHAIN")
        || key.starts_with("DEP_")
        || matches!(
            key,
            "RUSTFLAGS"
                | "TARGET"
                | "HOST"
                | "OUT_DIR"
                | "PROFILE"
                | "OPT_LEVEL"
                | "DEBUG"
                | "NUM_JOBS"
        );
    outer && !keep
}

/// `<outer target dir>/sync-build`: one per outer target directory, shared by every
/// outer profile (a profile switch does not rebuild `core` for nvptx).
/// `OUT_DIR` is `<target>[/<triple>]/<profile>/build/<pkg>-<hash>/out`.
pub(crate) fn default_target_dir(out_dir: &Path) -> PathBuf {
    let build = out_dir.ancestors().nth(2);
    if build.is_none_or(|build| build.file_name().is_none_or(|name| name != "build")) {
        return out_dir.join("sync-build");
    }
    let mut target = out_dir.ancestors().nth(4).expect("below the target dir");
    if env::var_os("TARGET").is_some_and(|triple| target.file_name() == Some(&triple)) {
        target = target.parent().expect("below the target dir");
    }
    target.join("sync-build")
}

/// A short stable hash of a path (FNV-1a), so that two kernel crates of one name get
/// different nested target directories.
pub(crate) fn path_hash(path: &Path) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in path.to_string_lossy().bytes() {
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_build_variables_are_removed_and_shared_ones_kept() {
        for outer in [
            "CARGO",
            "CARGO_TARGET_DIR",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_PKG_NAME",
            "CARGO_CFG_TARGET_ARCH",
            "RUSTC",
            "RUSTC_WRAPPER",
            "RUSTFLAGS",
            "RUSTDOCFLAGS",
            "RUSTUP_TOOLCHAIN",
            "TARGET",
            "OUT_DIR",
            "DEP_Z_INCLUDE",
        ] {
            assert!(is_outer_variable(outer), "{outer}");
        }
        for kept in [
            "CARGO_HOME",
            "CARGO_NET_OFFLINE",
            "CARGO_MAKEFLAGS",
            "PATH",
            "HOME",
            "RUSTUP_HOME",
        ] {
            assert!(!is_outer_variable(kept), "{kept}");
        }
    }

    #[test]
    fn nested_target_dir_is_beside_the_outer_profiles() {
        let out = Path::new("/w/target/release/build/host-1234/out");
        assert_eq!(default_target_dir(out), Path::new("/w/target/sync-build"));
        let elsewhere = Path::new("/tmp/out");
        assert_eq!(
            default_target_dir(elsewhere),
            Path::new("/tmp/out/sync-build")
        );
    }

    #[test]
    fn path_hash_tells_paths_apart() {
        assert_ne!(
            path_hash(Path::new("/a/kernels")),
            path_hash(Path::new("/b/kernels"))
        );
        assert_eq!(path_hash(Path::new("/a")), path_hash(Path::new("/a")));
    }
}
