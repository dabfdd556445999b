//! The README's host build script, compiled as written there (the inner `main`); and
//! the CUDA C++ of the README's section 4 and of `docs/cpp.md` (`cuda/`), built as their
//! build scripts say.

fn main() {
    fn main() {
        sync_build::KernelCrate::new("../kernels")
            .checked(true)
            .build_or_record();
    }
    main();
    sync_build::CudaKernels::new("my_cuda")
        .file("cuda/serve.cu")
        .file("cuda/worker.cu")
        .checked(true)
        .build_or_record();
}
