//! CUDA C++ compiled at run time with NVRTC and linked with the project's device
//! library: kernels written in C++ that use scoped-sync's objects through
//! [`CUDA_HEADER`].
//!
//! NVRTC (`libnvrtc.so`) is loaded when first needed, like the driver: a program that
//! never compiles CUDA C++ runs without it.

use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{self, AssertUnwindSafe};

use cudarc::nvrtc::sys;

use super::{CudaError, EmbeddedModule, KernelBuild, LinkInput, Module, Runtime};

/// The CUDA C++ header declaring the device library's functions and wrapping them in
/// C++ types. [`Runtime::compile_cuda`] gives it to NVRTC as
/// [`CUDA_HEADER_NAME`]; for nvcc, write it to a file on the include path.
pub const CUDA_HEADER: &str = include_str!("../../../include/scoped_sync.cuh");

/// The name a program includes [`CUDA_HEADER`] by: `#include <scoped_sync.cuh>` or
/// `#include "scoped_sync.cuh"`.
pub const CUDA_HEADER_NAME: &str = "scoped_sync.cuh";

/// How [`Runtime::compile_cuda`] compiles: NVRTC options and headers beyond its own.
///
/// By default NVRTC gets `--relocatable-device-code=true` (calls into the library are
/// linked, not inlined), `-std=c++17` (unless an [`option`](Self::option) names another
/// `-std`), `--gpu-architecture=sm_XY` for the runtime's GPU (see
/// [`arch`](Self::arch)), and [`CUDA_HEADER`] as [`CUDA_HEADER_NAME`]. There is no
/// include path unless an option adds one (`-I/path`): give here any other header the
/// source includes.
///
/// # Examples
///
/// ```
/// use sync_host::cuda::CudaSource;
///
/// let options = CudaSource::new()
///     .option("-DTILE=32")
///     .option("--use_fast_math")
///     .header("tile.cuh", "#pragma once\nconstexpr int tile = TILE;\n");
/// ```
#[derive(Clone, Debug, Default)]
pub struct CudaSource {
    options: Vec<String>,
    headers: Vec<(String, String)>,
    arch: Option<String>,
}

impl CudaSource {
    /// The defaults: no extra options or headers, the GPU's own architecture.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an NVRTC option (`-DNAME=VALUE`, `-lineinfo`, `--use_fast_math`, ...),
    /// passed after the defaults.
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// Adds a header the source may `#include` by `name`. One named
    /// [`CUDA_HEADER_NAME`] replaces the embedded header.
    pub fn header(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.headers.push((name.into(), text.into()));
        self
    }

    /// Compiles for `arch` (NVRTC's `--gpu-architecture`: `sm_90a`, `compute_90`, ...)
    /// instead of the GPU's own. A `compute_XY` architecture gives PTX, which the
    /// driver compiles when linking.
    ///
    /// Without it: `sm_XY` for a GPU of compute capability X.Y, so NVRTC emits the
    /// GPU's machine code and the driver need not read PTX from a newer NVRTC than
    /// itself; `compute_XY` for the newest architecture NVRTC knows when it is older
    /// than the GPU.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = Some(arch.into());
        self
    }

    /// The headers given to NVRTC: the embedded one unless replaced, then the user's.
    fn all_headers(&self) -> Vec<(&str, &str)> {
        let replaced = self
            .headers
            .iter()
            .any(|(name, _)| name == CUDA_HEADER_NAME);
        let embedded = (!replaced).then_some((CUDA_HEADER_NAME, CUDA_HEADER));
        embedded
            .into_iter()
            .chain(
                self.headers
                    .iter()
                    .map(|(name, text)| (name.as_str(), text.as_str())),
            )
            .collect()
    }

    /// NVRTC's options for `arch`: the defaults, then the user's.
    fn nvrtc_options(&self, arch: &str) -> Vec<String> {
        let mut options = vec!["--relocatable-device-code=true".to_owned()];
        let names_std = self
            .options
            .iter()
            .any(|option| option.starts_with("-std") || option.starts_with("--std"));
        if !names_std {
            options.push("-std=c++17".to_owned());
        }
        options.push(format!("--gpu-architecture={arch}"));
        options.extend(self.options.iter().cloned());
        options
    }

    /// The architecture to compile for on a GPU of compute capability `major.minor`,
    /// given the architectures NVRTC supports (`None`: unknown).
    fn pick_arch(&self, (major, minor): (i32, i32), supported: Option<&[i32]>) -> String {
        if let Some(arch) = &self.arch {
            return arch.clone();
        }
        let device = major * 10 + minor;
        match supported.and_then(|archs| archs.iter().copied().max()) {
            // An NVRTC older than the GPU: PTX for the newest it knows, which the
            // driver compiles for the GPU.
            Some(newest) if newest < device => format!("compute_{newest}"),
            _ => format!("sm_{device}"),
        }
    }
}

