//! `--multi-gpu [GPUS]`: what the barrier across GPUs 0..GPUS-1 and the handoff across
//! GPUs 0 and 1 cost, in the shapes and the line format of
//! `baselines/multi_gpu_baselines.cu`, so that `scripts/gpu-multi-compare.sh` can print
//! the CUDA C++ figures of the same run beside them.
//!
//! Both sides time inside the kernels (`%globaltimer` in thread 0 of block 0 on GPU 0)
//! and keep the best of [`ROUNDS`] launches.

use std::io::{self, Write};

use harness::{Gpu, KERNELS_NVSHMEM};
use scoped_sync::cuda::{
    CudaError, Kernel, KernelArgs, LaunchConfig, MultiGrid, Nvshmem, PeerMemory,
};
use scoped_sync::process::{ProcessGroup, Rendezvous};
use scoped_sync::{GpuToGpu, HandoffSemaphore};

/// Barrier phases per launch, as the anchor.
const PHASES: u32 = 20_000;
/// Round trips per ping-pong launch, as the anchor.
const ROUND_TRIPS: u32 = 20_000;
/// How long a host party waits for the GPUs per phase.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);
/// Launches per figure; the best is kept.
const ROUNDS: usize = 3;
/// Threads per block of the barrier's shapes.
const BLOCK_SIZES: [u32; 2] = [128, 1024];

/// Measures and prints one line per figure, the barrier on GPUs 0..`count`-1; prints
/// "skipped: ..." and returns without error where there are fewer than `count` GPUs.
///
/// # Errors
///
/// A failed driver call, or a placement a link between the GPUs refuses.
pub fn run(out: &mut impl Write, count: u32) -> Result<(), Box<dyn std::error::Error>> {
    let first = match Gpu::open_ordinal(0) {
        Ok(gpu) => gpu,
        Err(CudaError::NoDriver) => {
            writeln!(out, "skipped: no CUDA driver")?;
            return Ok(());
        }
        Err(other) => return Err(other.into()),
    };
    let present = scoped_sync::cuda::Runtime::device_count()?;
    if present < count as usize {
        writeln!(out, "skipped: fewer than {count} GPUs ({present} here)")?;
        return Ok(());
    }
    let mut gpus = vec![first];
    for ordinal in 1..count {
        gpus.push(Gpu::open_ordinal(ordinal as usize)?);
    }
    let gpus: Vec<&Gpu> = gpus.iter().collect();
    let mut blocks = u32::MAX;
    for gpu in &gpus {
        blocks = blocks.min(gpu.sm_count()?);
    }
    writeln!(out, "gpus   {count}")?;
    for threads in BLOCK_SIZES {
        let ns = best_of(|| barrier_phase_ns(&gpus, blocks, threads, 0))?;
        let label = "scoped-sync MultiGrid::sync";
        line(out, label, blocks, threads, ns, "barrier")?;
    }
    let ns = best_of(|| barrier_phase_ns(&gpus, blocks, BLOCK_SIZES[0], 1))?;
    let label = "scoped-sync MultiGrid, 1 host party";
    line(out, label, blocks, BLOCK_SIZES[0], ns, "barrier")?;
    for (label, spin) in [
        ("scoped-sync GpuToGpu ping-pong", true),
        ("scoped-sync GpuToGpu, sleeping", false),
    ] {
        let ns = best_of(|| round_trip_ns([gpus[0], gpus[1]], spin))?;
        line(out, label, 1, 1, ns, "round trip")?;
    }
    Ok(())
}

