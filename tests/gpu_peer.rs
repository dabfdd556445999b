//! `System`-scope objects in one GPU's memory used by kernels on two GPUs at once
//! (`Runtime::place_for_peers`; kernels in `kernels/src/peer.rs`).
//!
//! They need two GPUs: on a machine without a CUDA driver every test prints "skipped:
//! no CUDA driver" and passes, with one GPU "skipped: fewer than two GPUs". The
//! placement, `MultiGrid`, abort and ring-of-handoffs tests take every GPU of the
//! machine (`every_gpu`); the latch, system barrier and pairwise handoff tests GPUs 0
//! and 1. The
//! refusal of a link without native peer atomics is also tested without GPUs
//! (`sync-host/src/cuda/peer.rs`, forced through `PeerLink::admits`).
//!
//! Each GPU's kernel is launched from a thread of its own, so the kernels meet in both
//! of the bundle's modes (with `CUDA_LAUNCH_BLOCKING=1` a launch returns only when its
//! kernel ends).

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::hang_guard;
use common::peer::{
    every_gpu, handoff_payload, launch_on_both, multi_grid_phases, system_barrier_phases, two_gpus,
    HANDOFF_RING,
};
use harness::Gpu;
use scoped_sync::cuda::cudarc::driver::CudaSlice;
use scoped_sync::cuda::{
    HostPartyError, KernelArgs, LaunchConfig, MultiGrid, PeerLink, PeerMemory, PlacementError,
};
use scoped_sync::{BusStopSource, GpuToGpu, HandoffSemaphore, Latch};

#[test]
fn placement_follows_the_peer_attributes_of_every_pair() {
    let Some(gpus) = every_gpu() else {
        return;
    };
    let pairs = gpus.iter().flat_map(|user| {
        gpus.iter()
            .filter(move |owner| owner.ordinal() != user.ordinal())
            .map(move |owner| (user, owner))
    });
    for (user, owner) in pairs {
        let link: PeerLink = user.peer_link(owner).unwrap();
        eprintln!("{link:?}");
        let placed = owner.place_for_peers(&Latch::new(1), &[user]);
        match (link.admits("Latch<System>", true), placed) {
            (Ok(()), Ok(memory)) => {
                assert_eq!(memory.owner(), owner.ordinal());
                assert_eq!(memory.len_bytes(), std::mem::size_of::<Latch>());
                assert_eq!(memory.read_words().unwrap(), [1], "the latch's count");
            }
            (
                Err(PlacementError::PeerAttribute { attribute, .. }),
                Err(PlacementError::PeerAttribute {
                    attribute: refused, ..
                }),
            ) => assert_eq!(attribute, refused),
            (expected, placed) => panic!("{link:?}: expected {expected:?}, placed {placed:?}"),
        }
    }
}

#[test]
fn a_latch_in_one_gpus_memory_opens_for_kernels_on_both() {
    let Some((gpu0, gpu1)) = two_gpus() else {
        return;
    };
    let (blocks, threads) = (4_u32, 64_u32);
    let per_gpu = blocks * threads;
    let latch = match gpu1.place_for_peers(&Latch::new(2 * per_gpu), &[&gpu0]) {
        Err(PlacementError::PeerAttribute { attribute, .. }) => {
            common::skip(&format!("{attribute} = 0 from GPU 0 to GPU 1"));
            return;
        }
        placed => placed.unwrap(),
    };
    let counts = [gpu0.zeros::<u32>(2).unwrap(), gpu1.zeros::<u32>(2).unwrap()];
    let args = [0, 1].map(|i| {
        let gpu = [&gpu0, &gpu1][i];
        let address = gpu.address(&counts[i]);
        KernelArgs::new().arg(&latch).arg(address).arg(address + 4)
    });
    hang_guard("latch across two GPUs", 60, || {
        // SAFETY: (latch, opened, failures) pointers, as `peer_latch_count_down_and_wait`
        // takes; the latch expects both launches' threads; everything outlives them.
        unsafe {
            launch_on_both(
                [&gpu0, &gpu1],
                "peer_latch_count_down_and_wait",
                (blocks, threads),
                args,
            )
        };
    });
    for (gpu, count) in [(&gpu0, &counts[0]), (&gpu1, &counts[1])] {
        assert_eq!(
            gpu.download(count).unwrap(),
            [per_gpu, 0],
            "GPU {}: (opened, timed out)",
            gpu.ordinal()
        );
    }
    assert_eq!(latch.read_words().unwrap(), [0], "counted down to zero");
}