/// What NVRTC produced.
enum Compiled {
    Cubin(Vec<u8>),
    Ptx(String),
}

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program `nvrtcCreateProgram` returned, destroyed once.
        unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

impl Program {
    /// The compiler's log (errors and warnings), trimmed.
    fn log(&self) -> String {
        let mut size = 0_usize;
        // SAFETY: a live program and an out-parameter.
        if unsafe { sys::nvrtcGetProgramLogSize(self.0, &mut size) }
            .result()
            .is_err()
            || size == 0
        {
            return String::new();
        }
        let mut log = vec![0_u8; size];
        // SAFETY: a buffer of the size NVRTC asked for.
        if unsafe { sys::nvrtcGetProgramLog(self.0, log.as_mut_ptr().cast::<c_char>()) }
            .result()
            .is_err()
        {
            return String::new();
        }
        CStr::from_bytes_until_nul(&log)
            .map(|text| text.to_string_lossy().trim().to_owned())
            .unwrap_or_default()
    }

    /// The relocatable cubin, if NVRTC made one (not for a `compute_XY` target).
    fn cubin(&self) -> Option<Vec<u8>> {
        let mut size = 0_usize;
        // SAFETY: a compiled program and an out-parameter.
        unsafe { sys::nvrtcGetCUBINSize(self.0, &mut size) }
            .result()
            .ok()?;
        if size == 0 {
            return None;
        }
        let mut cubin = vec![0_u8; size];
        // SAFETY: a buffer of the size NVRTC gave.
        unsafe { sys::nvrtcGetCUBIN(self.0, cubin.as_mut_ptr().cast::<c_char>()) }
            .result()
            .ok()?;
        Some(cubin)
    }

    fn ptx(&self) -> Result<String, sys::nvrtcResult> {
        let mut size = 0_usize;
        // SAFETY: a compiled program and an out-parameter.
        unsafe { sys::nvrtcGetPTXSize(self.0, &mut size) }
            .result()
            .map_err(|error| error.0)?;
        let mut ptx = vec![0_u8; size.max(1)];
        // SAFETY: a buffer of the size NVRTC gave (at least one byte).
        unsafe { sys::nvrtcGetPTX(self.0, ptx.as_mut_ptr().cast::<c_char>()) }
            .result()
            .map_err(|error| error.0)?;
        let end = ptx.iter().position(|&byte| byte == 0).unwrap_or(ptx.len());
        ptx.truncate(end);
        Ok(String::from_utf8_lossy(&ptx).into_owned())
    }
}

