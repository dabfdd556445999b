//! Modules: PTX or cubin loaded into a [`Runtime`]'s context, from text, a file, or a
//! kernel crate embedded with [`include_kernels!`](crate::include_kernels).

use std::ffi::{c_void, CString};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use cudarc::driver::{sys, CudaModule, DriverError};
use cudarc::nvrtc::Ptx;

use super::{CudaError, Kernel, Runtime};

/// The environment variable that picks a [`KernelBuild`] at run time: `checked` or
/// `release`.
pub const KERNEL_BUILD_VARIABLE: &str = "SCOPED_SYNC_KERNELS";

/// Which build of a kernel crate ([`sync_build::Flavour`]) to load.
///
/// [`sync_build::Flavour`]: https://docs.rs/sync-build
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
    /// What [`KERNEL_BUILD_VARIABLE`] names (`checked` or `release`), if anything.
    pub fn from_variable() -> Option<Self> {
        match std::env::var(KERNEL_BUILD_VARIABLE).as_deref() {
            Ok("checked") => Some(Self::Checked),
            Ok("release") => Some(Self::Release),
            _ => None,
        }
    }

    /// The build named by [`KERNEL_BUILD_VARIABLE`], else the one matching this
    /// program's profile: [`Checked`](Self::Checked) in a debug build,
    /// [`Release`](Self::Release) in a release build.
    pub fn from_environment() -> Self {
        Self::from_variable().unwrap_or(if cfg!(debug_assertions) {
            Self::Checked
        } else {
            Self::Release
        })
    }
}

/// A kernel crate's PTX, built by `sync-build` and embedded in the program with
/// [`include_kernels!`](crate::include_kernels) (or CUDA C++ kernels linked into a
/// cubin, embedded with [`include_cuda!`](crate::include_cuda)): the release and (if
/// built) checked flavours, or why either is missing.
#[derive(Clone, Copy, Debug)]
pub struct EmbeddedModule {
    name: &'static str,
    format: ImageFormat,
    release: &'static [u8],
    release_error: &'static str,
    checked: &'static [u8],
    checked_error: &'static str,
}

/// What an [`EmbeddedModule`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ImageFormat {
    /// PTX text, which the driver compiles when it loads it.
    Ptx,
    /// A linked cubin (machine code).
    Cubin,
}

impl EmbeddedModule {
    /// What [`include_kernels!`](crate::include_kernels) expands to.
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        release: &'static str,
        release_error: &'static str,
        checked: &'static str,
        checked_error: &'static str,
    ) -> Self {
        Self {
            name,
            format: ImageFormat::Ptx,
            release: release.as_bytes(),
            release_error,
            checked: checked.as_bytes(),
            checked_error,
        }
    }

    /// What [`include_cuda!`](crate::include_cuda) expands to.
    #[doc(hidden)]
    pub const fn new_cubin(
        name: &'static str,
        release: &'static [u8],
        release_error: &'static str,
        checked: &'static [u8],
        checked_error: &'static str,
    ) -> Self {
        Self {
            name,
            format: ImageFormat::Cubin,
            release,
            release_error,
            checked,
            checked_error,
        }
    }

    /// The stem `include_kernels!` or `include_cuda!` named.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// This build's image (PTX text or cubin), or why it is missing (with the command
    /// that fixes it).
    pub fn image(&self, build: KernelBuild) -> Result<&'static [u8], PtxUnavailable> {
        let (image, reason) = match build {
            KernelBuild::Release => (self.release, self.release_error),
            KernelBuild::Checked => (self.checked, self.checked_error),
        };
        if image.is_empty() {
            Err(PtxUnavailable {
                module: self.name,
                build,
                reason,
            })
        } else {
            Ok(image)
        }
    }

    /// This build's PTX, or why it is missing (with the command that fixes it).
    /// A module of [`include_cuda!`](crate::include_cuda) holds a cubin, not PTX: its
    /// [`image`](Self::image) is the one to load.
    pub fn ptx(&self, build: KernelBuild) -> Result<&'static str, PtxUnavailable> {
        let image = self.image(build)?;
        match (self.format, std::str::from_utf8(image)) {
            (ImageFormat::Ptx, Ok(ptx)) => Ok(ptx),
            _ => Err(PtxUnavailable {
                module: self.name,
                build,
                reason: "the module is a cubin, not PTX",
            }),
        }
    }

    /// Whether it holds a cubin ([`include_cuda!`](crate::include_cuda)) rather than
    /// PTX.
    pub fn is_cubin(&self) -> bool {
        self.format == ImageFormat::Cubin
    }

    /// The build [`Runtime::load`] takes: the one [`KERNEL_BUILD_VARIABLE`] names; else
    /// [`Checked`](KernelBuild::Checked) in a debug build of this program if it was
    /// built; else [`Release`](KernelBuild::Release).
    pub fn default_build(&self) -> KernelBuild {
        match KernelBuild::from_variable() {
            Some(build) => build,
            None if cfg!(debug_assertions) && !self.checked.is_empty() => KernelBuild::Checked,
            None => KernelBuild::Release,
        }
    }
}

