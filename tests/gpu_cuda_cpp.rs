//! CUDA C++ kernels on scoped-sync's objects (`kernels/cuda/*.cu` through
//! `scoped_sync.cuh`, linked with the device library by nvcc): the same host code that
//! drives the project's Rust kernels drives kernels of the same name written in C++, so
//! both sides keep one protocol on one object. Without a CUDA driver every test prints
//! "skipped: no CUDA driver" and passes. The C++ kernels' traps (a scope misuse in the
//! checked build, a broken precondition) are cases of `tests/gpu_device_checks.rs`.
//! The two-GPU tests put the C++ kernel on GPU 0 and the Rust kernel of the same name
//! on GPU 1 ("skipped: fewer than two GPUs" on one).

mod common;

use common::bus::{
    barrier_shows_each_side_the_others_writes, latch_opens_after_host_and_gpu_count_downs,
};
use common::hang_guard;
use harness::bus_demo::{self, Paths, PhaseBarrier, RoundTrips};
use harness::{Gpu, DEVICE_LIBRARY};
use scoped_sync::cuda::{CudaError, CudaSource, KernelArgs, LaunchConfig};
use scoped_sync::{BusBarrier, BusLatch};

/// The C++ module on the test GPU, or `None` after printing why the test is skipped.
fn cuda_cpp() -> Option<Gpu> {
    let gpu = common::gpu_runtime()?;
    let module = gpu
        .load(&harness::CUDA_KERNELS)
        .unwrap_or_else(|error| panic!("load the CUDA C++ kernels: {error}"));
    Some(Gpu::with_module(module))
}

#[test]
fn a_cpp_persistent_worker_serves_100000_items_and_stops() {
    let Some(gpu) = cuda_cpp() else { return };
    hang_guard("cpp worker", 120, || {
        let run = bus_demo::persistent_worker(&gpu, 100_000, 64, 128).unwrap();
        assert_eq!(run.items, 100_000);
    });
}

#[test]
fn a_cpp_kernel_and_a_host_thread_meet_on_a_bus_barrier() {
    let Some(gpu) = cuda_cpp() else { return };
    hang_guard("cpp bus barrier", 120, || {
        bus_demo::barrier_phase(&gpu, 2_000, PhaseBarrier::Bus).unwrap();
    });
}

#[test]
fn cpp_blocks_and_host_threads_meet_on_a_bus_barrier_and_see_each_others_writes() {
    let Some(gpu) = cuda_cpp() else { return };
    let (blocks, host_threads, phases) = (4_u32, 3_u32, 500_u32);
    let barrier = gpu
        .place_mapped(BusBarrier::new(u64::from(host_threads), u64::from(blocks)))
        .unwrap();
    hang_guard("cpp bus barrier, several blocks and threads", 120, || {
        barrier_shows_each_side_the_others_writes(
            &gpu,
            barrier.device_address(),
            "bus_barrier_phases",
            (blocks, host_threads, phases),
            |wait| barrier.arrive_and_wait(wait),
        );
    });
}

#[test]
fn a_bus_latch_opens_after_cpp_blocks_and_host_threads_count_down() {
    let Some(gpu) = cuda_cpp() else { return };
    let shape = (4_u32, 64_u32, 3_u32);
    let latch = gpu
        .place_mapped(BusLatch::new(u64::from(shape.0 * shape.1 + shape.2)))
        .unwrap();
    hang_guard("cpp bus latch", 120, || {
        latch_opens_after_host_and_gpu_count_downs(
            &gpu,
            latch.device_address(),
            "bus_latch_count_down",
            shape,
            |wait| latch.arrive_and_wait(1, wait),
        );
    });
    assert_eq!(latch.counted(), latch.expected());
}

