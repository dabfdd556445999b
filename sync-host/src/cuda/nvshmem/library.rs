//! NVSHMEM's host library (`libnvshmem_host.so.3`), loaded at run time as cudarc loads
//! the driver: a program builds without NVSHMEM and says where it looked when it is
//! missing. Only the calls this crate makes are bound, with the layouts of NVSHMEM 3's
//! headers (`bootstrap_device_host/nvshmem_uniqueid.h`, `device_host/nvshmem_types.h`),
//! whose sizes NVSHMEM fixes with `static_assert`s across its 3.x releases.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cudarc::driver::sys;
use libloading::Library;

use super::NvshmemError;

/// The host library's file name, as NVSHMEM 3.x installs it (pip wheels and tarballs).
pub(super) const LIBRARY_NAME: &str = "libnvshmem_host.so.3";

/// The variable that names an NVSHMEM installation (its `lib/` holds the library), as
/// NVSHMEM's own build documentation uses it.
pub const HOME_VARIABLE: &str = "NVSHMEM_HOME";

/// NVSHMEM's switch for its proxy thread where every peer is reached over NVLink or
/// PCIe ("local only"). Left running in a process whose peer died (NVSHMEM then cannot
/// be finalized), that thread crashed the process in its exit (docs/multi-gpu.md); the
/// objects of this crate do not use it (it serves device-side `nvshmem_global_exit` and
/// wait timeouts). Set to 1 when NVSHMEM is loaded unless the environment sets it.
pub(super) const PROXY_VARIABLE: &str = "NVSHMEM_DISABLE_LOCAL_ONLY_PROXY";

/// `NVSHMEMX_INIT_WITH_UNIQUEID` of `nvshmemx_api.h`: bootstrap by a unique ID.
pub(super) const INIT_WITH_UNIQUE_ID: c_uint = 1 << 3;

/// The unique ID's bytes (`nvshmemx_uniqueid_t`, 128 bytes: a version word and the
/// bootstrap's address), which rank 0 makes and every process passes to the init.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct UniqueId {
    pub(super) version: c_int,
    pub(super) internal: [u8; 124],
}

impl UniqueId {
    /// `NVSHMEMX_UNIQUEID_INITIALIZER`: version 1 and its size, the rest zero.
    pub(super) fn new() -> Self {
        Self {
            version: version_word(1, size_of::<Self>()),
            internal: [0; 124],
        }
    }
}

/// `nvshmemx_uniqueid_args_t` (24 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct UniqueIdArgs {
    version: c_int,
    id: *mut UniqueId,
    my_rank: c_int,
    ranks: c_int,
}

/// `nvshmemx_init_args_t` (128 bytes): the unique-ID arguments, then fields this crate
/// leaves to NVSHMEM (a v1 structure: NVSHMEM reads only what version 1 has).
#[repr(C)]
#[derive(Clone, Copy)]
struct InitArgs {
    version: c_int,
    unique_id: UniqueIdArgs,
    reserved: [u8; 96],
}

/// `nvshmemx_init_attr_t` (144 bytes), version 1: no MPI communicator.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct InitAttr {
    version: c_int,
    mpi_comm: *mut c_void,
    args: InitArgs,
}

impl InitAttr {
    /// `NVSHMEMX_INIT_ATTR_V1_INITIALIZER`: every version word set, no ranks yet
    /// (`nvshmemx_set_attr_uniqueid_args` fills them).
    pub(super) fn new() -> Self {
        Self {
            version: version_word(1, size_of::<Self>()),
            mpi_comm: std::ptr::null_mut(),
            args: InitArgs {
                version: version_word(1, size_of::<InitArgs>()),
                unique_id: UniqueIdArgs {
                    version: version_word(1, size_of::<UniqueIdArgs>()),
                    id: std::ptr::null_mut(),
                    my_rank: -1,
                    ranks: -1,
                },
                reserved: [0; 96],
            },
        }
    }
}

/// NVSHMEM's version words: the structure's version in the high half, its size in the
/// low half.
fn version_word(version: u32, size: usize) -> c_int {
    c_int::try_from((version << 16) + u32::try_from(size).expect("a small structure"))
        .expect("a version word fits an int")
}

const _: () = assert!(size_of::<UniqueId>() == 128);
const _: () = assert!(size_of::<UniqueIdArgs>() == 24);
const _: () = assert!(size_of::<InitArgs>() == 128);
const _: () = assert!(size_of::<InitAttr>() == 144);

