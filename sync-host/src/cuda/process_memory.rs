//! GPU memory that the processes of a [`ProcessGroup`] share, one GPU each:
//! [`ProcessMemory`]. The owner allocates it with the driver's virtual-memory API as
//! exportable (`cuMemCreate` with a POSIX file descriptor handle), the group's
//! all-gather carries the descriptor to every other process, which imports and maps it
//! (`cuMemImportFromShareableHandle`, `cuMemMap`) and grants its own GPU access
//! (`cuMemSetAccess`), after the same peer checks as [`Runtime::place_for_peers`].
//!
//! Why descriptors and not the classic IPC handles (`cuIpcGetMemHandle`): a
//! descriptor can only be obtained from a process that holds it (passed over the
//! group's private socket), where a classic handle is 64 bytes any process of the
//! machine may open; and the memory lives until the last process unmaps it, so a
//! process that dies leaves the others' mappings valid.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use cudarc::driver::sys;

use super::{CudaError, DeviceObject, PlacementError, Runtime, Shareable};
use crate::process::ProcessGroup;

/// Device memory of one process's GPU mapped into every process of a group: kernels in
/// each process use it at [`device_address`](Self::device_address) (each process's own
/// address). Dropping it waits for this process's GPU work, then unmaps it; the memory
/// is freed once every process unmapped it (or ended).
///
/// Counterpart: `cudaIpcGetMemHandle`/`cudaIpcOpenMemHandle`, or
/// `cuMemExportToShareableHandle` with a POSIX descriptor, as NCCL shares its buffers
/// between the processes of a node.
pub struct ProcessMemory {
    runtime: Runtime,
    owner: usize,
    address: sys::CUdeviceptr,
    bytes: usize,
    /// The mapping's size: `bytes` rounded up to the allocation granularity.
    mapped: usize,
    handle: sys::CUmemGenericAllocationHandle,
}

impl ProcessMemory {
    /// The address kernels of this process use.
    pub fn device_address(&self) -> sys::CUdeviceptr {
        self.address
    }

    /// The size asked for, in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// The rank of the process whose GPU holds the memory.
    pub fn owner(&self) -> usize {
        self.owner
    }

    /// The memory's 32-bit words, copied to the host after this process's GPU work so
    /// far. Other processes' kernels are not waited for.
    ///
    /// # Errors
    ///
    /// A failed driver call.
    pub fn read_words(&self) -> Result<Vec<u32>, CudaError> {
        let mut words = vec![0_u32; self.bytes / 4];
        self.runtime.synchronize()?;
        self.runtime.bind()?;
        // SAFETY: `words` holds `bytes / 4` words, within the mapping.
        unsafe { sys::cuMemcpyDtoH_v2(words.as_mut_ptr().cast(), self.address, words.len() * 4) }
            .result()
            .map_err(CudaError::driver("copy process memory to the host"))?;
        Ok(words)
    }
}

impl std::fmt::Debug for ProcessMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessMemory")
            .field("owner", &self.owner)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl Drop for ProcessMemory {
    fn drop(&mut self) {
        let _ = self.runtime.context.synchronize();
        let _ = self.runtime.bind();
        // SAFETY: mapped by `map` at `address` for `mapped` bytes, unmapped and freed
        // once; this process's kernels that used it have ended.
        unsafe {
            sys::cuMemUnmap(self.address, self.mapped);
            sys::cuMemAddressFree(self.address, self.mapped);
            sys::cuMemRelease(self.handle);
        }
    }
}

// SAFETY: the struct holds driver handles and addresses, valid from any thread (the
// calls bind the context first).
unsafe impl Send for ProcessMemory {}
// SAFETY: as above; `&self` methods only copy out.
unsafe impl Sync for ProcessMemory {}

