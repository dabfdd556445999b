//! The README's host build script, compiled as written there.

fn main() {
    sync_build::KernelCrate::new("../kernels")
        .checked(true)
        .build_or_record();
}
