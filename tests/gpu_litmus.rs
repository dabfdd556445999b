//! The litmus suite on the GPU (`harness::litmus`): no case may show an outcome
//! the PTX memory model forbids, and every instance must end in an outcome its shape
//! can produce. A million instances per case here (`SCOPED_SYNC_LITMUS_INSTANCES` sets
//! another count); `scoped-sync --litmus` runs more and
//! prints the table. Without a CUDA driver it prints "skipped: no CUDA driver".

mod common;

use harness::litmus::{self, Stress, CASES};
use harness::Gpu;

fn runtime() -> Option<Gpu> {
    common::gpu_runtime()
}

#[test]
fn no_case_shows_a_forbidden_or_impossible_outcome() {
    let Some(gpu) = runtime() else { return };
    let instances = common::litmus_instances();
    let mut failures = Vec::new();
    for (index, case) in CASES.iter().enumerate() {
        // Every failing case, not just the first, so that one run tells the whole story.
        let outcomes = match litmus::run(&gpu, case, instances, 0x5eed ^ index as u32) {
            Ok(outcomes) => outcomes,
            Err(error) => {
                failures.push(format!("{}: {error}", case.label()));
                continue;
            }
        };
        if outcomes.instances < instances {
            failures.push(format!("{}: too few instances", case.label()));
        }
        if outcomes.violates_the_model() || outcomes.impossible() > 0 {
            failures.push(format!(
                "{}: {} forbidden and {} impossible outcomes in {}: {:?}",
                case.label(),
                if case.weak_allowed {
                    0
                } else {
                    outcomes.weak()
                },
                outcomes.impossible(),
                outcomes.instances,
                outcomes.seen()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn the_stress_modes_run_and_keep_to_the_model() {
    let Some(gpu) = runtime() else { return };
    // One case of each kind of launch (plain, clusters), in the two pure modes (the
    // suite runs the mixed one).
    let cases = CASES.iter().filter(|case| {
        case.shape.name == "MP"
            && case.variant == 1
            && matches!(case.scope.name(), "gpu" | "cluster")
    });
    for case in cases {
        for stress in [Stress::OwnLine, Stress::SharedLines] {
            let outcomes = litmus::run_with(&gpu, case, common::litmus_instances(), 0x57e5, stress)
                .unwrap_or_else(|error| panic!("{} ({stress:?}): {error}", case.label()));
            assert!(
                !outcomes.violates_the_model() && outcomes.impossible() == 0,
                "{} ({stress:?}): {:?}",
                case.label(),
                outcomes.seen()
            );
        }
    }
}