#[test]
fn a_system_barrier_in_peer_memory_runs_100000_phases_with_a_cross_gpu_neighbour_check() {
    let Some((gpu0, gpu1)) = two_gpus() else {
        return;
    };
    system_barrier_phases(&gpu0, &gpu1, 100_000);
}

#[test]
fn a_multi_grid_barrier_runs_100000_phases_with_a_cross_gpu_neighbour_check() {
    let Some(gpus) = every_gpu() else {
        return;
    };
    let gpus: Vec<&Gpu> = gpus.iter().collect();
    let blocks = smallest_sm_count(&gpus);
    for threads in [128, 1024] {
        let fit: Vec<u32> = gpus
            .iter()
            .map(|gpu| {
                let kernel = gpu.kernel("multi_grid_phases").unwrap();
                kernel.max_coresident_blocks(threads).unwrap()
            })
            .collect();
        if fit.iter().any(|&fit| fit < blocks) {
            common::skip(&format!(
                "{blocks} blocks of {threads} threads per GPU: {fit:?} fit at once"
            ));
            continue;
        }
        // racecheck, which judges the shared-memory accesses every phase makes, ran
        // 100,000 phases past 380 s on two H200s; 1000 under it.
        let phases = if common::sanitizer_tool().as_deref() == Some("racecheck") {
            1_000
        } else {
            100_000
        };
        let (counts, elapsed) =
            multi_grid_phases(&gpus, (blocks, threads), &vec![phases; gpus.len()], 10_000);
        eprintln!(
            "{blocks} × {threads} per GPU on {} GPUs, {phases} phases: {elapsed:?}",
            gpus.len()
        );
        assert_eq!(
            counts,
            vec![[0, 0]; gpus.len()],
            "{blocks} × {threads}: (stale neighbour slots, timed-out phases) per GPU"
        );
    }
}

/// A `MultiGrid` of one GPU (rank 0 of 1) runs on any GPU host: the barrier's block
/// vote and first-warp wait are the same as with several GPUs, so synccheck judges
/// them here too.
#[test]
fn a_multi_grid_barrier_of_one_gpu_runs_10000_phases_at_128_and_1024_threads() {
    let Some(gpu) = common::gpu_runtime() else {
        return;
    };
    let blocks = gpu.sm_count().unwrap();
    for threads in [128, 1024] {
        let kernel = gpu.kernel("multi_grid_phases").unwrap();
        let fit = kernel.max_coresident_blocks(threads).unwrap();
        if fit < blocks {
            common::skip(&format!(
                "{blocks} blocks of {threads} threads: {fit} fit at once"
            ));
            continue;
        }
        // Under a compute sanitizer, which runs kernels a hundredfold slower, 1000.
        let phases = if common::under_compute_sanitizer().is_some() {
            1_000
        } else {
            10_000
        };
        let (counts, elapsed) = multi_grid_phases(&[&gpu], (blocks, threads), &[phases], 10_000);
        eprintln!("{blocks} × {threads}, one GPU, {phases} phases: {elapsed:?}");
        assert_eq!(
            counts,
            [[0, 0]],
            "{blocks} × {threads}: (stale slots, timed-out phases)"
        );
    }
}

