//! [`NvshmemShim`]: NVSHMEM's device operations as C functions for Rust kernels,
//! compiled with nvcc against the NVSHMEM the program will load, and the kernel crates
//! that call them device-linked with it and NVSHMEM's device library.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cuda_cpp::{cubin_file_name, nvcc, run, NVCC_VARIABLE};
use crate::{out_dir, record_file, skipped_build, BuildError, Flavour, DEFAULT_ARCH};

/// The variable naming the NVSHMEM installation whose headers and device library the
/// shim is built with (its `include/` and `lib/`), the one `sync_host::cuda::Nvshmem`
/// loads at run time.
pub const NVSHMEM_HOME_VARIABLE: &str = "NVSHMEM_HOME";

/// The stem of the shim's own files: `scoped_sync_nvshmem.cubin` (relocatable) and
/// `scoped_sync_nvshmem.ptx` (to read, `include_kernels!`).
pub const NVSHMEM_SHIM_STEM: &str = "scoped_sync_nvshmem";

/// The prefix of the shim's function names, which a kernel crate built with
/// sync-device's `nvshmem` feature calls without defining.
pub(crate) const NVSHMEM_SHIM_FUNCTIONS: &str = "scoped_sync_nvshmem_";

/// The NVSHMEM shim (`include/scoped_sync_nvshmem.cu`), and the kernel crates linked
/// with it. The shim gives each NVSHMEM device operation that sync-device's `nvshmem`
/// feature calls an `extern "C"` name: NVSHMEM's device API is inline C++, which a
/// Rust kernel cannot include. It is compiled against `$NVSHMEM_HOME/include`
/// (`nvcc -std=c++17 -O3 -arch=sm_XY -rdc=true -cubin`) and records that release,
/// which `sync_host::cuda::Nvshmem::load` compares with the loaded library's.
///
/// Each kernel crate named with [`link`](Self::link) (built before, by a
/// [`KernelCrate`](crate::KernelCrate) in the same build script) is then device-linked
/// with the shim and `$NVSHMEM_HOME/lib/libnvshmem_device.a`, both flavours
/// (`nvcc -arch=sm_XY -dlink -cubin <stem>.ptx scoped_sync_nvshmem.cubin
/// -lnvshmem_device`), into `OUT_DIR/<stem>.cubin`, which `include_cuda!("<stem>")`
/// embeds and `Nvshmem::load` loads. Linked offline, by the build's nvcc: the driver's
/// JIT linker refuses relocatable code of a toolkit newer than the driver, while a
/// linked cubin loads on it.
///
/// # Examples
///
/// ```no_run
/// // build.rs: a kernel crate with sync-device's `nvshmem` feature, then the shim.
/// sync_build::KernelCrate::new("kernels").build_or_record();
/// sync_build::NvshmemShim::new().link("kernels").build_or_record();
/// // main.rs:
/// // static KERNELS: scoped_sync::cuda::EmbeddedModule = scoped_sync::include_cuda!("kernels");
/// // let module = shmem.load(&KERNELS)?;
/// ```
#[derive(Clone, Debug)]
pub struct NvshmemShim {
    arch: String,
    linked: Vec<String>,
    required: bool,
}

impl Default for NvshmemShim {
    fn default() -> Self {
        Self::new()
    }
}

impl NvshmemShim {
    /// The shim for [`DEFAULT_ARCH`](crate::DEFAULT_ARCH), linking no kernel crate yet.
    pub fn new() -> Self {
        Self {
            arch: DEFAULT_ARCH.to_owned(),
            linked: Vec::new(),
            required: false,
        }
    }

    /// The GPU architecture, `sm_XY` (that of the kernel crates linked).
    pub fn arch(mut self, arch: &str) -> Self {
        self.arch = arch.to_owned();
        self
    }

    /// Links the kernel crate whose PTX is `OUT_DIR/<stem>.ptx` (and
    /// `<stem>-checked.ptx`) into `OUT_DIR/<stem>.cubin` (and `<stem>-checked.cubin`).
    pub fn link(mut self, stem: &str) -> Self {
        self.linked.push(stem.to_owned());
        self
    }