#[test]
fn a_cpp_kernel_answers_host_round_trips_on_both_paths() {
    let Some(gpu) = cuda_cpp() else { return };
    hang_guard("cpp round trips", 120, || {
        let mut trips = RoundTrips::new(&gpu).unwrap();
        trips.handoff(2_000, Paths::Exclusive).unwrap();
        trips.handoff(2_000, Paths::Shared).unwrap();
    });
}

/// The words `cpp_every_primitive` fills (see `kernels/cuda/primitives.cu`).
mod every {
    pub const COMPLETIONS: usize = 0;
    pub const BARRIER_MISSES: usize = 1;
    pub const LATCH_MISSES: usize = 2;
    pub const SEMAPHORE_MOST_INSIDE: usize = 3;
    pub const SEMAPHORE_ENTRIES: usize = 4;
    pub const FAIR_ENTRIES: usize = 5;
    pub const CALLBACK_RUNS: usize = 6;
    pub const FIRST_REQUESTS: usize = 7;
    pub const STOP_MISSES: usize = 8;
    pub const GRID_PHASES: usize = 9;
    pub const TRY_FAILURES: usize = 10;
    pub const BLOCK_BARRIER_MISSES: usize = 11;
    pub const BINARY_MOST_INSIDE: usize = 12;
    pub const WORDS: usize = 16;
}

/// `cpp_every_primitive` on `blocks × threads`, cooperative; the result words.
fn every_primitive(gpu: &Gpu, blocks: u32, threads: u32, phases: u32) -> Vec<u32> {
    let total = (blocks * threads) as usize;
    let results = gpu.zeros::<u32>(every::WORDS).unwrap();
    let data = gpu.zeros::<u32>(total).unwrap();
    // The objects' storage: the kernel initializes them (a C++ completion and stop
    // callback are device functions, which only the device can name).
    let objects = gpu.zeros::<u8>(4096).unwrap();
    let kernel = gpu.kernel("cpp_every_primitive").unwrap();
    let config = LaunchConfig::new(blocks, threads).cooperative();
    let args = KernelArgs::new()
        .grid_barrier()
        .arg(&objects)
        .arg(&data)
        .arg(phases)
        .arg(&results);
    // SAFETY: `cpp_every_primitive(grid, objects, data, phases, results)`; the buffers
    // have the sizes the kernel uses and outlive the synchronized launch.
    unsafe { kernel.launch(config, args) }.unwrap();
    gpu.synchronize().unwrap();
    gpu.download(&results).unwrap()
}

#[test]
fn a_cpp_kernel_uses_every_device_primitive() {
    let Some(gpu) = cuda_cpp() else { return };
    let sms = gpu.sm_count().unwrap();
    for (blocks, threads) in [(2, 64), (sms, 256)] {
        let phases = 50;
        let words = hang_guard("cpp every primitive", 120, || {
            every_primitive(&gpu, blocks, threads, phases)
        });
        let shape = format!("{blocks}×{threads}: {words:?}");
        assert_eq!(
            words[every::COMPLETIONS],
            2 * phases,
            "completions, {shape}"
        );
        assert_eq!(words[every::BARRIER_MISSES], 0, "barrier, {shape}");
        assert_eq!(
            words[every::BLOCK_BARRIER_MISSES],
            0,
            "block barrier, {shape}"
        );
        assert_eq!(words[every::LATCH_MISSES], 0, "latch, {shape}");
        assert!(
            (1..=4).contains(&words[every::SEMAPHORE_MOST_INSIDE]),
            "at most 4 holders, {shape}"
        );
        assert_eq!(
            words[every::BINARY_MOST_INSIDE],
            1,
            "binary semaphore, {shape}"
        );
        assert_eq!(words[every::SEMAPHORE_ENTRIES], blocks * threads, "{shape}");
        assert_eq!(
            words[every::FAIR_ENTRIES],
            blocks,
            "fair semaphore, {shape}"
        );
        assert_eq!(words[every::CALLBACK_RUNS], 1, "stop callback, {shape}");
        assert_eq!(
            words[every::FIRST_REQUESTS],
            1,
            "first request_stop, {shape}"
        );
        assert_eq!(words[every::STOP_MISSES], 0, "stop_requested, {shape}");
        assert_eq!(words[every::TRY_FAILURES], 0, "try_ forms, {shape}");
        assert!(words[every::GRID_PHASES] > 0, "grid phases, {shape}");
    }
}

