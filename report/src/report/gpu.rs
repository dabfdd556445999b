//! The GPU section of the report: per-scope costs measured by kernels built from this
//! repository, shaped like `baselines/gpu_baselines.cu` (one thread, a dependent
//! chain timed with `%clock64`), so that `scripts/gpu-compare.sh` can put the CUDA C++
//! figures beside them.

use harness::Gpu;
use scoped_sync::cuda::{CudaError, KernelArgs, LaunchConfig};

use super::measure::Plan;
use super::progress::Progress;
use super::sample::{Row, Sample, Stats};

/// The report's name of this backend.
const BACKEND: &str = "cuda";
/// Chain length of the anchor's atomic and fence loops.
const ITERATIONS: u32 = 20_000;
/// Scopes measured, with the kernel-name suffix.
const SCOPES: [&str; 3] = ["block", "device", "system"];

/// One cost kernel: (primitive, op, kernel prefix).
const KERNELS: [(&str, &str, &str); 2] = [
    ("atomic", "fetch_add_acq_rel_chain", "cost_atomic_chain_"),
    ("fence", "store_fence_seq_cst", "cost_fence_"),
];

/// The GPU line of the header, and the runtime if there is a GPU to measure.
pub fn open() -> (String, Option<Gpu>) {
    match Gpu::open() {
        Ok(runtime) => {
            let name = runtime.name().unwrap_or_else(|_| "unknown GPU".to_owned());
            let sms = runtime
                .sm_count()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string());
            let clock = runtime
                .clock_mhz()
                .map_or_else(|_| "?".to_owned(), |mhz| mhz.to_string());
            let domains = runtime
                .domain_count()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string());
            let line = format!(
                "GPU: {name}, {sms} SMs, SM clock {clock} MHz, {domains} memory-sync domains"
            );
            (line, Some(runtime))
        }
        Err(CudaError::NoDriver) => ("GPU: none (no CUDA driver found)".to_owned(), None),
        Err(other) => (format!("GPU: not measured ({other})"), None),
    }
}

/// Progress steps [`measure`] takes.
pub fn steps() -> usize {
    SCOPES.len() * KERNELS.len()
}

/// Measures every cost kernel at every scope; best of `plan.repetitions` launches after
/// one warm-up launch.
pub fn measure(runtime: &Gpu, plan: Plan, progress: &mut Progress) -> Result<Vec<Row>, CudaError> {
    let clock_ghz = f64::from(runtime.clock_mhz()?) / 1000.0;
    let iterations = u32::try_from(plan.scale(u64::from(ITERATIONS)))
        .unwrap_or(ITERATIONS)
        .max(1);
    let mut rows = Vec::new();
    for (primitive, op, prefix) in KERNELS {
        for scope in SCOPES {
            progress.step(&format!("cuda {scope} {primitive} {op}"));
            let kernel = runtime.kernel(&format!("{prefix}{scope}"))?;
            let words = runtime.zeros::<u32>(2)?;
            let cycles = runtime.zeros::<u64>(1)?;
            let mut per_launch = Vec::new();
            for launch in 0..=plan.repetitions.max(1) {
                let args = if primitive == "atomic" {
                    KernelArgs::new().arg(&words).arg(iterations).arg(&cycles)
                } else {
                    KernelArgs::new().arg(iterations).arg(&cycles).arg(&words)
                };
                // SAFETY: the cost kernels take (u32 pointer, u32, u64 pointer) — chain —
                // or (u32, u64 pointer, u32 pointer) — fence — as passed here.
                unsafe { kernel.launch(LaunchConfig::new(1, 1), args) }?;
                let measured = runtime.download(&cycles)?[0];
                if launch > 0 {
                    per_launch.push(measured as f64 / f64::from(iterations));
                }
            }
            let cycles = Stats::of(&per_launch);
            rows.push(Row::alone(
                Sample::ours(
                    BACKEND,
                    scope,
                    primitive,
                    op,
                    1,
                    cycles.scaled(1.0 / clock_ghz),
                )
                .launched(1, 1)
                .with_cycles(cycles),
            ));
        }
    }
    Ok(rows)
}
