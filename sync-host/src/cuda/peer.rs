//! Memory of one GPU that kernels on other GPUs of the machine use too (peer access,
//! over NVLink or PCIe): [`PeerMemory`], placed by [`Runtime::place_for_peers`] (a
//! `System`-scope `Barrier`, `Latch` or `CountingSemaphore`) or
//! [`Runtime::zeros_for_peers`] (plain words), after the driver's peer-to-peer
//! attributes ([`PeerLink`]) said every user GPU reaches the owner's memory and that
//! its atomics there are atomic with the owner's own.
//!
//! Why the checks: a `System`-scope object's protocol read-modify-writes its words
//! from every party. A GPU whose atomics on a peer's memory are not native (the
//! driver's `CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED` = 0, typical of PCIe
//! peers) would break the object silently; it is refused with a
//! [`PlacementError::PeerAttribute`] that names the attribute, as mapped placement
//! refuses such objects where `hostNativeAtomicSupported` is 0.
//!
//! Why not the runtime's own device memory: [`Runtime::zeros`] and
//! [`Runtime::upload`] come from the stream-ordered pool, whose memory other GPUs may
//! not reach unless the pool grants them access (`cuMemPoolSetAccess`), whatever
//! `cuCtxEnablePeerAccess` says. Peer memory is a plain `cuMemAlloc`, which peer
//! access covers.

use std::fmt;

use cudarc::driver::sys;

use super::{CudaError, DeviceObject, PlacementError, Runtime, Shareable};

/// The driver attribute names of the peer checks.
const ACCESS_SUPPORTED: &str = "CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED";
const NATIVE_ATOMIC_SUPPORTED: &str = "CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED";

/// What the driver says of one GPU's access to another's memory
/// (`cuDeviceGetP2PAttribute` from `user` to `owner`). A GPU's link to itself has
/// every property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerLink {
    /// The GPU whose kernels use the memory.
    pub user: usize,
    /// The GPU the memory belongs to.
    pub owner: usize,
    /// Whether `user` can reach `owner`'s memory at all
    /// (`CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED`).
    pub access: bool,
    /// Whether `user`'s atomics on `owner`'s memory are atomic with `owner`'s own
    /// (`CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`).
    pub native_atomics: bool,
    /// The driver's relative performance of the link, 0 the best
    /// (`CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK`).
    pub performance_rank: u32,
}

impl PeerLink {
    /// Whether kernels on `user` may use `object`, a `System`-scope object in `owner`'s
    /// memory whose protocol read-modify-writes its words from every party
    /// (`rmw_from_every_party`) or only loads and stores them: the error names the
    /// attribute that forbids it.
    ///
    /// # Errors
    ///
    /// [`PlacementError::PeerAttribute`] when `access` is false, or when
    /// `rmw_from_every_party` and `native_atomics` is false.
    ///
    /// # Examples
    ///
    /// ```
    /// use sync_host::cuda::{PeerLink, PlacementError};
    ///
    /// let pcie = PeerLink { user: 1, owner: 0, access: true, native_atomics: false, performance_rank: 1 };
    /// assert!(pcie.admits("Latch<System>", false).is_ok());
    /// assert!(matches!(
    ///     pcie.admits("Latch<System>", true),
    ///     Err(PlacementError::PeerAttribute { attribute: "CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED", .. })
    /// ));
    /// ```
    pub fn admits(
        &self,
        object: &'static str,
        rmw_from_every_party: bool,
    ) -> Result<(), PlacementError> {
        let missing = if !self.access {
            ACCESS_SUPPORTED
        } else if rmw_from_every_party && !self.native_atomics {
            NATIVE_ATOMIC_SUPPORTED
        } else {
            return Ok(());
        };
        Err(PlacementError::PeerAttribute {
            object,
            user: self.user,
            owner: self.owner,
            attribute: missing,
        })
    }
}

/// Device memory of one GPU (the owner) that kernels on the owner and on the user
/// GPUs it was placed for may use, at the same address ([`device_address`]; unified
/// addressing). Holds its runtimes; dropping it waits for the work of every one of
/// their contexts (a kernel may still use the memory), then frees it.
///
/// [`device_address`]: Self::device_address
///
/// # Examples
///
/// A latch in GPU 1's memory that kernels on GPUs 0 and 1 count down (`count_down`
/// takes a `*const sync_device::Latch<System>`):
///
/// ```no_run
/// use sync_host::cuda::{KernelArgs, LaunchConfig, Runtime};
/// use sync_host::Latch;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (gpu0, gpu1) = (Runtime::open(0)?, Runtime::open(1)?);
/// let latch = gpu1.place_for_peers(&Latch::new(2), &[&gpu0])?;
/// for gpu in [&gpu0, &gpu1] {
///     let kernel = gpu.load_file("my-kernels.ptx")?.kernel("count_down")?;
///     let args = KernelArgs::new().arg(&latch);
///     // SAFETY: `count_down` takes the latch's address; `latch` outlives the kernels
///     // (its drop waits for both contexts).
///     unsafe { kernel.launch(LaunchConfig::new(1, 1).on(&gpu.default_stream()), args) }?;
/// }
/// # Ok(())
/// # }
/// ```
pub struct PeerMemory {
    owner: Runtime,
    users: Vec<Runtime>,
    device: sys::CUdeviceptr,
    bytes: usize,
}

