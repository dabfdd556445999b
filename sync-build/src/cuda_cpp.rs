//! [`CudaKernels`]: a host program's CUDA C++ kernels, compiled with nvcc and linked with
//! the device library into one cubin for `include_cuda!`.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{
    manifest_dir, out_dir, record_file, skipped_build, write_bytes, BuildError, DeviceLibrary,
    Flavour, DEFAULT_ARCH,
};

/// The environment variable naming the nvcc to run (else `nvcc` on `PATH`, else
/// `$CUDA_HOME/bin/nvcc`, else `/usr/local/cuda/bin/nvcc`).
pub const NVCC_VARIABLE: &str = "NVCC";

/// The nvcc a [`CudaKernels`] build runs: [`NVCC_VARIABLE`], else the first found of
/// `nvcc` on `PATH`, `$CUDA_HOME/bin/nvcc` and `/usr/local/cuda/bin/nvcc`.
///
/// # Errors
///
/// [`BuildError::NvccMissing`] when none is found or `NVCC` names no file.
pub fn nvcc() -> Result<PathBuf, BuildError> {
    if let Some(named) = env::var_os(NVCC_VARIABLE).filter(|value| !value.is_empty()) {
        let named = PathBuf::from(named);
        return if named.is_file() {
            Ok(named)
        } else {
            Err(BuildError::NvccMissing {
                detail: format!(
                    "`{NVCC_VARIABLE}` names {}, which is not a file",
                    named.display()
                ),
            })
        };
    }
    let on_path: Vec<PathBuf> = env::var_os("PATH")
        .map(|path| {
            env::split_paths(&path)
                .map(|dir| dir.join("nvcc"))
                .collect()
        })
        .unwrap_or_default();
    let cuda_home = env::var_os("CUDA_HOME").map(|home| PathBuf::from(home).join("bin/nvcc"));
    on_path
        .into_iter()
        .chain(cuda_home)
        .chain([PathBuf::from("/usr/local/cuda/bin/nvcc")])
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| BuildError::NvccMissing {
            detail: format!(
                "no `nvcc` on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin, and `{NVCC_VARIABLE}` is unset"
            ),
        })
}

/// The macro the checked flavour's C++ is compiled with (`-DSCOPED_SYNC_CHECKED=1`):
/// `scoped_sync.cuh` then calls the library for every operation, whose checked build
/// prints why a precondition broke, instead of taking its inline fast paths.
pub const CHECKED_DEFINE: &str = "SCOPED_SYNC_CHECKED";

/// What a successful [`CudaKernels::build`] wrote.
#[derive(Clone, Debug)]
pub struct BuiltCuda {
    /// The stem `include_cuda!` names.
    pub stem: String,
    /// The linked cubin: the C++ kernels and the release device library.
    pub release: PathBuf,
    /// The cubin linked with the checked device library, if asked for.
    pub checked: Option<PathBuf>,
}

/// A host program's CUDA C++ kernels (`.cu` files that include `scoped_sync.cuh`),
/// compiled with nvcc as relocatable device code and device-linked with scoped-sync's
/// [`DeviceLibrary`] into one cubin per flavour, which `scoped_sync::include_cuda!`
/// embeds and `Runtime::load` loads.
///
/// It runs, per file and flavour, `nvcc -std=c++17 -O3 -arch=sm_XY -rdc=true -dc
/// -I<header dir>` (the checked flavour with `-DSCOPED_SYNC_CHECKED=1`), then
/// `nvcc -arch=sm_XY -dlink -cubin <objects> <library>.ptx`. The cubin holds machine
/// code for `sm_XY` only (no PTX for the driver to compile, which a driver older than the
/// nvcc could not read).
///
/// # Examples
///
/// ```no_run
/// // build.rs
/// sync_build::CudaKernels::new("worker_kernels")
///     .file("cuda/worker.cu")
///     .file("cuda/jacobi.cu")
///     .checked(true)
///     .build_or_record();
/// // main.rs:
/// // static KERNELS: scoped_sync::cuda::EmbeddedModule =
/// //     scoped_sync::include_cuda!("worker_kernels");
/// ```
#[derive(Clone, Debug)]
pub struct CudaKernels {
    stem: String,
    files: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    flags: Vec<String>,
    arch: String,
    checked: bool,
    required: bool,
}