/// NVRTC's name for a result.
fn result_name(result: sys::nvrtcResult) -> String {
    // SAFETY: NVRTC returns a static C string for any result.
    let name = unsafe { sys::nvrtcGetErrorString(result) };
    if name.is_null() {
        return format!("{result:?}");
    }
    // SAFETY: a NUL-terminated static string.
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// Why NVRTC could not be loaded, and how to get it.
fn nvrtc_missing() -> String {
    format!(
        "NVRTC (libnvrtc.so) was not found: install a CUDA toolkit, or `pip install \
         nvidia-cuda-nvrtc-cu12` (`nvidia-cuda-nvrtc` for CUDA 13), and put the directory \
         holding the library on LD_LIBRARY_PATH (names looked for: {})",
        cudarc::get_lib_name_candidates("nvrtc").join(", ")
    )
}

/// The architectures NVRTC can compile for (`90` for sm_90), if it says.
fn supported_archs() -> Option<Vec<i32>> {
    let mut count: c_int = 0;
    // SAFETY: an out-parameter.
    unsafe { sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .ok()?;
    let mut archs = vec![0; usize::try_from(count).ok()?];
    if archs.is_empty() {
        return None;
    }
    // SAFETY: room for the `count` architectures NVRTC reported.
    unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .ok()?;
    Some(archs)
}

/// A C string of `text`, or a log saying which text held a NUL byte.
fn c_string(what: &str, text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|error| {
        format!(
            "{what} contains a NUL byte at offset {}",
            error.nul_position()
        )
    })
}

/// Compiles `source` for `arch`; the error is the log.
fn compile(name: &str, source: &str, options: &CudaSource, arch: &str) -> Result<Compiled, String> {
    let source = c_string("the source", source)?;
    let program_name = c_string("the name", name)?;
    let headers = options
        .all_headers()
        .into_iter()
        .map(|(name, text)| {
            Ok((
                c_string(&format!("the header name `{name}`"), name)?,
                c_string(&format!("the header `{name}`"), text)?,
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let header_texts: Vec<*const c_char> = headers.iter().map(|(_, text)| text.as_ptr()).collect();
    let header_names: Vec<*const c_char> = headers.iter().map(|(name, _)| name.as_ptr()).collect();
    let arguments = options.nvrtc_options(arch);
    let arguments_c = arguments
        .iter()
        .map(|option| c_string(&format!("the option `{option}`"), option))
        .collect::<Result<Vec<_>, String>>()?;
    let argument_pointers: Vec<*const c_char> =
        arguments_c.iter().map(|option| option.as_ptr()).collect();

    let mut raw: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: C strings and two arrays of `headers.len()` C strings, all alive until
    // the program (declared after them, so dropped first) is destroyed.
    let created = unsafe {
        sys::nvrtcCreateProgram(
            &mut raw,
            source.as_ptr(),
            program_name.as_ptr(),
            headers.len() as c_int,
            header_texts.as_ptr(),
            header_names.as_ptr(),
        )
    };
    if created != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!(
            "cannot create the program: {}",
            result_name(created)
        ));
    }
    let program = Program(raw);
    // SAFETY: a live program and `argument_pointers.len()` C strings alive across the
    // call.
    let compiled = unsafe {
        sys::nvrtcCompileProgram(
            program.0,
            argument_pointers.len() as c_int,
            argument_pointers.as_ptr(),
        )
    };
    match compiled {
        sys::nvrtcResult::NVRTC_SUCCESS => {}
        sys::nvrtcResult::NVRTC_ERROR_COMPILATION => return Err(program.log()),
        other => {
            // Mostly an option NVRTC does not know (an architecture newer than it):
            // the options say which.
            return Err(format!(
                "{} with options `{}`: {}",
                result_name(other),
                arguments.join(" "),
                program.log()
            ));
        }
    }
    if let Some(cubin) = program.cubin() {
        return Ok(Compiled::Cubin(cubin));
    }
    program
        .ptx()
        .map(Compiled::Ptx)
        .map_err(|error| format!("cannot read the compiled code: {}", result_name(error)))
}

impl Runtime {
    /// Compiles CUDA C++ `source` with NVRTC for this GPU and links it with a build of
    /// `library`, the device library (as [`include_kernels!`](crate::include_kernels)
    /// embeds it; the build [`EmbeddedModule::default_build`] picks): a module named
    /// `name` with the source's `extern "C" __global__` kernels.
    ///
    /// The source includes [`CUDA_HEADER`] as `<scoped_sync.cuh>` and calls the
    /// library through it; `options` adds NVRTC options and headers
    /// ([`CudaSource`] lists the defaults).
    ///
    /// # Errors
    ///
    /// [`CudaError::Compile`] when NVRTC is not installed (the log says how to get
    /// it) or refuses the source (the log is NVRTC's); [`CudaError::Ptx`] when that
    /// build of the library was not compiled into the program;
    /// [`CudaError::BadModule`] when linking fails (an undefined function or one
    /// whose prototype does not match: the linker's log says which).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use sync_host::cuda::{CudaError, CudaSource, EmbeddedModule, Module, Runtime};
    ///
    /// const SOURCE: &str = r#"
    /// #include <scoped_sync.cuh>
    /// extern "C" __global__ void scale(float* data, float by) {
    ///     data[blockIdx.x * blockDim.x + threadIdx.x] *= by;
    /// }
    /// "#;
    ///
    /// // `library`: `static DEVICE: EmbeddedModule = include_kernels!("...")`.
    /// fn load(runtime: &Runtime, library: &EmbeddedModule) -> Result<Module, CudaError> {
    ///     let options = CudaSource::new().option("-lineinfo");
    ///     let module = runtime.compile_cuda("scale", SOURCE, &options, library)?;
    ///     module.kernel("scale")?;
    ///     Ok(module)
    /// }
    /// ```
    pub fn compile_cuda(
        &self,
        name: &str,
        source: &str,
        options: &CudaSource,
        library: &EmbeddedModule,
    ) -> Result<Module, CudaError> {
        let failed = |log: String| CudaError::Compile {
            name: name.to_owned(),
            log,
        };
        // SAFETY: only probes whether the library can be loaded.
        if !unsafe { sys::is_culib_present() } {
            return Err(failed(nvrtc_missing()));
        }
        let capability = self
            .context
            .compute_capability()
            .map_err(CudaError::driver("read the compute capability"))?;
        // The checked library checks only what reaches it: the header's inline fast
        // paths step aside under the macro (as `sync_build::CudaKernels` compiles the
        // checked flavour).
        let build = library.default_build();
        let options = match build {
            KernelBuild::Checked => options.clone().option("-DSCOPED_SYNC_CHECKED=1"),
            KernelBuild::Release => options.clone(),
        };
        // cudarc loads each NVRTC function on first use and panics when one is missing
        // (an NVRTC too old for this API): that is a compile failure, not a crash.
        let compiled = panic::catch_unwind(AssertUnwindSafe(|| {
            let arch = options.pick_arch(capability, supported_archs().as_deref());
            compile(name, source, &options, &arch)
        }))
        .unwrap_or_else(|payload| {
            let why = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(format!("NVRTC could not be used: {why}"))
        })
        .map_err(failed)?;
        let input = match &compiled {
            Compiled::Cubin(image) => LinkInput::Cubin { name, image },
            Compiled::Ptx(text) => LinkInput::Ptx { name, text },
        };
        self.link_with_library_build(name, &[input], library, build)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_embedded() {
        assert!(!CUDA_HEADER.trim().is_empty());
        // NVRTC takes headers as C strings.
        assert!(!CUDA_HEADER.contains('\0'));
        assert_eq!(CUDA_HEADER_NAME, "scoped_sync.cuh");
    }

    #[test]
    fn options_are_the_defaults_then_the_user_s() {
        let options = CudaSource::new().option("-DTILE=32").option("-lineinfo");
        assert_eq!(
            options.nvrtc_options("sm_90"),
            [
                "--relocatable-device-code=true",
                "-std=c++17",
                "--gpu-architecture=sm_90",
                "-DTILE=32",
                "-lineinfo",
            ]
        );
    }

    #[test]
    fn a_user_std_replaces_the_default() {
        let options = CudaSource::new()
            .option("-std=c++20")
            .nvrtc_options("sm_100");
        assert_eq!(
            options,
            [
                "--relocatable-device-code=true",
                "--gpu-architecture=sm_100",
                "-std=c++20",
            ]
        );
        let options = CudaSource::new()
            .option("--std=c++14")
            .nvrtc_options("sm_90");
        assert!(
            !options.iter().any(|option| option == "-std=c++17"),
            "{options:?}"
        );
    }

    #[test]
    fn the_arch_is_the_gpu_s_unless_nvrtc_is_older() {
        let default = CudaSource::new();
        assert_eq!(default.pick_arch((9, 0), None), "sm_90");
        assert_eq!(
            default.pick_arch((12, 0), Some(&[80, 90, 100, 120])),
            "sm_120"
        );
        assert_eq!(default.pick_arch((8, 6), Some(&[75, 80, 86, 90])), "sm_86");
        // NVRTC 12.4 on a Blackwell GPU: PTX its driver compiles.
        assert_eq!(
            default.pick_arch((10, 0), Some(&[75, 80, 89, 90])),
            "compute_90"
        );
        let pinned = CudaSource::new().arch("sm_90a");
        assert_eq!(pinned.pick_arch((9, 0), Some(&[90])), "sm_90a");
        assert_eq!(pinned.pick_arch((10, 0), Some(&[90])), "sm_90a");
    }

    #[test]
    fn the_embedded_header_comes_first_unless_replaced() {
        let options = CudaSource::new().header("tile.cuh", "#pragma once");
        assert_eq!(
            options.all_headers(),
            [
                (CUDA_HEADER_NAME, CUDA_HEADER),
                ("tile.cuh", "#pragma once")
            ]
        );
        let replaced = CudaSource::new().header(CUDA_HEADER_NAME, "// newer");
        assert_eq!(replaced.all_headers(), [(CUDA_HEADER_NAME, "// newer")]);
    }

    #[test]
    fn a_nul_in_the_source_is_refused_before_nvrtc() {
        let error = compile("k", "int x;\0", &CudaSource::new(), "sm_90")
            .err()
            .unwrap();
        assert_eq!(error, "the source contains a NUL byte at offset 6");
        let options = CudaSource::new().header("bad.cuh", "a\0b");
        let error = compile("k", "", &options, "sm_90").err().unwrap();
        assert_eq!(
            error,
            "the header `bad.cuh` contains a NUL byte at offset 1"
        );
    }

    #[test]
    fn the_missing_library_message_says_how_to_get_it() {
        let message = nvrtc_missing();
        assert!(message.contains("libnvrtc.so"), "{message}");
        assert!(message.contains("pip install"), "{message}");
        assert!(message.contains("LD_LIBRARY_PATH"), "{message}");
        let error = CudaError::Compile {
            name: "k".to_owned(),
            log: message,
        };
        assert!(error
            .to_string()
            .starts_with("cannot compile CUDA C++ `k`: NVRTC"));
    }
}
