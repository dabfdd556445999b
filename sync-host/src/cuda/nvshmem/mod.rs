//! NVSHMEM as the engine of the multi-GPU objects across processes: [`Nvshmem`] starts
//! NVSHMEM in each process of a [`ProcessGroup`] (one GPU each), bootstrapped by its
//! unique ID, which the group carries (no MPI); [`SymmetricMemory`] is memory of its
//! symmetric heap, [`MultiGrid::join_nvshmem`](super::MultiGrid::join_nvshmem)
//! places the multi-GPU barrier there, and [`Nvshmem::handoff`] and
//! [`Nvshmem::stop_source`] the bus objects whose ends are kernels of different PEs.
//!
//! NVSHMEM's host library is loaded at run time (`$NVSHMEM_HOME/lib`, an active Python
//! environment's `nvidia/nvshmem/lib`, or the loader's path): a program builds without
//! it, and [`Nvshmem::library`] says where it was found or where it was looked for.
//!
//! Why a process group underneath: NVSHMEM has no notion of a process that died, and
//! its collectives (the frees, the finalization) wait for every PE forever. The group
//! sees a death within milliseconds; this module meets through it before each of
//! NVSHMEM's collectives, and skips them once the group failed (the memory is then
//! left to the process's end), so that no thread waits on a dead peer. For the same
//! reason NVSHMEM's local-only proxy thread is off unless the environment says
//! otherwise (`NVSHMEM_DISABLE_LOCAL_ONLY_PROXY`, see `library.rs`): left running in a
//! process that could not finalize NVSHMEM, it crashed that process in its exit.

mod error;
mod kernels;
mod library;
mod objects;

use std::ffi::{c_char, c_void, CStr};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cudarc::driver::sys;

pub use error::NvshmemError;
pub use library::HOME_VARIABLE;
use library::{Functions, InitAttr, UniqueId, INIT_WITH_UNIQUE_ID};
pub use objects::SymmetricObject;

use super::{CudaError, Runtime};
use crate::process::ProcessGroup;

/// Whether NVSHMEM was started in this process (it starts once per process).
static STARTED: AtomicBool = AtomicBool::new(false);

/// NVSHMEM, started in this process for its GPU, with every process of a
/// [`ProcessGroup`]: PE `i` is the group's rank `i`. Cheap to clone (one start, shared);
/// NVSHMEM is finalized when the last clone and the last [`SymmetricMemory`] are gone,
/// collectively, unless the group failed.
///
/// Counterpart: `nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, ...)` after
/// `nvshmemx_get_uniqueid` on rank 0 and a broadcast of the ID (NVSHMEM's own
/// "unique ID" bootstrap, as NCCL's `ncclCommInitRank`).
///
/// # Examples
///
/// One process of a job started by `scoped-sync-run -n 2 -- my-program` (or mpirun,
/// torchrun, srun), with NVSHMEM installed:
///
/// ```no_run
/// use sync_host::cuda::{Nvshmem, Runtime};
/// use sync_host::process::Rendezvous;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let rendezvous = Rendezvous::from_env()?;
/// let gpu = Runtime::open(rendezvous.local_rank())?;
/// let group = rendezvous.join()?;
/// let shmem = Nvshmem::start(&gpu, &group)?;
/// let words = shmem.zeros(1024)?;
/// // Rank 0's words, as this process's kernels reach them (NVLink).
/// let rank_0_words = words.peer_address(0)?;
/// # let _ = rank_0_words;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Nvshmem {
    started: Arc<Started>,
}

struct Started {
    functions: &'static Functions,
    gpu: Runtime,
    group: ProcessGroup,
}