/// The calls this crate makes, resolved once from the library.
pub(super) struct Functions {
    /// Where the library was found.
    pub(super) path: PathBuf,
    pub(super) get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> c_int,
    pub(super) set_attr_unique_id_args:
        unsafe extern "C" fn(c_int, c_int, *const UniqueId, *mut InitAttr) -> c_int,
    pub(super) init_attr: unsafe extern "C" fn(c_uint, *mut InitAttr) -> c_int,
    pub(super) finalize: unsafe extern "C" fn(),
    pub(super) my_pe: unsafe extern "C" fn() -> c_int,
    pub(super) n_pes: unsafe extern "C" fn() -> c_int,
    pub(super) calloc: unsafe extern "C" fn(usize, usize) -> *mut c_void,
    pub(super) free: unsafe extern "C" fn(*mut c_void),
    pub(super) ptr: unsafe extern "C" fn(*const c_void, c_int) -> *mut c_void,
    pub(super) info_get_name: unsafe extern "C" fn(*mut c_char),
    pub(super) vendor_get_version_info: unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_int),
    pub(super) cumodule_init: unsafe extern "C" fn(sys::CUmodule) -> c_int,
    pub(super) cumodule_finalize: unsafe extern "C" fn(sys::CUmodule) -> c_int,
    /// Keeps the functions above alive: the library is never unloaded.
    _library: Library,
}

/// The library, loaded by the first caller; every later call gets the same outcome.
pub(super) fn functions() -> Result<&'static Functions, NvshmemError> {
    static LOADED: OnceLock<Result<Functions, NvshmemError>> = OnceLock::new();
    LOADED.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// The places tried, in order: `$NVSHMEM_HOME/lib`, an active Python environment's
/// `nvidia/nvshmem/lib` (where PyTorch's `nvidia-nvshmem-cu*` wheel puts it), then the
/// dynamic loader's own search (`LD_LIBRARY_PATH`, the system's directories).
fn candidates() -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(home) = std::env::var_os(HOME_VARIABLE) {
        candidates.push(Path::new(&home).join("lib").join(LIBRARY_NAME));
    }
    if let Some(env) = std::env::var_os("VIRTUAL_ENV") {
        let lib = Path::new(&env).join("lib");
        let mut pythons: Vec<PathBuf> = std::fs::read_dir(&lib)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with("python"))
            })
            .collect();
        pythons.sort();
        candidates.extend(pythons.into_iter().map(|python| {
            python
                .join("site-packages/nvidia/nvshmem/lib")
                .join(LIBRARY_NAME)
        }));
    }
    candidates.push(PathBuf::from(LIBRARY_NAME));
    candidates
}

fn load() -> Result<Functions, NvshmemError> {
    if std::env::var_os(PROXY_VARIABLE).is_none() {
        // SAFETY: `setenv` races with a `getenv` of another thread; this runs once, at
        // the first use of NVSHMEM, before NVSHMEM (which reads its options when it
        // is loaded) and before any kernel this crate launches with it.
        unsafe { std::env::set_var(PROXY_VARIABLE, "1") };
    }
    let mut tried = Vec::new();
    for path in candidates() {
        // SAFETY: NVSHMEM's host library runs no code at load time that this process
        // could break (its initialization is `nvshmemx_hostlib_init_attr`).
        match unsafe { Library::new(&path) } {
            Ok(library) => return bind(path, library),
            Err(error) => tried.push(format!("{}: {error}", path.display())),
        }
    }
    Err(NvshmemError::NotFound { tried })
}

fn bind(path: PathBuf, library: Library) -> Result<Functions, NvshmemError> {
    macro_rules! symbol {
        ($name:literal) => {
            // SAFETY: the type is the prototype of NVSHMEM 3's headers for this name;
            // the library outlives the copy (kept in `Functions`, never unloaded).
            *unsafe { library.get(concat!($name, "\0").as_bytes()) }.map_err(|error| {
                NvshmemError::MissingSymbol {
                    library: path.display().to_string(),
                    symbol: $name,
                    reason: error.to_string(),
                }
            })?
        };
    }
    Ok(Functions {
        get_unique_id: symbol!("nvshmemx_get_uniqueid"),
        set_attr_unique_id_args: symbol!("nvshmemx_set_attr_uniqueid_args"),
        init_attr: symbol!("nvshmemx_hostlib_init_attr"),
        finalize: symbol!("nvshmemx_hostlib_finalize"),
        my_pe: symbol!("nvshmem_my_pe"),
        n_pes: symbol!("nvshmem_n_pes"),
        calloc: symbol!("nvshmem_calloc"),
        free: symbol!("nvshmem_free"),
        ptr: symbol!("nvshmem_ptr"),
        info_get_name: symbol!("nvshmem_info_get_name"),
        vendor_get_version_info: symbol!("nvshmemx_vendor_get_version_info"),
        cumodule_init: symbol!("nvshmemx_cumodule_init"),
        cumodule_finalize: symbol!("nvshmemx_cumodule_finalize"),
        path,
        _library: library,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_words_are_nvshmems() {
        // NVSHMEMX_UNIQUEID_INITIALIZER: (1 << 16) + sizeof(nvshmemx_uniqueid_t).
        assert_eq!(UniqueId::new().version, 65_536 + 128);
        let attr = InitAttr::new();
        assert_eq!(attr.version, 65_536 + 144);
        assert_eq!(attr.args.version, 65_536 + 128);
        assert_eq!(attr.args.unique_id.version, 65_536 + 24);
        assert_eq!(
            (attr.args.unique_id.my_rank, attr.args.unique_id.ranks),
            (-1, -1)
        );
    }
}
