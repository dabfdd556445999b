//! Compiles the kernel crate next door to PTX (for `include_kernels!`), in two
//! flavours: optimized, and checked (debug assertions: scope misuse and broken
//! preconditions trap with a message). Without the nightly toolchain the program
//! still builds, and loading the kernels returns the reason.

fn main() {
    sync_build::KernelCrate::new("../kernels")
        .checked(true)
        .build_or_record();
}