#[test]
fn a_gpu_that_never_arrives_ends_the_others_wait_with_an_error_within_a_second() {
    let Some(gpus) = every_gpu() else {
        return;
    };
    let gpus: Vec<&Gpu> = gpus.iter().collect();
    let (blocks, threads) = (smallest_sm_count(&gpus), 128);
    // Load every module first, so the timing below is the barrier's.
    for gpu in &gpus {
        gpu.kernel("multi_grid_phases").unwrap();
    }
    // The last GPU runs no phase: its kernel ends without arriving.
    let mut phases = vec![1; gpus.len()];
    *phases.last_mut().unwrap() = 0;
    let (counts, elapsed) = multi_grid_phases(&gpus, (blocks, threads), &phases, 300);
    let mut expected = vec![[0, blocks * threads]; gpus.len()];
    *expected.last_mut().unwrap() = [0, 0];
    assert_eq!(
        counts, expected,
        "(stale neighbour slots, timed-out phases) per GPU: every thread of the GPUs that \
         arrived times out"
    );
    // Under compute-sanitizer launches and kernels run a hundredfold slower.
    if common::under_compute_sanitizer().is_none() {
        assert!(
            elapsed < std::time::Duration::from_secs(1),
            "the waiting GPUs' threads gave up after {elapsed:?}, not within 1 s"
        );
    }
}

/// The blocks per GPU a cooperative grid of every GPU in `gpus` can have.
fn smallest_sm_count(gpus: &[&Gpu]) -> u32 {
    gpus.iter()
        .map(|gpu| gpu.sm_count().unwrap())
        .min()
        .unwrap()
}

#[test]
fn an_abort_on_one_gpu_ends_the_phase_on_both_with_broken() {
    if let Some(gpus) = every_gpu() {
        abort_after_phases(&gpus.iter().collect::<Vec<_>>(), Abort::ByGpu0);
    }
}

#[test]
fn an_abort_on_a_gpu_ends_a_host_partys_wait_with_broken() {
    if let Some(gpus) = every_gpu() {
        abort_after_phases(&gpus.iter().collect::<Vec<_>>(), Abort::ByGpu0WithHostParty);
    }
}

#[test]
fn an_abort_by_a_host_party_ends_the_phase_on_both_gpus_with_broken() {
    if let Some(gpus) = every_gpu() {
        abort_after_phases(&gpus.iter().collect::<Vec<_>>(), Abort::ByHostParty);
    }
}

/// The three aborts on a `MultiGrid` of one GPU, which runs on any GPU host: the wait's
/// paths that end a phase as broken are the same as with several GPUs, so the
/// sanitizers judge them here too.
#[test]
fn every_abort_ends_the_phase_of_a_multi_grid_of_one_gpu_with_broken() {
    let Some(gpu) = common::gpu_runtime() else {
        return;
    };
    for abort in [
        Abort::ByGpu0,
        Abort::ByGpu0WithHostParty,
        Abort::ByHostParty,
    ] {
        abort_after_phases(&[&gpu], abort);
    }
}

/// Phases the abort tests pass before the abort.
const ABORT_AFTER: u32 = 50;

/// Who breaks the barrier in [`abort_after_phases`], and whether a host party takes part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Abort {
    /// Thread 0 of GPU 0, without host parties.
    ByGpu0,
    /// Thread 0 of GPU 0, with one host party.
    ByGpu0WithHostParty,
    /// The one host party.
    ByHostParty,
}

