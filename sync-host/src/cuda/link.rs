//! Run-time linking: a user's relocatable device code (CUDA C++ built with
//! `-rdc=true`, PTX, objects, libraries) linked with the project's device library by the
//! driver's JIT linker, into one [`Module`].
//!
//! The device library is PTX with `extern "C"` device functions and no kernels; the
//! user's code declares them (`extern "C" __device__ ...`) and calls them. The driver's
//! linker checks each call's prototype against the definition, so a mismatch or a
//! missing function is an error whose log names the symbol.

use std::borrow::Cow;
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::path::Path;

use cudarc::driver::{sys, DriverError};

use super::{CudaError, EmbeddedModule, KernelBuild, Module, Runtime};

/// One input of [`Runtime::link`]: device code that may call, or be called by, the
/// others. `name` names it in the linker's log.
#[derive(Clone, Copy)]
pub enum LinkInput<'a> {
    /// PTX text: NVRTC's or nvcc's (`nvcc -rdc=true -ptx`), or a kernel crate's. It
    /// must not contain a NUL byte (a single one at the end is allowed).
    Ptx {
        /// The name in the linker's log.
        name: &'a str,
        /// The PTX.
        text: &'a str,
    },
    /// A relocatable cubin (`nvcc -rdc=true -cubin`, `ptxas -c`, NVRTC with
    /// `--relocatable-device-code=true`) for this GPU's architecture.
    Cubin {
        /// The name in the linker's log.
        name: &'a str,
        /// The cubin's bytes.
        image: &'a [u8],
    },
    /// A fatbin (`nvcc -rdc=true -fatbin`): the linker takes the cubin for this GPU
    /// from it, or JIT-compiles its PTX.
    Fatbin {
        /// The name in the linker's log.
        name: &'a str,
        /// The fatbin's bytes.
        image: &'a [u8],
    },
    /// A host object with embedded device code (`nvcc -dc`): its device code is
    /// linked, its host code ignored.
    Object {
        /// The name in the linker's log.
        name: &'a str,
        /// The object file's bytes.
        image: &'a [u8],
    },
    /// An archive of such objects (`nvcc -lib`, a `.a`).
    Library {
        /// The name in the linker's log.
        name: &'a str,
        /// The archive's bytes.
        image: &'a [u8],
    },
    /// A file, read when linking, whose kind its extension gives: `.ptx`, `.cubin`,
    /// `.fatbin`, `.o` or `.a` (any case). Another extension is an error naming it.
    /// Its path is its name in the log.
    File(&'a Path),
}

impl fmt::Debug for LinkInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The bytes themselves say nothing to a reader; their count does.
        let (kind, name, bytes) = match self {
            Self::Ptx { name, text } => ("Ptx", *name, text.len()),
            Self::Cubin { name, image } => ("Cubin", *name, image.len()),
            Self::Fatbin { name, image } => ("Fatbin", *name, image.len()),
            Self::Object { name, image } => ("Object", *name, image.len()),
            Self::Library { name, image } => ("Library", *name, image.len()),
            Self::File(path) => return f.debug_tuple("File").field(path).finish(),
        };
        f.debug_struct(kind)
            .field("name", &name)
            .field("bytes", &bytes)
            .finish()
    }
}

/// What the driver is told an input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InputKind {
    Ptx,
    Cubin,
    Fatbin,
    Object,
    Library,
}

impl InputKind {
    /// The kind a file's extension names.
    fn of_path(path: &Path) -> Result<Self, String> {
        let extension = path
            .extension()
            .map(|extension| extension.to_string_lossy().to_ascii_lowercase());
        match extension.as_deref() {
            Some("ptx") => Ok(Self::Ptx),
            Some("cubin") => Ok(Self::Cubin),
            Some("fatbin") => Ok(Self::Fatbin),
            Some("o") => Ok(Self::Object),
            Some("a") => Ok(Self::Library),
            Some(other) => Err(format!(
                "`{}`: cannot tell what a `.{other}` file holds (expected .ptx, .cubin, .fatbin, .o or .a)",
                path.display()
            )),
            None => Err(format!(
                "`{}`: a file without an extension (expected .ptx, .cubin, .fatbin, .o or .a)",
                path.display()
            )),
        }
    }