impl Nvshmem {
    /// Loads NVSHMEM's host library (once per process) and says where it was found.
    ///
    /// # Errors
    ///
    /// [`NvshmemError::NotFound`] with every place tried, or
    /// [`NvshmemError::MissingSymbol`] for a library that is not NVSHMEM 3.x.
    pub fn library() -> Result<&'static Path, NvshmemError> {
        library::functions().map(|functions| functions.path.as_path())
    }

    /// Starts NVSHMEM in this process on `gpu`, with every process of `group`.
    /// Collective: every process of the group calls it. Rank 0 makes NVSHMEM's unique
    /// ID and the group carries it to the others (over its private socket: only the
    /// job's processes learn the bootstrap's address).
    ///
    /// # Errors
    ///
    /// [`NvshmemError::NotFound`] where NVSHMEM is not installed (nothing was started;
    /// the group's other processes fail their own call the same way or at the group's
    /// meeting); [`NvshmemError::AlreadyStarted`] on a second start in this process;
    /// [`NvshmemError::Failed`] if NVSHMEM's start failed; a failed collective
    /// ([`CudaError::ProcessGroup`]) or driver call.
    pub fn start(gpu: &Runtime, group: &ProcessGroup) -> Result<Self, CudaError> {
        let functions = library::functions()?;
        // NVSHMEM takes the GPU of the calling thread's current context.
        gpu.bind()?;
        if STARTED.swap(true, Ordering::AcqRel) {
            return Err(NvshmemError::AlreadyStarted.into());
        }
        // Until NVSHMEM's own start is called, a failure leaves it startable.
        let (id, mut attr) = match unique_id_attributes(functions, group) {
            Ok(prepared) => prepared,
            Err(error) => {
                STARTED.store(false, Ordering::Release);
                return Err(error);
            }
        };
        let (rank, size) = (group.rank(), group.size());
        // SAFETY: attributes of NVSHMEM's layout naming the live unique ID `id`; this
        // process has not started NVSHMEM before (`STARTED`).
        check("nvshmemx_hostlib_init_attr", unsafe {
            (functions.init_attr)(INIT_WITH_UNIQUE_ID, &mut attr)
        })?;
        drop(id);
        let started = Started {
            functions,
            gpu: gpu.clone(),
            group: group.clone(),
        };
        // SAFETY: NVSHMEM runs (started above).
        let (pe, pes) = unsafe { ((functions.my_pe)(), (functions.n_pes)()) };
        let (pe, pes) = (as_usize(pe), as_usize(pes));
        if (pe, pes) != (rank, size) {
            return Err(NvshmemError::NotTheGroupsRank {
                pe,
                pes,
                rank,
                size,
            }
            .into());
        }
        Ok(Self {
            started: Arc::new(started),
        })
    }

    /// This process's PE number: its group rank.
    pub fn pe(&self) -> usize {
        self.started.group.rank()
    }

    /// The number of PEs: the group's size.
    pub fn pes(&self) -> usize {
        self.started.group.size()
    }

    /// The GPU NVSHMEM runs on in this process.
    pub fn gpu(&self) -> &Runtime {
        &self.started.gpu
    }

    /// The process group NVSHMEM was started with.
    pub fn group(&self) -> &ProcessGroup {
        &self.started.group
    }

    /// NVSHMEM's name and version, as `nvshmem_info_get_name` gives them.
    pub fn version(&self) -> String {
        let mut name = [0 as c_char; 256];
        // SAFETY: NVSHMEM runs; the buffer has NVSHMEM_MAX_NAME_LEN (256) bytes.
        unsafe { (self.started.functions.info_get_name)(name.as_mut_ptr()) };
        // SAFETY: NVSHMEM wrote a NUL-terminated string into the zeroed buffer.
        unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    /// `bytes` zeroed bytes of NVSHMEM's symmetric heap, on every PE at once (the same
    /// offset in each PE's heap). Collective: every process calls it, with the same
    /// `bytes`, in the same order as its other collectives; it returns once every PE
    /// zeroed its part.
    ///
    /// # Errors
    ///
    /// [`NvshmemError::OutOfMemory`] if the heap has no room, a failed collective
    /// (the processes asked for different sizes, a process died: [`CudaError::ProcessGroup`])
    /// or driver call.
    pub fn zeros(&self, bytes: usize) -> Result<SymmetricMemory, CudaError> {
        let started = &self.started;
        // The meeting names the size: processes that allocate different things fail
        // here instead of inside NVSHMEM, and a dead process is seen before NVSHMEM's
        // own barrier would wait for it.
        started
            .group
            .all_gather_as(&format!("NVSHMEM allocation of {bytes} bytes"), &[], &[])
            .map_err(CudaError::ProcessGroup)?;
        started.gpu.bind()?;
        // SAFETY: NVSHMEM runs; a collective every PE makes now (met above).
        let address = unsafe { (started.functions.calloc)(1, bytes.max(1)) };
        if address.is_null() {
            return Err(NvshmemError::OutOfMemory { bytes }.into());
        }
        let memory = SymmetricMemory {
            shmem: self.clone(),
            address,
            bytes,
        };
        // `nvshmem_calloc` zeroes too, on a stream of NVSHMEM's; zeroing again here and
        // synchronizing makes "zeroed on every PE" a fact before the meeting below,
        // whatever NVSHMEM's release does (once per allocation, off any hot path).
        // SAFETY: this PE's part of the fresh allocation; no kernel uses it yet.
        unsafe { sys::cuMemsetD8_v2(memory.device_address(), 0, bytes) }
            .result()
            .map_err(CudaError::driver("zero symmetric memory"))?;
        // SAFETY: a call without arguments on the bound context.
        unsafe { sys::cuCtxSynchronize() }
            .result()
            .map_err(CudaError::driver("zero symmetric memory"))?;
        started
            .group
            .all_gather_as("NVSHMEM allocation zeroed", &[], &[])
            .map_err(CudaError::ProcessGroup)?;
        Ok(memory)
    }

    /// `address` (this PE's symmetric memory) as PE `pe`'s copy of it is reached by
    /// this process's kernels, or `None` where it is not load/store reachable.
    fn peer_pointer(&self, address: *mut c_void, pe: usize) -> Option<sys::CUdeviceptr> {
        // SAFETY: NVSHMEM runs; `address` lies in its symmetric heap.
        let peer = unsafe { (self.started.functions.ptr)(address, as_int(pe)) };
        (!peer.is_null()).then_some(peer as sys::CUdeviceptr)
    }
}

