//! [`Stream`]: a CUDA stream of a [`Runtime`](super::Runtime)'s context.

use std::sync::Arc;

use cudarc::driver::{sys, CudaStream};

use super::CudaError;

/// A CUDA stream: work on different streams may run concurrently. Made by
/// [`Runtime::new_stream`](super::Runtime::new_stream), or from a cudarc stream the
/// program already has ([`from_cudarc`](Self::from_cudarc)).
#[derive(Clone)]
pub struct Stream {
    pub(super) inner: Arc<CudaStream>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("raw", &self.raw()).finish()
    }
}

impl Stream {
    /// A cudarc stream, for launches and [`HostWait`](super::HostWait)s here.
    pub fn from_cudarc(inner: Arc<CudaStream>) -> Self {
        Self { inner }
    }

    /// The cudarc stream.
    pub fn cudarc(&self) -> &Arc<CudaStream> {
        &self.inner
    }

    /// Waits for the stream's work; a kernel fault shows up here.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.inner
            .synchronize()
            .map_err(CudaError::driver("synchronize a stream"))
    }

    /// Maps this stream's logical memory-synchronization domains to physical ones
    /// (`default` for [`MemSyncDomain::Default`](super::MemSyncDomain::Default) launches, `remote` for
    /// [`MemSyncDomain::Remote`](super::MemSyncDomain::Remote)); below
    /// [`Runtime::domain_count`](super::Runtime::domain_count).
    pub fn set_domain_map(&self, default: u8, remote: u8) -> Result<(), CudaError> {
        self.bind()?;
        // SAFETY: an all-zero attribute value is valid plain C data.
        let mut value: sys::CUstreamAttrValue = unsafe { std::mem::zeroed() };
        value.memSyncDomainMap.default_ = default;
        value.memSyncDomainMap.remote = remote;
        // SAFETY: a live stream of this context and a value that outlives the call.
        unsafe {
            sys::cuStreamSetAttribute(
                self.raw(),
                sys::CUstreamAttrID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
                &value,
            )
        }
        .result()
        .map_err(CudaError::driver("set a stream's memory-sync domain map"))
    }

    /// This stream's domain map as `(default, remote)` physical domains.
    pub fn domain_map(&self) -> Result<(u8, u8), CudaError> {
        self.bind()?;
        // SAFETY: as above; the driver fills the value.
        let mut value: sys::CUstreamAttrValue = unsafe { std::mem::zeroed() };
        // SAFETY: a live stream of this context and a value to fill.
        unsafe {
            sys::cuStreamGetAttribute(
                self.raw(),
                sys::CUstreamAttrID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
                &mut value,
            )
        }
        .result()
        .map_err(CudaError::driver("read a stream's memory-sync domain map"))?;
        // SAFETY: the driver wrote the domain-map member of the union.
        let map = unsafe { value.memSyncDomainMap };
        Ok((map.default_, map.remote))
    }

    pub(super) fn bind(&self) -> Result<(), CudaError> {
        self.inner
            .context()
            .bind_to_thread()
            .map_err(CudaError::driver("bind the context"))
    }

    /// Whether work queued on the stream is still running (`cuStreamQuery`).
    pub fn is_busy(&self) -> Result<bool, CudaError> {
        self.bind()?;
        self.query_bound()
    }

    pub(super) fn raw(&self) -> sys::CUstream {
        self.inner.cu_stream()
    }
}
