//! [`ProcessHostMemory`]: host memory that every process of a [`ProcessGroup`] maps,
//! and that each process's GPU reaches as mapped (pinned) memory: what host threads of
//! one process and kernels of another share, the host parties' words of a
//! [`MultiGrid`](super::MultiGrid) joined across processes among them.
//!
//! Rank 0 creates an anonymous memory file (`memfd_create`) and the group passes its
//! descriptor to the others over its private socket; each process maps it shared and
//! registers the mapping with the driver (`cuMemHostRegister`, portable and
//! device-mapped), so its GPU reaches the same bytes. Host threads of every process
//! read-modify-write it with the CPU's atomics (one physical page, coherent across
//! processes); a GPU only loads and stores there, as in any mapped memory.

use std::ffi::c_void;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

use cudarc::driver::sys;

use super::{CudaError, Runtime};
use crate::process::ProcessGroup;

/// Host memory every process of a group maps ([`Runtime::host_memory_for_processes`]),
/// reached by this process's GPU at [`device_address`](Self::device_address). Zeroed
/// when made. Unregistered and unmapped on drop (each process its own mapping).
///
/// Counterpart: a POSIX shared-memory segment registered in each process with
/// `cudaHostRegister(…, cudaHostRegisterMapped | cudaHostRegisterPortable)`.
pub struct ProcessHostMemory {
    host: NonNull<u8>,
    device: sys::CUdeviceptr,
    len: usize,
    /// The context it is registered with.
    gpu: Runtime,
}

// SAFETY: the bytes are touched only through atomics, and by the GPU; the pointer is
// the process's own mapping, valid until drop.
unsafe impl Send for ProcessHostMemory {}
// SAFETY: as above.
unsafe impl Sync for ProcessHostMemory {}

impl Runtime {
    /// `words` zeroed 32-bit words of host memory that every process of `group` maps,
    /// registered with this runtime's GPU. Collective: every process calls it with the
    /// same `words`, in the same order as its other collectives.
    ///
    /// # Errors
    ///
    /// [`CudaError::ProcessGroup`] if the group failed or the processes asked for
    /// different sizes; [`CudaError::HostMemory`] if the system refused the memory; a
    /// failed registration with the driver.
    pub fn host_memory_for_processes(
        &self,
        group: &ProcessGroup,
        words: usize,
    ) -> Result<ProcessHostMemory, CudaError> {
        let page = page_size();
        let len = (words.max(1) * 4).div_ceil(page) * page;
        let file = if group.rank() == 0 {
            Some(memory_file(len)?)
        } else {
            None
        };
        let fds: Vec<_> = file.iter().map(AsFd::as_fd).collect();
        let parts = group
            .all_gather_as(
                &format!("host memory for processes ({len} bytes)"),
                &[],
                &fds,
            )
            .map_err(CudaError::ProcessGroup)?;
        let file = parts
            .into_iter()
            .next()
            .and_then(|part| part.fds.into_iter().next())
            .ok_or_else(|| host_memory_error("receive the host memory's descriptor from rank 0"))?;
        let host = map_shared(&file, len)?;
        drop(file);
        let unmap = |error| {
            // SAFETY: the mapping just made, not used afterwards.
            unsafe { libc::munmap(host.as_ptr().cast(), len) };
            error
        };
        self.bind().map_err(unmap)?;
        // SAFETY: a live, page-aligned mapping of `len` bytes, registered once.
        unsafe {
            sys::cuMemHostRegister_v2(
                host.as_ptr().cast::<c_void>(),
                len,
                sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP,
            )
        }
        .result()
        .map_err(|error| unmap(CudaError::driver("register the group's host memory")(error)))?;
        // From here its drop unregisters and unmaps it.
        let mut memory = ProcessHostMemory {
            host,
            device: 0,
            len,
            gpu: self.clone(),
        };
        // SAFETY: `host` was registered with DEVICEMAP above.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut memory.device, host.as_ptr().cast(), 0) }
            .result()
            .map_err(CudaError::driver(
                "map the group's host memory into the GPU",
            ))?;
        Ok(memory)
    }
}

impl ProcessHostMemory {
    /// The address this process's kernels use.
    pub fn device_address(&self) -> sys::CUdeviceptr {
        self.device
    }

