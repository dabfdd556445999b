//! Compiles a Rust kernel crate to PTX from a build script, for
//! `scoped_sync::include_kernels!`.
//!
//! A kernel crate is an ordinary `#![no_std]` library whose `extern "gpu-kernel"`
//! functions use `scoped_sync`'s device types (`Grid`, `SharedBarrier`,
//! `Barrier<Device>`, `HandoffChannel`, …). The host program that launches them names it
//! in its `build.rs`:
//!
//! ```no_run
//! // in `fn main` of the host program's build.rs:
//! sync_build::KernelCrate::new("../kernels")
//!     .checked(true) // also the checked flavour: scope-misuse traps, printed messages
//!     .build_or_record();
//! ```
//!
//! and embeds what it built (the kernel crate's library name, here `my_kernels`):
//!
//! ```ignore
//! static KERNELS: scoped_sync::cuda::EmbeddedModule = scoped_sync::include_kernels!("my_kernels");
//!
//! let runtime = scoped_sync::cuda::Runtime::open(0)?;
//! let module = runtime.load(&KERNELS)?;
//! ```
//!
//! CUDA C++ kernels that use the same objects through `scoped_sync.cuh` are built with
//! [`CudaKernels`] (nvcc, linked with the [`DeviceLibrary`]) and embedded with
//! `scoped_sync::include_cuda!`; [`DeviceLibrary`] alone builds the library for linking
//! at run time (NVRTC, the user's own `-rdc` code).
//!
//! # What it runs
//!
//! `cargo +nightly rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core --lib
//! --crate-type cdylib` with fat LTO, one codegen unit and `panic = "abort"` (passed as
//! `--config`, so the kernel crate needs no profile of its own), `--emit=asm` and a
//! no-op linker: fat LTO over a `cdylib` leaves one self-contained PTX module holding
//! the crate's kernels and everything they call. The target's own linker
//! (`llvm-bitcode-linker`) and a prebuilt nvptx `core` are not shipped for every
//! nightly; where the toolchain has the prebuilt `core` (`rustup target add
//! nvptx64-nvidia-cuda`), `-Zbuild-std` is left out and `rust-src` is not needed.
//!
//! The nested cargo runs with its own target directory (`<target>/sync-build/…`, shared
//! by the outer build's profiles; the outer build holds the lock on its own) and
//! without the outer build's `CARGO_*`, `RUSTC*` and `RUSTFLAGS` variables, which name
//! the stable toolchain and the host target. Only the kernel crate's sources (and
//! those of its path dependencies, read from the nested build's dep-info) trigger a
//! rerun, so host rebuilds stay fast.
//!
//! # The kernel crate
//!
//! - Its own workspace (an empty `[workspace]` table in its `Cargo.toml`), or excluded
//!   from the host's: the host workspace must never build it for the host.
//! - `#![no_std]`, `#![feature(abi_gpu_kernel)]`, and a panic handler:
//!   `scoped_sync::panic_handler!();`.
//! - Kernels: `#[no_mangle] pub unsafe extern "gpu-kernel" fn name(...)`.
//!
//! # Toolchain
//!
//! The `nightly` toolchain with `rust-src` (`rustup toolchain install nightly
//! --component rust-src`); [`KernelCrate::toolchain`] or `SYNC_BUILD_TOOLCHAIN` picks
//! another. When it is missing, [`build_or_record`](KernelCrate::build_or_record)
//! records why (with the install command) and the host still builds: loading the module
//! at run time returns that error. `SYNC_BUILD_REQUIRED=1`, or
//! [`KernelCrate::required`], turns it into a build failure. A compile error in the
//! kernels always fails the build.
#![forbid(unsafe_code)]

mod command;
mod cuda_cpp;
mod dep_info;
mod device_library;
mod diagnostics;
mod error;
mod manifest;
mod nvshmem_shim;
mod toolchain;

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

pub use cuda_cpp::{nvcc, BuiltCuda, CudaKernels, CHECKED_DEFINE, NVCC_VARIABLE};
pub use device_library::{include_dir, DeviceLibrary, DEVICE_LIBRARY_STEM};
pub use error::BuildError;
use nvshmem_shim::NVSHMEM_SHIM_FUNCTIONS;
pub use nvshmem_shim::{NvshmemShim, NVSHMEM_HOME_VARIABLE, NVSHMEM_SHIM_STEM};