    /// A missing nvcc or NVSHMEM fails the build even without `SYNC_BUILD_REQUIRED=1`.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Compiles the shim and links the kernel crates into `OUT_DIR`; prints the
    /// `cargo:rerun-if` lines. A flavour of a kernel crate that was not built is
    /// recorded as not linked, with its reason.
    ///
    /// # Errors
    ///
    /// [`BuildError::NvshmemMissing`] without NVSHMEM's headers or device library,
    /// [`BuildError::NvccMissing`] without nvcc, [`BuildError::Nvcc`] when it fails,
    /// [`BuildError::Settings`] for a bad architecture.
    pub fn build(&self) -> Result<(), BuildError> {
        crate::validate_arch(&self.arch)?;
        let source = crate::include_dir().join(format!("{NVSHMEM_SHIM_STEM}.cu"));
        println!("cargo:rerun-if-changed={}", source.display());
        println!("cargo:rerun-if-env-changed={NVSHMEM_HOME_VARIABLE}");
        println!("cargo:rerun-if-env-changed={NVCC_VARIABLE}");
        if let Some(reason) = skipped_build() {
            return Err(BuildError::Skipped { reason });
        }
        let home = nvshmem_home()?;
        let nvcc = nvcc()?;
        let out = out_dir();
        let shim = out.join(cubin_file_name(NVSHMEM_SHIM_STEM, Flavour::Release));
        let ptx = out.join(Flavour::Release.file_name(NVSHMEM_SHIM_STEM));
        for (output, kind) in [(&shim, "-cubin"), (&ptx, "-ptx")] {
            let mut compile = Command::new(&nvcc);
            compile.args(self.compile_args(&home.join("include"), &source, kind, output));
            run(compile)?;
        }
        // The checked flavour is the same code: the shim has no checks of its own.
        let checked = out.join(Flavour::Checked.file_name(NVSHMEM_SHIM_STEM));
        copy(&ptx, &checked)?;
        for flavour in [Flavour::Release, Flavour::Checked] {
            crate::write_bytes(&out.join(flavour.error_file_name(NVSHMEM_SHIM_STEM)), b"");
        }
        for stem in &self.linked {
            for flavour in [Flavour::Release, Flavour::Checked] {
                let kernels = out.join(flavour.file_name(stem));
                let linked = cubin_file_name(stem, flavour);
                let not_built = std::fs::read_to_string(out.join(flavour.error_file_name(stem)))
                    .unwrap_or_else(|_| format!("no {} in OUT_DIR", kernels.display()));
                if !not_built.is_empty() {
                    record_file(&out, &linked, &not_built);
                    continue;
                }
                let mut link = Command::new(&nvcc);
                link.args(self.link_args(&kernels, &shim, &home.join("lib"), &out.join(&linked)));
                run(link)?;
                crate::write_bytes(&out.join(format!("{linked}.err")), b"");
            }
        }
        Ok(())
    }

    /// As [`build`](Self::build), except that a missing nvcc or NVSHMEM (or a build
    /// under Miri or loom) is recorded: the program still builds, and loading a linked
    /// crate returns the reason. `SYNC_BUILD_REQUIRED=1` or
    /// [`required`](Self::required) turns a missing tool into a panic.
    ///
    /// # Panics
    ///
    /// When nvcc rejects the shim or a link, on bad settings, and as just said.
    pub fn build_or_record(&self) {
        match self.build() {
            Ok(()) => {}
            Err(error) if error.can_be_recorded() && !self.is_required(&error) => {
                let out = out_dir();
                if !matches!(error, BuildError::Skipped { .. }) {
                    println!("cargo:warning=NVSHMEM shim not built: {error}");
                }
                let reason = error.to_string();
                for flavour in [Flavour::Release, Flavour::Checked] {
                    record_file(&out, &flavour.file_name(NVSHMEM_SHIM_STEM), &reason);
                    for stem in &self.linked {
                        record_file(&out, &cubin_file_name(stem, flavour), &reason);
                    }
                }
            }
            Err(error) => panic!("sync-build: {error}"),
        }
    }

    fn is_required(&self, error: &BuildError) -> bool {
        !matches!(error, BuildError::Skipped { .. })
            && (self.required || env::var(crate::REQUIRED_VARIABLE).is_ok_and(|value| value == "1"))
    }