impl Runtime {
    /// `words` zeroed 32-bit words in the GPU of the group's rank `owner`, mapped in
    /// every process of `group` (this runtime's GPU is this process's). Collective:
    /// every process calls it with the same `owner` and `words`. Atomics from several
    /// GPUs on one word need native peer atomics, which the objects that need them
    /// (`MultiGrid::join`) check; here each GPU needs only access to the owner's.
    ///
    /// # Errors
    ///
    /// [`PlacementError::PeerAttribute`] if this GPU cannot reach the owner's memory;
    /// [`CudaError::PeerNotVisible`] if the owner's GPU is not visible in this process;
    /// a failed collective ([`CudaError::ProcessGroup`]) or driver call.
    ///
    /// # Panics
    ///
    /// If `owner` is not a rank of the group.
    pub fn zeros_for_processes(
        &self,
        group: &ProcessGroup,
        owner: usize,
        words: usize,
    ) -> Result<ProcessMemory, PlacementError> {
        assert!(
            owner < group.size(),
            "zeros_for_processes: rank {owner} of a group of {}",
            group.size()
        );
        let sharing = Sharing {
            object: "process words",
            rmw_from_every_party: false,
            len: words * 4,
            bytes: None,
        };
        let mut shared = self.share_with_processes(group, &sharing, |rank| rank == owner)?;
        Ok(shared.swap_remove(owner).expect("the owner's memory"))
    }

    /// Places a copy of `object`, built on the host, in the GPU of the group's rank
    /// `owner`, mapped in every process of `group`, for kernels of every process, after
    /// checking that each process's GPU reaches the owner's with native atomics.
    /// Collective: every process calls it with the same `owner` and an equal `object`
    /// (only the owner's is copied). Kernels take
    /// [`ProcessMemory::device_address`] (each process's own) as a pointer to the
    /// device flavour.
    ///
    /// The objects: a `System`-scope `Barrier`, `Latch` or `CountingSemaphore`, and the
    /// bus objects whose both ends may be GPUs (`HandoffSemaphore<GpuToGpu>`,
    /// `BusStopSource`), whose GPU side words are their own lines' in GPU memory
    /// (`sync_shared::bus::ITS_OWN_WORD`), so that each process maps them where it
    /// likes.
    ///
    /// Counterpart: an object in memory shared with `cudaIpcOpenMemHandle`, used
    /// through `cuda::atomic_ref<T, thread_scope_system>` (libcu++).
    ///
    /// # Errors
    ///
    /// As [`zeros_for_processes`](Self::zeros_for_processes), with native atomics
    /// checked.
    ///
    /// # Panics
    ///
    /// If `owner` is not a rank of the group.
    pub fn place_for_processes<T: DeviceObject + Shareable>(
        &self,
        group: &ProcessGroup,
        owner: usize,
        object: &T,
    ) -> Result<ProcessMemory, PlacementError> {
        assert!(
            owner < group.size(),
            "place_for_processes: rank {owner} of a group of {}",
            group.size()
        );
        let bytes = super::runtime::device_bytes(object);
        let sharing = Sharing {
            object: T::NAME,
            rmw_from_every_party: true,
            len: std::mem::size_of::<T>(),
            bytes: Some(&bytes),
        };
        let mut shared = self.share_with_processes(group, &sharing, |rank| rank == owner)?;
        Ok(shared.swap_remove(owner).expect("the owner's memory"))
    }

