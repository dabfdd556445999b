//! The host↔GPU litmus suite (`harness::litmus_host`): message passing both ways
//! and store buffering between a host thread and GPU threads over mapped memory. No case
//! may show an outcome the memory models forbid, nor a read of a value that neither the
//! batch nor the one before wrote. A million instances per case here; `scoped-sync
//! --litmus` prints the table. Without a CUDA driver it prints "skipped: no CUDA
//! driver".
//!
//! Runs under `CUDA_LAUNCH_BLOCKING=1` too: the kernel is launched from a thread of its
//! own, so the host plays its role while the launch call blocks.

mod common;

use harness::litmus_host::{self, CASES};

#[test]
fn gpu_host_litmus_shows_no_forbidden_outcome() {
    let Some(gpu) = common::gpu_runtime() else {
        return;
    };
    // A hang is a failure: every wait in the harness is bounded, this bounds the whole.
    // A million per case (the bar), unless `SCOPED_SYNC_LITMUS_INSTANCES` says.
    let instances = common::litmus_instances();
    common::hang_guard("gpu_host_litmus_shows_no_forbidden_outcome", 600, || {
        for (index, case) in CASES.iter().enumerate() {
            let label = case.label();
            let outcomes = litmus_host::run(&gpu, case, instances, 0x5eed ^ index as u32)
                .unwrap_or_else(|error| panic!("{label}: {error}"));
            eprintln!("{label}: {:?}", outcomes.seen());
            assert!(
                outcomes.instances >= instances,
                "{label}: too few instances"
            );
            assert!(
                !outcomes.violates_the_model(),
                "{label}: forbidden outcome seen {} times in {}: {:?}",
                outcomes.weak(),
                outcomes.instances,
                outcomes.seen()
            );
            assert_eq!(
                outcomes.impossible(),
                0,
                "{label}: a read returned neither the batch's value nor the previous one: {:?}",
                outcomes.seen()
            );
        }
    });
}
