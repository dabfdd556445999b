//! The host examples of the library's rustdoc that rustdoc cannot build (they embed a
//! kernel crate's build output), compiled here as written there (`tests/doc_blocks.rs`
//! keeps them equal); never called.
#![allow(dead_code, unused_variables)]

/// `include_kernels!` and `sync_build`'s crate documentation.
fn include_kernels() -> Result<(), Box<dyn std::error::Error>> {
    // build.rs: sync_build::KernelCrate::new("../kernels").build_or_record();
    static KERNELS: scoped_sync::cuda::EmbeddedModule = scoped_sync::include_kernels!("my_kernels");

    let runtime = scoped_sync::cuda::Runtime::open(0)?;
    let module = runtime.load(&KERNELS)?;
    let kernel = module.kernel("relax")?;
    Ok(())
}
