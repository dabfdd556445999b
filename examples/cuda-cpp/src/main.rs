//! A Rust host with CUDA C++ kernels that use scoped-sync's objects through
//! `scoped_sync.cuh`: `build.rs` compiles `cuda/*.cu` with nvcc and links them with the
//! device library (`sync_build::CudaKernels`), `include_cuda!` embeds the cubin, and
//!
//! - `worker [ITEMS]`: a persistent C++ kernel fed from this thread through a
//!   `HandoffChannel` and stopped with a `BusStopSource`, every answer checked;
//! - `jacobi`: a C++ solver whose sweeps are separated by the grid barrier, equal to
//!   the same sweeps on the CPU bit for bit;
//! - `nvrtc [ITEMS]`: the worker again, compiled from its source at run time by NVRTC
//!   and linked with the device library by the driver (`Runtime::compile_cuda`).
//!
//! ```sh
//! cargo run --release -p cuda-cpp-example [worker [ITEMS]|jacobi|nvrtc [ITEMS]|all]
//! ```
//!
//! Without a GPU it prints "skipped: no CUDA driver" and exits 0; a wrong result exits 1.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use scoped_sync::cuda::{
    CudaError, CudaSource, EmbeddedModule, KernelArgs, LaunchConfig, Module, Runtime,
};
use scoped_sync::{BusStopSource, HandoffChannel};

/// The C++ kernels, linked with the device library by nvcc (both flavours).
static KERNELS: EmbeddedModule = scoped_sync::include_cuda!("cuda_cpp_example");
/// The device library alone, for linking at run time.
static LIBRARY: EmbeddedModule = scoped_sync::include_kernels!("scoped_sync_device");
/// The worker's source, for NVRTC.
const WORKER_SOURCE: &str = include_str!("../cuda/worker.cu");

type Error = Box<dyn std::error::Error>;

const USAGE: &str = "usage: cuda-cpp-example [worker [ITEMS]|jacobi|nvrtc [ITEMS]|all]";
/// Work items of a default run, and ring slots (items in flight at most).
const DEFAULT_ITEMS: u64 = 100_000;
const RING: u64 = 16;
/// A wait for the kernel gives up after this (a live kernel answers in microseconds).
const PATIENCE: Duration = Duration::from_secs(20);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match Runtime::open(0) {
        Ok(runtime) => runtime,
        Err(CudaError::NoDriver) => {
            eprintln!("skipped: no CUDA driver");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("cuda-cpp-example: {error}");
            return ExitCode::FAILURE;
        }
    };
    match run(&runtime, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cuda-cpp-example: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(runtime: &Runtime, args: &[String]) -> Result<(), Error> {
    let part = args.first().map_or("all", String::as_str);
    let items = match args.get(1) {
        Some(items) => items.parse().map_err(|_| USAGE)?,
        None => DEFAULT_ITEMS,
    };
    let kernels = || -> Result<Module, Error> { Ok(runtime.load(&KERNELS)?) };
    let compiled = || -> Result<Module, Error> {
        Ok(runtime.compile_cuda("worker.cu", WORKER_SOURCE, &CudaSource::new(), &LIBRARY)?)
    };
    match part {
        "worker" => worker(runtime, &kernels()?, items),
        "jacobi" => jacobi(runtime, &kernels()?),
        "nvrtc" => worker(runtime, &compiled()?, items),
        "all" => {
            let module = kernels()?;
            worker(runtime, &module, items)?;
            jacobi(runtime, &module)?;
            worker(runtime, &compiled()?, items)
        }
        _ => Err(USAGE.into()),
    }
}

/// As `cuda/worker.cu`'s `answer`.
fn answer(item: u64) -> u64 {
    item.wrapping_mul(item).wrapping_add(1)
}

/// The work items: any numbers will do, as long as both sides agree.
fn item(index: u64) -> u64 {
    index.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7
}

/// Feeds the module's `persistent_worker` `items` work items and checks every answer.
fn worker(runtime: &Runtime, module: &Module, items: u64) -> Result<(), Error> {
    let kernel = module.kernel("persistent_worker")?;
    let channel = runtime.place_mapped(HandoffChannel::new(0, 0))?;
    let stop = runtime.place_mapped(BusStopSource::new())?;
    let inputs = runtime.mapped(2 * RING as usize)?; // RING u64s
    let results = runtime.mapped(2 * RING as usize)?;
    let stream = runtime.new_stream()?;
    let args = KernelArgs::new()
        .arg(&channel)
        .arg(&stop)
        .arg(&inputs)
        .arg(&results)
        .arg(RING as u32);
    let (Some(mut to_gpu), Some(mut from_gpu)) = (channel.producer(), channel.consumer()) else {
        return Err("worker: the channel's host endpoints are taken".into());
    };
    let host = |kernel: &scoped_sync::cuda::beside::Beside<'_>| -> Result<Duration, Error> {
        let start = Instant::now();
        let (mut sent, mut received) = (0_u64, 0_u64);
        let fed = (|| -> Result<(), Error> {
            while received < items {
                while sent < items && sent - received < RING {
                    let work = item(sent);
                    to_gpu.release_with(1, |seq| inputs.write_u64((seq % RING) as usize, work));
                    sent += 1;
                }
                let seq = from_gpu.acquire(kernel.wait().timeout(PATIENCE))?;
                let got = results.read_u64((seq % RING) as usize);
                if got != answer(item(seq)) {
                    return Err(format!(
                        "worker: item {seq}: got {got}, expected {}",
                        answer(item(seq))
                    )
                    .into());
                }
                received += 1;
            }
            Ok(())
        })();
        let elapsed = start.elapsed();
        // On every path, failures included: the kernel ends only when asked to.
        stop.request_stop();
        fed.map(|()| elapsed)
    };
    // SAFETY: the worker's parameters in order; all outlive the kernel, which ends when
    // stop is requested (the host's side does so on every path).
    let run = unsafe { kernel.launch_beside(LaunchConfig::new(1, 32).on(&stream), args, host) };
    stream.synchronize()?;
    run.launch?;
    let elapsed = run.host?;
    println!(
        "worker ({}): ok, {items} items through a HandoffChannel, every answer right, {:.2} µs per item, stopped by a BusStopSource",
        module.name(),
        elapsed.as_secs_f64() * 1e6 / items as f64
    );
    Ok(())
}