/// `multi_grid_abort_after` on both GPUs: every thread of both GPUs (and the host party,
/// if any) passes [`ABORT_AFTER`] phases, then `abort` breaks the barrier and every
/// wait of the next phase fails with `Broken`, all of them, at once: a phase that
/// completed before the abort completes for every thread, also for one that sees it
/// complete only after the abort (a race the first H200 run of the GPU-only case
/// caught), and none passes the next.
fn abort_after_phases(gpus: &[&Gpu], abort: Abort) {
    let blocks = gpus
        .iter()
        .map(|gpu| gpu.sm_count().unwrap())
        .min()
        .unwrap();
    let threads = 128;
    let runtimes: Vec<_> = gpus.iter().map(|gpu| &***gpu).collect();
    let mut barrier = if abort == Abort::ByGpu0 {
        MultiGrid::new(&runtimes)
    } else {
        MultiGrid::with_host_parties(&runtimes, 1)
    }
    .unwrap();
    let kernels: Vec<_> = gpus
        .iter()
        .map(|gpu| gpu.kernel("multi_grid_abort_after").unwrap())
        .collect();
    let counts: Vec<_> = gpus
        .iter()
        .map(|gpu| gpu.zeros::<u32>(2).unwrap())
        .collect();
    let args = (0..gpus.len())
        .map(|i| {
            let counts = gpus[i].address(&counts[i]);
            KernelArgs::new()
                .arg(ABORT_AFTER)
                .arg(u32::from(i == 0 && abort != Abort::ByHostParty))
                .arg(counts)
                .arg(counts + 4)
        })
        .collect();
    let started = std::time::Instant::now();
    let parties = hang_guard(
        &format!("MultiGrid abort across {} GPUs, {abort:?}", gpus.len()),
        300,
        || {
            let kernels: Vec<_> = kernels.iter().collect();
            // SAFETY: `multi_grid_abort_after(MultiGrid, phases, abort, broken, passed)` on
            // every GPU, the same grid on each; the counts outlive the kernels; a host
            // party arrives as often as the kernels' threads (`ABORT_AFTER` + 1 times).
            let parties = unsafe {
                barrier.launch_with_host_parties(
                    &kernels,
                    LaunchConfig::new(blocks, threads),
                    args,
                    |mut party| {
                        let patience = Duration::from_secs(10);
                        let mut waits: Vec<_> = (0..ABORT_AFTER)
                            .map(|_| party.arrive_and_wait(patience))
                            .collect();
                        if abort == Abort::ByHostParty {
                            party.abort();
                        }
                        waits.push(party.arrive_and_wait(patience));
                        waits
                    },
                )
            }
            .unwrap();
            for gpu in gpus {
                gpu.synchronize().unwrap();
            }
            parties
        },
    );
    let elapsed = started.elapsed();
    let per_gpu = blocks * threads;
    for (i, gpu) in gpus.iter().enumerate() {
        let words = gpu.download(&counts[i]).unwrap();
        assert_eq!(
            (words[0], words[1]),
            (per_gpu, ABORT_AFTER * per_gpu),
            "{abort:?}, GPU {i}: (waits ended Broken, waits passed); every thread passes {ABORT_AFTER} phases, then sees the abort"
        );
    }
    for waits in parties {
        let passed = waits.iter().take_while(|wait| wait.is_ok()).count();
        assert_eq!(
            (passed, waits.last()),
            (ABORT_AFTER as usize, Some(&Err(HostPartyError::Broken))),
            "{abort:?}: the host party's (phases passed, last wait)"
        );
    }
    // Far below the 10 s patience: the abort, not a timeout, ended the waits.
    assert!(
        elapsed < std::time::Duration::from_secs(5),
        "{abort:?}: {elapsed:?}"
    );
}

/// One handoff link: units from one thread of `producer` to one thread of `consumer`
/// through a ring of [`HANDOFF_RING`] payload slots. The work semaphore and the slots
/// sit in the consumer's memory, the credits in the producer's: every poll is local,
/// every release one store across.
struct HandoffLink<'a> {
    producer: &'a Gpu,
    consumer: &'a Gpu,
    work: PeerMemory,
    credits: PeerMemory,
    stop: PeerMemory,
    slots: PeerMemory,
    failures: CudaSlice<u32>,
    result: CudaSlice<u64>,
}

impl<'a> HandoffLink<'a> {
    fn new(producer: &'a Gpu, consumer: &'a Gpu) -> Self {
        let work = consumer
            .place_for_peers(&HandoffSemaphore::<GpuToGpu>::new(0), &[producer])
            .unwrap();
        let credits = producer
            .place_for_peers(
                &HandoffSemaphore::<GpuToGpu>::new(HANDOFF_RING),
                &[consumer],
            )
            .unwrap();
        let stop = producer
            .place_for_peers(&BusStopSource::new(), &[consumer])
            .unwrap();
        let slots = consumer
            .zeros_for_peers(2 * HANDOFF_RING as usize, &[producer])
            .unwrap();
        Self {
            producer,
            consumer,
            work,
            credits,
            stop,
            slots,
            failures: producer.zeros::<u32>(1).unwrap(),
            result: consumer.zeros::<u64>(3).unwrap(),
        }
    }

