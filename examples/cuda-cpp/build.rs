//! Compiles the CUDA C++ kernels with nvcc and links them with scoped-sync's device
//! library (both flavours), and builds the library alone for the run-time (NVRTC) path.
//! Without nvcc or the nightly toolchain the program still builds, and loading the
//! kernels says why.

fn main() {
    sync_build::CudaKernels::new("cuda_cpp_example")
        .file("cuda/worker.cu")
        .file("cuda/jacobi.cu")
        .checked(true)
        .build_or_record();
    sync_build::DeviceLibrary::new()
        .checked(true)
        .build_or_record();
}