#[test]
fn the_inline_and_the_library_grid_phase_keep_one_protocol() {
    let Some(gpu) = cuda_cpp() else { return };
    let sms = gpu.sm_count().unwrap();
    let kernel = gpu.kernel("cpp_mixed_grid_sync").unwrap();
    // One level (a block per SM) and, where the GPU holds that many blocks of 64 at
    // once, two levels (from `GRID_TWO_LEVEL_FROM` blocks).
    let most = kernel.max_coresident_blocks(64).unwrap();
    let two_levels = sync_shared::layout::grid::GRID_TWO_LEVEL_FROM;
    let mut shapes = vec![(sms, 256_u32)];
    if most >= two_levels {
        shapes.push((most, 64));
    } else {
        common::skip(&format!(
            "two-level grid phase: {most} co-resident blocks of 64"
        ));
    }
    for (blocks, threads) in shapes {
        let data = gpu.zeros::<u32>((blocks * threads) as usize).unwrap();
        let misses = gpu.zeros::<u32>(1).unwrap();
        let config = LaunchConfig::new(blocks, threads).cooperative();
        let args = KernelArgs::new()
            .grid_barrier()
            .arg(&data)
            .arg(200_u32)
            .arg(&misses);
        hang_guard("cpp mixed grid", 120, || {
            // SAFETY: `cpp_mixed_grid_sync(grid, data, phases, misses)`; `data` has a
            // word per thread; both outlive the synchronized launch.
            unsafe { kernel.launch(config, args) }.unwrap();
            gpu.synchronize().unwrap();
        });
        assert_eq!(gpu.download(&misses).unwrap(), [0], "{blocks}×{threads}");
    }
}

#[test]
fn the_inline_and_the_library_block_barrier_keep_one_protocol() {
    let Some(gpu) = cuda_cpp() else { return };
    let misses = gpu.zeros::<u32>(1).unwrap();
    let kernel = gpu.kernel("cpp_mixed_block_barrier").unwrap();
    // 1024 where the kernel's registers allow it (its checked build's may not).
    for threads in [64_u32, kernel.max_threads_per_block()] {
        let args = KernelArgs::new().arg(1_000_u32).arg(&misses);
        hang_guard("cpp mixed block barrier", 120, || {
            // SAFETY: `cpp_mixed_block_barrier(phases, misses)`; the word outlives the
            // synchronized launch.
            unsafe { kernel.launch(LaunchConfig::new(8, threads), args) }.unwrap();
            gpu.synchronize().unwrap();
        });
    }
    assert_eq!(gpu.download(&misses).unwrap(), [0]);
}

#[test]
fn the_inline_and_the_library_device_barrier_phases_keep_one_protocol() {
    let Some(gpu) = cuda_cpp() else { return };
    let kernel = gpu.kernel("cpp_mixed_device_barrier").unwrap();
    // Whole warps, and blocks of 48 threads (a warp and a part: the arrival apart).
    for (blocks, threads) in [
        (8_u32, 64_u32),
        (12, 48),
        (8, 1024.min(kernel.max_threads_per_block())),
    ] {
        let total = blocks * threads;
        let barrier = gpu
            .upload_object(&scoped_sync::Barrier::new(total))
            .unwrap();
        let data = gpu.zeros::<u32>(total as usize).unwrap();
        let misses = gpu.zeros::<u32>(1).unwrap();
        let args = KernelArgs::new()
            .arg(&barrier)
            .arg(&data)
            .arg(500_u32)
            .arg(&misses);
        hang_guard("cpp mixed device barrier", 120, || {
            // SAFETY: `cpp_mixed_device_barrier(barrier, data, phases, misses)`: a
            // barrier expecting every thread, a word per thread; the grid is small
            // enough to be resident at once; all outlive the synchronized launch.
            unsafe { kernel.launch(LaunchConfig::new(blocks, threads), args) }.unwrap();
            gpu.synchronize().unwrap();
        });
        assert_eq!(gpu.download(&misses).unwrap(), [0], "{blocks}×{threads}");
    }
}

