//! The GPU primitives section of the report: each device primitive in the loop and
//! launch shape of its CUDA C++ anchor in `baselines/gpu_baselines.cu`, timed the
//! same way (GPU events around the launch, best of the repetitions), so that
//! `scripts/gpu-compare.sh` can print ours / anchor from one device call.

use harness::primitive_costs::WORKLOADS;
use harness::Gpu;
use scoped_sync::cuda::CudaError;

use super::measure::Plan;
use super::progress::Progress;
use super::sample::{Row, Sample, Stats};

/// Progress steps [`measure`] takes.
pub fn steps() -> usize {
    WORKLOADS.iter().map(|workload| workload.blocks.len()).sum()
}

/// Measures every workload: one warm-up launch, then the best of `plan.repetitions`.
pub fn measure(runtime: &Gpu, plan: Plan, progress: &mut Progress) -> Result<Vec<Row>, CudaError> {
    let sms = runtime.sm_count()?;
    let mut rows = Vec::new();
    for workload in &WORKLOADS {
        let kernel = runtime.kernel(workload.kernel)?;
        let iterations = u32::try_from(plan.scale(u64::from(workload.iterations)))
            .unwrap_or(workload.iterations)
            .max(1);
        for &block in workload.blocks {
            let grid = workload.grid(sms);
            progress.step(&format!(
                "cuda {} {} {grid}x{block}",
                workload.primitive, workload.op
            ));
            let mut per_launch = Vec::new();
            for launch in 0..=plan.repetitions.max(1) {
                let seconds = workload
                    .time(runtime, &kernel, grid, block, iterations)?
                    .as_secs_f64();
                if launch > 0 {
                    per_launch.push(seconds * 1e9 / f64::from(iterations));
                }
            }
            let mut sample = Sample::ours(
                "cuda",
                workload.scope,
                workload.primitive,
                workload.op,
                grid * block,
                Stats::of(&per_launch),
            )
            .launched(grid, block);
            sample.variant = workload.variant.map(str::to_owned);
            rows.push(Row::alone(sample));
        }
    }
    Ok(rows)
}