    /// Every process of `group` for which `owns(rank)` holds `sharing.len` bytes of its
    /// GPU (zeros, or the owner's object), mapped in every process: by rank, `None`
    /// for the others. Collective.
    pub(super) fn share_with_processes(
        &self,
        group: &ProcessGroup,
        sharing: &Sharing<'_>,
        owns: impl Fn(usize) -> bool,
    ) -> Result<Vec<Option<ProcessMemory>>, PlacementError> {
        let len = sharing.len;
        self.bind()?;
        let device = self.context.cu_device();
        let prop = allocation_properties(self.ordinal());
        let mut granularity = 0;
        // SAFETY: out-pointer to a local; `prop` is filled.
        unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut granularity,
                &prop,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        }
        .result()
        .map_err(CudaError::driver("read the allocation granularity"))?;
        let mapped = len.max(1).div_ceil(granularity.max(1)) * granularity.max(1);
        // The owner maps and zeroes its memory before anyone learns of it.
        let own = if owns(group.rank()) {
            let mut handle = 0;
            // SAFETY: out-pointer to a local; `prop` asks for an exportable allocation
            // on this GPU.
            unsafe { sys::cuMemCreate(&mut handle, mapped, &prop, 0) }
                .result()
                .map_err(CudaError::driver("allocate exportable GPU memory"))?;
            let memory = self.map(group.rank(), handle, len, mapped)?;
            zero(&memory)?;
            if let Some(bytes) = sharing.bytes {
                assert_eq!(bytes.len(), len, "process memory: the bytes to copy");
                // SAFETY: the fresh mapping holds at least `len` bytes; no kernel uses it.
                unsafe { sys::cuMemcpyHtoD_v2(memory.address, bytes.as_ptr().cast(), len) }
                    .result()
                    .map_err(CudaError::driver("copy an object to process memory"))?;
            }
            let mut fd: libc::c_int = -1;
            // SAFETY: a POSIX descriptor handle is written as an int.
            unsafe {
                sys::cuMemExportToShareableHandle(
                    std::ptr::addr_of_mut!(fd).cast(),
                    handle,
                    sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    0,
                )
            }
            .result()
            .map_err(CudaError::driver("export GPU memory to the group"))?;
            // SAFETY: the driver gave this process a fresh descriptor.
            Some((memory, unsafe { OwnedFd::from_raw_fd(fd) }))
        } else {
            None
        };
        let mut mine = device_uuid(device)?.to_vec();
        mine.extend_from_slice(&(mapped as u64).to_le_bytes());
        let address = own.as_ref().map_or(0, |(memory, _)| memory.address);
        mine.extend_from_slice(&address.to_le_bytes());
        let fds: Vec<_> = own.iter().map(|(_, fd)| fd.as_fd()).collect();
        // The collective's name says what is shared and by whom: processes that share
        // different things at once fail here, not with each other's memory.
        let owners: Vec<usize> = (0..group.size()).filter(|&rank| owns(rank)).collect();
        let what = format!(
            "sharing {} ({len} bytes, owned by ranks {owners:?})",
            sharing.object
        );
        let parts = group
            .all_gather_as(&what, &mine, &fds)
            .map_err(CudaError::ProcessGroup)?;
        let mut own = own.map(|(memory, _fd)| memory);
        let mut shared = Vec::with_capacity(parts.len());
        for (rank, part) in parts.into_iter().enumerate() {
            if part.fds.is_empty() {
                shared.push(None);
                continue;
            }
            let word =
                |at: usize| u64::from_le_bytes(part.bytes[at..at + 8].try_into().expect("8"));
            let uuid = &part.bytes[..16];
            let size = usize::try_from(word(16)).expect("a size of this machine");
            let owner_device = device_with_uuid(uuid).ok_or_else(|| CudaError::PeerNotVisible {
                rank,
                uuid: format_uuid(uuid),
            })?;
            self.check_reach(owner_device, sharing.object, sharing.rmw_from_every_party)?;
            let memory = match own.take() {
                Some(memory) if rank == group.rank() => memory,
                other => {
                    own = other;
                    self.map(rank, import(&part.fds[0])?, len, size)?
                }
            };
            shared.push(Some(memory));
        }
        Ok(shared)
    }

    /// Checks that this GPU reaches every other process's GPU of `group` as `object`
    /// needs (found by UUID). Collective.
    pub(super) fn check_group_reach(
        &self,
        group: &ProcessGroup,
        object: &'static str,
        rmw_from_every_party: bool,
    ) -> Result<(), PlacementError> {
        let mine = device_uuid(self.context.cu_device())?;
        let parts = group
            .all_gather_as(&format!("the GPUs of {object}"), &mine, &[])
            .map_err(CudaError::ProcessGroup)?;
        for (rank, part) in parts.iter().enumerate() {
            let device =
                device_with_uuid(&part.bytes).ok_or_else(|| CudaError::PeerNotVisible {
                    rank,
                    uuid: format_uuid(&part.bytes),
                })?;
            self.check_reach(device, object, rmw_from_every_party)?;
        }
        Ok(())
    }

    /// Whether this GPU reaches `owner`'s memory as `object` needs.
    fn check_reach(
        &self,
        owner: sys::CUdevice,
        object: &'static str,
        rmw_from_every_party: bool,
    ) -> Result<(), PlacementError> {
        let device = self.context.cu_device();
        if owner == device {
            return Ok(());
        }
        let attribute = |which, operation| {
            let mut value = 0;
            // SAFETY: out-pointer to a local; both are devices of this process.
            unsafe { sys::cuDeviceGetP2PAttribute(&mut value, which, device, owner) }
                .result()
                .map_err(CudaError::driver(operation))?;
            Ok::<_, CudaError>(value != 0)
        };
        let link = super::PeerLink {
            user: self.ordinal(),
            owner: usize::try_from(owner).unwrap_or(usize::MAX),
            access: attribute(
                sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED,
                "read the peer access attribute",
            )?,
            native_atomics: attribute(
                sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                "read the peer atomics attribute",
            )?,
            performance_rank: 0,
        };
        link.admits(object, rmw_from_every_party)
    }

    /// Maps `handle` (`size` bytes) here and lets this GPU read and write it.
    fn map(
        &self,
        owner: usize,
        handle: sys::CUmemGenericAllocationHandle,
        bytes: usize,
        size: usize,
    ) -> Result<ProcessMemory, CudaError> {
        let mut address = 0;
        // SAFETY: out-pointer to a local; default alignment, anywhere.
        let reserved = unsafe { sys::cuMemAddressReserve(&mut address, size, 0, 0, 0) };
        if let Err(error) = reserved.result() {
            // SAFETY: the handle is ours and unmapped.
            unsafe { sys::cuMemRelease(handle) };
            return Err(CudaError::driver("reserve addresses for process memory")(
                error,
            ));
        }
        // From here the drop unmaps, frees the range and releases the handle.
        let memory = ProcessMemory {
            runtime: self.clone(),
            owner,
            address,
            bytes,
            mapped: size,
            handle,
        };
        // SAFETY: the reserved range is `size` bytes, the allocation as large.
        unsafe { sys::cuMemMap(address, size, 0, handle, 0) }
            .result()
            .map_err(CudaError::driver("map process memory"))?;
        let access = sys::CUmemAccessDesc {
            location: device_location(self.ordinal()),
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: one descriptor for the mapped range.
        unsafe { sys::cuMemSetAccess(address, size, &access, 1) }
            .result()
            .map_err(CudaError::driver("grant this GPU access to process memory"))?;
        Ok(memory)
    }
}