impl CudaKernels {
    /// Kernels whose cubin is `OUT_DIR/<stem>.cubin` (`include_cuda!("<stem>")`).
    pub fn new(stem: &str) -> Self {
        Self {
            stem: stem.to_owned(),
            files: Vec::new(),
            includes: Vec::new(),
            flags: Vec::new(),
            arch: DEFAULT_ARCH.to_owned(),
            checked: false,
            required: false,
        }
    }

    /// One more `.cu` file (relative paths: from the package's manifest directory).
    pub fn file(mut self, path: impl AsRef<Path>) -> Self {
        self.files.push(resolve(path.as_ref()));
        self
    }

    /// One more include directory (`-I`).
    pub fn include(mut self, dir: impl AsRef<Path>) -> Self {
        self.includes.push(resolve(dir.as_ref()));
        self
    }

    /// One more nvcc flag for every file's compile (`-DNAME=1`, `-lineinfo`, …).
    pub fn flag(mut self, flag: &str) -> Self {
        self.flags.push(flag.to_owned());
        self
    }

    /// The GPU architecture, `sm_XY` (default [`DEFAULT_ARCH`]).
    pub fn arch(mut self, arch: &str) -> Self {
        self.arch = arch.to_owned();
        self
    }

    /// Also links the checked device library (`<stem>-checked.cubin`): scope misuse and
    /// broken preconditions trap with a message.
    pub fn checked(mut self, checked: bool) -> Self {
        self.checked = checked;
        self
    }

    /// A missing nvcc or nightly toolchain fails the build even without
    /// `SYNC_BUILD_REQUIRED=1`.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Compiles and links the kernels into `OUT_DIR`; prints the `cargo:rerun-if`
    /// lines.
    ///
    /// # Errors
    ///
    /// [`BuildError::NvccMissing`] without nvcc, the device library's errors (see
    /// [`DeviceLibrary::build`]), [`BuildError::Nvcc`] when nvcc fails (its message
    /// included), [`BuildError::Settings`] for a missing file or a bad architecture.
    pub fn build(&self) -> Result<BuiltCuda, BuildError> {
        self.validate()?;
        for path in self.files.iter().chain(&self.includes) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
        println!(
            "cargo:rerun-if-changed={}",
            crate::include_dir().join("scoped_sync.cuh").display()
        );
        println!("cargo:rerun-if-env-changed={NVCC_VARIABLE}");
        if let Some(reason) = skipped_build() {
            return Err(BuildError::Skipped { reason });
        }
        let nvcc = nvcc()?;
        // Another nvcc at the same path (an upgrade in place) compiles other code.
        println!("cargo:rerun-if-changed={}", nvcc.display());
        let library = DeviceLibrary::new()
            .arch(&self.arch)
            .checked(self.checked)
            .name(&library_stem(&self.arch))
            .required(self.required)
            .build()?;
        let out = out_dir();
        let mut built = BuiltCuda {
            stem: self.stem.clone(),
            release: out.join(cubin_file_name(&self.stem, Flavour::Release)),
            checked: None,
        };
        let flavours = [
            (Flavour::Release, Some(&library.release)),
            (Flavour::Checked, library.checked.as_ref()),
        ];
        for (flavour, library_ptx) in flavours {
            let Some(library_ptx) = library_ptx else {
                record_file(
                    &out,
                    &cubin_file_name(&self.stem, flavour),
                    "the checked flavour was not built: call `.checked(true)` on the \
                     `sync_build::CudaKernels` in build.rs",
                );
                continue;
            };
            let objects = self.compile_objects(&nvcc, &out, flavour)?;
            let cubin = out.join(cubin_file_name(&self.stem, flavour));
            let mut link = Command::new(&nvcc);
            link.args(self.link_args(&objects, library_ptx, &cubin));
            run(link)?;
            write_bytes(
                &out.join(format!("{}.err", cubin_file_name(&self.stem, flavour))),
                b"",
            );
            if flavour == Flavour::Checked {
                built.checked = Some(cubin);
            }
        }
        Ok(built)
    }

