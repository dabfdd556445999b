//! Criterion benches of per-scope GPU costs: dependent atomic chains and store+fence
//! loops per scope (timed inside the kernel with `%clock64`, so launch overhead is not
//! counted), contended relaxed device-scope atomics (all threads, one word), and every
//! device primitive of the report (one iteration = one barrier phase or semaphore
//! round trip, timed with GPU events around launches of many), and the host–GPU round
//! trips of `bus_demo` (raw spinning and the handoff channel on one mapped line, and
//! an empty kernel's launch + synchronize; timed on the host).
//! Without a CUDA driver it prints "skipped: no CUDA driver" and measures nothing.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use harness::bus_demo::{self, Paths, RoundTrips};
use harness::primitive_costs::WORKLOADS;
use harness::Gpu;
use scoped_sync::cuda::{CorePin, CudaError, KernelArgs, LaunchConfig};

/// Longest chain one launch runs; criterion's iteration counts are split into launches.
const MAX_CHAIN: u64 = 1 << 20;

fn runtime() -> Option<Gpu> {
    match Gpu::open() {
        Ok(runtime) => Some(runtime),
        Err(CudaError::NoDriver) => {
            eprintln!("skipped: no CUDA driver");
            None
        }
        Err(other) => panic!("cannot open the GPU: {other}"),
    }
}

/// The time of `iterations` chained operations of `kernel` (a cost kernel), from the
/// kernel's own cycle count.
fn chained(gpu: &Gpu, kernel: &str, iterations: u64) -> Duration {
    let kernel = gpu.kernel(kernel).expect("cost kernel");
    let clock_hz = f64::from(gpu.clock_mhz().expect("clock")) * 1e6;
    let words = gpu.zeros::<u32>(2).expect("words");
    let cycles = gpu.zeros::<u64>(1).expect("cycles");
    let chain = kernel_is_chain(&kernel);
    let mut total = 0.0;
    let mut left = iterations;
    while left > 0 {
        let n = u32::try_from(left.min(MAX_CHAIN)).expect("fits");
        let args = if chain {
            KernelArgs::new().arg(&words).arg(n).arg(&cycles)
        } else {
            KernelArgs::new().arg(n).arg(&cycles).arg(&words)
        };
        // SAFETY: chains take (u32 pointer, u32, u64 pointer), fences (u32, u64
        // pointer, u32 pointer), as passed.
        unsafe { kernel.launch(LaunchConfig::new(1, 1), args) }.expect("launch");
        total += gpu.download(&cycles).expect("cycles")[0] as f64 / clock_hz;
        left -= u64::from(n);
    }
    Duration::from_secs_f64(total)
}

fn kernel_is_chain(kernel: &scoped_sync::cuda::Kernel) -> bool {
    kernel.name().contains("chain")
}

fn per_scope(c: &mut Criterion) {
    let Some(gpu) = runtime() else { return };
    for (group_name, prefix) in [
        ("gpu atomic fetch_add acq_rel chain", "cost_atomic_chain_"),
        ("gpu store + seq_cst fence", "cost_fence_"),
    ] {
        let mut group = c.benchmark_group(group_name);
        group
            .measurement_time(Duration::from_secs(2))
            .sample_size(20);
        for scope in ["block", "device", "system"] {
            let kernel = format!("{prefix}{scope}");
            group.bench_function(BenchmarkId::from_parameter(scope), |b| {
                b.iter_custom(|iterations| chained(&gpu, &kernel, iterations));
            });
        }
        group.finish();
    }
}

fn contended(c: &mut Criterion) {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("fetch_add_device").expect("kernel");
    let (grid, block, per_thread) = (gpu.sm_count().expect("SMs"), 1024_u32, 100_u32);
    let counter = gpu.zeros::<u32>(1).expect("counter");
    let mut group = c.benchmark_group("gpu contended relaxed fetch_add, one word, device scope");
    group.throughput(Throughput::Elements(u64::from(grid * block * per_thread)));
    group
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    group.bench_function(
        BenchmarkId::new("all threads", format!("{grid}x{block}")),
        |b| {
            b.iter(|| {
                // SAFETY: (u32 pointer, u32) is the kernel's signature.
                unsafe {
                    kernel.launch(
                        LaunchConfig::new(grid, block),
                        KernelArgs::new().arg(&counter).arg(per_thread),
                    )
                }
                .expect("launch");
                gpu.synchronize().expect("synchronize");
            });
        },
    );
    group.finish();
}

/// Phases one launch of a primitive's cost kernel runs at most; criterion's iteration
/// counts are split into launches of this many.
const MAX_PHASES: u64 = 1 << 16;

fn primitives(c: &mut Criterion) {
    let Some(gpu) = runtime() else { return };
    let sms = gpu.sm_count().expect("SMs");
    let mut group = c.benchmark_group("gpu primitives, per phase or round trip");
    group
        .measurement_time(Duration::from_secs(2))
        .sample_size(10);
    for workload in &WORKLOADS {
        let kernel = gpu.kernel(workload.kernel).expect("cost kernel");
        for &block in workload.blocks {
            let grid = workload.grid(sms);
            let id = BenchmarkId::new(
                format!(
                    "{} {} {}{}",
                    workload.scope,
                    workload.primitive,
                    workload.op,
                    workload.variant.map_or(String::new(), |v| format!(" {v}"))
                ),
                format!("{grid}x{block}"),
            );
            group.bench_function(id, |b| {
                b.iter_custom(|phases| {
                    let mut total = Duration::ZERO;
                    let mut left = phases;
                    while left > 0 {
                        let n = u32::try_from(left.min(MAX_PHASES)).expect("fits");
                        total += workload
                            .time(&gpu, &kernel, grid, block, n)
                            .expect("timed launch");
                        left -= u64::from(n);
                    }
                    total
                });
            });
        }
    }
    group.finish();
}

/// Round trips one measurement runs at most (one kernel launch each).
const MAX_ROUND_TRIPS: u64 = 1 << 16;

/// The time of `round_trips` round trips, in kernel launches of at most
/// [`MAX_ROUND_TRIPS`] each.
fn in_launches(
    round_trips: u64,
    mut measure: impl FnMut(u32) -> Result<Duration, bus_demo::DemoError>,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = round_trips;
    while left > 0 {
        let n = u32::try_from(left.min(MAX_ROUND_TRIPS)).expect("fits");
        total += measure(n).expect("round trips") * n;
        left -= u64::from(n);
    }
    total
}

fn host_gpu(c: &mut Criterion) {
    let Some(gpu) = runtime() else { return };
    let _pin = CorePin::current_core();
    let mut trips = RoundTrips::new(&gpu).expect("a mapped line");
    let mut group = c.benchmark_group("host<->gpu round trip");
    group
        .measurement_time(Duration::from_secs(2))
        .sample_size(10);
    group.bench_function("raw spin on mapped memory", |b| {
        b.iter_custom(|n| in_launches(n, |rounds| trips.raw_spin(rounds)));
    });
    group.bench_function("handoff channel, endpoints", |b| {
        b.iter_custom(|n| in_launches(n, |rounds| trips.handoff(rounds, Paths::Exclusive)));
    });
    group.bench_function("launch + stream synchronize", |b| {
        b.iter_custom(|n| in_launches(n, |rounds| bus_demo::launch_round_trip(&gpu, rounds)));
    });
    group.finish();
}

criterion_group!(benches, per_scope, contended, primitives, host_gpu);
criterion_main!(benches);