    fn jit_type(self) -> sys::CUjitInputType {
        match self {
            Self::Ptx => sys::CUjitInputType::CU_JIT_INPUT_PTX,
            Self::Cubin => sys::CUjitInputType::CU_JIT_INPUT_CUBIN,
            Self::Fatbin => sys::CUjitInputType::CU_JIT_INPUT_FATBINARY,
            Self::Object => sys::CUjitInputType::CU_JIT_INPUT_OBJECT,
            Self::Library => sys::CUjitInputType::CU_JIT_INPUT_LIBRARY,
        }
    }
}

/// PTX as the linker takes it: ending in one NUL, with none before.
fn nul_terminated(name: &str, text: &[u8]) -> Result<Vec<u8>, String> {
    let body = text.strip_suffix(b"\0").unwrap_or(text);
    if let Some(at) = body.iter().position(|&byte| byte == 0) {
        return Err(format!(
            "the PTX `{name}` contains a NUL byte at offset {at}"
        ));
    }
    let mut terminated = Vec::with_capacity(body.len() + 1);
    terminated.extend_from_slice(body);
    terminated.push(0);
    Ok(terminated)
}

/// An input checked and in memory, ready for `cuLinkAddData`.
#[derive(Debug)]
struct Prepared<'a> {
    kind: InputKind,
    name: CString,
    data: Cow<'a, [u8]>,
}

impl<'a> Prepared<'a> {
    fn new(input: &LinkInput<'a>) -> Result<Self, String> {
        let (kind, name, data): (_, Cow<'_, str>, Cow<'a, [u8]>) = match *input {
            LinkInput::Ptx { name, text } => (
                InputKind::Ptx,
                name.into(),
                nul_terminated(name, text.as_bytes())?.into(),
            ),
            LinkInput::Cubin { name, image } => (InputKind::Cubin, name.into(), image.into()),
            LinkInput::Fatbin { name, image } => (InputKind::Fatbin, name.into(), image.into()),
            LinkInput::Object { name, image } => (InputKind::Object, name.into(), image.into()),
            LinkInput::Library { name, image } => (InputKind::Library, name.into(), image.into()),
            LinkInput::File(path) => {
                let kind = InputKind::of_path(path)?;
                let name = path.display().to_string();
                let bytes = std::fs::read(path)
                    .map_err(|error| format!("cannot read `{name}`: {error}"))?;
                let bytes = if kind == InputKind::Ptx {
                    nul_terminated(&name, &bytes)?
                } else {
                    bytes
                };
                (kind, name.into(), bytes.into())
            }
        };
        if data.is_empty() {
            return Err(format!("the input `{name}` is empty"));
        }
        let name = CString::new(name.as_bytes())
            .map_err(|_| format!("the input name `{name}` contains a NUL byte"))?;
        Ok(Self { kind, name, data })
    }
}

/// Bytes of each of the linker's logs; an undefined symbol or a prototype mismatch
/// takes a line, so this holds many.
const LOG_BYTES: usize = 64 * 1024;

/// A driver link state, destroyed on drop, with the buffers it writes to.
struct Linker {
    state: sys::CUlinkState,
    // The driver keeps pointers to the option arrays and the logs until
    // `cuLinkDestroy` (it writes the logs' lengths back into `values`), so they live
    // here, on the heap, and drop after `drop` has destroyed the state.
    _options: Vec<sys::CUjit_option>,
    _values: Vec<*mut c_void>,
    error_log: Vec<u8>,
    info_log: Vec<u8>,
}

