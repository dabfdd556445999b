//! Compiles the project's kernels (`../kernels`) to PTX with the nightly toolchain, twice
//! (as shipped, and a checked build with debug assertions on), and embeds both
//! (`sync_host::ptx`).
//!
//! The recipe (DESIGN.md "Building PTX with Rust"): `cargo +nightly rustc --release
//! --target nvptx64-nvidia-cuda -Zbuild-std=core`, kernel crate as a `cdylib` with fat
//! LTO so the PTX is self-contained, `--emit=asm` with a no-op linker (the target's
//! `llvm-bitcode-linker` is not available). Pitfalls handled here: the nested cargo
//! gets its own target directory and none of the outer build's CARGO_*/RUSTC*/RUSTFLAGS
//! variables; only kernel sources trigger a rerun.
//!
//! Without the nightly toolchain or its `rust-src` component, the host crates still
//! build: the PTX is empty and `sync_host::ptx::kernels()` returns an error naming the
//! missing piece and the command that installs it. `PTX_REQUIRED=1` (set by the test
//! suite) turns that into a build failure instead.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";
/// Hopper (H100/H200), PTX ISA 8.6: cluster scope and `mbarrier.try_wait` (8.0), and the
/// one-way `fence.acquire`/`fence.release` (8.6; a CUDA 12.8 or newer driver loads it).
const CPU: &str = "sm_90";
const PTX_ISA: &str = "+ptx86";

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));
    let root = manifest
        .parent()
        .expect("sync-host sits in the workspace root");
    let kernels = root.join("kernels");
    for input in [
        kernels.join("src"),
        kernels.join("build.rs"),
        kernels.join("Cargo.toml"),
        kernels.join("Cargo.lock"),
        root.join("sync-shared/src"),
        root.join("sync-device/src"),
    ] {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    println!("cargo:rerun-if-env-changed=PTX_TOOLCHAIN");
    println!("cargo:rerun-if-env-changed=PTX_REQUIRED");
    let toolchain = env::var("PTX_TOOLCHAIN").unwrap_or_else(|_| "nightly".into());

    if env::var_os("CARGO_CFG_MIRI").is_some() || env::var_os("CARGO_CFG_LOOM").is_some() {
        // Host-only model runs: no kernels needed, and none required.
        let reason = "not built under Miri or loom (host-only model runs)";
        for flavour in [Flavour::Release, Flavour::Checked] {
            let file = flavour.file();
            fs::write(out_dir.join(file), "").expect("write the PTX");
            fs::write(out_dir.join(format!("{file}.err")), reason).expect("write the PTX error");
        }
        return;
    }
    for flavour in [Flavour::Release, Flavour::Checked] {
        let target_dir = nested_target_dir(&out_dir, flavour);
        let (ptx, error) = match build(&kernels, &target_dir, &toolchain, flavour) {
            Ok(ptx) => (ptx, String::new()),
            Err(error) => {
                if env::var_os("PTX_REQUIRED").is_some_and(|v| v == "1") {
                    panic!("building the kernels' PTX failed: {error}");
                }
                println!("cargo:warning=kernels not built to PTX: {error}");
                // A path that never exists: rerun every build until the toolchain appears.
                println!(
                    "cargo:rerun-if-changed={}",
                    out_dir.join("retry-ptx-build").display()
                );
                (String::new(), error)
            }
        };
        let file = flavour.file();
        fs::write(out_dir.join(file), ptx).expect("write the PTX");
        fs::write(out_dir.join(format!("{file}.err")), error).expect("write the PTX error");
    }
}

/// The two builds of the kernels: optimized as shipped, and with debug assertions on
/// (the device checks of scope misuse and the printed messages of broken
/// preconditions, `sync_host::ptx::KernelBuild::Checked`).
#[derive(Clone, Copy)]
enum Flavour {
    Release,
    Checked,
}

impl Flavour {
    fn file(self) -> &'static str {
        match self {
            Flavour::Release => "kernels.ptx",
            Flavour::Checked => "kernels-checked.ptx",
        }
    }

    /// Flags beyond the target's. The checked build checks the primitives'
    /// preconditions and scopes; overflow checks and `core`'s undefined-behaviour
    /// checks (which debug assertions would also turn on) stay off: the latter put a
    /// check on every raw pointer access, which made the assembled module 2.5 times
    /// larger and its assembly 2.5 times slower, for checks the sanitizers make
    /// better.
    fn rustflags(self) -> String {
        // Source paths relative to the workspace, as the checked build's messages
        // print them, whichever machine built it.
        let root = env!("CARGO_MANIFEST_DIR").trim_end_matches("sync-host");
        let base = format!(
            "-Ctarget-cpu={CPU}\x1f-Ctarget-feature={PTX_ISA}\x1f--remap-path-prefix={root}="
        );
        match self {
            Flavour::Release => base,
            Flavour::Checked => format!(
                "{base}\x1f-Cdebug-assertions=on\x1f-Coverflow-checks=off\x1f-Zub-checks=no"
            ),
        }
    }
}