    /// As [`build`](Self::build), except that a missing nvcc or toolchain (or a build
    /// under Miri or loom) is recorded: the host program still builds, and loading the
    /// module returns the reason. `SYNC_BUILD_REQUIRED=1` or
    /// [`required`](Self::required) turns a missing tool into a panic.
    ///
    /// # Panics
    ///
    /// When nvcc rejects a file (its diagnostics in the message), on bad settings, and as
    /// just said.
    pub fn build_or_record(&self) -> Option<BuiltCuda> {
        match self.build() {
            Ok(built) => Some(built),
            Err(error) if error.can_be_recorded() && !self.is_required(&error) => {
                let out = out_dir();
                if !matches!(error, BuildError::Skipped { .. }) {
                    println!(
                        "cargo:warning=CUDA C++ kernels `{}` not built: {error}",
                        self.stem
                    );
                    println!(
                        "cargo:rerun-if-changed={}",
                        out.join("sync-build-retry").display()
                    );
                }
                for flavour in [Flavour::Release, Flavour::Checked] {
                    record_file(
                        &out,
                        &cubin_file_name(&self.stem, flavour),
                        &error.to_string(),
                    );
                }
                None
            }
            Err(error) => panic!("sync-build: {error}"),
        }
    }

    fn is_required(&self, error: &BuildError) -> bool {
        !matches!(error, BuildError::Skipped { .. })
            && (self.required || env::var(crate::REQUIRED_VARIABLE).is_ok_and(|value| value == "1"))
    }

    fn validate(&self) -> Result<(), BuildError> {
        crate::validate_arch(&self.arch)?;
        if self.files.is_empty() {
            return Err(BuildError::Settings(format!(
                "CUDA C++ kernels `{}` name no file: add one with `.file(\"kernels.cu\")`",
                self.stem
            )));
        }
        if let Some(missing) = self.files.iter().find(|file| !file.is_file()) {
            return Err(BuildError::Settings(format!(
                "{} is not a file (CUDA C++ kernels `{}`)",
                missing.display(),
                self.stem
            )));
        }
        Ok(())
    }

    /// Compiles every file for `flavour`: the checked flavour's with
    /// [`CHECKED_DEFINE`], which turns the header's inline paths off so that the checked
    /// library's checks see every operation.
    fn compile_objects(
        &self,
        nvcc: &Path,
        out: &Path,
        flavour: Flavour,
    ) -> Result<Vec<PathBuf>, BuildError> {
        let dir = out.join(format!(
            "{}-objects",
            crate::flavour_dir(&self.stem, flavour)
        ));
        std::fs::create_dir_all(&dir).map_err(|error| BuildError::Io {
            path: dir.clone(),
            error,
        })?;
        let mut objects = Vec::new();
        for (index, file) in self.files.iter().enumerate() {
            let name = file.file_stem().unwrap_or_default().to_string_lossy();
            let object = dir.join(format!("{index}-{name}.o"));
            let dependencies = object.with_extension("d");
            let mut compile = Command::new(nvcc);
            compile.args(self.compile_args(file, &object, flavour));
            compile.arg("-MD").arg("-MF").arg(&dependencies);
            run(compile)?;
            crate::dep_info::rerun_on_prerequisites(&dependencies);
            objects.push(object);
        }
        Ok(objects)
    }

    /// `nvcc … -dc <file> -o <object>`.
    fn compile_args(&self, file: &Path, object: &Path, flavour: Flavour) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "-std=c++17",
            "-O3",
            &format!("-arch={}", self.arch),
            "-rdc=true",
            "-dc",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        args.push(flag_with_path("-I", &crate::include_dir()));
        args.extend(self.includes.iter().map(|dir| flag_with_path("-I", dir)));
        if flavour == Flavour::Checked {
            args.push(format!("-D{CHECKED_DEFINE}=1").into());
        }
        args.extend(self.flags.iter().map(OsString::from));
        args.extend([file.into(), "-o".into(), object.into()]);
        args
    }

    /// `nvcc -dlink -cubin <objects> <library> -o <cubin>`.
    fn link_args(&self, objects: &[PathBuf], library: &Path, cubin: &Path) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            format!("-arch={}", self.arch).into(),
            "-dlink".into(),
            "-cubin".into(),
        ];
        args.extend(objects.iter().map(OsString::from));
        args.extend([library.into(), "-o".into(), cubin.into()]);
        args
    }
}