/// The target every kernel crate is compiled for.
pub const TARGET: &str = "nvptx64-nvidia-cuda";
/// The default GPU architecture: Hopper (H100, H200). Cluster scope, `mbarrier.try_wait`
/// and the cluster barrier need it.
pub const DEFAULT_ARCH: &str = "sm_90";
/// The default PTX ISA version, 8.6: the one-way `fence.acquire` / `fence.release`
/// that sync-device emits (a CUDA 12.8 or newer driver loads it).
pub const DEFAULT_PTX_ISA: (u32, u32) = (8, 6);
/// Picks the toolchain (default `nightly`).
pub const TOOLCHAIN_VARIABLE: &str = "SYNC_BUILD_TOOLCHAIN";
/// `1`: a missing toolchain fails the build instead of being recorded.
pub const REQUIRED_VARIABLE: &str = "SYNC_BUILD_REQUIRED";

/// One build of a kernel crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// Optimized, as shipped.
    Release,
    /// Debug assertions on: sync-device checks scope misuse (a `Block`-scope object used
    /// by two blocks traps with a message) and prints a broken precondition's message
    /// before the trap. Overflow checks and `core`'s undefined-behaviour checks stay
    /// off (they put a check on every raw pointer access, which made the project's
    /// module 2.5 times larger, for checks the sanitizers make better).
    Checked,
}

impl Flavour {
    /// The file name under `OUT_DIR`: `<stem>.ptx` or `<stem>-checked.ptx`.
    pub fn file_name(self, stem: &str) -> String {
        match self {
            Flavour::Release => format!("{stem}.ptx"),
            Flavour::Checked => format!("{stem}-checked.ptx"),
        }
    }

    /// The file holding why the flavour's PTX is missing (empty when it was built).
    pub fn error_file_name(self, stem: &str) -> String {
        format!("{}.err", self.file_name(stem))
    }

    fn rustflags(self) -> &'static [&'static str] {
        match self {
            Flavour::Release => &[],
            Flavour::Checked => &[
                "-Cdebug-assertions=on",
                "-Coverflow-checks=off",
                "-Zub-checks=no",
            ],
        }
    }
}

/// What a successful [`KernelCrate::build`] wrote.
#[derive(Clone, Debug)]
pub struct Built {
    /// The stem `include_kernels!` names.
    pub stem: String,
    /// The release PTX.
    pub release: PathBuf,
    /// The checked PTX, if asked for.
    pub checked: Option<PathBuf>,
}

/// A kernel crate to compile to PTX. See the [crate docs](crate).
///
/// # Examples
///
/// A build script that needs the PTX (a missing nightly is an error, not a skipped
/// module) for an sm_80 target as well as the default sm_90:
///
/// ```no_run
/// use sync_build::{BuildError, KernelCrate};
///
/// fn main() -> Result<(), BuildError> {
///     let hopper = KernelCrate::new("../kernels").checked(true).locked(true).build()?;
///     println!("cargo::warning=kernels at {}", hopper.release.display());
///     let ampere = KernelCrate::new("../kernels/sm80")
///         .name("kernels_sm80")
///         .arch("sm_80")
///         .ptx_isa(7, 8)
///         .build()?;
///     assert!(ampere.checked.is_none()); // only the release flavour was asked for
///     Ok(())
/// }
/// ```
#[derive(Clone, Debug)]
pub struct KernelCrate {
    dir: PathBuf,
    stem: Option<String>,
    arch: String,
    ptx_isa: (u32, u32),
    checked: bool,
    toolchain: Option<String>,
    locked: bool,
    required: bool,
    remap: Option<PathBuf>,
    target_dir: Option<PathBuf>,
    rustflags: Vec<String>,
    /// Builds a library of device functions (the device library), not kernels.
    library: bool,
}