/// Cells, steps (even: the result ends in the first buffer) and threads per block.
const CELLS: usize = 100_003;
const STEPS: u32 = 400;
const BLOCK: u32 = 256;

/// Runs `jacobi_1d` and compares it with the same sweeps on the CPU.
fn jacobi(runtime: &Runtime, module: &Module) -> Result<(), Error> {
    let mut cells: Vec<f32> = (0..CELLS)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
        .collect();
    cells[0] = 1.0;
    cells[CELLS - 1] = -1.0;
    let kernel = module.kernel("jacobi_1d")?;
    let blocks = kernel.max_coresident_blocks(BLOCK)?;
    let a = runtime.upload(&cells)?;
    let b = runtime.upload(&cells)?;
    let args = KernelArgs::new()
        .grid_barrier()
        .arg(&a)
        .arg(&b)
        .arg(CELLS as u32)
        .arg(STEPS);
    // SAFETY: `jacobi_1d(grid, a, b, n, steps)`: two arrays of `n` floats that outlive
    // the synchronized launch; the cooperative launch fills in the grid barrier.
    unsafe { kernel.launch(LaunchConfig::new(blocks, BLOCK).cooperative(), args) }?;
    runtime.synchronize()?;
    let gpu = runtime.download(&a)?;
    let (mut now, mut next) = (cells.clone(), cells);
    for _ in 0..STEPS {
        for i in 1..CELLS - 1 {
            next[i] = 0.5 * (now[i - 1] + now[i + 1]);
        }
        std::mem::swap(&mut now, &mut next);
    }
    match gpu
        .iter()
        .zip(&now)
        .position(|(g, c)| g.to_bits() != c.to_bits())
    {
        None => {
            println!("jacobi: ok, {STEPS} sweeps of {CELLS} cells on {blocks}×{BLOCK} threads equal the CPU's bit for bit");
            Ok(())
        }
        Some(i) => Err(format!("jacobi: cell {i}: GPU {} vs CPU {}", gpu[i], now[i]).into()),
    }
}