/// What [`Runtime::share_with_processes`] shares.
pub(super) struct Sharing<'a> {
    /// The object's name, for the peer checks' errors.
    pub(super) object: &'static str,
    /// Whether every process's GPU read-modify-writes the memory (native peer atomics
    /// checked).
    pub(super) rmw_from_every_party: bool,
    /// Bytes asked for.
    pub(super) len: usize,
    /// The owner's bytes (`None`: zeros).
    pub(super) bytes: Option<&'a [u8]>,
}

/// Zeroes `memory` (the owner's, before anyone uses it) on this process's GPU and
/// waits for it.
fn zero(memory: &ProcessMemory) -> Result<(), CudaError> {
    memory.runtime.bind()?;
    // SAFETY: the live mapping, `mapped` bytes; no kernel uses it yet.
    unsafe { sys::cuMemsetD8_v2(memory.address, 0, memory.mapped) }
        .result()
        .map_err(CudaError::driver("zero process memory"))
}

fn import(fd: &OwnedFd) -> Result<sys::CUmemGenericAllocationHandle, CudaError> {
    let mut handle = 0;
    // SAFETY: a POSIX descriptor handle is passed as the descriptor's value in a
    // pointer; the driver duplicates what it needs.
    unsafe {
        sys::cuMemImportFromShareableHandle(
            &mut handle,
            fd.as_raw_fd() as usize as *mut std::ffi::c_void,
            sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        )
    }
    .result()
    .map_err(CudaError::driver("import another process's GPU memory"))?;
    Ok(handle)
}