impl KernelCrate {
    /// The kernel crate at `dir`: relative paths are taken from the manifest
    /// directory of the package whose build script calls this.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        let dir = if dir.is_relative() {
            manifest_dir().join(dir)
        } else {
            dir.to_owned()
        };
        Self {
            dir,
            stem: None,
            arch: DEFAULT_ARCH.to_owned(),
            ptx_isa: DEFAULT_PTX_ISA,
            checked: false,
            toolchain: None,
            locked: false,
            required: false,
            remap: None,
            target_dir: None,
            rustflags: Vec::new(),
            library: false,
        }
    }

    /// The output file stem (`include_kernels!("stem")`); default: the crate's library
    /// name (`my-kernels` → `my_kernels`).
    pub fn name(mut self, stem: &str) -> Self {
        self.stem = Some(stem.to_owned());
        self
    }

    /// The GPU architecture, `sm_XY` (default [`DEFAULT_ARCH`]). sync-device has
    /// everything at `sm_90`; for older GPUs (`.arch("sm_80").ptx_isa(7, 8)`, say) it
    /// leaves out what needs sm_90 instructions (cluster items and scope,
    /// `SharedBarrier`), so using them is a compile error, and lowers one-way fences to
    /// `fence.acq_rel` (see sync-device's "Targets").
    pub fn arch(mut self, arch: &str) -> Self {
        self.arch = arch.to_owned();
        self
    }

    /// The PTX ISA version (default [`DEFAULT_PTX_ISA`], 8.6).
    pub fn ptx_isa(mut self, major: u32, minor: u32) -> Self {
        self.ptx_isa = (major, minor);
        self
    }

    /// Also builds the [`Flavour::Checked`] PTX.
    pub fn checked(mut self, checked: bool) -> Self {
        self.checked = checked;
        self
    }

    /// The toolchain of the nested build (default: `SYNC_BUILD_TOOLCHAIN`, else
    /// `nightly`).
    pub fn toolchain(mut self, toolchain: &str) -> Self {
        self.toolchain = Some(toolchain.to_owned());
        self
    }

    /// Passes `--locked` to the nested cargo (the kernel crate's `Cargo.lock` must be
    /// up to date).
    pub fn locked(mut self, locked: bool) -> Self {
        self.locked = locked;
        self
    }

    /// A missing toolchain fails the build even without `SYNC_BUILD_REQUIRED=1`.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Source paths under `dir` print relative to it in the checked flavour's messages
    /// (default: the kernel crate's parent directory).
    pub fn remap_path_prefix(mut self, dir: impl AsRef<Path>) -> Self {
        self.remap = Some(dir.as_ref().to_owned());
        self
    }

    /// The nested build's target directory (default `<outer target>/sync-build/<stem>`).
    pub fn target_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.target_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// One more flag for the kernel crate's `rustc` (and its dependencies').
    pub fn rustflag(mut self, flag: &str) -> Self {
        self.rustflags.push(flag.to_owned());
        self
    }

    /// Builds a library of linkable device functions (`#[no_mangle] pub extern "C"`)
    /// rather than kernels: the PTX may have no kernel, and is linked with other code
    /// before it is loaded (see [`DeviceLibrary`]).
    pub(crate) fn library(mut self, library: bool) -> Self {
        self.library = library;
        self
    }

    /// Builds the PTX into `OUT_DIR` (and the checked flavour, if asked for); prints
    /// the `cargo:rerun-if-changed` lines. A missing toolchain is an error here; see
    /// [`build_or_record`](Self::build_or_record).
    pub fn build(&self) -> Result<Built, BuildError> {
        self.validate()?;
        let stem = self.stem()?;
        let out_dir = out_dir();
        self.rerun_on_inputs();
        let toolchain = self.toolchain_name();
        let flavours = self.flavours();
        if let Some(reason) = skipped_build() {
            return Err(BuildError::Skipped { reason });
        }
        let found = toolchain::probe(&toolchain, &self.dir)?;
        let mut built = Built {
            release: out_dir.join(Flavour::Release.file_name(&stem)),
            checked: None,
            stem: stem.clone(),
        };
        for flavour in flavours {
            let ptx = self.compile(&found, &stem, flavour)?;
            let path = out_dir.join(flavour.file_name(&stem));
            write(&path, &ptx);
            write(&out_dir.join(flavour.error_file_name(&stem)), "");
            if flavour == Flavour::Checked {
                built.checked = Some(path);
            }
        }
        if !self.checked {
            record(
                &out_dir,
                &stem,
                Flavour::Checked,
                "the checked flavour was not built: call `.checked(true)` on the \
                 `sync_build::KernelCrate` in build.rs",
            );
        }
        Ok(built)
    }

    /// As [`build`](Self::build), except that a missing toolchain (or a build under
    /// Miri) is recorded instead: the host program still builds, and loading the module
    /// returns the recorded reason, with the command that fixes it. With
    /// `SYNC_BUILD_REQUIRED=1` or [`required`](Self::required) a missing toolchain
    /// panics here.
    ///
    /// # Panics
    ///
    /// On a compile error in the kernel crate (its diagnostics in the message), on bad
    /// settings, and as just said.
    pub fn build_or_record(&self) -> Option<Built> {
        match self.build() {
            Ok(built) => Some(built),
            Err(error) if error.can_be_recorded() && !self.is_required(&error) => {
                let stem = self
                    .stem()
                    .unwrap_or_else(|error| panic!("sync-build: {error}"));
                let out_dir = out_dir();
                if !matches!(error, BuildError::Skipped { .. }) {
                    println!("cargo:warning=kernels `{stem}` not built to PTX: {error}");
                    // A path that never exists: rerun every build until the toolchain
                    // appears.
                    println!(
                        "cargo:rerun-if-changed={}",
                        out_dir.join("sync-build-retry").display()
                    );
                }
                for flavour in [Flavour::Release, Flavour::Checked] {
                    record(&out_dir, &stem, flavour, &error.to_string());
                }
                None
            }
            Err(error) => panic!("sync-build: {error}"),
        }
    }

    fn is_required(&self, error: &BuildError) -> bool {
        !matches!(error, BuildError::Skipped { .. })
            && (self.required || env::var(REQUIRED_VARIABLE).is_ok_and(|value| value == "1"))
    }

    fn flavours(&self) -> Vec<Flavour> {
        if self.checked {
            vec![Flavour::Release, Flavour::Checked]
        } else {
            vec![Flavour::Release]
        }
    }

    fn toolchain_name(&self) -> String {
        self.toolchain
            .clone()
            .or_else(|| env::var(TOOLCHAIN_VARIABLE).ok())
            .unwrap_or_else(|| "nightly".to_owned())
    }

    fn stem(&self) -> Result<String, BuildError> {
        match &self.stem {
            Some(stem) => Ok(stem.clone()),
            None => manifest::lib_name(&self.dir),
        }
    }

    fn validate(&self) -> Result<(), BuildError> {
        validate_arch(&self.arch)?;
        if self.ptx_isa.1 > 9 {
            return Err(BuildError::Settings(format!(
                "PTX ISA {}.{} does not exist (minor versions are 0 to 9)",
                self.ptx_isa.0, self.ptx_isa.1
            )));
        }
        if !self.dir.join("Cargo.toml").is_file() {
            return Err(BuildError::Settings(format!(
                "{} has no Cargo.toml: `KernelCrate::new` takes the kernel crate's directory",
                self.dir.display()
            )));
        }
        Ok(())
    }

    /// Inputs known before the nested build has run (its dep-info adds the rest).
    /// Only paths that exist: cargo takes a missing one for changed and reruns every
    /// build. A `build.rs` or `Cargo.lock` that may appear later is watched through the
    /// kernel crate's directory, which cargo scans for the newest change.
    fn rerun_on_inputs(&self) {
        for file in ["Cargo.toml", "Cargo.lock", "build.rs", "src"] {
            let path = self.dir.join(file);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        if ["build.rs", "Cargo.lock"]
            .iter()
            .any(|file| !self.dir.join(file).exists())
        {
            println!("cargo:rerun-if-changed={}", self.dir.display());
        }
        for variable in [TOOLCHAIN_VARIABLE, REQUIRED_VARIABLE] {
            println!("cargo:rerun-if-env-changed={variable}");
        }
    }

    /// The flags of the nested build, `CARGO_ENCODED_RUSTFLAGS`-style.
    fn encoded_rustflags(&self, flavour: Flavour) -> String {
        let remap = self
            .remap
            .clone()
            .or_else(|| self.dir.parent().map(Path::to_owned))
            .unwrap_or_default();
        let mut flags = vec![
            format!("-Ctarget-cpu={}", self.arch),
            format!("-Ctarget-feature=+ptx{}{}", self.ptx_isa.0, self.ptx_isa.1),
            format!("--remap-path-prefix={}/=", remap.display()),
        ];
        flags.extend(flavour.rustflags().iter().map(|flag| (*flag).to_owned()));
        flags.extend(self.rustflags.iter().cloned());
        flags.join("\x1f")
    }

    fn compile(
        &self,
        found: &toolchain::Found,
        stem: &str,
        flavour: Flavour,
    ) -> Result<String, BuildError> {
        let target_dir = match &self.target_dir {
            Some(dir) => dir.join(flavour_dir(stem, flavour)),
            None => command::default_target_dir(&out_dir()).join(format!(
                "{}-{:08x}",
                flavour_dir(stem, flavour),
                command::path_hash(&self.dir)
            )),
        };
        let mut cargo = command::nested("cargo", &found.toolchain, &self.dir);
        cargo.arg("rustc");
        if self.locked {
            cargo.arg("--locked");
        }
        cargo.args([
            "--release",
            "--lib",
            "--crate-type",
            "cdylib",
            "--target",
            TARGET,
        ]);
        if !found.prebuilt_core {
            cargo.arg("-Zbuild-std=core");
        }
        cargo
            .arg("--target-dir")
            .arg(&target_dir)
            .args(command::PROFILE)
            .arg("--message-format=json")
            .args(["--", "--emit=asm", "-Clinker=true"])
            .env("CARGO_ENCODED_RUSTFLAGS", self.encoded_rustflags(flavour));
        let output = cargo.output().map_err(|error| BuildError::Toolchain {
            toolchain: found.toolchain.clone(),
            detail: format!("cannot run `cargo +{}`: {error}", found.toolchain),
        })?;
        let messages = diagnostics::messages(
            &String::from_utf8_lossy(&output.stdout),
            &fs::canonicalize(self.dir.join("Cargo.toml"))
                .unwrap_or_else(|_| self.dir.join("Cargo.toml")),
        );
        if !output.status.success() {
            return Err(BuildError::Compile {
                dir: self.dir.clone(),
                stderr: diagnostics::failure_text(
                    &messages,
                    &String::from_utf8_lossy(&output.stderr),
                ),
            });
        }
        // Once: the checked flavour repeats the release flavour's warnings.
        if flavour == Flavour::Release {
            diagnostics::forward_own_warnings(&messages);
        }
        let deps = target_dir.join(TARGET).join("release/deps");
        let asm = deps.join(format!("{stem}.s"));
        let asm = if asm.is_file() {
            asm
        } else {
            dep_info::newest_with_extension(&deps, "s").ok_or_else(|| BuildError::Compile {
                dir: self.dir.clone(),
                stderr: format!("no PTX (`.s`) in {} after the build", deps.display()),
            })?
        };
        let ptx = fs::read_to_string(&asm).map_err(|error| BuildError::Io {
            path: asm.clone(),
            error,
        })?;
        check_self_contained(&ptx, &asm, self.library)?;
        let release = target_dir.join(TARGET).join("release");
        dep_info::rerun_on_sources(&release, stem, &found.sysroot, &target_dir);
        Ok(ptx)
    }
}

