//! A kernel that traps while a host thread waits for it: the wait must end with the
//! fault, within a second, instead of hanging. Its own test binary, because the trap
//! poisons the CUDA context for the rest of the process. Without a CUDA driver it
//! prints "skipped: no CUDA driver" and passes.
//!
//! The kernel is launched from a helper thread while the test's thread waits
//! ([`launch_beside`](scoped_sync::cuda::Kernel::launch_beside)), so that the wait is
//! checked also where launches block until their kernel ends (`CUDA_LAUNCH_BLOCKING=1`);
//! there the wait learns of the fault when the launch call returns, and the call may
//! report the fault too.

use std::io::Write;
use std::time::{Duration, Instant};

use harness::Gpu;
use scoped_sync::cuda::beside::Outcome;
use scoped_sync::cuda::{CudaError, HostWaitError, KernelArgs, LaunchConfig};
use scoped_sync::{GpuToHost, HandoffSemaphore};

#[test]
fn a_kernel_that_traps_while_the_host_waits_is_reported_within_a_second() {
    let gpu = match Gpu::open() {
        Ok(runtime) => runtime,
        Err(CudaError::NoDriver) => {
            let _ = writeln!(std::io::stderr(), "skipped: no CUDA driver");
            return;
        }
        Err(other) => panic!("cannot open the GPU: {other}"),
    };
    let results = gpu
        .place_mapped(HandoffSemaphore::<GpuToHost>::new(0))
        .unwrap();
    let stream = gpu.new_stream().unwrap();
    let trap_after = Duration::from_millis(100);
    let args = KernelArgs::new().arg(trap_after.as_nanos() as u64);
    let kernel = gpu.kernel("bus_trap_after").unwrap();
    // SAFETY: `bus_trap_after(u64)`.
    let run = unsafe {
        kernel.launch_beside(LaunchConfig::new(1, 1).on(&stream), args, |kernel| {
            let start = Instant::now();
            let outcome = results.acquire(kernel.wait().timeout(Duration::from_secs(30)));
            (outcome, start.elapsed())
        })
    };
    let Outcome {
        host: (outcome, took),
        launch,
    } = run;
    match outcome {
        Err(HostWaitError::KernelFailed(error)) => {
            let text = error.to_string();
            assert!(text.contains("CUDA_ERROR"), "names the CUDA error: {text}");
        }
        other => panic!("expected the kernel's fault, got {other:?}"),
    }
    // Under compute-sanitizer (the bundle's sanitize.sh sets SCOPED_SYNC_SANITIZER),
    // several tool processes share the machine and the kernel runs far slower.
    let slack = if std::env::var_os("SCOPED_SYNC_SANITIZER").is_some() {
        Duration::from_secs(20)
    } else {
        Duration::from_secs(1)
    };
    assert!(
        took < trap_after + slack,
        "reported {took:?} after the wait began"
    );
    // A launch that returns once the kernel is queued succeeds; one that blocks until
    // the kernel ends (CUDA_LAUNCH_BLOCKING=1) may return the fault as well.
    let blocking = std::env::var("CUDA_LAUNCH_BLOCKING").is_ok_and(|value| value == "1");
    match launch {
        Ok(()) => {}
        Err(error) => {
            let text = error.to_string();
            assert!(
                blocking && text.contains("CUDA_ERROR"),
                "the launch failed: {text}"
            );
        }
    }
    // The context is lost: the placed object must still be freed without a panic.
    drop(results);
}