impl std::fmt::Debug for Nvshmem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvshmem")
            .field("pe", &self.pe())
            .field("pes", &self.pes())
            .field("gpu", &self.started.gpu.ordinal())
            .finish()
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        // NVSHMEM's finalization is a collective that would wait forever for a dead
        // PE (finalizing anyway was tried: docs/multi-gpu.md): meet first, and leave
        // NVSHMEM to the process's end if that fails.
        if self.group.failure().is_some()
            || self
                .group
                .all_gather_as("NVSHMEM finalization", &[], &[])
                .is_err()
            || self.gpu.bind().is_err()
        {
            return;
        }
        // SAFETY: every PE is here (met above), every symmetric allocation is freed (each
        // holds this `Started`), and NVSHMEM runs.
        unsafe { (self.functions.finalize)() };
    }
}

/// Memory of NVSHMEM's symmetric heap ([`Nvshmem::zeros`]): the same bytes in every
/// PE's GPU, each reached by this process's kernels at
/// [`peer_address`](Self::peer_address). Dropping it waits for this process's GPU work
/// and frees it collectively (every process drops its own, in the same order), unless
/// the group failed.
///
/// Counterpart: `nvshmem_calloc` and `nvshmem_ptr`.
pub struct SymmetricMemory {
    shmem: Nvshmem,
    address: *mut c_void,
    bytes: usize,
}

impl SymmetricMemory {
    /// This PE's copy, at the address this process's kernels use.
    pub fn device_address(&self) -> sys::CUdeviceptr {
        self.address as sys::CUdeviceptr
    }

    /// PE `pe`'s copy, at the address this process's kernels reach it (over NVLink or
    /// PCIe peer access).
    ///
    /// # Errors
    ///
    /// [`NvshmemError::NotReachable`] where PE `pe`'s GPU is not load/store reachable
    /// from this one (another machine, or no peer access).
    ///
    /// # Panics
    ///
    /// If `pe` is not a PE of the job.
    pub fn peer_address(&self, pe: usize) -> Result<sys::CUdeviceptr, NvshmemError> {
        assert!(
            pe < self.shmem.pes(),
            "peer_address: PE {pe} of {}",
            self.shmem.pes()
        );
        self.shmem
            .peer_pointer(self.address, pe)
            .ok_or(NvshmemError::NotReachable { pe })
    }

    /// The size asked for, in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }
}

impl std::fmt::Debug for SymmetricMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymmetricMemory")
            .field("pe", &self.shmem.pe())
            .field("address", &format_args!("{:#x}", self.device_address()))
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Drop for SymmetricMemory {
    fn drop(&mut self) {
        let started = &self.shmem.started;
        // Kernels of this process may still use it; `nvshmem_free` is a collective
        // that would wait forever for a dead PE: meet first, under the allocation's
        // size, and leave the memory to the process's end if that fails.
        if started.gpu.synchronize().is_err()
            || started.group.failure().is_some()
            || started
                .group
                .all_gather_as(&format!("NVSHMEM free of {} bytes", self.bytes), &[], &[])
                .is_err()
            || started.gpu.bind().is_err()
        {
            return;
        }
        // SAFETY: this PE's live allocation, no kernel of this process uses it (the
        // stream is synchronized), every PE frees its own now (met above).
        unsafe { (started.functions.free)(self.address) };
    }
}