/// The nested target directory's name for a flavour.
fn flavour_dir(stem: &str, flavour: Flavour) -> String {
    match flavour {
        Flavour::Release => stem.to_owned(),
        Flavour::Checked => format!("{stem}-checked"),
    }
}

/// A module the driver can load alone (or, for a `library`, link without anything
/// but the code that calls it): it has kernels unless it is a library, and calls no
/// function it does not define except `vprintf` (a system call the driver's assembler
/// provides; the checked flavour prints its messages with it) and the NVSHMEM shim's
/// (sync-device's `nvshmem` feature: `Nvshmem::load` links the shim in).
fn check_self_contained(ptx: &str, path: &Path, library: bool) -> Result<(), BuildError> {
    let undefined: Vec<&str> = ptx
        .lines()
        .filter(|line| {
            line.contains(".extern .func")
                && !line.contains("vprintf")
                && !line.contains(NVSHMEM_SHIM_FUNCTIONS)
        })
        .map(str::trim)
        .collect();
    if !library && !ptx.contains(".entry") {
        return Err(BuildError::NotSelfContained {
            path: path.to_owned(),
            detail: "it has no kernel (`#[no_mangle] pub unsafe extern \"gpu-kernel\" fn`)"
                .to_owned(),
        });
    }
    if !undefined.is_empty() {
        return Err(BuildError::NotSelfContained {
            path: path.to_owned(),
            detail: format!("it calls functions it does not define: {undefined:?}"),
        });
    }
    Ok(())
}

