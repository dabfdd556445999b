//! Launches through `cuLaunchKernelEx`: thread-block clusters and memory
//! synchronization domains (CUDA Programming Guide 4.14), on a chosen stream.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::{CudaError, Kernel, Stream};

/// The logical memory-synchronization domain of a launch (sm_90+; earlier GPUs have
/// one domain and ignore it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemSyncDomain {
    /// Domain of ordinary kernels: device-scope fences order their writes.
    #[default]
    Default,
    /// For kernels whose traffic is remote (peer GPUs, host memory): their writes are
    /// not waited for by fences of default-domain kernels, and ordering with them
    /// needs system-scope fences.
    Remote,
}

/// What a `cuLaunchKernelEx` launch adds to grid and block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Blocks per cluster in x (the grid must be a multiple); `None`: no clusters.
    pub cluster: Option<u32>,
    /// The launch's memory-synchronization domain.
    pub domain: MemSyncDomain,
}

/// Kernel parameters for `cuLaunchKernelEx`: each value is kept in an 8-byte slot
/// here, and the driver gets an array of pointers to the slots (taken at launch, when
/// the vector no longer grows).
#[derive(Default)]
pub struct KernelParams {
    values: Vec<u64>,
}

impl KernelParams {
    /// Appends a `u32` parameter.
    pub fn u32(mut self, value: u32) -> Self {
        // The driver copies the parameter's size (4 bytes) from the front of the
        // 8-byte slot; x86-64 and the GPU are both little-endian.
        self.values.push(u64::from(value));
        self
    }

    /// Appends a `u64` parameter.
    pub fn u64(mut self, value: u64) -> Self {
        self.values.push(value);
        self
    }

    /// Appends a device pointer (a `CUdeviceptr`).
    pub fn pointer(mut self, address: sys::CUdeviceptr) -> Self {
        self.values.push(address);
        self
    }
}

impl Kernel<'_> {
    /// Launches on `stream` with clusters and/or a memory-synchronization domain.
    ///
    /// # Safety
    ///
    /// `params` must match the kernel's parameters in number, order and size, and
    /// point at memory that outlives the kernel.
    pub unsafe fn launch_ex(
        &self,
        stream: &Stream,
        grid: u32,
        block: u32,
        options: LaunchOptions,
        params: KernelParams,
    ) -> Result<(), CudaError> {
        let mut attributes = Vec::new();
        if let Some(blocks) = options.cluster {
            // SAFETY: an all-zero attribute is a valid starting value (plain C data).
            let mut cluster: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            cluster.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            cluster.value.clusterDim.x = blocks;
            cluster.value.clusterDim.y = 1;
            cluster.value.clusterDim.z = 1;
            attributes.push(cluster);
        }
        // SAFETY: as above.
        let mut domain: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        domain.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
        domain.value.memSyncDomain = match options.domain {
            MemSyncDomain::Default => sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT,
            MemSyncDomain::Remote => sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE,
        };
        attributes.push(domain);
        let config = sys::CUlaunchConfig {
            gridDimX: grid,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            hStream: stream.raw(),
            attrs: attributes.as_mut_ptr(),
            numAttrs: attributes.len() as u32,
        };
        let mut pointers: Vec<*mut c_void> = params
            .values
            .iter()
            .map(|value| std::ptr::from_ref(value).cast_mut().cast::<c_void>())
            .collect();
        self.runtime.bind()?;
        // SAFETY: the config, attributes and parameter pointers live across the call;
        // the caller vouches that the parameters match the kernel.
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                self.function.cu_function(),
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(CudaError::driver("launch a kernel with cuLaunchKernelEx"))
    }
}