impl PeerMemory {
    /// The address kernels on the owner and on every user GPU use.
    pub fn device_address(&self) -> sys::CUdeviceptr {
        self.device
    }

    /// Its size in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// The ordinal of the GPU whose memory it is.
    pub fn owner(&self) -> usize {
        self.owner.ordinal()
    }

    /// The memory's 32-bit words, copied to the host after the owner's work so far
    /// (`cuMemcpyDtoH`, which waits for the owner's legacy stream). Kernels on user GPUs
    /// are not waited for: synchronize their streams first.
    ///
    /// # Errors
    ///
    /// A failed driver call.
    pub fn read_words(&self) -> Result<Vec<u32>, CudaError> {
        let mut words = vec![0_u32; self.bytes / 4];
        self.owner.bind()?;
        // SAFETY: `words` holds `bytes / 4` words, no more than the allocation.
        unsafe { sys::cuMemcpyDtoH_v2(words.as_mut_ptr().cast(), self.device, words.len() * 4) }
            .result()
            .map_err(CudaError::driver("copy peer memory to the host"))?;
        Ok(words)
    }
}

impl fmt::Debug for PeerMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerMemory")
            .field("owner", &self.owner.ordinal())
            .field(
                "users",
                &self.users.iter().map(Runtime::ordinal).collect::<Vec<_>>(),
            )
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Drop for PeerMemory {
    fn drop(&mut self) {
        for runtime in self.users.iter().chain([&self.owner]) {
            let _ = runtime.context.synchronize();
        }
        let _ = self.owner.bind();
        // SAFETY: allocated by `allocate` on the owner, freed once; no kernel of any
        // context that reaches it runs any more.
        unsafe { sys::cuMemFree_v2(self.device) };
    }
}

impl Runtime {
    /// What the driver says of this GPU's access to `owner`'s memory.
    ///
    /// # Errors
    ///
    /// A failed driver call.
    pub fn peer_link(&self, owner: &Runtime) -> Result<PeerLink, CudaError> {
        let (user, owner_ordinal) = (self.ordinal(), owner.ordinal());
        if user == owner_ordinal {
            return Ok(PeerLink {
                user,
                owner: owner_ordinal,
                access: true,
                native_atomics: true,
                performance_rank: 0,
            });
        }
        let attribute = |which: sys::CUdevice_P2PAttribute, operation| {
            let mut value = 0;
            // SAFETY: an out-pointer to a local; both devices come from live contexts.
            unsafe {
                sys::cuDeviceGetP2PAttribute(
                    &mut value,
                    which,
                    self.context.cu_device(),
                    owner.context.cu_device(),
                )
            }
            .result()
            .map_err(CudaError::driver(operation))?;
            Ok::<_, CudaError>(u32::try_from(value).unwrap_or(0))
        };
        Ok(PeerLink {
            user,
            owner: owner_ordinal,
            access: attribute(
                sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED,
                "read the peer access attribute",
            )? != 0,
            native_atomics: attribute(
                sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                "read the peer atomics attribute",
            )? != 0,
            performance_rank: attribute(
                sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,
                "read the peer performance rank",
            )?,
        })
    }

    /// Lets this GPU's kernels reach `owner`'s device memory (`cuCtxEnablePeerAccess`
    /// from this context to the owner's; enabling it twice is fine). One-way: the owner
    /// reaching this GPU's memory is the owner's own call.
    ///
    /// # Errors
    ///
    /// [`PlacementError::PeerAttribute`] if the driver says this GPU cannot reach
    /// `owner`'s memory; a failed driver call.
    pub fn enable_peer_access(&self, owner: &Runtime) -> Result<(), PlacementError> {
        if self.ordinal() == owner.ordinal() {
            return Ok(());
        }
        self.peer_link(owner)?.admits("peer memory", false)?;
        Ok(self.grant_peer_access(owner)?)
    }