impl Linker {
    /// A link state for the current context's device (bind it first).
    fn new() -> Result<Self, DriverError> {
        let mut error_log = vec![0_u8; LOG_BYTES];
        let mut info_log = vec![0_u8; LOG_BYTES];
        let mut options = vec![
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_LOG_VERBOSE,
        ];
        // Integer options travel in place of the pointers (the driver API's way).
        let mut values = vec![
            error_log.as_mut_ptr().cast::<c_void>(),
            LOG_BYTES as *mut c_void,
            info_log.as_mut_ptr().cast::<c_void>(),
            LOG_BYTES as *mut c_void,
            std::ptr::null_mut(),
        ];
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        // SAFETY: as many options as values, each value what its option takes; the
        // arrays and logs are heap buffers that move into the `Linker` unchanged and
        // outlive the state (destroyed in `drop`, before the fields).
        unsafe {
            sys::cuLinkCreate_v2(
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut state,
            )
        }
        .result()?;
        Ok(Self {
            state,
            _options: options,
            _values: values,
            error_log,
            info_log,
        })
    }

    fn add(&mut self, input: &Prepared<'_>) -> Result<(), DriverError> {
        // SAFETY: a live link state; `data` holds `len` bytes (PTX NUL-terminated) and
        // `name` is a C string, both alive across the call; no per-input options.
        unsafe {
            sys::cuLinkAddData_v2(
                self.state,
                input.kind.jit_type(),
                input.data.as_ptr().cast_mut().cast::<c_void>(),
                input.data.len(),
                input.name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
        .result()
    }

    /// The linked cubin, copied out of the state (which owns the driver's copy).
    fn complete(&mut self) -> Result<Vec<u8>, DriverError> {
        let mut cubin: *mut c_void = std::ptr::null_mut();
        let mut size = 0_usize;
        // SAFETY: a live link state and two out-parameters.
        unsafe { sys::cuLinkComplete(self.state, &mut cubin, &mut size) }.result()?;
        if cubin.is_null() || size == 0 {
            return Ok(Vec::new());
        }
        // SAFETY: the driver's image of `size` bytes, valid until `cuLinkDestroy`
        // (in `drop`), copied here before that.
        Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec())
    }

    /// The error log, else the info log, else a word that there was none.
    fn log(&self) -> String {
        [&self.error_log, &self.info_log]
            .into_iter()
            .map(|log| log_text(log))
            .find(|text| !text.is_empty())
            .unwrap_or_else(|| "the driver's linker wrote no log".to_owned())
    }
}

impl Drop for Linker {
    fn drop(&mut self) {
        // SAFETY: the state `new` created, destroyed once; nothing it owns (the
        // completed image) is used after this.
        unsafe { sys::cuLinkDestroy(self.state) };
    }
}

/// A log buffer's text, up to its first NUL, trimmed.
fn log_text(buffer: &[u8]) -> String {
    CStr::from_bytes_until_nul(buffer)
        .map(|text| text.to_string_lossy().trim().to_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(buffer).trim().to_owned())
}

impl Runtime {
    /// Links `inputs` with the driver's JIT linker into one module for this GPU, and
    /// loads it as `name`: PTX is compiled for the GPU, and every `extern` function
    /// one input calls must be defined, with the same prototype, by another.
    ///
    /// To call the project's device library, use
    /// [`link_with_library`](Self::link_with_library), which adds it.
    ///
    /// # Errors
    ///
    /// [`CudaError::BadModule`] named `name` when an input cannot be read or is empty,
    /// PTX contains a NUL byte, `inputs` is empty, or the linker refuses: its log (an
    /// undefined reference, a prototype that does not match, PTX that does not
    /// compile) is the error's `log`. [`CudaError::Driver`] when the context cannot
    /// be bound or the linker created.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use sync_host::cuda::{CudaError, LinkInput, Runtime};
    ///
    /// # fn main() -> Result<(), CudaError> {
    /// let runtime = Runtime::open(0)?;
    /// // `nvcc -arch=sm_90 -rdc=true -cubin user.cu`: kernels calling library functions.
    /// let user = std::fs::read("user.cubin").unwrap();
    /// let library = std::fs::read_to_string("scoped_sync_device.ptx").unwrap();
    /// let module = runtime.link(
    ///     "user",
    ///     &[
    ///         LinkInput::Cubin { name: "user.cubin", image: &user },
    ///         LinkInput::Ptx { name: "scoped_sync_device", text: &library },
    ///     ],
    /// )?;
    /// let worker = module.kernel("cpp_worker")?;
    /// # Ok(()) }
    /// ```
    pub fn link(&self, name: &str, inputs: &[LinkInput<'_>]) -> Result<Module, CudaError> {
        let image = self.link_image(name, inputs)?;
        self.load_image(name, image)
    }

    /// Links `inputs` with a build of `library` (the device library, as
    /// [`include_kernels!`](crate::include_kernels) embeds it) and loads the result as
    /// `name`: the build [`EmbeddedModule::default_build`] picks, which the returned
    /// module's [`build`](Module::build) reports.
    ///
    /// # Errors
    ///
    /// [`CudaError::Ptx`] when that build of the library was not compiled into the
    /// program; otherwise as [`link`](Self::link).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use sync_host::cuda::{CudaError, EmbeddedModule, LinkInput, Module, Runtime};
    ///
    /// // `library`: `static DEVICE: EmbeddedModule = include_kernels!("...")`.
    /// fn load(runtime: &Runtime, library: &EmbeddedModule) -> Result<Module, CudaError> {
    ///     // `nvcc -dc user.cu`: a host object holding the kernels' device code.
    ///     let object = std::fs::read("user.o").unwrap();
    ///     runtime.link_with_library(
    ///         "user",
    ///         &[LinkInput::Object { name: "user.o", image: &object }],
    ///         library,
    ///     )
    /// }
    /// ```
    pub fn link_with_library(
        &self,
        name: &str,
        inputs: &[LinkInput<'_>],
        library: &EmbeddedModule,
    ) -> Result<Module, CudaError> {
        self.link_with_library_build(name, inputs, library, library.default_build())
    }

    /// Links `inputs` with the given build of `library`; see
    /// [`link_with_library`](Self::link_with_library).
    ///
    /// # Errors
    ///
    /// As [`link_with_library`](Self::link_with_library).
    pub fn link_with_library_build(
        &self,
        name: &str,
        inputs: &[LinkInput<'_>],
        library: &EmbeddedModule,
        build: KernelBuild,
    ) -> Result<Module, CudaError> {
        let ptx = library.ptx(build)?;
        let mut all = Vec::with_capacity(inputs.len() + 1);
        all.extend_from_slice(inputs);
        all.push(LinkInput::Ptx {
            name: library.name(),
            text: ptx,
        });
        let mut module = self.link(name, &all)?;
        module.build = Some(build);
        Ok(module)
    }

    /// The linked cubin of `inputs`.
    fn link_image(&self, name: &str, inputs: &[LinkInput<'_>]) -> Result<Vec<u8>, CudaError> {
        let refused = |error: Option<DriverError>, log: String| CudaError::BadModule {
            module: name.to_owned(),
            error,
            log,
        };
        if inputs.is_empty() {
            return Err(refused(
                None,
                "nothing to link: no inputs were given".to_owned(),
            ));
        }
        // Reading and checking every input first fails a bad one without a driver call.
        let prepared = inputs
            .iter()
            .map(Prepared::new)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|log| refused(None, log))?;
        self.bind()?;
        let mut linker = Linker::new().map_err(CudaError::driver("create a linker"))?;
        for input in &prepared {
            linker.add(input).map_err(|error| {
                let log = format!(
                    "adding `{}`: {}",
                    input.name.to_string_lossy(),
                    linker.log()
                );
                refused(Some(error), log)
            })?;
        }
        let image = linker
            .complete()
            .map_err(|error| refused(Some(error), linker.log()))?;
        if image.is_empty() {
            return Err(refused(
                None,
                "the linker produced an empty image".to_owned(),
            ));
        }
        Ok(image)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_s_extension_gives_its_kind() {
        for (path, kind) in [
            ("user.ptx", InputKind::Ptx),
            ("dir/user.cubin", InputKind::Cubin),
            ("user.fatbin", InputKind::Fatbin),
            ("user.o", InputKind::Object),
            ("libscoped_sync_device.a", InputKind::Library),
            ("USER.PTX", InputKind::Ptx),
        ] {
            assert_eq!(InputKind::of_path(Path::new(path)), Ok(kind), "{path}");
        }
        assert_eq!(
            InputKind::Object.jit_type(),
            sys::CUjitInputType::CU_JIT_INPUT_OBJECT
        );
        assert_eq!(
            InputKind::Library.jit_type(),
            sys::CUjitInputType::CU_JIT_INPUT_LIBRARY
        );
    }

    #[test]
    fn an_unknown_extension_is_named() {
        let error = InputKind::of_path(Path::new("kernels/user.cu")).unwrap_err();
        assert!(error.contains("`.cu`"), "{error}");
        assert!(error.contains("kernels/user.cu"), "{error}");
        let error = InputKind::of_path(Path::new("user")).unwrap_err();
        assert!(error.contains("without an extension"), "{error}");
    }

    #[test]
    fn ptx_ends_in_exactly_one_nul() {
        assert_eq!(
            nul_terminated("p", b".version 8.6"),
            Ok(b".version 8.6\0".to_vec())
        );
        assert_eq!(
            nul_terminated("p", b".version 8.6\0"),
            Ok(b".version 8.6\0".to_vec())
        );
        let error = nul_terminated("p", b".version\08.6").unwrap_err();
        assert!(
            error.contains("`p`") && error.contains("offset 8"),
            "{error}"
        );
        assert!(nul_terminated("p", b"ret;\0\0").is_err());
    }

    #[test]
    #[cfg_attr(miri, ignore = "reads files, which Miri's isolation refuses")]
    fn inputs_are_checked_before_the_driver_sees_them() {
        let ptx = Prepared::new(&LinkInput::Ptx {
            name: "lib",
            text: "ret;",
        })
        .unwrap();
        assert_eq!(ptx.kind, InputKind::Ptx);
        assert_eq!(&*ptx.data, b"ret;\0");
        assert_eq!(ptx.name.as_bytes(), b"lib");
        let cubin = Prepared::new(&LinkInput::Cubin {
            name: "c",
            image: b"\x7fELF",
        })
        .unwrap();
        assert!(
            matches!(cubin.data, Cow::Borrowed(_)),
            "no copy of a binary"
        );
        let empty = Prepared::new(&LinkInput::Fatbin {
            name: "f",
            image: &[],
        });
        assert!(empty.unwrap_err().contains("`f` is empty"));
        let missing = Prepared::new(&LinkInput::File(Path::new("/nonexistent/user.cubin")));
        assert!(missing
            .unwrap_err()
            .starts_with("cannot read `/nonexistent/user.cubin`"));
    }

    #[test]
    fn a_log_stops_at_its_nul_and_is_trimmed() {
        let mut buffer = b"error   : Undefined reference to 'ss_missing' in 'user'\n".to_vec();
        buffer.extend_from_slice(&[0, b'x', 0]);
        assert_eq!(
            log_text(&buffer),
            "error   : Undefined reference to 'ss_missing' in 'user'"
        );
        assert_eq!(log_text(&[0; 8]), "");
    }

    #[test]
    fn debug_shows_sizes_not_bytes() {
        let input = LinkInput::Cubin {
            name: "c",
            image: &[1, 2, 3],
        };
        assert_eq!(format!("{input:?}"), r#"Cubin { name: "c", bytes: 3 }"#);
    }
}
