//! The litmus suite on the GPU (`sync_host::cuda::litmus`): no case may show an outcome
//! the PTX memory model forbids, and every instance must end in an outcome its shape
//! can produce. A million instances per case here; `scoped-sync --litmus` runs more and
//! prints the table. Without a CUDA driver it prints "skipped: no CUDA driver".

mod common;

use scoped_sync::cuda::litmus::{self, CASES};
use scoped_sync::cuda::Runtime;

fn runtime() -> Option<Runtime> {
    common::gpu_runtime()
}

#[test]
fn no_case_shows_a_forbidden_outcome() {
    let Some(gpu) = runtime() else { return };
    for (index, case) in CASES.iter().enumerate() {
        let outcomes = litmus::run(&gpu, case, 1_000_000, 0x5eed ^ index as u32).unwrap();
        let label = format!(
            "{} variant {} ({}), {}",
            case.shape,
            case.variant,
            case.what,
            case.placement.name()
        );
        assert!(
            outcomes.instances >= 1_000_000,
            "{label}: too few instances"
        );
        assert!(
            !outcomes.violates_the_model(),
            "{label}: forbidden outcome seen {} times in {}: {:?}",
            outcomes.weak(),
            outcomes.instances,
            outcomes.seen()
        );
        // Both shapes read 0 or 1 into two registers: nothing else may show.
        let impossible: u64 = outcomes
            .histogram
            .iter()
            .enumerate()
            .filter(|&(outcome, _)| outcome & !0b0101 != 0)
            .map(|(_, &count)| count)
            .sum();
        assert_eq!(impossible, 0, "{label}: {:?}", outcomes.seen());
    }
}
