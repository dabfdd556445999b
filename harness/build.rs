//! Builds the project's own kernels (`../kernels`) with sync-build, exactly as a
//! user's build script builds theirs: both flavours, `--locked`, source paths printed
//! relative to the repository in the checked flavour's messages; and
//! `../kernels/sm80` for sm_80 (PTX ISA 7.8).

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
}