/// Embeds the PTX that `sync_build::KernelCrate` wrote for the kernel crate `stem`
/// (its library name) in this package's build script: an
/// [`EmbeddedModule`] for [`Runtime::load`].
///
/// ```ignore
/// // build.rs: sync_build::KernelCrate::new("../kernels").build_or_record();
/// static KERNELS: scoped_sync::cuda::EmbeddedModule = scoped_sync::include_kernels!("my_kernels");
///
/// let runtime = scoped_sync::cuda::Runtime::open(0)?;
/// let module = runtime.load(&KERNELS)?;
/// let kernel = module.kernel("relax")?;
/// ```
#[macro_export]
macro_rules! include_kernels {
    ($stem:literal) => {
        $crate::cuda::EmbeddedModule::new(
            $stem,
            ::core::include_str!(::core::concat!(::core::env!("OUT_DIR"), "/", $stem, ".ptx")),
            ::core::include_str!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/",
                $stem,
                ".ptx.err"
            )),
            ::core::include_str!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/",
                $stem,
                "-checked.ptx"
            )),
            ::core::include_str!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/",
                $stem,
                "-checked.ptx.err"
            )),
        )
    };
}

/// Embeds the cubin that `sync_build::CudaKernels` linked in this package's build
/// script: the CUDA C++ kernels `stem` with scoped-sync's device library, as an
/// [`EmbeddedModule`] for [`Runtime::load`].
///
/// ```ignore
/// // build.rs: sync_build::CudaKernels::new("my_cuda").file("cuda/worker.cu").build_or_record();
/// static KERNELS: scoped_sync::cuda::EmbeddedModule = scoped_sync::include_cuda!("my_cuda");
///
/// let runtime = scoped_sync::cuda::Runtime::open(0)?;
/// let module = runtime.load(&KERNELS)?;
/// let worker = module.kernel("worker")?;
/// ```
#[macro_export]
macro_rules! include_cuda {
    ($stem:literal) => {
        $crate::cuda::EmbeddedModule::new_cubin(
            $stem,
            ::core::include_bytes!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/",
                $stem,
                ".cubin"
            )),
            ::core::include_str!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/",
                $stem,
                ".cubin.err"
            )),
            ::core::include_bytes!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/",
                $stem,
                "-checked.cubin"
            )),
            ::core::include_str!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/",
                $stem,
                "-checked.cubin.err"
            )),
        )
    };
}

/// A build of an [`EmbeddedModule`] that was not compiled into this program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxUnavailable {
    module: &'static str,
    build: KernelBuild,
    reason: &'static str,
}

impl fmt::Display for PtxUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let build = match self.build {
            KernelBuild::Release => "release",
            KernelBuild::Checked => "checked",
        };
        write!(
            f,
            "the {build} build of kernel module `{}` was not compiled into this program: {}",
            self.module, self.reason
        )
    }
}

impl std::error::Error for PtxUnavailable {}

/// A module loaded into a [`Runtime`]'s context: its kernels by name.
///
/// Cloning is cheap (the module is shared); it stays loaded while a clone or one of its
/// [`Kernel`]s lives.
#[derive(Clone)]
///
/// # Examples
///
/// ```no_run
/// use sync_host::cuda::{CudaError, Runtime};
///
/// # fn main() -> Result<(), CudaError> {
/// let runtime = Runtime::open(0)?;
/// // PTX text, as sync-build writes it (or `load_file`, `load_image` for a cubin).
/// let module = runtime.load_ptx("mine", &std::fs::read_to_string("my-kernels.ptx").unwrap())?;
/// match module.kernel("no_such_kernel") {
///     Err(CudaError::NoSuchKernel { .. }) => {} // the name is checked, not guessed
///     other => panic!("{other:?}"),
/// }
/// let worker = module.kernel("worker")?;
/// println!("{} allows {} threads per block", worker.name(), worker.max_threads_per_block());
/// # Ok(())
/// # }
/// ```
pub struct Module {
    /// Runs when the last clone is dropped, before the module is unloaded (fields drop
    /// in order): NVSHMEM's `nvshmemx_cumodule_finalize` for a module `Nvshmem::load`
    /// initialized.
    pub(super) before_unload: Option<Arc<BeforeUnload>>,
    runtime: Runtime,
    inner: Arc<CudaModule>,
    name: Arc<str>,
    pub(super) build: Option<KernelBuild>,
}