/// `--multi-gpu-processes`: as one rank of a process group (one GPU each, its local
/// rank's), the barrier of every rank's grid per phase, [`BLOCK_SIZES`] threads a
/// block and the fewest SMs of the group's GPUs as blocks, with the counters shared by
/// driver IPC, then (where NVSHMEM is installed) in NVSHMEM's symmetric heap, reached
/// by direct pointers and by NVSHMEM's signal operations; and the `GpuToGpu` round
/// trip between ranks 0 and 1 by driver IPC and by NVSHMEM's signals. Rank 0 prints
/// the lines.
///
/// # Errors
///
/// A launcher's environment that is missing or wrong, a failed collective or driver
/// call.
pub fn run_as_rank(out: &mut impl Write) -> Result<(), Box<dyn std::error::Error>> {
    let rendezvous = Rendezvous::from_env()?;
    let gpu = match Gpu::open_ordinal(rendezvous.local_rank()) {
        Ok(gpu) => gpu,
        Err(CudaError::NoDriver) => {
            writeln!(out, "skipped: no CUDA driver")?;
            return Ok(());
        }
        Err(other) => return Err(other.into()),
    };
    let group = rendezvous.join()?;
    let sms = group.all_gather(&gpu.sm_count()?.to_le_bytes(), &[])?;
    let blocks = sms
        .iter()
        .map(|part| u32::from_le_bytes(part.bytes[..4].try_into().expect("4 bytes")))
        .min()
        .expect("one rank at least");
    if group.rank() == 0 {
        writeln!(out, "gpus   {} (one process each)", group.size())?;
    }
    let mut barrier = MultiGrid::join(&gpu, &group)?;
    let label = "scoped-sync MultiGrid, processes";
    let kernel = gpu.kernel("multi_grid_timed")?;
    time_across_processes(out, &gpu, &group, &mut barrier, &kernel, blocks, label)?;
    // The handoff's round trip between ranks 0 and 1, each inbox in the GPU that polls
    // it, shared by driver IPC.
    let inboxes = [0, 1]
        .map(|owner| gpu.place_for_processes(&group, owner, &HandoffSemaphore::<GpuToGpu>::new(0)));
    let [to_0, to_1] = inboxes;
    let (to_0, to_1) = (to_0?, to_1?);
    let kernel = gpu.kernel("peer_ping_pong")?;
    let addresses = [to_0.device_address(), to_1.device_address()];
    let ns = best_of(|| round_trip_across_processes(&gpu, &group, &kernel, addresses))?;
    if group.rank() == 0 {
        line(
            out,
            "scoped-sync GpuToGpu, processes",
            1,
            1,
            ns,
            "round trip",
        )?;
    }
    // The same barrier with its counters in NVSHMEM's symmetric heap, where NVSHMEM is
    // installed (the processes of one machine see the same installation).
    match Nvshmem::library() {
        Err(error) => {
            if group.rank() == 0 {
                writeln!(out, "skipped: MultiGrid in NVSHMEM's heap: {error}")?;
            }
        }
        Ok(_) => {
            let shmem = Nvshmem::start(&gpu, &group)?;
            if group.rank() == 0 {
                writeln!(out, "nvshmem {}", shmem.version())?;
            }
            let mut barrier = MultiGrid::join_nvshmem(&shmem)?;
            let label = "scoped-sync MultiGrid, NVSHMEM heap";
            let kernel = gpu.kernel("multi_grid_timed")?;
            time_across_processes(out, &gpu, &group, &mut barrier, &kernel, blocks, label)?;
            // Crossing by NVSHMEM's signal operations: the kernels built with
            // sync-device's `nvshmem` feature, linked with NVSHMEM's device library.
            match KERNELS_NVSHMEM.image(KERNELS_NVSHMEM.default_build()) {
                Err(error) => {
                    if group.rank() == 0 {
                        writeln!(out, "skipped: MultiGrid by NVSHMEM signals: {error}")?;
                    }
                }
                Ok(_) => {
                    let module = shmem.load(&KERNELS_NVSHMEM)?;
                    let kernel = module.kernel("multi_grid_timed")?;
                    let mut barrier = MultiGrid::join_nvshmem_signals(&shmem)?;
                    let label = "scoped-sync MultiGrid, NVSHMEM signals";
                    time_across_processes(out, &gpu, &group, &mut barrier, &kernel, blocks, label)?;
                    // The round trip through handoffs in the heap (`Nvshmem::handoff`),
                    // each way's count sent by NVSHMEM's signal set.
                    let (to_0, to_1) = (shmem.handoff(0, 1, 0)?, shmem.handoff(0, 0, 1)?);
                    let kernel = module.kernel("nvshmem_ping_pong")?;
                    let addresses = [to_0.device_address(), to_1.device_address()];
                    let ns =
                        best_of(|| round_trip_across_processes(&gpu, &group, &kernel, addresses))?;
                    if group.rank() == 0 {
                        line(
                            out,
                            "scoped-sync GpuToGpu, NVSHMEM signals",
                            1,
                            1,
                            ns,
                            "round trip",
                        )?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Times `barrier` with `kernel` (`multi_grid_timed`: this process's part, `blocks`
/// blocks of each of [`BLOCK_SIZES`]); rank 0 prints the lines under `label`.
fn time_across_processes(
    out: &mut impl Write,
    gpu: &Gpu,
    group: &ProcessGroup,
    barrier: &mut MultiGrid,
    kernel: &Kernel,
    blocks: u32,
    label: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let elapsed = gpu.zeros::<u64>(1)?;
    for threads in BLOCK_SIZES {
        let ns = best_of(|| {
            let args = KernelArgs::new().arg(PHASES).arg(&elapsed);
            // SAFETY: `multi_grid_timed(MultiGrid, phases, elapsed)` in every process,
            // the same grid; `elapsed` outlives the kernel (synchronized below).
            unsafe { barrier.launch(&[kernel], LaunchConfig::new(blocks, threads), vec![args]) }?;
            gpu.synchronize()?;
            Ok(gpu.download(&elapsed)?[0] as f64 / f64::from(PHASES - 1))
        })?;
        if group.rank() == 0 {
            line(out, label, blocks, threads, ns, "barrier")?;
        }
    }
    // Nobody unmaps its counter while another still launches.
    group.barrier()?;
    Ok(())
}

/// One launch of `kernel` (`peer_ping_pong` or `nvshmem_ping_pong`, one spinning
/// thread) on ranks 0 and 1, whose inboxes this process reaches at `inboxes`
/// (`GpuToGpu` semaphores holding as many units as they ever received, each polled by
/// its rank): nanoseconds per round trip on rank 0, 0 elsewhere. Collective.
fn round_trip_across_processes(
    gpu: &Gpu,
    group: &ProcessGroup,
    kernel: &Kernel,
    inboxes: [u64; 2],
) -> Result<f64, Box<dyn std::error::Error>> {
    let rank = group.rank();
    let elapsed = gpu.zeros::<u64>(1)?;
    // Both kernels start within each other's patience.
    group.barrier()?;
    if rank < 2 {
        let args = KernelArgs::new()
            .arg(inboxes[1 - rank])
            .arg(inboxes[rank])
            .arg(u32::from(rank == 0))
            .arg(ROUND_TRIPS)
            .arg(1_u32)
            .arg(&elapsed);
        // SAFETY: `*_ping_pong(outgoing, incoming, first, rounds, spin, elapsed)`, one
        // thread on each of the two ranks; the semaphores outlive the kernels (the
        // group meets after each launch ended), `elapsed` too (synchronized here).
        unsafe { kernel.launch(LaunchConfig::new(1, 1), args) }?;
        gpu.synchronize()?;
    }
    group.barrier()?;
    let ns = gpu.download(&elapsed)?[0];
    // The kernel times every round trip but the first (see `peer_ping_pong`).
    Ok(ns as f64 / f64::from(ROUND_TRIPS - 1))
}

/// One line in the anchor's format.
fn line(
    out: &mut impl Write,
    label: &str,
    grid: u32,
    block: u32,
    ns: f64,
    unit: &str,
) -> io::Result<()> {
    writeln!(
        out,
        "multi  {label:<32} grid={grid} x {block:>4} : {ns:>8.1} ns/{unit}"
    )
}

/// The smallest of [`ROUNDS`] figures.
fn best_of(
    mut measure: impl FnMut() -> Result<f64, Box<dyn std::error::Error>>,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut best = f64::INFINITY;
    for _ in 0..ROUNDS {
        best = best.min(measure()?);
    }
    Ok(best)
}

/// One launch of `multi_grid_timed` on every GPU of `gpus`, `blocks × threads` each,
/// with `host_parties` host threads taking part: nanoseconds per phase.
fn barrier_phase_ns(
    gpus: &[&Gpu],
    blocks: u32,
    threads: u32,
    host_parties: u32,
) -> Result<f64, Box<dyn std::error::Error>> {
    let runtimes: Vec<_> = gpus.iter().map(|gpu| &***gpu).collect();
    let mut barrier = MultiGrid::with_host_parties(&runtimes, host_parties)?;
    let kernels = gpus
        .iter()
        .map(|gpu| gpu.kernel("multi_grid_timed"))
        .collect::<Result<Vec<_>, _>>()?;
    let elapsed = gpus
        .iter()
        .map(|gpu| gpu.zeros::<u64>(1))
        .collect::<Result<Vec<_>, _>>()?;
    let args = elapsed
        .iter()
        .map(|elapsed| KernelArgs::new().arg(PHASES).arg(elapsed))
        .collect();
    let kernels: Vec<_> = kernels.iter().collect();
    // SAFETY: `multi_grid_timed(MultiGrid, phases, elapsed)` on every GPU, the same
    // grid; `elapsed` outlives the kernels (synchronized below); each party arrives
    // once per phase.
    let parties = unsafe {
        barrier.launch_with_host_parties(
            &kernels,
            LaunchConfig::new(blocks, threads),
            args,
            |mut party| (0..PHASES).all(|_| party.arrive_and_wait(PATIENCE).is_ok()),
        )
    }?;
    if parties.contains(&false) {
        return Err("a host party's wait failed".into());
    }
    for gpu in gpus {
        gpu.synchronize()?;
    }
    let ns = gpus[0].download(&elapsed[0])?[0];
    Ok(ns as f64 / f64::from(PHASES - 1))
}

/// One launch of `peer_ping_pong` on each GPU (one thread each, through two `GpuToGpu`
/// semaphores, each in the memory of the GPU that polls it): nanoseconds per round
/// trip.
fn round_trip_ns(gpus: [&Gpu; 2], spin: bool) -> Result<f64, Box<dyn std::error::Error>> {
    let inbox = |owner: &Gpu, user: &Gpu| -> Result<PeerMemory, Box<dyn std::error::Error>> {
        Ok(owner.place_for_peers(&HandoffSemaphore::<GpuToGpu>::new(0), &[&**user])?)
    };
    let inboxes = [inbox(gpus[0], gpus[1])?, inbox(gpus[1], gpus[0])?];
    let elapsed = gpus[0].zeros::<u64>(1)?;
    std::thread::scope(|scope| {
        let launches: Vec<_> = (0..2)
            .map(|i| {
                let (gpu, inboxes, elapsed) = (gpus[i], &inboxes, &elapsed);
                scope.spawn(move || -> Result<(), CudaError> {
                    let kernel = gpu.kernel("peer_ping_pong")?;
                    let stream = gpu.default_stream();
                    let args = KernelArgs::new()
                        .arg(&inboxes[1 - i])
                        .arg(&inboxes[i])
                        .arg(u32::from(i == 0))
                        .arg(ROUND_TRIPS)
                        .arg(u32::from(spin));
                    // GPU 0 times the round trips; GPU 1 gets a null `elapsed`.
                    let args = if i == 0 {
                        args.arg(elapsed)
                    } else {
                        args.arg(0_u64)
                    };
                    // SAFETY: `peer_ping_pong(outgoing, incoming, first, rounds, spin,
                    // elapsed)`; the semaphores and `elapsed` outlive the kernel
                    // (synchronized here); GPU 1 never writes `elapsed`.
                    unsafe { kernel.launch(LaunchConfig::new(1, 1).on(&stream), args) }?;
                    stream.synchronize()
                })
            })
            .collect();
        launches
            .into_iter()
            .try_for_each(|launch| launch.join().expect("a launch thread panicked"))
    })?;
    let ns = gpus[0].download(&elapsed)?[0];
    // The kernel times every round trip but the first (see `peer_ping_pong`).
    Ok(ns as f64 / f64::from(ROUND_TRIPS - 1))
}
