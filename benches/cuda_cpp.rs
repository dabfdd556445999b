//! CUDA C++ kernels through the device library against the same workload in a Rust
//! kernel, and against libcu++ and cooperative groups, in one run on one GPU:
//! ns per phase (or per round trip), best of several launches, taken alternately.
//!
//! ```sh
//! cargo bench --bench cuda_cpp            # or the bundle's `./bench-cuda-cpp`
//! ./bench-cuda-cpp --handoff              # the handoff round trip only
//! ```
//!
//! Without a GPU it prints "skipped: no CUDA driver". The figures in `docs/cpp.md` come
//! from this program; each line names the kernels it compares.

use std::time::Duration;

use harness::bus_demo::{Paths, RoundTrips};
use harness::primitive_costs::{Launch, Workload};
use harness::{Gpu, CUDA_KERNELS};
use scoped_sync::cuda::{CudaError, Kernel, KernelArgs, LaunchConfig};

/// Launches per kernel and shape, alternating between the kernels; the best is kept.
const ROUNDS: usize = 7;

type Error = Box<dyn std::error::Error>;

/// One timed launch of `iterations` phases.
type Timer<'a> = Box<dyn Fn(u32, u32) -> Result<Duration, CudaError> + 'a>;

/// A workload's timer for a kernel with the Rust cost kernels' parameters.
fn workload<'a>(gpu: &'a Gpu, kernel: Kernel, launch: Launch, iterations: u32) -> Timer<'a> {
    let shape = Workload {
        kernel: "",
        scope: "",
        primitive: "",
        op: "",
        variant: None,
        launch,
        blocks: &[],
        iterations,
    };
    Box::new(move |grid, block| shape.time(gpu, &kernel, grid, block, iterations))
}

/// `anchor_cg_grid_sync(iterations, sink)`, cooperative.
fn cg_grid_sync<'a>(gpu: &'a Gpu, cpp: &Gpu, iterations: u32) -> Result<Timer<'a>, CudaError> {
    let kernel = cpp.kernel("anchor_cg_grid_sync")?;
    Ok(Box::new(move |grid, block| {
        let sink = gpu.zeros::<u32>(1)?;
        // SAFETY: `anchor_cg_grid_sync(u32, u32*)`; the sink outlives the timed launch.
        gpu.gpu_time(|| unsafe {
            kernel.launch(
                LaunchConfig::new(grid, block).cooperative(),
                KernelArgs::new().arg(iterations).arg(&sink),
            )
        })
    }))
}

/// `anchor_libcu_device_barrier_all(barrier, iterations, sink)` on a barrier that
/// `anchor_libcu_device_barrier_init` builds before the timing.
fn libcu_device_barrier<'a>(
    gpu: &'a Gpu,
    cpp: &Gpu,
    iterations: u32,
) -> Result<Timer<'a>, CudaError> {
    let init = cpp.kernel("anchor_libcu_device_barrier_init")?;
    let size_of = cpp.kernel("anchor_libcu_device_barrier_size")?;
    let kernel = cpp.kernel("anchor_libcu_device_barrier_all")?;
    let size = gpu.zeros::<u32>(1)?;
    // SAFETY: `anchor_libcu_device_barrier_size(u32*)`.
    unsafe { size_of.launch(LaunchConfig::new(1, 1), KernelArgs::new().arg(&size)) }?;
    let bytes = gpu.download(&size)?[0] as usize;
    Ok(Box::new(move |grid, block| {
        let barrier = gpu.zeros::<u64>(bytes.div_ceil(8))?;
        let sink = gpu.zeros::<u32>(1)?;
        // SAFETY: `anchor_libcu_device_barrier_init(barrier*, u32)` on room of its size.
        unsafe {
            init.launch(
                LaunchConfig::new(1, 1),
                KernelArgs::new().arg(&barrier).arg(grid * block),
            )
        }?;
        // SAFETY: `anchor_libcu_device_barrier_all(barrier*, u32, u32*)`; as above.
        gpu.gpu_time(|| unsafe {
            kernel.launch(
                LaunchConfig::new(grid, block),
                KernelArgs::new().arg(&barrier).arg(iterations).arg(&sink),
            )
        })
    }))
}