/// The device library's stem for `arch`: [`DEVICE_LIBRARY_STEM`](crate::DEVICE_LIBRARY_STEM)
/// for the default architecture (the same files a [`DeviceLibrary`] writes, so a build
/// script that asks for both builds it once), else with the architecture appended.
fn library_stem(arch: &str) -> String {
    if arch == DEFAULT_ARCH {
        crate::DEVICE_LIBRARY_STEM.to_owned()
    } else {
        format!("{}-{arch}", crate::DEVICE_LIBRARY_STEM)
    }
}

/// `<stem>.cubin` or `<stem>-checked.cubin`.
pub(crate) fn cubin_file_name(stem: &str, flavour: Flavour) -> String {
    match flavour {
        Flavour::Release => format!("{stem}.cubin"),
        Flavour::Checked => format!("{stem}-checked.cubin"),
    }
}

fn resolve(path: &Path) -> PathBuf {
    if path.is_relative() {
        manifest_dir().join(path)
    } else {
        path.to_owned()
    }
}

fn flag_with_path(flag: &str, path: &Path) -> OsString {
    let mut joined = OsString::from(flag);
    joined.push(path);
    joined
}

/// Runs nvcc; its diagnostics are the error.
pub(crate) fn run(mut command: Command) -> Result<(), BuildError> {
    let shown = format!("{command:?}");
    let output = command.output().map_err(|error| BuildError::NvccMissing {
        detail: format!("cannot run {shown}: {error}"),
    })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(BuildError::Nvcc {
            command: shown,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned()
                + &String::from_utf8_lossy(&output.stdout),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_of_both_flavours() {
        assert_eq!(cubin_file_name("k", Flavour::Release), "k.cubin");
        assert_eq!(cubin_file_name("k", Flavour::Checked), "k-checked.cubin");
    }

    #[test]
    fn compile_and_link_commands() {
        let kernels = CudaKernels::new("k")
            .arch("sm_90")
            .flag("-DWIDTH=4")
            .include("/inc");
        let compile = kernels.compile_args(
            Path::new("/src/a.cu"),
            Path::new("/out/a.o"),
            Flavour::Release,
        );
        let compile: Vec<String> = compile
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        for expected in [
            "-rdc=true",
            "-dc",
            "-arch=sm_90",
            "-I/inc",
            "-DWIDTH=4",
            "/src/a.cu",
        ] {
            assert!(
                compile.iter().any(|arg| arg == expected),
                "{expected} in {compile:?}"
            );
        }
        let header_dir = format!("-I{}", crate::include_dir().display());
        assert!(compile.contains(&header_dir), "{compile:?}");
        assert!(!compile.iter().any(|arg| arg.contains(CHECKED_DEFINE)));
        let checked = kernels.compile_args(
            Path::new("/src/a.cu"),
            Path::new("/out/a.o"),
            Flavour::Checked,
        );
        assert!(checked
            .iter()
            .any(|arg| arg.to_string_lossy() == "-DSCOPED_SYNC_CHECKED=1"));
        let link = kernels.link_args(
            &[PathBuf::from("/out/a.o")],
            Path::new("/out/lib.ptx"),
            Path::new("/out/k.cubin"),
        );
        let link: Vec<String> = link
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            link,
            [
                "-arch=sm_90",
                "-dlink",
                "-cubin",
                "/out/a.o",
                "/out/lib.ptx",
                "-o",
                "/out/k.cubin"
            ]
        );
    }

    #[test]
    fn bad_settings_are_refused_before_anything_runs() {
        let none = CudaKernels::new("k").validate();
        assert!(
            matches!(none, Err(BuildError::Settings(message)) if message.contains("name no file"))
        );
        let missing = CudaKernels::new("k").file("/nonexistent/k.cu").validate();
        assert!(
            matches!(missing, Err(BuildError::Settings(message)) if message.contains("not a file"))
        );
        let bad_arch = CudaKernels::new("k").file(file!()).arch("90").validate();
        assert!(matches!(bad_arch, Err(BuildError::Settings(_))));
    }
}