    /// `cuCtxEnablePeerAccess` from this context to `owner`'s, once the caller has
    /// checked the link.
    fn grant_peer_access(&self, owner: &Runtime) -> Result<(), CudaError> {
        if self.ordinal() == owner.ordinal() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the owner's context is alive (held by `owner`); flags must be 0.
        match unsafe { sys::cuCtxEnablePeerAccess(owner.context.cu_ctx(), 0) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
                Ok(())
            }
            error => Err(CudaError::driver("enable peer access")(
                cudarc::driver::DriverError(error),
            )),
        }
    }

    /// Places a copy of `object`, built on the host, in this GPU's memory for kernels
    /// on this GPU and on every GPU of `users`, after checking that each user reaches
    /// this GPU's memory with native atomics, and enabling each user's peer access.
    /// Kernels take [`PeerMemory::device_address`] as a pointer to the device flavour.
    ///
    /// The objects: a `System`-scope `Barrier`, `Latch` or `CountingSemaphore` (their
    /// protocols read-modify-write every word from every party), and the bus objects
    /// whose both ends may be GPUs, a `HandoffSemaphore<GpuToGpu>` (placed in the
    /// consuming GPU's memory: its polls stay local) and a `BusStopSource` (whose
    /// non-owning GPU read-modify-writes its own words there). Native atomics are
    /// checked for every one.
    ///
    /// Counterpart: an object in `cudaMalloc` memory after `cudaDeviceEnablePeerAccess`,
    /// used through `cuda::atomic_ref<T, thread_scope_system>` (libcu++).
    ///
    /// # Errors
    ///
    /// [`PlacementError::PeerAttribute`] naming the attribute that forbids it (nothing
    /// is allocated then); a failed driver call.
    pub fn place_for_peers<T: DeviceObject + Shareable>(
        &self,
        object: &T,
        users: &[&Runtime],
    ) -> Result<PeerMemory, PlacementError> {
        let bytes = super::runtime::device_bytes(object);
        self.peer_memory(T::NAME, true, &bytes, users)
    }

    /// `words` zeroed 32-bit words in this GPU's memory for kernels on this GPU and on
    /// every GPU of `users` (data the kernels exchange beside a placed object: loads,
    /// stores and atomics need only access; atomics from two GPUs on one word need
    /// native peer atomics, which [`place_for_peers`](Self::place_for_peers) checks).
    ///
    /// # Errors
    ///
    /// [`PlacementError::PeerAttribute`] if a user cannot reach this GPU's memory; a
    /// failed driver call.
    pub fn zeros_for_peers(
        &self,
        words: usize,
        users: &[&Runtime],
    ) -> Result<PeerMemory, PlacementError> {
        self.peer_memory("peer words", false, &vec![0; words * 4], users)
    }

    /// `bytes` copied to fresh memory of this GPU, for kernels on this GPU and on `users`, after checking every link for `object`
    /// (see [`PeerLink::admits`]) and enabling each user's peer access.
    pub(super) fn peer_memory(
        &self,
        object: &'static str,
        rmw_from_every_party: bool,
        bytes: &[u8],
        users: &[&Runtime],
    ) -> Result<PeerMemory, PlacementError> {
        for user in users {
            user.peer_link(self)?.admits(object, rmw_from_every_party)?;
        }
        // Every link checked above, before anything changes.
        for user in users {
            user.grant_peer_access(self)?;
        }
        self.bind()?;
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: an out-pointer to a local; at least one byte.
        unsafe { sys::cuMemAlloc_v2(&mut device, bytes.len().max(1)) }
            .result()
            .map_err(CudaError::driver("allocate peer memory"))?;
        let memory = PeerMemory {
            owner: self.clone(),
            users: users.iter().map(|&user| user.clone()).collect(),
            device,
            bytes: bytes.len(),
        };
        // SAFETY: the fresh allocation holds `bytes.len()` bytes.
        unsafe { sys::cuMemcpyHtoD_v2(device, bytes.as_ptr().cast(), bytes.len()) }
            .result()
            .map_err(CudaError::driver("copy to peer memory"))?;
        Ok(memory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(access: bool, native_atomics: bool) -> PeerLink {
        PeerLink {
            user: 0,
            owner: 1,
            access,
            native_atomics,
            performance_rank: 0,
        }
    }

    #[test]
    fn a_link_with_native_atomics_admits_every_object() {
        assert!(link(true, true).admits("Barrier<System>", true).is_ok());
        assert!(link(true, true).admits("peer words", false).is_ok());
    }

    #[test]
    fn a_link_without_native_atomics_refuses_objects_that_rmw_and_names_the_attribute() {
        let error = link(true, false)
            .admits("Barrier<System>", true)
            .unwrap_err();
        let PlacementError::PeerAttribute {
            object,
            user,
            owner,
            attribute,
        } = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!(
            (*object, *user, *owner, *attribute),
            ("Barrier<System>", 0, 1, NATIVE_ATOMIC_SUPPORTED)
        );
        let message = error.to_string();
        assert!(
            message.contains(NATIVE_ATOMIC_SUPPORTED) && message.contains("GPU 0"),
            "{message}"
        );
        assert!(link(true, false).admits("peer words", false).is_ok());
    }

    #[test]
    fn a_link_without_access_refuses_everything() {
        for rmw in [false, true] {
            assert!(matches!(
                link(false, true).admits("peer words", rmw),
                Err(PlacementError::PeerAttribute {
                    attribute: ACCESS_SUPPORTED,
                    ..
                })
            ));
        }
    }
}
