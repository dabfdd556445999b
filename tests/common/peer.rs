//! Two-GPU helpers of the peer tests (`tests/gpu_peer.rs`, and `tests/gpu_cuda_cpp.rs`,
//! which runs them with a C++ kernel on one GPU and a Rust kernel on the other: each
//! helper takes the kernel of its name from each GPU's module).

use scoped_sync::cuda::{KernelArgs, LaunchConfig, MultiGrid, PlacementError};
use scoped_sync::Barrier;

use super::hang_guard;
use harness::Gpu;

/// GPUs 0 and 1 with the project's kernels, or `None` after saying why the test is
/// skipped.
pub fn two_gpus() -> Option<(Gpu, Gpu)> {
    let first = super::gpu_runtime()?;
    if scoped_sync::cuda::Runtime::device_count().unwrap() < 2 {
        super::skip("fewer than two GPUs");
        return None;
    }
    let second = Gpu::open_ordinal(1).unwrap();
    let first = if first.ordinal() == 0 {
        first
    } else {
        Gpu::open_ordinal(0).unwrap()
    };
    Some((first, second))
}

/// Every GPU of the machine, in ordinal order, when there are two or more (else it
/// prints why it skips): the tests that take any number of GPUs run on all of them.
pub fn every_gpu() -> Option<Vec<Gpu>> {
    let (first, second) = two_gpus()?;
    let count = scoped_sync::cuda::Runtime::device_count().unwrap();
    let mut gpus = vec![first, second];
    gpus.extend((2..count).map(|ordinal| Gpu::open_ordinal(ordinal).unwrap()));
    Some(gpus)
}

/// Launches `name` on each GPU with its arguments, each from a thread of its own, and
/// waits for both kernels.
///
/// # Safety
///
/// Each `KernelArgs` matches `name`'s signature, and what it points to outlives the
/// kernels.
pub unsafe fn launch_on_both(
    gpus: [&Gpu; 2],
    name: &str,
    shape: (u32, u32),
    args: [KernelArgs<'_>; 2],
) {
    std::thread::scope(|s| {
        for (gpu, args) in gpus.into_iter().zip(args) {
            s.spawn(move || {
                let kernel = gpu.kernel(name).unwrap();
                let stream = gpu.default_stream();
                let config = LaunchConfig::new(shape.0, shape.1).on(&stream);
                // SAFETY: the caller's contract.
                unsafe { kernel.launch(config, args) }.unwrap();
                stream.synchronize().unwrap();
            });
        }
    });
}

/// Launches `multi_grid_phases` through a `MultiGrid` of both GPUs, `blocks × threads`
/// on each, with `phases[i]` phases on GPU `i` waited for at most `timeout_ms` each;
/// returns each GPU's (failures, timeouts) and the time from the launch until both
/// GPUs finished.
/// `multi_grid_phases` on each of `gpus` (rank `i` on `gpus[i]`, running `phases[i]`
/// phases): per GPU, the stale neighbour slots and the timed-out phases its threads
/// counted, and the time the whole launch took.
pub fn multi_grid_phases(
    gpus: &[&Gpu],
    (blocks, threads): (u32, u32),
    phases: &[u32],
    timeout_ms: u32,
) -> (Vec<[u32; 2]>, std::time::Duration) {
    let runtimes: Vec<_> = gpus.iter().map(|gpu| &***gpu).collect();
    let mut barrier = MultiGrid::new(&runtimes).unwrap();
    let kernels: Vec<_> = gpus
        .iter()
        .map(|gpu| gpu.kernel("multi_grid_phases").unwrap())
        .collect();
    let per_gpu = (blocks * threads) as usize;
    let slots = gpus[0]
        .zeros_for_peers(2 * gpus.len() * per_gpu, &runtimes[1..])
        .unwrap();
    let counts: Vec<_> = gpus
        .iter()
        .map(|gpu| gpu.zeros::<u32>(2).unwrap())
        .collect();
    let args = (0..gpus.len())
        .map(|i| {
            let counts = gpus[i].address(&counts[i]);
            KernelArgs::new()
                .arg(&slots)
                .arg(phases[i])
                .arg(timeout_ms)
                .arg(counts)
                .arg(counts + 4)
        })
        .collect();
    let started = std::time::Instant::now();
    let kernels: Vec<_> = kernels.iter().collect();
    hang_guard("MultiGrid", 300, || {
        // SAFETY: `multi_grid_phases(MultiGrid, slots, phases, timeout_ms, failures,
        // timeouts)` on every GPU, the same grid on each; `slots` holds
        // `2 · ranks · per_gpu` words that every GPU reaches; everything outlives the
        // kernels.
        unsafe { barrier.launch(&kernels, LaunchConfig::new(blocks, threads), args) }.unwrap();
        for gpu in gpus {
            gpu.synchronize().unwrap();
        }
    });
    let elapsed = started.elapsed();
    let counts = gpus
        .iter()
        .zip(&counts)
        .map(|(gpu, counts)| {
            let words = gpu.download(counts).unwrap();
            [words[0], words[1]]
        })
        .collect();
    (counts, elapsed)
}

/// `peer_barrier_phases` on both GPUs (each GPU's module: Rust or C++ kernels of that
/// name), `phases` phases of one `System`-scope barrier in GPU 0's memory that both
/// launches' threads arrive at, each checking a thread's write on the other GPU;
/// asserts that no check and no phase failed.
pub fn system_barrier_phases(gpu0: &Gpu, gpu1: &Gpu, phases: u32) {
    let (blocks, threads) = (2_u32, 64_u32);
    let per_gpu = blocks * threads;
    let members = 2 * per_gpu;
    let barrier = match gpu0.place_for_peers(&Barrier::new(members), &[gpu1]) {
        Err(PlacementError::PeerAttribute { attribute, .. }) => {
            super::skip(&format!("{attribute} = 0 from GPU 1 to GPU 0"));
            return;
        }
        placed => placed.unwrap(),
    };
    let slots = gpu0.zeros_for_peers(2 * members as usize, &[gpu1]).unwrap();
    let failures = [gpu0.zeros::<u32>(1).unwrap(), gpu1.zeros::<u32>(1).unwrap()];
    let args = [0, 1].map(|i| {
        KernelArgs::new()
            .arg(&barrier)
            .arg(&slots)
            .arg(members)
            .arg(i as u32 * per_gpu)
            .arg(phases)
            .arg(&failures[i])
    });
    hang_guard("barrier across two GPUs", 300, || {
        // SAFETY: the parameters of `peer_barrier_phases`: the barrier expects both
        // launches' threads (`members`), `slots` holds `2 · members` words, GPU 0's
        // members are `0 .. per_gpu` and GPU 1's the rest; everything outlives them.
        unsafe { launch_on_both([gpu0, gpu1], "peer_barrier_phases", (blocks, threads), args) };
    });
    for (gpu, failures) in [(gpu0, &failures[0]), (gpu1, &failures[1])] {
        assert_eq!(
            gpu.download(failures).unwrap(),
            [0],
            "GPU {}: stale partner slots or timed-out phases",
            gpu.ordinal()
        );
    }
}

/// The payload of unit `k` of `peer_handoff_produce` (kernels/src/peer.rs).
pub fn handoff_payload(k: u64) -> u64 {
    k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k >> 7)
}

/// Slots of a handoff link's payload ring (the kernels' `HANDOFF_RING`,
/// kernels/src/peer.rs).
pub const HANDOFF_RING: u64 = 64;