/// What a [`Module`] runs when its last clone is dropped.
pub(super) struct BeforeUnload(pub(super) Box<dyn Fn() + Send + Sync>);

impl Drop for BeforeUnload {
    fn drop(&mut self) {
        (self.0)();
    }
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module")
            .field("name", &self.name)
            .field("build", &self.build)
            .field("device", &self.runtime.ordinal())
            .finish()
    }
}

impl Module {
    /// The kernel `name` (its `#[no_mangle]` name), or [`CudaError::NoSuchKernel`].
    pub fn kernel(&self, name: &str) -> Result<Kernel, CudaError> {
        let function = self.inner.load_function(name).map_err(|error| {
            if error.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND {
                CudaError::NoSuchKernel {
                    module: self.name.to_string(),
                    kernel: name.to_owned(),
                }
            } else {
                CudaError::driver("find a kernel")(error)
            }
        })?;
        Kernel::new(self.runtime.clone(), function, name)
    }

    /// The module's name: the embedded module's stem, the file's path, or the name
    /// given with the text.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Which build of an [`EmbeddedModule`] this is (`None` for text and files).
    pub fn build(&self) -> Option<KernelBuild> {
        self.build
    }

    /// The runtime it was loaded into.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The cudarc module, for cudarc's own launch builder.
    pub fn cudarc(&self) -> &Arc<CudaModule> {
        &self.inner
    }
}

impl Runtime {
    /// Loads an embedded kernel crate in the build [`EmbeddedModule::default_build`]
    /// picks (the checked kernels in a debug build of this program, where they were
    /// built; `SCOPED_SYNC_KERNELS=checked|release` overrides).
    ///
    /// # Errors
    ///
    /// [`CudaError::Ptx`] when that build was not compiled into the program (the
    /// message says why and how to fix it), [`CudaError::BadModule`] when the driver
    /// refuses the PTX (the JIT's log in the message).
    pub fn load(&self, module: &EmbeddedModule) -> Result<Module, CudaError> {
        self.load_build(module, module.default_build())
    }

    /// Loads the given build of an embedded kernel crate.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn load_build(
        &self,
        module: &EmbeddedModule,
        build: KernelBuild,
    ) -> Result<Module, CudaError> {
        let mut loaded = if module.is_cubin() {
            self.load_image(module.name(), module.image(build)?.to_vec())?
        } else {
            self.load_ptx(module.name(), module.ptx(build)?)?
        };
        loaded.build = Some(build);
        Ok(loaded)
    }

    /// Loads PTX text (from any compiler: this crate's kernels, nvcc's `--ptx`,
    /// NVRTC); `name` names it in errors.
    ///
    /// # Errors
    ///
    /// [`CudaError::BadModule`] when the driver refuses it: its JIT log says why.
    pub fn load_ptx(&self, name: &str, ptx: &str) -> Result<Module, CudaError> {
        if ptx.contains('\0') {
            return Err(CudaError::BadModule {
                module: name.to_owned(),
                error: None,
                log: "the PTX text contains a NUL byte".to_owned(),
            });
        }
        let loaded = self.context.load_module(Ptx::from_src(ptx));
        self.finish_load(name, loaded, || ptx.as_bytes().to_vec())
    }

    /// Loads a module file: PTX text, a cubin, or a fatbin (the driver tells them
    /// apart).
    ///
    /// # Errors
    ///
    /// [`CudaError::BadModule`] when the file cannot be read or the driver refuses it.
    pub fn load_file(&self, path: impl AsRef<Path>) -> Result<Module, CudaError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let image = std::fs::read(path).map_err(|error| CudaError::BadModule {
            module: name.clone(),
            error: None,
            log: format!("cannot read the file: {error}"),
        })?;
        self.load_image(&name, image)
    }

    /// Loads a module image held in memory: a cubin, a fatbin, or PTX text.
    ///
    /// # Errors
    ///
    /// As [`load_file`](Self::load_file).
    pub fn load_image(&self, name: &str, image: Vec<u8>) -> Result<Module, CudaError> {
        let mut image = image;
        let is_text = !image.starts_with(b"\x7fELF") && !image.starts_with(&FATBIN_MAGIC);
        if is_text && image.last() != Some(&0) {
            // PTX given to the driver as an image must end in a NUL.
            image.push(0);
        }
        let copy = image.clone();
        let loaded = self.context.load_module(Ptx::from_binary(image));
        self.finish_load(name, loaded, || copy)
    }

    fn finish_load(
        &self,
        name: &str,
        loaded: Result<Arc<CudaModule>, DriverError>,
        image: impl FnOnce() -> Vec<u8>,
    ) -> Result<Module, CudaError> {
        match loaded {
            Ok(inner) => Ok(Module {
                runtime: self.clone(),
                inner,
                name: Arc::from(name),
                build: None,
                before_unload: None,
            }),
            Err(error) if is_module_error(&error) => Err(CudaError::BadModule {
                module: name.to_owned(),
                log: self.jit_log(image()),
                error: Some(error),
            }),
            Err(error) => Err(CudaError::driver("load a module")(error)),
        }
    }

    /// Loads `image` again, only to read the JIT compiler's error log, which cudarc's
    /// loader does not ask for.
    #[cold]
    fn jit_log(&self, mut image: Vec<u8>) -> String {
        if image.last() != Some(&0) {
            image.push(0);
        }
        let mut log = vec![0_u8; 16 * 1024];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The driver takes the buffer's size in place of a pointer (its API's way).
        let mut values = [log.as_mut_ptr().cast::<c_void>(), log.len() as *mut c_void];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        if self.bind().is_err() {
            return String::new();
        }
        // SAFETY: a NUL-terminated image, two options with their values, a log buffer
        // of the size given, all alive across the call; a module it loads after all is
        // unloaded below.
        let result = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if result == sys::CUresult::CUDA_SUCCESS {
            // SAFETY: the module just loaded, unloaded once.
            unsafe { sys::cuModuleUnload(module) };
        }
        let end = log.iter().position(|&byte| byte == 0).unwrap_or(log.len());
        CString::new(&log[..end])
            .map(|text| text.to_string_lossy().trim().to_owned())
            .unwrap_or_default()
    }
}