/// GPU 0 with the C++ kernels and GPU 1 with the Rust ones, or `None` after saying why
/// the test is skipped.
fn cpp_and_rust_on_two_gpus() -> Option<(Gpu, Gpu)> {
    let (rust0, rust1) = common::peer::two_gpus()?;
    let cpp0 = Gpu::with_module(rust0.load(&harness::CUDA_KERNELS).unwrap());
    Some((cpp0, rust1))
}

#[test]
fn a_cpp_and_a_rust_kernel_share_a_multi_grid_for_10000_phases() {
    let Some((cpp, rust)) = cpp_and_rust_on_two_gpus() else {
        return;
    };
    let blocks = cpp.sm_count().unwrap().min(rust.sm_count().unwrap());
    // Not 1024: a block of the C++ kernel keeps the library's registers for its calls
    // (`ss_multi_grid_wait_for` needs 139), and 1024 of those do not fit an SM.
    for threads in [128, 256] {
        let fit = [&cpp, &rust].map(|gpu| {
            let kernel = gpu.kernel("multi_grid_phases").unwrap();
            kernel.max_coresident_blocks(threads).unwrap()
        });
        if fit.iter().any(|&fit| fit < blocks) {
            common::skip(&format!("{blocks} × {threads}: {fit:?} blocks fit at once"));
            continue;
        }
        let (counts, _) = common::peer::multi_grid_phases(
            &[&cpp, &rust],
            (blocks, threads),
            &[10_000; 2],
            10_000,
        );
        assert_eq!(
            counts,
            [[0, 0]; 2],
            "{blocks} × {threads}: (stale neighbour slots, timed-out phases), C++ then Rust"
        );
    }
}

#[test]
fn a_cpp_and_a_rust_kernel_share_a_system_barrier_in_peer_memory_for_10000_phases() {
    let Some((cpp, rust)) = cpp_and_rust_on_two_gpus() else {
        return;
    };
    common::peer::system_barrier_phases(&cpp, &rust, 10_000);
}

/// The CPU's Jacobi sweeps, in the order `cpp_jacobi` computes them.
fn jacobi_on_cpu(cells: usize, sweeps: u32) -> Vec<f32> {
    let mut current: Vec<f32> = (0..cells)
        .map(|i| ((i * 7919) % 1000) as f32 / 10.0)
        .collect();
    let mut next = current.clone();
    for _ in 0..sweeps {
        for i in 0..cells {
            let left = if i == 0 { current[i] } else { current[i - 1] };
            let right = if i + 1 == cells {
                current[i]
            } else {
                current[i + 1]
            };
            next[i] = 0.25 * left + 0.5 * current[i] + 0.25 * right;
        }
        std::mem::swap(&mut current, &mut next);
    }
    current
}