// SAFETY: the pointer is an address in NVSHMEM's heap, not dereferenced on the host;
// NVSHMEM's host calls are made with the GPU's context bound on the calling thread.
unsafe impl Send for SymmetricMemory {}
// SAFETY: as for `Send`; `&self` methods only read the address.
unsafe impl Sync for SymmetricMemory {}

impl From<NvshmemError> for CudaError {
    fn from(error: NvshmemError) -> Self {
        Self::Nvshmem(error)
    }
}

/// NVSHMEM's start attributes for this process of `group`, naming the unique ID rank 0
/// made and the group carried (boxed: the attributes point at it).
fn unique_id_attributes(
    functions: &Functions,
    group: &ProcessGroup,
) -> Result<(Box<UniqueId>, InitAttr), CudaError> {
    let mut mine = Vec::new();
    if group.rank() == 0 {
        let mut id = UniqueId::new();
        // SAFETY: an out-pointer to an initialized unique ID of NVSHMEM's layout.
        check("nvshmemx_get_uniqueid", unsafe {
            (functions.get_unique_id)(&mut id)
        })?;
        mine = unique_id_bytes(&id);
    }
    let parts = group
        .all_gather_as("NVSHMEM's unique ID", &mine, &[])
        .map_err(CudaError::ProcessGroup)?;
    let id = Box::new(unique_id_from(&parts[0].bytes)?);
    let mut attr = InitAttr::new();
    // SAFETY: the ID and the attributes are NVSHMEM's layouts; the attributes keep the
    // ID's address, which the box holds still.
    check("nvshmemx_set_attr_uniqueid_args", unsafe {
        (functions.set_attr_unique_id_args)(
            as_int(group.rank()),
            as_int(group.size()),
            &*id,
            &mut attr,
        )
    })?;
    Ok((id, attr))
}

/// An NVSHMEM status as a result.
fn check(function: &'static str, status: i32) -> Result<(), NvshmemError> {
    if status == 0 {
        Ok(())
    } else {
        Err(NvshmemError::Failed { function, status })
    }
}

fn unique_id_bytes(id: &UniqueId) -> Vec<u8> {
    let mut bytes = id.version.to_le_bytes().to_vec();
    bytes.extend_from_slice(&id.internal);
    bytes
}

fn unique_id_from(bytes: &[u8]) -> Result<UniqueId, NvshmemError> {
    if bytes.len() != size_of::<UniqueId>() {
        return Err(NvshmemError::Failed {
            function: "receive NVSHMEM's unique ID from rank 0",
            status: -1,
        });
    }
    let mut id = UniqueId::new();
    id.version = i32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
    id.internal.copy_from_slice(&bytes[4..]);
    Ok(id)
}

fn as_int(value: usize) -> i32 {
    i32::try_from(value).expect("a PE number fits an int")
}

fn as_usize(value: i32) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_id_crosses_the_group_unchanged() {
        let mut id = UniqueId::new();
        for (at, byte) in id.internal.iter_mut().enumerate() {
            *byte = at as u8 ^ 0x5a;
        }
        let back = unique_id_from(&unique_id_bytes(&id)).unwrap();
        assert_eq!(back.version, id.version);
        assert_eq!(back.internal, id.internal);
        assert!(unique_id_from(&[0; 12]).is_err());
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot load a shared library")]
    fn a_missing_library_names_where_it_looked_and_how_to_point_at_it() {
        // Where NVSHMEM is installed (NVSHMEM_HOME) the library loads with every call
        // bound; without it (CI) the error must say where it looked.
        let error = match Nvshmem::library() {
            Ok(path) => {
                assert!(path.ends_with("libnvshmem_host.so.3"), "{}", path.display());
                return;
            }
            Err(error) => error,
        };
        let NvshmemError::NotFound { tried } = &error else {
            panic!("not a missing library: {error}");
        };
        assert!(tried
            .iter()
            .any(|place| place.starts_with("libnvshmem_host.so.3")));
        let message = error.to_string();
        assert!(message.contains("NVSHMEM_HOME"), "{message}");
        assert!(message.contains("tried: "), "{message}");
    }
}