    /// The memory as 32-bit words, for this process's host threads.
    pub fn host_words(&self) -> &[AtomicU32] {
        // SAFETY: `len` bytes, page-aligned, alive until drop; `AtomicU32` has `u32`'s
        // layout.
        unsafe { std::slice::from_raw_parts(self.host.as_ptr().cast::<AtomicU32>(), self.len / 4) }
    }

    /// The memory as 64-bit words, for this process's host threads.
    pub(super) fn host_u64s(&self) -> &[AtomicU64] {
        // SAFETY: as in `host_words`, 8-byte aligned.
        unsafe { std::slice::from_raw_parts(self.host.as_ptr().cast::<AtomicU64>(), self.len / 8) }
    }

    /// Its size in bytes (a whole number of pages).
    pub fn len_bytes(&self) -> usize {
        self.len
    }
}

impl Drop for ProcessHostMemory {
    fn drop(&mut self) {
        // Kernels of this process may still read it: wait for them first.
        let _ = self.gpu.synchronize();
        if self.gpu.bind().is_ok() {
            // SAFETY: registered in `host_memory_for_processes`, once.
            unsafe { sys::cuMemHostUnregister(self.host.as_ptr().cast()) };
        }
        // SAFETY: the mapping made there, not used after this.
        unsafe { libc::munmap(self.host.as_ptr().cast(), self.len) };
    }
}

impl std::fmt::Debug for ProcessHostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessHostMemory")
            .field("device_address", &format_args!("{:#x}", self.device))
            .field("len", &self.len)
            .finish()
    }
}

/// A fresh anonymous memory file of `len` zero bytes.
fn memory_file(len: usize) -> Result<OwnedFd, CudaError> {
    // SAFETY: a NUL-terminated name; the flags are valid.
    let fd = unsafe { libc::memfd_create(c"scoped-sync host memory".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(host_memory_error(
            "create the group's host memory (memfd_create)",
        ));
    }
    // SAFETY: the descriptor just created, owned from here.
    let file = unsafe { OwnedFd::from_raw_fd(fd) };
    let size = libc::off_t::try_from(len).expect("a host memory size fits off_t");
    // SAFETY: a live descriptor of this process.
    if unsafe { libc::ftruncate(file.as_raw_fd(), size) } != 0 {
        return Err(host_memory_error(
            "size the group's host memory (ftruncate)",
        ));
    }
    Ok(file)
}

/// A fresh shared mapping of the `len` bytes of `file`, readable and writable.
fn map_shared(file: &OwnedFd, len: usize) -> Result<NonNull<u8>, CudaError> {
    // SAFETY: a new mapping of a live descriptor; the kernel picks the address.
    let host = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if host == libc::MAP_FAILED {
        return Err(host_memory_error("map the group's host memory (mmap)"));
    }
    Ok(NonNull::new(host.cast::<u8>()).expect("mmap returned success"))
}

/// The system's last error, for `operation`.
fn host_memory_error(operation: &'static str) -> CudaError {
    CudaError::HostMemory {
        operation,
        error: std::io::Error::last_os_error(),
    }
}

fn page_size() -> usize {
    // SAFETY: no arguments beyond the name.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "Miri does not run memfd_create or mmap")]
    fn two_mappings_of_the_memory_file_share_its_zeroed_words() {
        let len = page_size();
        let file = memory_file(len).unwrap();
        let map = || {
            let at = map_shared(&file, len).unwrap();
            // SAFETY: `len` bytes of the mapping, page-aligned, unmapped below.
            unsafe { std::slice::from_raw_parts(at.as_ptr().cast::<AtomicU64>(), len / 8) }
        };
        let (one, other) = (map(), map());
        assert!(one
            .iter()
            .all(|word| word.load(std::sync::atomic::Ordering::Relaxed) == 0));
        one[3].fetch_add(7, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(other[3].load(std::sync::atomic::Ordering::Relaxed), 7);
        for mapping in [one, other] {
            // SAFETY: the mappings made above, not used after this.
            unsafe { libc::munmap(mapping.as_ptr().cast_mut().cast(), len) };
        }
    }
}
