//! The GPU primitives section of the report: each device primitive in the loop and
//! launch shape of its CUDA C++ anchor in `shared/anchors/gpu_baselines.cu`, timed the
//! same way (GPU events around the launch, best of the repetitions), so that
//! `scripts/gpu-compare.sh` can print ours / anchor from one device call.

use scoped_sync::cuda::{CudaError, Kernel, PushKernelArg, Runtime};
use scoped_sync::{Barrier, CountingSemaphore};

use super::measure::Plan;
use super::progress::Progress;
use super::sample::{Row, Sample};

/// How a cost kernel is launched and what it takes.
#[derive(Clone, Copy, Debug)]
enum Launch {
    /// `(iterations, sink)` on `SMs × block` threads.
    Plain,
    /// `(Grid, iterations, sink)`, cooperative, on `SMs × block` threads.
    Grid,
    /// `(barrier, iterations, sink)`; a fresh device barrier expecting every thread.
    DeviceBarrier,
    /// `(two semaphores, iterations)` on 2 × 32 threads.
    PingPong,
}

/// One measured workload: kernel, report labels, launch, block sizes, iterations (the
/// anchor's).
struct Workload {
    kernel: &'static str,
    scope: &'static str,
    primitive: &'static str,
    op: &'static str,
    launch: Launch,
    blocks: &'static [u32],
    iterations: u32,
}

const WORKLOADS: [Workload; 7] = [
    Workload {
        kernel: "cost_block_barrier",
        scope: "block",
        primitive: "barrier",
        op: "BlockBarrier (bar.sync)",
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_shared_barrier",
        scope: "block",
        primitive: "barrier",
        op: "SharedBarrier (mbarrier)",
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_generic_block_barrier",
        scope: "block",
        primitive: "barrier",
        op: "Barrier<Block> in shared",
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_grid_sync",
        scope: "device",
        primitive: "barrier",
        op: "Grid::sync",
        launch: Launch::Grid,
        blocks: &[128, 1024],
        iterations: 5_000,
    },
    Workload {
        kernel: "cost_device_barrier_block",
        scope: "device",
        primitive: "barrier",
        op: "Barrier<Device> block_arrive_and_wait",
        launch: Launch::DeviceBarrier,
        blocks: &[128, 1024],
        iterations: 5_000,
    },
    Workload {
        kernel: "cost_device_barrier_all",
        scope: "device",
        primitive: "barrier",
        op: "Barrier<Device> arrive_and_wait",
        launch: Launch::DeviceBarrier,
        blocks: &[128],
        iterations: 200,
    },
    Workload {
        kernel: "cost_semaphore_ping_pong",
        scope: "device",
        primitive: "semaphore",
        op: "ping-pong 2 blocks",
        launch: Launch::PingPong,
        blocks: &[32],
        iterations: 20_000,
    },
];

/// Progress steps [`measure`] takes.
pub fn steps() -> usize {
    WORKLOADS.iter().map(|workload| workload.blocks.len()).sum()
}

/// Measures every workload: one warm-up launch, then the best of `plan.repetitions`.
pub fn measure(
    runtime: &Runtime,
    plan: Plan,
    progress: &mut Progress,
) -> Result<Vec<Row>, CudaError> {
    let sms = runtime.sm_count()?;
    let mut rows = Vec::new();
    for workload in &WORKLOADS {
        let kernel = runtime.kernel(workload.kernel)?;
        let iterations = u32::try_from(plan.scale(u64::from(workload.iterations)))
            .unwrap_or(workload.iterations)
            .max(1);
        for &block in workload.blocks {
            let grid = match workload.launch {
                Launch::PingPong => 2,
                _ => sms,
            };
            progress.step(&format!("cuda {} {grid}x{block}", workload.op));
            let mut best = f64::INFINITY;
            for launch in 0..=plan.repetitions.max(1) {
                let seconds =
                    time_launch(runtime, &kernel, workload.launch, grid, block, iterations)?;
                if launch > 0 {
                    best = best.min(seconds);
                }
            }
            rows.push(Row {
                ours: Sample {
                    backend: "cuda",
                    scope: workload.scope,
                    primitive: workload.primitive.to_owned(),
                    op: format!("{} {grid}x{block}", workload.op),
                    threads: grid * block,
                    ns_per_op: best * 1e9 / f64::from(iterations),
                    launch: Some((grid, block)),
                    cycles_per_op: None,
                },
                peer: None,
            });
        }
    }
    Ok(rows)
}

/// GPU seconds of one launch of `kernel` (objects set up before the timing starts).
fn time_launch(
    runtime: &Runtime,
    kernel: &Kernel<'_>,
    launch: Launch,
    grid: u32,
    block: u32,
    iterations: u32,
) -> Result<f64, CudaError> {
    let sink = runtime.zeros::<u32>(1)?;
    let elapsed = match launch {
        // SAFETY: the plain cost kernels take (u32, u32 pointer).
        Launch::Plain => runtime.gpu_time(|| unsafe {
            kernel.launch(grid, block, |args| {
                args.arg(&iterations).arg(&sink);
            })
        })?,
        // SAFETY: `cost_grid_sync` takes (Grid, u32, u32 pointer).
        Launch::Grid => runtime.gpu_time(|| unsafe {
            kernel.launch_grid(grid, block, |args| {
                args.arg(&iterations).arg(&sink);
            })
        })?,
        Launch::DeviceBarrier => {
            let barrier = runtime.upload_object(&Barrier::new(grid * block))?;
            // SAFETY: the device barrier kernels take (barrier pointer, u32, u32
            // pointer); the barrier expects every thread of the launch.
            runtime.gpu_time(|| unsafe {
                kernel.launch(grid, block, |args| {
                    args.arg(&barrier).arg(&iterations).arg(&sink);
                })
            })?
        }
        Launch::PingPong => {
            let semaphores: [CountingSemaphore; 2] =
                [CountingSemaphore::new(0), CountingSemaphore::new(0)];
            let both = runtime.upload_object(&semaphores)?;
            // SAFETY: `cost_semaphore_ping_pong` takes (pointer to two semaphores, u32).
            runtime.gpu_time(|| unsafe {
                kernel.launch(grid, block, |args| {
                    args.arg(&both).arg(&iterations);
                })
            })?
        }
    };
    Ok(elapsed.as_secs_f64())
}
