//! A warp that enters a blocking operation converged leaves it converged (kernels in
//! `kernels/src/convergence.rs`). A warp left split after a wait runs every later
//! instruction once per part, and meets the next block barrier split, which
//! compute-sanitizer's synccheck reports as "Divergent thread(s) in block"
//! (`docs/sanitizers.md`).
//!
//! On a machine without a CUDA driver every test prints "skipped: no CUDA driver" and
//! passes.

mod common;

use scoped_sync::cuda::{KernelArgs, LaunchConfig};

/// The operations of `convergence_after_operation`, in its order.
const OPERATIONS: [&str; 8] = [
    "Barrier<Block> (hardware form) arrive_and_wait",
    "Barrier<Block> with a completion, arrive_and_wait",
    "Barrier<Block> with a completion, arrive then wait",
    "Barrier<Block> with a completion, arrive then wait_parity",
    "Barrier<Block> with a completion, arrive then try_wait_for",
    "Barrier<Block> (hardware form) arrive then wait",
    "Latch<Block> arrive_and_wait",
    "Barrier<Block> with a completion, WholeBlock::block_arrive_and_wait",
];

const ROUNDS: u32 = 64;

#[test]
fn every_warp_leaves_the_block_operations_converged() {
    let Some(gpu) = common::gpu_runtime() else {
        return;
    };
    let kernel = gpu.kernel("convergence_after_operation").unwrap();
    common::hang_guard("convergence", 60, || check_every_operation(&gpu, &kernel));
}

fn check_every_operation(gpu: &harness::Gpu, kernel: &scoped_sync::cuda::Kernel) {
    let mut failures = Vec::new();
    // The checked build's kernel takes more registers: it may allow fewer than 1024
    // threads per block (512 on an H100), and runs at the most it allows instead.
    let largest = (kernel.max_threads_per_block() / 32 * 32).min(1024);
    if largest < 1024 {
        // Straight to stderr: libtest hides a passing test's `eprintln!`.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "the kernel allows {largest} threads per block: the largest block has {largest}"
        );
    }
    for threads in [32u32, 256, largest] {
        for (operation, name) in OPERATIONS.iter().enumerate() {
            let out = gpu.zeros::<u32>(threads as usize + 1).unwrap();
            let operation = operation as u32;
            // SAFETY: (u32 pointer, u32, u32) is the kernel's signature; `out` holds
            // `threads + 1` words and outlives the launch (the download waits for it on
            // the same stream); one block of whole warps.
            unsafe {
                kernel.launch(
                    LaunchConfig::new(1, threads),
                    KernelArgs::new().arg(&out).arg(operation).arg(ROUNDS),
                )
            }
            .unwrap();
            let words = gpu.download(&out).unwrap();
            let split: Vec<(usize, u32)> = words[..threads as usize]
                .chunks(32)
                .enumerate()
                .filter_map(|(warp, lanes)| {
                    let worst = lanes.iter().fold(u32::MAX, |all, mask| all & mask);
                    (worst != u32::MAX).then_some((warp, worst))
                })
                .collect();
            if !split.is_empty() {
                failures.push(format!(
                    "{name}, {threads} threads: {} warp(s) left split, e.g. warp {} with lanes {:#010x} together",
                    split.len(),
                    split[0].0,
                    split[0].1
                ));
            }
            if matches!(operation, 1..=4 | 7) {
                assert_eq!(
                    words[threads as usize], ROUNDS,
                    "{name}, {threads} threads: the completion ran {} times in {ROUNDS} phases",
                    words[threads as usize]
                );
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