/// Why no nested build runs at all in this build, if one: Miri and loom model only
/// host code, and docs.rs has no GPU toolchain.
fn skipped_build() -> Option<String> {
    if env::var_os("CARGO_CFG_MIRI").is_some() {
        Some("not built under Miri (a host-only run)".to_owned())
    } else if env::var_os("CARGO_CFG_LOOM").is_some() {
        Some("not built under loom (a host-only run)".to_owned())
    } else if env::var_os("DOCS_RS").is_some() {
        Some("not built on docs.rs".to_owned())
    } else {
        None
    }
}

/// An `sm_XY` (or `sm_XYa`) architecture name, or [`BuildError::Settings`].
fn validate_arch(arch: &str) -> Result<(), BuildError> {
    let arch_ok = arch.strip_prefix("sm_").is_some_and(|number| {
        let digits = number.strip_suffix('a').unwrap_or(number);
        !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit())
    });
    if arch_ok {
        Ok(())
    } else {
        Err(BuildError::Settings(format!(
            "`{arch}` is not a GPU architecture (expected `sm_XY`, e.g. `sm_90`)"
        )))
    }
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(
        env::var_os("CARGO_MANIFEST_DIR")
            .expect("sync-build runs in a build script (CARGO_MANIFEST_DIR is unset)"),
    )
}

