//! A kernel on one GPU traps while the other GPU's grid waits for it at a `MultiGrid`
//! barrier: the waiting GPU's threads must end their wait with an error within a
//! second, not hang. Its own test binary, because the trap poisons GPU 1's CUDA
//! context for the rest of the process.
//!
//! Needs two GPUs: without a CUDA driver it prints "skipped: no CUDA driver", with one
//! GPU "skipped: fewer than two GPUs", and passes.

mod common;

use std::time::{Duration, Instant};

use harness::Gpu;
use scoped_sync::cuda::{KernelArgs, LaunchConfig, MultiGrid};

#[test]
fn a_trapped_kernel_on_one_gpu_ends_the_others_wait_with_an_error_within_a_second() {
    let Some(gpu0) = common::gpu_runtime() else {
        return;
    };
    if scoped_sync::cuda::Runtime::device_count().unwrap() < 2 {
        common::skip("fewer than two GPUs");
        return;
    }
    let gpu1 = Gpu::open_ordinal(1).unwrap();
    let (blocks, threads) = (gpu0.sm_count().unwrap().min(gpu1.sm_count().unwrap()), 128);
    let mut barrier = MultiGrid::new(&[&*gpu0, &*gpu1]).unwrap();
    // Modules first, so the time below is the barrier's.
    let survivor = gpu0.kernel("multi_grid_phases").unwrap();
    let trapper = gpu1.kernel("multi_grid_trap_after").unwrap();
    let slots = gpu0
        .zeros_for_peers(2 * 2 * (blocks * threads) as usize, &[&gpu1])
        .unwrap();
    // Mapped host memory: read after GPU 0's kernel without a CUDA call, which could
    // report GPU 1's fault instead.
    let counts = gpu0.mapped(2).unwrap();
    let address = counts.device_address();
    let timeout_ms = 300_u32;
    let args = vec![
        KernelArgs::new()
            .arg(&slots)
            .arg(3_u32)
            .arg(timeout_ms)
            .arg(address)
            .arg(address + 4),
        KernelArgs::new().arg(1_u32),
    ];
    let per_gpu = blocks * threads;
    let started = Instant::now();
    let launched = common::hang_guard("a trapped peer at a MultiGrid barrier", 120, || {
        // SAFETY: `multi_grid_phases(MultiGrid, slots, phases, timeout_ms, failures,
        // timeouts)` on GPU 0 and `multi_grid_trap_after(MultiGrid, phases)` on GPU 1,
        // the same grid; everything outlives the kernels.
        let launched = unsafe {
            barrier.launch(
                &[&survivor, &trapper],
                LaunchConfig::new(blocks, threads),
                args,
            )
        };
        // GPU 0's threads give up through the mapped counts, seen without a CUDA call:
        // once GPU 1 trapped, GPU 0's context may report that fault too (seen on two
        // H100s with `CUDA_LAUNCH_BLOCKING=1`).
        // Both counts: a thread adds its stale slots when it leaves, after it counted
        // its failed phase (under a compute sanitizer, long after).
        while (counts.read(0) < per_gpu || counts.read(1) < per_gpu)
            && started.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_micros(100));
        }
        launched
    });
    let took = started.elapsed();
    let words = [counts.read(0), counts.read(1)];
    // Where a launch returns only when its kernel ends (`CUDA_LAUNCH_BLOCKING=1`), the
    // launch reports the trap; otherwise GPU 1's stream does.
    let fault = launched.and_then(|()| gpu1.synchronize());
    assert!(fault.is_err(), "GPU 1's kernel trapped, but {fault:?}");
    // GPU 1's kernel writes no slot, so each thread of GPU 0 finds its neighbour's slot
    // stale after phase 1 (which passes on both GPUs); GPU 1 traps before phase 2, so
    // every thread of GPU 0 fails phase 2 and leaves.
    assert_eq!(
        (words[0], words[1]),
        (per_gpu, per_gpu),
        "GPU 0: (stale neighbour slots, failed phases)"
    );
    if common::under_compute_sanitizer().is_none() {
        assert!(
            took < Duration::from_secs(1),
            "GPU 0's threads gave up {took:?} after the launch, not within 1 s"
        );
    }
}