    /// The count, checksum and order of `units` units, and the producer's waits.
    fn check(&self, units: u64) {
        let expected = (0..units).fold(0u64, |sum, k| sum.wrapping_add(handoff_payload(k)));
        let (from, to) = (self.producer.ordinal(), self.consumer.ordinal());
        assert_eq!(
            self.producer.download(&self.failures).unwrap(),
            [0],
            "GPU {from} → GPU {to}: producer waits that failed"
        );
        let result = self.consumer.download(&self.result).unwrap();
        assert_eq!(
            (result[0], result[1], result[2]),
            (units, expected, 0),
            "GPU {from} → GPU {to}: consumer (units, checksum, out-of-order units or failed waits)"
        );
    }

    /// `peer_handoff_produce`'s arguments for this link: `units` units.
    fn producer_args(&self, units: u64) -> KernelArgs<'_> {
        KernelArgs::new()
            .arg(&self.work)
            .arg(&self.credits)
            .arg(&self.slots)
            .arg(units)
            .arg(&self.stop)
            .arg(&self.failures)
    }

    /// `peer_handoff_consume`'s arguments for this link.
    fn consumer_args(&self) -> KernelArgs<'_> {
        KernelArgs::new()
            .arg(&self.work)
            .arg(&self.credits)
            .arg(&self.slots)
            .arg(&self.stop)
            .arg(&self.result)
    }
}