fn device_location(ordinal: usize) -> sys::CUmemLocation {
    sys::CUmemLocation {
        type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: i32::try_from(ordinal).expect("a GPU ordinal"),
    }
}

fn allocation_properties(ordinal: usize) -> sys::CUmemAllocationProp {
    // SAFETY: plain data; all-zero is the empty value of each field.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes =
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location = device_location(ordinal);
    prop
}

fn device_uuid(device: sys::CUdevice) -> Result<[u8; 16], CudaError> {
    // SAFETY: plain data.
    let mut uuid: sys::CUuuid = unsafe { std::mem::zeroed() };
    // SAFETY: out-pointer to a local.
    unsafe { sys::cuDeviceGetUuid_v2(&mut uuid, device) }
        .result()
        .map_err(CudaError::driver("read the GPU's UUID"))?;
    Ok(uuid.bytes.map(|byte| byte as u8))
}

/// The device of this process with `uuid`, if it sees it.
fn device_with_uuid(uuid: &[u8]) -> Option<sys::CUdevice> {
    let count = Runtime::device_count().ok()?;
    (0..count).find_map(|ordinal| {
        let mut device = 0;
        // SAFETY: out-pointer to a local; an ordinal below the count.
        unsafe { sys::cuDeviceGet(&mut device, i32::try_from(ordinal).ok()?) }
            .result()
            .ok()?;
        (device_uuid(device).ok()?[..] == *uuid).then_some(device)
    })
}

fn format_uuid(uuid: &[u8]) -> String {
    let hex: String = uuid.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_objects_in_gpu_memory_hold_no_address() {
        use crate::{BusStopSource, GpuToGpu, HandoffSemaphore};
        use sync_shared::bus::{GpuSideLines, ITS_OWN_WORD};
        // A bus object placed in GPU memory marks its GPU side words as the lines' own
        // (read through the lines, not the bytes: the lines' padding is not
        // initialized), so its bytes are the same in every process that maps them.
        let semaphore = HandoffSemaphore::<GpuToGpu>::new(0);
        let stops = [BusStopSource::new(), BusStopSource::new()];
        // SAFETY: host objects no kernel uses.
        unsafe {
            DeviceObject::attach_in_gpu_memory(&semaphore);
            DeviceObject::attach_in_gpu_memory(&stops);
        }
        let attached: Vec<u64> = GpuSideLines::gpu_side_lines(&semaphore)
            .into_iter()
            .chain(stops.iter().flat_map(GpuSideLines::gpu_side_lines))
            .flatten()
            .map(|line| line.gpu_word())
            .collect();
        // The semaphore's two GPU side lines (a GPU both releases and acquires), one of
        // each stop source.
        assert_eq!(attached.len(), 4, "{attached:?}");
        assert!(
            attached.iter().all(|&word| word == ITS_OWN_WORD),
            "{attached:?}"
        );
    }

    #[test]
    fn a_uuid_prints_as_nvidia_smi_does() {
        let uuid: Vec<u8> = (0..16).collect();
        assert_eq!(
            format_uuid(&uuid),
            "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
        );
    }
}
