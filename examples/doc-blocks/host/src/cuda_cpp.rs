//! The host blocks of the CUDA C++ documentation (the README's section 4, the rustdoc of
//! `include_cuda!`), compiled as written there; `cuda/serve.cu` and `cuda/worker.cu` are
//! the documents' C++ (which `scripts/cxx-check.sh` also compiles from the documents).
#![allow(dead_code)] // compiled, never run

use scoped_sync::cuda::Runtime;

/// README.md, section 4.
pub fn readme(runtime: &Runtime) -> Result<(), Box<dyn std::error::Error>> {
    // build.rs: sync_build::CudaKernels::new("my_cuda").file("cuda/serve.cu").checked(true).build_or_record();
    static KERNELS: scoped_sync::cuda::EmbeddedModule = scoped_sync::include_cuda!("my_cuda");
    let serve = runtime.load(&KERNELS)?.kernel("serve")?;
    println!("{}", serve.name());
    Ok(())
}

/// `include_cuda!`'s rustdoc.
pub fn include_cuda() -> Result<(), Box<dyn std::error::Error>> {
    // build.rs: sync_build::CudaKernels::new("my_cuda").file("cuda/worker.cu").build_or_record();
    static KERNELS: scoped_sync::cuda::EmbeddedModule = scoped_sync::include_cuda!("my_cuda");

    let runtime = scoped_sync::cuda::Runtime::open(0)?;
    let module = runtime.load(&KERNELS)?;
    let worker = module.kernel("worker")?;
    println!("{}", worker.name());
    Ok(())
}
