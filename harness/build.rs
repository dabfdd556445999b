//! Builds the project's own kernels (`../kernels`) with sync-build, exactly as a
//! user's build script builds theirs: both flavours, `--locked`, source paths printed
//! relative to the repository in the checked flavour's messages;
//! `../kernels/sm80` for sm_80 (PTX ISA 7.8); `../kernels/nvshmem` and the NVSHMEM
//! shim (`sync_build::NvshmemShim`) they are linked with; and the CUDA C++ test kernels
//! (`../kernels/cuda`), linked with the device library (whose PTX it embeds too, for
//! the run-time linking tests).

fn main() {
    let repository = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("harness sits in the repository root")
        .to_owned();
    sync_build::KernelCrate::new("../kernels")
        .checked(true)
        .locked(true)
        .remap_path_prefix(&repository)
        .build_or_record();
    // The part of sync-device that works before Hopper, built for an A100.
    sync_build::KernelCrate::new("../kernels/sm80")
        .checked(true)
        .arch("sm_80")
        .ptx_isa(7, 8)
        .locked(true)
        .remap_path_prefix(&repository)
        .build_or_record();
    // The multi-GPU barrier's kernels with sync-device's `nvshmem` feature, and the
    // NVSHMEM shim they are linked with (against `$NVSHMEM_HOME`'s headers).
    sync_build::KernelCrate::new("../kernels/nvshmem")
        .checked(true)
        .locked(true)
        .remap_path_prefix(&repository)
        .build_or_record();
    sync_build::NvshmemShim::new()
        .link("kernels_nvshmem")
        .build_or_record();
    // The CUDA C++ kernels: nvcc, linked with the device library (both flavours).
    sync_build::CudaKernels::new("cuda_kernels")
        .file("../kernels/cuda/bus.cu")
        .file("../kernels/cuda/costs.cu")
        .file("../kernels/cuda/primitives.cu")
        .file("../kernels/cuda/jacobi.cu")
        .file("../kernels/cuda/misuse.cu")
        .file("../kernels/cuda/mixed.cu")
        .file("../kernels/cuda/peer.cu")
        .checked(true)
        .build_or_record();
    // The device library alone, for `Runtime::link_with_library` and `compile_cuda`
    // (the same build as above: nothing is compiled twice).
    sync_build::DeviceLibrary::new()
        .checked(true)
        .build_or_record();
}