fn out_dir() -> PathBuf {
    PathBuf::from(
        env::var_os("OUT_DIR").expect("sync-build runs in a build script (OUT_DIR is unset)"),
    )
}

fn write(path: &Path, contents: &str) {
    fs::write(path, contents).unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
}

/// Records why `flavour` has no PTX: an empty module and the reason beside it.
fn record(out_dir: &Path, stem: &str, flavour: Flavour, reason: &str) {
    record_file(out_dir, &flavour.file_name(stem), reason);
}

/// Records why `file` was not built: an empty `file` and the reason in `<file>.err`.
fn record_file(out_dir: &Path, file: &str, reason: &str) {
    write(&out_dir.join(file), "");
    write(&out_dir.join(format!("{file}.err")), reason);
}

fn write_bytes(path: &Path, contents: &[u8]) {
    fs::write(path, contents).unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_of_both_flavours() {
        assert_eq!(Flavour::Release.file_name("k"), "k.ptx");
        assert_eq!(Flavour::Checked.file_name("k"), "k-checked.ptx");
        assert_eq!(Flavour::Checked.error_file_name("k"), "k-checked.ptx.err");
    }

    #[test]
    fn settings_are_checked_before_anything_runs() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let bad_arch = KernelCrate::new(dir).arch("90").validate();
        assert!(
            matches!(bad_arch, Err(BuildError::Settings(message)) if message.contains("sm_XY"))
        );
        let bad_isa = KernelCrate::new(dir).ptx_isa(8, 10).validate();
        assert!(matches!(bad_isa, Err(BuildError::Settings(_))));
        let no_crate = KernelCrate::new("/nonexistent-kernel-crate").validate();
        assert!(
            matches!(no_crate, Err(BuildError::Settings(message)) if message.contains("no Cargo.toml"))
        );
        assert!(KernelCrate::new(dir).arch("sm_90a").validate().is_ok());
    }

    #[test]
    fn checked_flavour_adds_debug_assertions_only() {
        let krate = KernelCrate::new("/k")
            .arch("sm_80")
            .ptx_isa(7, 8)
            .remap_path_prefix("/root");
        let release = krate.encoded_rustflags(Flavour::Release);
        assert_eq!(
            release.split('\x1f').collect::<Vec<_>>(),
            [
                "-Ctarget-cpu=sm_80",
                "-Ctarget-feature=+ptx78",
                "--remap-path-prefix=/root/="
            ]
        );
        let checked = krate.encoded_rustflags(Flavour::Checked);
        assert!(checked.starts_with(&release));
        assert!(checked.contains("-Cdebug-assertions=on"));
        assert!(checked.contains("-Coverflow-checks=off"));
    }

    #[test]
    fn a_module_must_define_what_it_calls() {
        let path = Path::new("k.s");
        let good = ".version 8.6\n.extern .func (.param .b32 r) vprintf\n.entry k()\n{\n}\n";
        assert!(check_self_contained(good, path, false).is_ok());
        let no_entry = ".version 8.6\n.visible .func f()\n{\n}\n";
        assert!(check_self_contained(no_entry, path, false).is_err());
        // A device library has no kernels, and still must define what it calls.
        assert!(check_self_contained(no_entry, path, true).is_ok());
        let external = ".extern .func memcpy\n.entry k()\n{\n}\n";
        assert!(
            matches!(check_self_contained(external, path, false), Err(BuildError::NotSelfContained { detail, .. }) if detail.contains("memcpy"))
        );
        let library_external = ".extern .func memcpy\n.visible .func f()\n{\n}\n";
        assert!(check_self_contained(library_external, path, true).is_err());
        let shim_call = ".extern .func scoped_sync_nvshmem_signal_add(\n.entry k() {}";
        assert!(check_self_contained(shim_call, path, false).is_ok());
    }
}