    /// `nvcc -std=c++17 -O3 -arch=sm_XY -rdc=true <kind> -I<include> <source> -o
    /// <output>` (`kind`: `-cubin` or `-ptx`).
    fn compile_args(
        &self,
        include: &Path,
        source: &Path,
        kind: &str,
        output: &Path,
    ) -> Vec<OsString> {
        vec![
            "-std=c++17".into(),
            "-O3".into(),
            format!("-arch={}", self.arch).into(),
            "-rdc=true".into(),
            kind.into(),
            joined("-I", include),
            source.into(),
            "-o".into(),
            output.into(),
        ]
    }

    /// `nvcc -arch=sm_XY -dlink -cubin <kernels> <shim> -L<lib> -lnvshmem_device -o
    /// <output>`.
    fn link_args(&self, kernels: &Path, shim: &Path, lib: &Path, output: &Path) -> Vec<OsString> {
        vec![
            format!("-arch={}", self.arch).into(),
            "-dlink".into(),
            "-cubin".into(),
            kernels.into(),
            shim.into(),
            joined("-L", lib),
            "-lnvshmem_device".into(),
            "-o".into(),
            output.into(),
        ]
    }
}

fn joined(flag: &str, path: &Path) -> OsString {
    let mut joined = OsString::from(flag);
    joined.push(path);
    joined
}

fn copy(from: &Path, to: &Path) -> Result<(), BuildError> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|error| BuildError::Io {
            path: to.to_owned(),
            error,
        })
}

/// `$NVSHMEM_HOME`, if it holds `include/nvshmem.h` and `lib/libnvshmem_device.a`.
fn nvshmem_home() -> Result<PathBuf, BuildError> {
    let home = env::var_os(NVSHMEM_HOME_VARIABLE)
        .filter(|home| !home.is_empty())
        .ok_or_else(|| BuildError::NvshmemMissing {
            detail: format!("`{NVSHMEM_HOME_VARIABLE}` is unset"),
        })?;
    let home = PathBuf::from(home);
    for needed in ["include/nvshmem.h", "lib/libnvshmem_device.a"] {
        let path = home.join(needed);
        if !path.is_file() {
            return Err(BuildError::NvshmemMissing {
                detail: format!("{} is missing", path.display()),
            });
        }
        println!("cargo:rerun-if-changed={}", path.display());
    }
    Ok(home)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_command_joins_kernels_shim_and_device_library() {
        let args = NvshmemShim::new().link_args(
            Path::new("/out/k.ptx"),
            Path::new("/out/shim.cubin"),
            Path::new("/nvshmem/lib"),
            Path::new("/out/k.cubin"),
        );
        let args: Vec<_> = args.iter().map(|arg| arg.to_string_lossy()).collect();
        assert_eq!(
            args,
            [
                "-arch=sm_90",
                "-dlink",
                "-cubin",
                "/out/k.ptx",
                "/out/shim.cubin",
                "-L/nvshmem/lib",
                "-lnvshmem_device",
                "-o",
                "/out/k.cubin"
            ]
        );
    }

    #[test]
    fn the_compile_command_makes_relocatable_code_against_the_headers() {
        let args = NvshmemShim::new().arch("sm_90").compile_args(
            std::path::Path::new("/nvshmem/include"),
            std::path::Path::new("/shim.cu"),
            "-cubin",
            std::path::Path::new("/out/shim.cubin"),
        );
        let args: Vec<_> = args.iter().map(|arg| arg.to_string_lossy()).collect();
        assert_eq!(
            args,
            [
                "-std=c++17",
                "-O3",
                "-arch=sm_90",
                "-rdc=true",
                "-cubin",
                "-I/nvshmem/include",
                "/shim.cu",
                "-o",
                "/out/shim.cubin"
            ]
        );
    }

    #[test]
    fn a_missing_nvshmem_can_be_recorded_and_says_how_to_point_at_it() {
        let error = BuildError::NvshmemMissing {
            detail: "`NVSHMEM_HOME` is unset".into(),
        };
        assert!(error.can_be_recorded());
        assert!(error.to_string().contains("set `NVSHMEM_HOME`"), "{error}");
    }
}