#[test]
fn a_cpp_grid_barrier_jacobi_equals_the_cpu_bit_for_bit() {
    let Some(gpu) = cuda_cpp() else { return };
    let sms = gpu.sm_count().unwrap();
    let (blocks, threads, sweeps) = (sms, 256_u32, 200_u32);
    let cells = (blocks * threads * 3) as usize;
    let initial: Vec<f32> = (0..cells)
        .map(|i| ((i * 7919) % 1000) as f32 / 10.0)
        .collect();
    let a = gpu.upload(&initial).unwrap();
    let b = gpu.zeros::<f32>(cells).unwrap();
    let kernel = gpu.kernel("cpp_jacobi").unwrap();
    let config = LaunchConfig::new(blocks, threads).cooperative();
    let args = KernelArgs::new()
        .grid_barrier()
        .arg(&a)
        .arg(&b)
        .arg(cells as u32)
        .arg(sweeps);
    hang_guard("cpp jacobi", 120, || {
        // SAFETY: `cpp_jacobi(grid, a, b, cells, sweeps)`: two arrays of `cells`
        // floats that outlive the synchronized launch.
        unsafe { kernel.launch(config, args) }.unwrap();
        gpu.synchronize().unwrap();
    });
    // An even number of sweeps ends in `a`.
    let result = gpu.download(&a).unwrap();
    let expected = jacobi_on_cpu(cells, sweeps);
    let first_difference = result
        .iter()
        .zip(&expected)
        .position(|(gpu, cpu)| gpu.to_bits() != cpu.to_bits());
    assert_eq!(first_difference, None, "GPU and CPU differ");
}

/// A kernel compiled at run time by NVRTC (the header embedded, no include path) and
/// linked with the device library by the driver: a block barrier and a device latch.
const NVRTC_SOURCE: &str = r#"
#include <scoped_sync.cuh>

extern "C" __global__ void nvrtc_phases(ss_latch* done, unsigned int* data, unsigned int phases,
                                        unsigned int* misses) {
    __shared__ ss_barrier storage;
    auto& barrier = scoped_sync::barrier<scoped_sync::thread_scope_block>::from(&storage);
    if (threadIdx.x == 0) init(&barrier, blockDim.x);
    __syncthreads();
    unsigned int* mine = data + blockIdx.x * blockDim.x;
    for (unsigned int p = 1; p <= phases; ++p) {
        mine[threadIdx.x] = p;
        barrier.arrive_and_wait();
        if (mine[(threadIdx.x + 1) % blockDim.x] != p) atomicAdd(misses, 1);
        barrier.arrive_and_wait();
    }
    auto& latch = scoped_sync::latch<scoped_sync::thread_scope_device>::from(done);
    latch.count_down(1);
    latch.wait();
    atomicAdd(misses + 1, 1);
}
"#;

#[test]
fn nvrtc_compiles_cpp_that_links_the_device_library_at_run_time() {
    let Some(gpu) = common::gpu_runtime() else {
        return;
    };
    for arch in [None, Some("compute_90")] {
        let mut options = CudaSource::new();
        if let Some(arch) = arch {
            // PTX from NVRTC, linked as PTX: the path of a user's own `-rdc` PTX.
            options = options.arch(arch);
        }
        let module = match gpu.compile_cuda("nvrtc_phases", NVRTC_SOURCE, &options, &DEVICE_LIBRARY)
        {
            Ok(module) => module,
            Err(CudaError::Compile { log, .. }) if log.contains("libnvrtc") => {
                common::skip("no NVRTC library");
                return;
            }
            Err(error) => panic!("compile_cuda: {error}"),
        };
        let (blocks, threads) = (4_u32, 128_u32);
        let latch = gpu
            .upload_object(&scoped_sync::Latch::new(blocks * threads))
            .unwrap();
        let data = gpu.zeros::<u32>((blocks * threads) as usize).unwrap();
        let misses = gpu.zeros::<u32>(2).unwrap();
        let kernel = module.kernel("nvrtc_phases").unwrap();
        let args = KernelArgs::new()
            .arg(&latch)
            .arg(&data)
            .arg(100_u32)
            .arg(&misses);
        // SAFETY: `nvrtc_phases(latch, data, phases, misses)`, all outliving the
        // synchronized launch.
        unsafe { kernel.launch(LaunchConfig::new(blocks, threads), args) }.unwrap();
        gpu.synchronize().unwrap();
        // No neighbour missed a phase, and every thread passed the latch.
        assert_eq!(
            gpu.download(&misses).unwrap(),
            [0, blocks * threads],
            "{arch:?}"
        );
    }
}