/// The first bytes of a fatbin.
const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50_u32.to_le_bytes();

/// Whether the driver refused the module itself (rather than failing otherwise).
fn is_module_error(error: &DriverError) -> bool {
    use sys::CUresult::*;
    matches!(
        error.0,
        CUDA_ERROR_INVALID_PTX
            | CUDA_ERROR_INVALID_IMAGE
            | CUDA_ERROR_NO_BINARY_FOR_GPU
            | CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            | CUDA_ERROR_INVALID_SOURCE
            | CUDA_ERROR_JIT_COMPILER_NOT_FOUND
            | CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND
            | CUDA_ERROR_FILE_NOT_FOUND
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILT: EmbeddedModule = EmbeddedModule::new("k", ".version 8.6", "", "", "not built");

    #[test]
    fn a_missing_build_says_why() {
        assert_eq!(BUILT.ptx(KernelBuild::Release), Ok(".version 8.6"));
        let missing = BUILT.ptx(KernelBuild::Checked).unwrap_err();
        let message = missing.to_string();
        assert!(
            message.contains("checked build of kernel module `k`"),
            "{message}"
        );
        assert!(message.ends_with("not built"), "{message}");
    }

    #[test]
    fn a_cubin_module_gives_its_image_and_no_ptx() {
        const CUBIN: EmbeddedModule =
            EmbeddedModule::new_cubin("c", b"\x7fELF", "", b"", "nvcc not found");
        assert!(CUBIN.is_cubin() && !BUILT.is_cubin());
        assert_eq!(CUBIN.image(KernelBuild::Release), Ok(&b"\x7fELF"[..]));
        let no_ptx = CUBIN.ptx(KernelBuild::Release).unwrap_err().to_string();
        assert!(no_ptx.contains("a cubin, not PTX"), "{no_ptx}");
        let missing = CUBIN.image(KernelBuild::Checked).unwrap_err().to_string();
        assert!(missing.ends_with("nvcc not found"), "{missing}");
    }

    #[test]
    fn the_checked_build_is_the_default_only_where_it_exists() {
        if KernelBuild::from_variable().is_none() {
            // Only release was built: even a debug program loads it.
            assert_eq!(BUILT.default_build(), KernelBuild::Release);
            let both = EmbeddedModule::new("k", "r", "", "c", "");
            let expected = if cfg!(debug_assertions) {
                KernelBuild::Checked
            } else {
                KernelBuild::Release
            };
            assert_eq!(both.default_build(), expected);
        }
    }
}