/// Launches each `(gpu, kernel, arguments, threads)` in one block from a thread of its
/// own, on the GPU's default stream, and waits for all.
fn launch_each(what: &str, launches: Vec<(&Gpu, &str, KernelArgs<'_>, u32)>) {
    hang_guard(what, 300, || {
        std::thread::scope(|s| {
            for (gpu, name, args, threads) in launches {
                s.spawn(move || {
                    let kernel = gpu.kernel(name).unwrap();
                    let stream = gpu.default_stream();
                    let config = LaunchConfig::new(1, threads).on(&stream);
                    // SAFETY: the kernels' signatures; every object outlives them.
                    unsafe { kernel.launch(config, args) }.unwrap();
                    stream.synchronize().unwrap();
                });
            }
        });
    });
}

#[test]
fn a_handoff_from_one_gpu_to_another_moves_1000000_units_with_count_and_checksum() {
    let Some((gpu0, gpu1)) = two_gpus() else {
        return;
    };
    const UNITS: u64 = 1_000_000;
    let link = HandoffLink::new(&gpu0, &gpu1);
    let started = std::time::Instant::now();
    launch_each(
        "a handoff between two GPUs",
        vec![
            (&gpu0, "peer_handoff_produce", link.producer_args(UNITS), 32),
            (&gpu1, "peer_handoff_consume", link.consumer_args(), 32),
        ],
    );
    eprintln!(
        "{UNITS} units GPU 0 → GPU 1 through a ring of {HANDOFF_RING}: {:?}",
        started.elapsed()
    );
    link.check(UNITS);
}

#[test]
fn handoffs_around_a_ring_of_every_gpu_move_their_units_at_once() {
    let Some(gpus) = every_gpu() else {
        return;
    };
    // Under a compute sanitizer, which runs kernels a hundredfold slower, 10 000.
    let units: u64 = if common::under_compute_sanitizer().is_some() {
        10_000
    } else {
        200_000
    };
    // Link i hands units from GPU i to GPU i + 1 (the last to GPU 0), every link at
    // once: each GPU's one kernel consumes on the link before it and produces on its
    // own (`peer_handoff_relay`, two warps).
    let count = gpus.len();
    let links: Vec<_> = (0..count)
        .map(|i| HandoffLink::new(&gpus[i], &gpus[(i + 1) % count]))
        .collect();
    let launches = (0..count)
        .map(|i| {
            let (incoming, outgoing) = (&links[(i + count - 1) % count], &links[i]);
            let args = KernelArgs::new()
                .arg(&incoming.work)
                .arg(&incoming.credits)
                .arg(&incoming.slots)
                .arg(&incoming.stop)
                .arg(&incoming.result)
                .arg(&outgoing.work)
                .arg(&outgoing.credits)
                .arg(&outgoing.slots)
                .arg(units)
                .arg(&outgoing.stop)
                .arg(&outgoing.failures);
            (&gpus[i], "peer_handoff_relay", args, 64)
        })
        .collect();
    let started = std::time::Instant::now();
    launch_each("a ring of handoffs", launches);
    eprintln!(
        "{units} units on each of {} links of a ring: {:?}",
        links.len(),
        started.elapsed()
    );
    for link in &links {
        link.check(units);
    }
}

#[test]
fn a_host_thread_takes_part_in_a_multi_grid_barrier_for_10000_phases() {
    let Some(gpus) = every_gpu() else {
        return;
    };
    let gpus: Vec<&Gpu> = gpus.iter().collect();
    let (blocks, threads) = (smallest_sm_count(&gpus), 128);
    const PHASES: u32 = 10_000;
    let runtimes: Vec<_> = gpus.iter().map(|gpu| &***gpu).collect();
    let mut barrier = MultiGrid::with_host_parties(&runtimes, 1).unwrap();
    let kernels: Vec<_> = gpus
        .iter()
        .map(|gpu| gpu.kernel("multi_grid_host_phases").unwrap())
        .collect();
    // Mapped host memory every GPU reaches (portable): the host's slot pair and one
    // pair per GPU.
    let host_slot = gpus[0].mapped(2).unwrap();
    let gpu_slots = gpus[0].mapped(2 * gpus.len()).unwrap();
    let counts: Vec<_> = gpus
        .iter()
        .map(|gpu| gpu.zeros::<u32>(2).unwrap())
        .collect();
    let args = (0..gpus.len())
        .map(|i| {
            let counts = gpus[i].address(&counts[i]);
            KernelArgs::new()
                .arg(&host_slot)
                .arg(&gpu_slots)
                .arg(PHASES)
                .arg(10_000_u32)
                .arg(counts)
                .arg(counts + 4)
        })
        .collect();
    let started = std::time::Instant::now();
    let stale = hang_guard("a host party at a MultiGrid barrier", 300, || {
        // SAFETY: `multi_grid_host_phases(MultiGrid, host_slot, gpu_slots, phases,
        // timeout_ms, failures, timeouts)` on every GPU, the same grid; the slots and
        // counts outlive the kernels; the party arrives once per phase.
        let results = unsafe {
            barrier.launch_with_host_parties(
                &kernels.iter().collect::<Vec<_>>(),
                LaunchConfig::new(blocks, threads),
                args,
                |mut party| {
                    let mut stale = 0u32;
                    for phase in 1..=PHASES {
                        let parity = (phase % 2) as usize;
                        host_slot.host_words()[parity].store(phase, Ordering::Relaxed);
                        if party.arrive_and_wait(Duration::from_secs(10)).is_err() {
                            return Err(phase);
                        }
                        for gpu in 0..gpus.len() {
                            if gpu_slots.read(2 * gpu + parity) != phase {
                                stale += 1;
                            }
                        }
                    }
                    Ok(stale)
                },
            )
        }
        .unwrap();
        for gpu in &gpus {
            gpu.synchronize().unwrap();
        }
        results
    });
    let elapsed = started.elapsed();
    eprintln!(
        "{blocks} × {threads} per GPU on {} GPUs and one host thread, {PHASES} phases: {elapsed:?}",
        gpus.len()
    );
    assert_eq!(
        stale,
        [Ok(0)],
        "the host party: stale GPU slots, or the phase it failed"
    );
    for (i, gpu) in gpus.iter().enumerate() {
        let words = gpu.download(&counts[i]).unwrap();
        assert_eq!(
            (words[0], words[1]),
            (0, 0),
            "GPU {i}: (blocks that saw a stale host slot, failed phases)"
        );
    }
}