/// One nested target directory per outer target directory and flavour (shared by
/// every outer profile, so a profile switch does not rebuild `core` for nvptx; one per
/// flavour, as their flags differ and would evict each other's build).
/// OUT_DIR is `<target>[/<triple>]/<profile>/build/<pkg>-<hash>/out`.
fn nested_target_dir(out_dir: &Path, flavour: Flavour) -> PathBuf {
    let name = match flavour {
        Flavour::Release => "nvptx-kernels",
        Flavour::Checked => "nvptx-kernels-checked",
    };
    match out_dir.ancestors().nth(2) {
        Some(build) if build.file_name().is_some_and(|name| name == "build") => {
            let mut target = out_dir.ancestors().nth(4).expect("below the target dir");
            if env::var_os("TARGET").is_some_and(|triple| target.file_name() == Some(&triple)) {
                target = target.parent().expect("below the target dir");
            }
            target.join(name)
        }
        _ => out_dir.join(name),
    }
}

/// `program +<toolchain>` through the rustup proxy, without the outer build's
/// variables (which name the stable toolchain, its flags and its target).
fn nested(program: &str, toolchain: &str, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command.arg(format!("+{toolchain}")).current_dir(dir);
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let keep = matches!(key, "CARGO_HOME" | "CARGO_NET_OFFLINE" | "CARGO_MAKEFLAGS");
        let outer = key.starts_with("CARGO")
            || key.starts_with("RUSTC")
            || key.starts_with("RUSTDOC")
            || key.starts_with("RUSTUP_TOOLCHAIN")
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
        if outer && !keep {
            command.env_remove(key);
        }
    }
    // Never download a toolchain from inside a build script.
    command.env("RUSTUP_AUTO_INSTALL", "0");
    command
}

/// The PTX, or why it could not be built (missing toolchain or `rust-src`). A compile
/// error in the kernels fails the host build.
fn build(
    kernels: &Path,
    target_dir: &Path,
    toolchain: &str,
    flavour: Flavour,
) -> Result<String, String> {
    let probe = nested("rustc", toolchain, kernels)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run `rustc +{toolchain}`: {e}"))?;
    if !probe.status.success() {
        let why = String::from_utf8_lossy(&probe.stderr);
        return Err(format!(
            "toolchain `{toolchain}` is not usable ({}); install it with `rustup toolchain install {toolchain} --component rust-src`",
            why.lines().next().unwrap_or("").trim()
        ));
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&probe.stdout).trim());
    if !sysroot
        .join("lib/rustlib/src/rust/library/Cargo.lock")
        .exists()
    {
        return Err(format!(
            "the `rust-src` component of `{toolchain}` is missing; install it with `rustup component add rust-src --toolchain {toolchain}`"
        ));
    }
    let output = nested("cargo", toolchain, kernels)
        .args([
            "rustc",
            "--locked",
            "--release",
            "--target",
            TARGET,
            "-Zbuild-std=core",
            "--target-dir",
        ])
        .arg(target_dir)
        .args(["--", "--emit=asm", "-Clinker=true"])
        .env("CARGO_ENCODED_RUSTFLAGS", flavour.rustflags())
        .output()
        .unwrap_or_else(|e| panic!("cannot run `cargo +{toolchain}`: {e}"));
    if !output.status.success() {
        panic!(
            "kernel build failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let asm = target_dir.join(TARGET).join("release/deps/kernels.s");
    let ptx = fs::read_to_string(&asm).unwrap_or_else(|e| panic!("{}: {e}", asm.display()));
    // The one external function allowed is `vprintf`, a system call the driver's
    // assembler provides (the checked build prints its messages with it).
    let externs_resolved = ptx
        .lines()
        .filter(|line| line.contains(".extern .func"))
        .all(|line| line.contains("vprintf"));
    assert!(
        ptx.contains(".entry") && externs_resolved,
        "{} is not self-contained PTX",
        asm.display()
    );
    Ok(ptx)
}
