//! Cases for compute-sanitizer: kernels whose verdict comes from a sanitizer tool as
//! much as from the test (the kernels are in `kernels/src/sanitize.rs`). The bundle's
//! `sanitize.sh` runs each in a process of its own under every tool and expects
//! `initcheck` to report the uninitialised latch, and only it, as an uninitialised
//! global-memory read in `sanitize_latch_try_wait`; every other run of these tests must
//! be clean (`docs/sanitizers.md`). Outside a sanitizer both tests check only what the
//! kernel wrote.
//!
//! On a machine without a CUDA driver every test prints "skipped: no CUDA driver" and
//! passes.

mod common;

use harness::Gpu;
use scoped_sync::cuda::cudarc::driver::CudaSlice;
use scoped_sync::cuda::{KernelArgs, LaunchConfig};
use scoped_sync::Latch;

fn runtime() -> Option<Gpu> {
    common::gpu_runtime()
}

/// Runs `sanitize_latch_try_wait` on the latch bytes at `latch` and returns what it
/// wrote: 1 if the latch read as open, 0 if not.
fn try_wait_on_device(gpu: &Gpu, latch: &CudaSlice<u8>) -> u32 {
    let kernel = gpu.kernel("sanitize_latch_try_wait").unwrap();
    let out = gpu.zeros::<u32>(1).unwrap();
    // SAFETY: (latch pointer, u32 pointer) is the kernel's signature; `latch` holds a
    // latch's four bytes (initialised or not: the kernel only reads them) and `out` one
    // word; both outlive the launch (the download waits for it on the same stream).
    unsafe {
        kernel.launch(
            LaunchConfig::new(1, 1),
            KernelArgs::new().arg(latch).arg(&out),
        )
    }
    .unwrap();
    gpu.download(&out).unwrap()[0]
}

/// The negative case: a `Latch<Device>` in device memory that nobody initialised (the
/// allocation is never written) is read by a kernel. The read returns whatever the
/// memory held, so the test checks only that the kernel ran; `initcheck` must report
/// the read (`sanitize.sh` expects exactly that report from this test).
#[test]
fn initcheck_reports_a_latch_used_before_it_was_initialised() {
    let Some(gpu) = runtime() else { return };
    let bytes = std::mem::size_of::<Latch>();
    // SAFETY: an allocation of `bytes` bytes left uninitialised on purpose; only the
    // kernel reads it (any four bytes are a latch word it can load), and the host never
    // does.
    let latch = unsafe { gpu.cudarc_stream().alloc::<u8>(bytes) }.unwrap();
    let open = try_wait_on_device(&gpu, &latch);
    assert!(open <= 1, "the kernel wrote {open}, not 0 or 1");
}

/// The positive case: the same kernel on a latch the host built (`Latch::new(0)`,
/// uploaded: open from the start) reads it as open, and no tool reports anything.
#[test]
fn an_initialised_latch_is_read_clean() {
    let Some(gpu) = runtime() else { return };
    let latch = gpu.upload_object(&Latch::new(0)).unwrap();
    assert_eq!(try_wait_on_device(&gpu, &latch), 1, "a latch of 0 is open");
}