/// Times each kernel `ROUNDS` times, alternating, and prints ns per phase with the
/// ratios to the first.
fn compare(
    label: &str,
    iterations: u32,
    grid: u32,
    block: u32,
    timers: &[(&str, Timer<'_>)],
) -> Result<(), Error> {
    for (_, timer) in timers {
        timer(grid, block)?; // warm-up: lazy loading, first-touch
    }
    let mut best = vec![Duration::MAX; timers.len()];
    for _ in 0..ROUNDS {
        for (index, (_, timer)) in timers.iter().enumerate() {
            best[index] = best[index].min(timer(grid, block)?);
        }
    }
    let per = |d: Duration| d.as_secs_f64() * 1e9 / f64::from(iterations);
    let reference = per(best[0]);
    let cells: Vec<String> = timers
        .iter()
        .zip(&best)
        .map(|((name, _), best)| {
            format!(
                "{name} {:.1} ns ({:.3})",
                per(*best),
                per(*best) / reference
            )
        })
        .collect();
    println!("{label} {grid}×{block}: {}", cells.join(", "));
    Ok(())
}

fn run(rust: &Gpu, cpp: &Gpu, handoff_only: bool) -> Result<(), Error> {
    let sms = rust.sm_count()?;
    println!(
        "GPU: {}; ns per phase, best of {ROUNDS} launches taken alternately; (ratio to the first)",
        rust.name()?
    );
    if handoff_only {
        return handoff_round_trips(rust, cpp);
    }
    for block in [128, 1024] {
        let iterations = 5_000;
        let timers: Vec<(&str, Timer<'_>)> = vec![
            (
                "C++ library",
                workload(
                    rust,
                    cpp.kernel("cost_grid_sync")?,
                    Launch::Grid,
                    iterations,
                ),
            ),
            (
                "Rust",
                workload(
                    rust,
                    rust.kernel("cost_grid_sync")?,
                    Launch::Grid,
                    iterations,
                ),
            ),
            ("cg::grid.sync", cg_grid_sync(rust, cpp, iterations)?),
        ];
        compare("grid barrier", iterations, sms, block, &timers)?;
    }
    for block in [128, 1024] {
        let iterations = 5_000;
        let timers: Vec<(&str, Timer<'_>)> = vec![
            (
                "C++ library",
                workload(
                    rust,
                    cpp.kernel("cost_device_barrier_block")?,
                    Launch::DeviceBarrier,
                    iterations,
                ),
            ),
            (
                "Rust",
                workload(
                    rust,
                    rust.kernel("cost_device_barrier_block")?,
                    Launch::DeviceBarrier,
                    iterations,
                ),
            ),
        ];
        compare(
            "device barrier, one arrival per block",
            iterations,
            sms,
            block,
            &timers,
        )?;
    }
    {
        let iterations = 200;
        let timers: Vec<(&str, Timer<'_>)> = vec![
            (
                "C++ library",
                workload(
                    rust,
                    cpp.kernel("cost_device_barrier_all")?,
                    Launch::DeviceBarrier,
                    iterations,
                ),
            ),
            (
                "Rust",
                workload(
                    rust,
                    rust.kernel("cost_device_barrier_all")?,
                    Launch::DeviceBarrier,
                    iterations,
                ),
            ),
            (
                "libcu++ barrier<device>",
                libcu_device_barrier(rust, cpp, iterations)?,
            ),
        ];
        compare(
            "device barrier, every thread",
            iterations,
            sms,
            128,
            &timers,
        )?;
    }
    for block in [128, 1024] {
        let iterations = 20_000;
        let timers: Vec<(&str, Timer<'_>)> = vec![
            (
                "C++ library",
                workload(
                    rust,
                    cpp.kernel("cost_generic_block_barrier")?,
                    Launch::Plain,
                    iterations,
                ),
            ),
            (
                "Rust",
                workload(
                    rust,
                    rust.kernel("cost_generic_block_barrier")?,
                    Launch::Plain,
                    iterations,
                ),
            ),
            (
                "libcu++ barrier<block>",
                workload(
                    rust,
                    cpp.kernel("anchor_libcu_block_barrier")?,
                    Launch::Plain,
                    iterations,
                ),
            ),
        ];
        compare(
            "block barrier (shared memory)",
            iterations,
            sms,
            block,
            &timers,
        )?;
    }
    handoff_round_trips(rust, cpp)
}

/// The handoff round trip of the C++ and the Rust `bus_pingpong`, on one mapped line
/// for both (`RoundTrips::use_kernels`: where the line lands moves a round trip by
/// more than the protocols differ), `HANDOFF_ROUNDS` times each, alternating, which
/// goes first swapped every time; prints the median and the best.
fn handoff_round_trips(rust: &Gpu, cpp: &Gpu) -> Result<(), Error> {
    const HANDOFF_ROUNDS: usize = 15;
    let rounds = 20_000;
    let mut trips = RoundTrips::new(cpp)?;
    let (mut cpp_times, mut rust_times) = (Vec::new(), Vec::new());
    for round in 0..HANDOFF_ROUNDS {
        for kernels in [round % 2, 1 - round % 2] {
            let (gpu, times) = if kernels == 0 {
                (cpp, &mut cpp_times)
            } else {
                (rust, &mut rust_times)
            };
            trips.use_kernels(gpu)?;
            times.push(trips.handoff(rounds, Paths::Exclusive)?.as_secs_f64() * 1e9);
        }
    }
    let median = |times: &mut Vec<f64>| {
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    let (cpp_median, rust_median) = (median(&mut cpp_times), median(&mut rust_times));
    let (cpp_best, rust_best) = (cpp_times[0], rust_times[0]);
    println!(
        "handoff round trip (host ↔ GPU, exclusive endpoints), median of {HANDOFF_ROUNDS}: C++ library {cpp_median:.1} ns (1.000), Rust {rust_median:.1} ns ({:.3}); best: C++ library {cpp_best:.1} ns (1.000), Rust {rust_best:.1} ns ({:.3})",
        rust_median / cpp_median,
        rust_best / cpp_best,
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    // `cargo bench` passes `--bench`; `--handoff` picks the handoff round trip alone.
    let handoff_only = std::env::args().any(|arg| arg == "--handoff");
    let rust = match Gpu::open() {
        Ok(gpu) => gpu,
        Err(CudaError::NoDriver) => {
            eprintln!("skipped: no CUDA driver");
            return std::process::ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("cuda_cpp: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let cpp = match rust.load(&CUDA_KERNELS) {
        Ok(module) => Gpu::with_module(module),
        Err(error) => {
            eprintln!("cuda_cpp: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match run(&rust, &cpp, handoff_only) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cuda_cpp: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
