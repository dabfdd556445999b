//! `MultiGrid` across processes, one GPU each (`MultiGrid::join` over a
//! `ProcessGroup`): each test starts this binary once per GPU as the group's ranks
//! (`rank`, which runs the scenario its environment names), as `scoped-sync-run` would.
//!
//! Needs two GPUs: without a CUDA driver each test prints "skipped: no CUDA driver",
//! with one GPU "skipped: fewer than two GPUs". The barrier tests take every GPU of the
//! machine; the `System` barrier, death, trap, handoff and host-party tests
//! (`MultiGrid::join_with_host_parties`) GPUs 0 and 1. The tests of the barrier in
//! NVSHMEM's symmetric heap (`MultiGrid::join_nvshmem`, and crossing through NVSHMEM's
//! signal operations, `MultiGrid::join_nvshmem_signals`) and of the handoff through
//! NVSHMEM's signals (`Nvshmem::handoff`) need NVSHMEM 3
//! (`NVSHMEM_HOME`, or an active Python environment with the `nvidia-nvshmem-cu13`
//! wheel): without it they print "skipped: no NVSHMEM"; the signal tests also need the
//! NVSHMEM shim built (`NVSHMEM_HOME` at build time, the release loaded at run time).

mod common;

use common::peer::{handoff_payload, HANDOFF_RING};

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::{Gpu, KERNELS_NVSHMEM};
use scoped_sync::cuda::{CudaError, HostPartyError, KernelArgs, LaunchConfig, MultiGrid, Nvshmem};
use scoped_sync::process::{
    JobSecret, PeerFailure, ProcessGroup, ProcessGroupError, Rendezvous, DIRECTORY_VARIABLE,
    JOB_VARIABLE, SECRET_VARIABLE,
};
use scoped_sync::{Barrier, BusStopSource, GpuToGpu, HandoffSemaphore};

/// The variable that makes `rank` run, and names its scenario.
const SCENARIO: &str = "GPU_PROCESS_SCENARIO";

/// Phases of the barrier test.
const PHASES: u32 = 100_000;

/// How many GPUs the machine has, or `None` after saying why the test is skipped.
fn gpu_count() -> Option<usize> {
    common::gpu_runtime()?;
    let count = scoped_sync::cuda::Runtime::device_count().unwrap();
    if count < 2 {
        common::skip("fewer than two GPUs");
        return None;
    }
    Some(count)
}

/// Whether NVSHMEM's host library is here, after saying why the test is skipped if not.
fn nvshmem_found() -> bool {
    match Nvshmem::library() {
        Ok(_) => true,
        Err(error) => {
            common::skip(&format!("no NVSHMEM ({error})"));
            false
        }
    }
}

/// Whether the kernels linked with the NVSHMEM shim were built into this program, after
/// saying why the test is skipped if not.
fn nvshmem_shim_built() -> bool {
    match KERNELS_NVSHMEM.image(KERNELS_NVSHMEM.default_build()) {
        Ok(_) => true,
        Err(error) => {
            common::skip(&format!(
                "no kernels linked with the NVSHMEM shim ({error})"
            ));
            false
        }
    }
}

/// Starts `size` ranks of this binary running `scenario`; rank 1's standard output is
/// piped (the death test reads it), the others' inherited.
fn start_ranks(scenario: &str, size: usize) -> Vec<Child> {
    let secret = JobSecret::generate().unwrap();
    let job = format!("{scenario}-{}", std::process::id());
    (0..size)
        .map(|rank| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "rank", "--nocapture", "--test-threads=1"])
                .env(SCENARIO, scenario)
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", size.to_string())
                .env("LOCAL_RANK", rank.to_string())
                .env(SECRET_VARIABLE, secret.to_hex())
                .env(
                    DIRECTORY_VARIABLE,
                    std::env::temp_dir().join("gpu-process-tests"),
                )
                .env(JOB_VARIABLE, &job)
                .stdout(if rank == 1 {
                    Stdio::piped()
                } else {
                    Stdio::inherit()
                })
                .spawn()
                .unwrap()
        })
        .collect()
}

/// Waits for every rank (at most `secs` seconds) and asserts each succeeded, but those
/// in `killed`.
fn expect_success(name: &str, ranks: Vec<Child>, killed: &[usize], secs: u64) {
    common::hang_guard(name, secs, || {
        for (rank, mut child) in ranks.into_iter().enumerate() {
            if let Some(mut out) = child.stdout.take() {
                std::io::copy(&mut out, &mut std::io::stdout()).unwrap();
            }
            let status = child.wait().unwrap();
            if !killed.contains(&rank) {
                assert!(status.success(), "{name}: rank {rank} failed ({status})");
            }
        }
    });
}

#[test]
fn a_multi_grid_across_processes_runs_100000_phases_with_a_cross_gpu_neighbour_check() {
    let Some(count) = gpu_count() else {
        return;
    };
    let ranks = start_ranks("phases", count);
    expect_success("MultiGrid across processes", ranks, &[], 300);
}

#[test]
fn a_multi_grid_in_nvshmems_heap_runs_100000_phases_with_a_cross_gpu_neighbour_check() {
    let Some(count) = gpu_count() else {
        return;
    };
    if !nvshmem_found() {
        return;
    }
    let ranks = start_ranks("nvshmem-phases", count);
    expect_success("MultiGrid in NVSHMEM's heap", ranks, &[], 300);
}

#[test]
fn a_multi_grid_crossing_by_nvshmem_signals_runs_100000_phases_with_a_neighbour_check() {
    let Some(count) = gpu_count() else {
        return;
    };
    if !nvshmem_found() || !nvshmem_shim_built() {
        return;
    }
    let ranks = start_ranks("nvshmem-signals-phases", count);
    expect_success("MultiGrid crossing by NVSHMEM signals", ranks, &[], 300);
}

#[test]
fn a_handoff_from_one_process_to_another_moves_1000000_units_with_count_and_checksum() {
    if gpu_count().is_none() {
        return;
    }
    let ranks = start_ranks("handoff", 2);
    expect_success("a handoff across processes", ranks, &[], 300);
}

#[test]
fn a_handoff_across_processes_by_nvshmem_signals_moves_1000000_units_with_count_and_checksum() {
    if gpu_count().is_none() || !nvshmem_found() || !nvshmem_shim_built() {
        return;
    }
    let ranks = start_ranks("nvshmem-signals-handoff", 2);
    expect_success("a handoff by NVSHMEM signals", ranks, &[], 300);
}

#[test]
fn host_parties_of_both_processes_take_part_in_10000_phases_with_cross_process_checks() {
    if gpu_count().is_none() {
        return;
    }
    let ranks = start_ranks("host-parties-phases", 2);
    expect_success("host parties across processes", ranks, &[], 300);
}

#[test]
fn a_killed_process_ends_the_host_parties_and_kernels_waits_within_a_second() {
    if gpu_count().is_none() {
        return;
    }
    kill_rank_1_mid_phase("host-parties-");
}

#[test]
fn a_killed_process_ends_the_others_waits_within_a_second_and_the_gpus_work_after() {
    if gpu_count().is_none() {
        return;
    }
    kill_rank_1_mid_phase("");
}

#[test]
fn a_killed_process_ends_the_nvshmem_barriers_waits_and_no_survivor_hangs() {
    if gpu_count().is_none() || !nvshmem_found() {
        return;
    }
    kill_rank_1_mid_phase("nvshmem-");
}

#[test]
fn a_killed_process_ends_the_nvshmem_signal_barriers_waits_and_no_survivor_hangs() {
    if gpu_count().is_none() || !nvshmem_found() || !nvshmem_shim_built() {
        return;
    }
    kill_rank_1_mid_phase("nvshmem-signals-");
}

/// Starts two ranks of the `killed` scenario (its variant named by `engine`, "",
/// "nvshmem-" or "nvshmem-signals-"), kills rank 1 once its kernel runs, expects rank 0 to end on its own,
/// then runs the barrier again on the same GPUs.
fn kill_rank_1_mid_phase(engine: &str) {
    let mut ranks = start_ranks(&format!("{engine}killed"), 2);
    let mut lines = BufReader::new(ranks[1].stdout.take().unwrap()).lines();
    common::hang_guard("a killed process", 120, || loop {
        let line = lines
            .next()
            .expect("rank 1 ended before its launch")
            .unwrap();
        println!("{line}");
        if line.contains("launching") {
            break;
        }
    });
    // Mid-phase: by now rank 1's kernel runs ten million phases with rank 0's (a
    // launch takes milliseconds, under a compute sanitizer seconds; with
    // `CUDA_LAUNCH_BLOCKING=1` it returns only at the kernel's end, so the rank says so
    // before it launches).
    let launch = if common::under_compute_sanitizer().is_some() {
        30
    } else {
        1
    };
    std::thread::sleep(Duration::from_secs(launch));
    ranks[1].kill().unwrap();
    expect_success("a killed process", ranks, &[1], 120);
    // Nothing is left mapped or stuck: the same GPUs run a barrier again.
    let again = start_ranks(&format!("{engine}phases"), 2);
    expect_success("MultiGrid after a killed process", again, &[], 300);
}

#[test]
fn a_system_barrier_in_one_processs_gpu_runs_100000_phases_for_kernels_of_both() {
    if gpu_count().is_none() {
        return;
    }
    let ranks = start_ranks("system-barrier", 2);
    expect_success("a System barrier across processes", ranks, &[], 300);
}

#[test]
fn a_trapped_kernel_in_one_process_ends_the_others_waits_within_a_second() {
    if gpu_count().is_none() {
        return;
    }
    let ranks = start_ranks("trap", 2);
    expect_success("a trapped kernel", ranks, &[], 120);
}

/// One rank of a test above; does nothing unless a test started it.
#[test]
fn rank() {
    let Some(scenario) = std::env::var_os(SCENARIO) else {
        return;
    };
    let rendezvous = Rendezvous::from_env()
        .unwrap()
        .timeout(Duration::from_secs(120));
    let gpu = Gpu::open_ordinal(rendezvous.local_rank()).unwrap();
    let group = rendezvous.join().unwrap();
    if scenario == "system-barrier" {
        return system_barrier_rank(&gpu, &group);
    }
    if scenario == "handoff" {
        return handoff_rank(&gpu, &group, Engine::Driver);
    }
    if scenario == "nvshmem-signals-handoff" {
        return handoff_rank(&gpu, &group, Engine::NvshmemSignals);
    }
    if let Some(what) = scenario.to_str().unwrap().strip_prefix("host-parties-") {
        return host_parties_rank(&gpu, &group, what);
    }
    let rank = group.rank();
    let (blocks, threads) = (gpu.sm_count().unwrap(), 128_u32);
    let per_gpu = blocks * threads;
    let words = 2 * group.size() * per_gpu as usize;
    // The barrier, and the slots in rank 0's GPU: by driver IPC, or in NVSHMEM's heap
    // (the slots are rank 0's copy of a symmetric allocation there, stored to through
    // its peer address also where the barrier crosses by NVSHMEM's signals).
    let scenario = scenario.to_str().unwrap();
    let (scenario, engine) = if let Some(scenario) = scenario.strip_prefix("nvshmem-signals-") {
        (scenario, Engine::NvshmemSignals)
    } else if let Some(scenario) = scenario.strip_prefix("nvshmem-") {
        (scenario, Engine::Nvshmem)
    } else {
        (scenario, Engine::Driver)
    };
    let mut module = None;
    let (mut barrier, slots, _slots_memory): (MultiGrid, u64, Box<dyn std::any::Any>) =
        if engine == Engine::Driver {
            let barrier = MultiGrid::join(&gpu, &group).unwrap();
            let slots = gpu.zeros_for_processes(&group, 0, words).unwrap();
            (barrier, slots.device_address(), Box::new(slots))
        } else {
            let shmem = Nvshmem::start(&gpu, &group).unwrap();
            if rank == 0 {
                println!("rank 0: {}", shmem.version());
            }
            let barrier = if engine == Engine::NvshmemSignals {
                module = Some(shmem.load(&KERNELS_NVSHMEM).unwrap());
                MultiGrid::join_nvshmem_signals(&shmem).unwrap()
            } else {
                MultiGrid::join_nvshmem(&shmem).unwrap()
            };
            let slots = shmem.zeros(words * 4).unwrap();
            (barrier, slots.peer_address(0).unwrap(), Box::new(slots))
        };
    // The kernels: the NVSHMEM build where the barrier crosses by signals.
    let kernel = |name: &str| match &module {
        Some(module) => module.kernel(name).unwrap(),
        None => gpu.kernel(name).unwrap(),
    };
    assert_eq!(barrier.ranks(), group.size());
    let counts = gpu.zeros::<u32>(2).unwrap();
    let news: Arc<Mutex<Option<(PeerFailure, Instant)>>> = Arc::default();
    let _listener = {
        let news = Arc::clone(&news);
        group.on_failure(move |failure| *news.lock().unwrap() = Some((failure, Instant::now())))
    };
    let (kernel, args, phases) = match (scenario, rank) {
        ("trap", 1) => (
            kernel("multi_grid_trap_after"),
            KernelArgs::new().arg(1_u32),
            1,
        ),
        (scenario, _) => {
            // racecheck judges every phase's shared-memory accesses: 1000 under it, as
            // gpu_peer's barrier test.
            let phases = match scenario {
                "phases" if common::sanitizer_tool().as_deref() == Some("racecheck") => 1_000,
                "phases" => PHASES,
                _ => 10_000_000,
            };
            let counts = gpu.address(&counts);
            let args = KernelArgs::new()
                .arg(slots)
                .arg(phases)
                .arg(10_000_u32)
                .arg(counts)
                .arg(counts + 4);
            (kernel("multi_grid_phases"), args, phases)
        }
    };
    println!("rank {rank}: launching");
    let started = Instant::now();
    // SAFETY: `multi_grid_phases(MultiGrid, slots, phases, timeout_ms, failures,
    // timeouts)` (or `multi_grid_trap_after(MultiGrid, phases)`) in every process, the
    // same grid; `slots` holds `2 · ranks · per_gpu` words every GPU reaches; everything
    // outlives the kernel.
    let launched =
        unsafe { barrier.launch(&[&kernel], LaunchConfig::new(blocks, threads), vec![args]) };
    let ended = launched.and_then(|()| gpu.synchronize());
    let took = started.elapsed();
    match (scenario, rank) {
        ("phases", _) => {
            ended.unwrap();
            let [stale, failed] = download(&gpu, &counts);
            assert_eq!(
                (stale, failed),
                (0, 0),
                "rank {rank}: (stale neighbour slots, failed phases)"
            );
            println!(
                "rank {rank}: {phases} phases of {blocks} × {threads} on each of {} GPUs in {took:?}: {:.0} ns a phase (with the launch)",
                group.size(),
                took.as_nanos() as f64 / f64::from(phases)
            );
            group.barrier().unwrap();
        }
        ("trap", 1) => {
            let error = ended.unwrap_err();
            assert!(matches!(error, CudaError::KernelTrapped { .. }), "{error}");
        }
        (_, 0) => {
            ended.unwrap();
            let [stale, failed] = download(&gpu, &counts);
            assert_eq!(failed, per_gpu, "every thread's wait ended with an error");
            if scenario == "trap" {
                assert_eq!(stale, per_gpu, "rank 1 wrote no slot");
            }
            let (failure, at) = news.lock().unwrap().expect("the group's failure");
            assert_eq!(failure.rank(), 1, "{failure}");
            let after = at.elapsed();
            println!("rank 0: {failure}; the kernel ended {after:?} after the news, {took:?} after the launch");
            if common::under_compute_sanitizer().is_none() {
                assert!(
                    took < Duration::from_secs(8),
                    "ended by the news, not the 10 s timeout"
                );
                assert!(
                    after < Duration::from_secs(1),
                    "the kernel ended {after:?} after the news"
                );
            }
            let later = group.barrier().unwrap_err();
            assert!(matches!(later, ProcessGroupError::PeerFailed(_)), "{later}");
        }
        (scenario, rank) => panic!("rank {rank} has no part in {scenario}"),
    }
}

/// How a rank's barrier reaches the others' counters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Engine {
    /// Driver IPC (`MultiGrid::join`).
    Driver,
    /// NVSHMEM's symmetric heap, by direct pointers (`MultiGrid::join_nvshmem`).
    Nvshmem,
    /// NVSHMEM's symmetric heap, by its signal operations
    /// (`MultiGrid::join_nvshmem_signals`).
    NvshmemSignals,
}

fn download(gpu: &Gpu, counts: &scoped_sync::cuda::cudarc::driver::CudaSlice<u32>) -> [u32; 2] {
    let words = gpu.download(counts).unwrap();
    [words[0], words[1]]
}

/// Units of the handoff test.
const HANDOFF_UNITS: u64 = 1_000_000;

/// One rank of the handoff tests: rank 0's thread produces [`HANDOFF_UNITS`] units for
/// rank 1's through a `HandoffSemaphore<GpuToGpu>`, with credits back and a stop
/// source (`handoff_ends.rs` of the kernel crates); rank 1 checks the count, the
/// checksum and the order. By driver IPC (`Engine::Driver`: `peer_handoff_produce` and
/// `peer_handoff_consume`, as `gpu_peer`'s handoff between two GPUs of one process, the
/// payload ring in rank 1's GPU, the credits and the stop source in rank 0's, each
/// process mapping them where it likes), or in NVSHMEM's symmetric heap crossing by its
/// signals (`Engine::NvshmemSignals`: `Nvshmem::handoff` and `stop_source`, the
/// payloads put by NVSHMEM into rank 1's copy of the ring).
fn handoff_rank(gpu: &Gpu, group: &ProcessGroup, engine: Engine) {
    let (producer, consumer) = (0, 1);
    let rank = group.rank();
    let mut module = None;
    let objects: [u64; 4];
    let _placed: Box<dyn std::any::Any>;
    if engine == Engine::NvshmemSignals {
        let shmem = Nvshmem::start(gpu, group).unwrap();
        module = Some(shmem.load(&KERNELS_NVSHMEM).unwrap());
        let work = shmem.handoff(0, producer, consumer).unwrap();
        let credits = shmem.handoff(HANDOFF_RING, consumer, producer).unwrap();
        let stop = shmem.stop_source().unwrap();
        let slots = shmem.zeros(8 * HANDOFF_RING as usize).unwrap();
        objects = [
            work.device_address(),
            credits.device_address(),
            slots.device_address(),
            stop.device_address(),
        ];
        // The tuple drops the objects before its handle of NVSHMEM.
        _placed = Box::new((work, credits, stop, slots, shmem));
    } else {
        let work = gpu
            .place_for_processes(group, consumer, &HandoffSemaphore::<GpuToGpu>::new(0))
            .unwrap();
        let credits = gpu
            .place_for_processes(
                group,
                producer,
                &HandoffSemaphore::<GpuToGpu>::new(HANDOFF_RING),
            )
            .unwrap();
        let stop = gpu
            .place_for_processes(group, producer, &BusStopSource::new())
            .unwrap();
        let slots = gpu
            .zeros_for_processes(group, consumer, 2 * HANDOFF_RING as usize)
            .unwrap();
        objects = [
            work.device_address(),
            credits.device_address(),
            slots.device_address(),
            stop.device_address(),
        ];
        _placed = Box::new((work, credits, stop, slots));
    }
    let [work, credits, slots, stop] = objects;
    let prefix = if module.is_some() { "nvshmem" } else { "peer" };
    let (name, args, counts) = if rank == producer {
        let failures = gpu.zeros::<u32>(1).unwrap();
        let mut args = KernelArgs::new().arg(work).arg(credits).arg(slots);
        if module.is_some() {
            args = args.arg(consumer as u32);
        }
        let args = args
            .arg(HANDOFF_UNITS)
            .arg(stop)
            .arg(gpu.address(&failures));
        (
            format!("{prefix}_handoff_produce"),
            args,
            Counts::Producer(failures),
        )
    } else {
        let result = gpu.zeros::<u64>(3).unwrap();
        let args = KernelArgs::new()
            .arg(work)
            .arg(credits)
            .arg(slots)
            .arg(stop)
            .arg(gpu.address(&result));
        (
            format!("{prefix}_handoff_consume"),
            args,
            Counts::Consumer(result),
        )
    };
    let kernel = match &module {
        Some(module) => module.kernel(&name).unwrap(),
        None => gpu.kernel(&name).unwrap(),
    };
    // Both kernels start within their waits' patience (10 s) of each other: the slower
    // process's setup does not count against the faster one's first wait.
    group.barrier().unwrap();
    let started = Instant::now();
    // SAFETY: `*_handoff_produce` and `*_handoff_consume` with their parameters, one
    // thread each, on objects placed for both processes, which outlive the kernels (the
    // group meets below before anything is unmapped).
    unsafe { kernel.launch(LaunchConfig::new(1, 32), args) }.unwrap();
    gpu.synchronize().unwrap();
    let took = started.elapsed();
    match counts {
        Counts::Producer(failures) => {
            assert_eq!(
                gpu.download(&failures).unwrap(),
                [0],
                "producer waits that failed"
            );
        }
        Counts::Consumer(result) => {
            let expected =
                (0..HANDOFF_UNITS).fold(0u64, |sum, k| sum.wrapping_add(handoff_payload(k)));
            let result = gpu.download(&result).unwrap();
            assert_eq!(
                (result[0], result[1], result[2]),
                (HANDOFF_UNITS, expected, 0),
                "consumer (units, checksum, out-of-order units or failed waits)"
            );
            println!(
                "rank 1: {HANDOFF_UNITS} units from rank 0's GPU through a ring of {HANDOFF_RING} ({prefix}): {took:?}"
            );
        }
    }
    // Nobody unmaps an object while the other process's kernel may still use it.
    group.barrier().unwrap();
}

/// Phases of the host-party test.
const HOST_PARTY_PHASES: u32 = 10_000;

/// One rank of the host-party tests (`what`: "phases", or "killed", where rank 1 is
/// killed mid-phase): a `MultiGrid` joined with one host party in each process
/// (`join_with_host_parties`), launched with `multi_grid_host_phases`. In phase `p`,
/// rank 0's party writes `p` into slot `p % 2` of host memory both processes map
/// before it arrives, and every GPU thread checks it after the phase (a host write of
/// one process seen by the GPU of the other); block 0 of each GPU writes `p` into its
/// own slot pair of another such memory before it arrives, and each party checks every
/// GPU's after the phase.
fn host_parties_rank(gpu: &Gpu, group: &ProcessGroup, what: &str) {
    let rank = group.rank();
    let mut barrier = MultiGrid::join_with_host_parties(gpu, group, 1).unwrap();
    let host_slot = gpu.host_memory_for_processes(group, 2).unwrap();
    let gpu_slots = gpu
        .host_memory_for_processes(group, 2 * group.size())
        .unwrap();
    let counts = gpu.zeros::<u32>(2).unwrap();
    let kernel = gpu.kernel("multi_grid_host_phases").unwrap();
    let (blocks, threads) = (gpu.sm_count().unwrap(), 128_u32);
    let phases = if what == "phases" {
        HOST_PARTY_PHASES
    } else {
        10_000_000
    };
    let news: Arc<Mutex<Option<(PeerFailure, Instant)>>> = Arc::default();
    let _listener = {
        let news = Arc::clone(&news);
        group.on_failure(move |failure| *news.lock().unwrap() = Some((failure, Instant::now())))
    };
    let address = gpu.address(&counts);
    let args = KernelArgs::new()
        .arg(host_slot.device_address())
        .arg(gpu_slots.device_address())
        .arg(phases)
        .arg(10_000_u32)
        .arg(address)
        .arg(address + 4);
    let ranks = group.size();
    println!("rank {rank}: launching");
    let started = Instant::now();
    // SAFETY: `multi_grid_host_phases(MultiGrid, host_slot, gpu_slots, phases,
    // timeout_ms, failures, timeouts)` in every process, the same grid; the slots
    // (2 and 2 · ranks words every process maps) and the counts outlive the kernel
    // (synchronized below); the party arrives once per phase.
    let results = unsafe {
        barrier.launch_with_host_parties(
            &[&kernel],
            LaunchConfig::new(blocks, threads),
            vec![args],
            |mut party| {
                let (mut stale, words) = (0u32, gpu_slots.host_words());
                for phase in 1..=phases {
                    let parity = (phase % 2) as usize;
                    if rank == 0 {
                        host_slot.host_words()[parity].store(phase, Ordering::Relaxed);
                    }
                    if let Err(error) = party.arrive_and_wait(Duration::from_secs(10)) {
                        return Err((phase, error, Instant::now()));
                    }
                    stale += (0..ranks)
                        .filter(|gpu| words[2 * gpu + parity].load(Ordering::Relaxed) != phase)
                        .count() as u32;
                }
                Ok(stale)
            },
        )
    }
    .unwrap();
    let ended = gpu.synchronize();
    let took = started.elapsed();
    let [stale, failed] = download(gpu, &counts);
    if what == "phases" {
        ended.unwrap();
        assert_eq!(
            results,
            [Ok(0)],
            "rank {rank}'s party: stale GPU slots, or where it failed"
        );
        assert_eq!(
            (stale, failed),
            (0, 0),
            "rank {rank}: (stale host slots, failed phases)"
        );
        println!(
            "rank {rank}: {phases} phases of {blocks} × {threads} on each of {ranks} GPUs and a host thread in each process: {took:?}"
        );
        group.barrier().unwrap();
        return;
    }
    // Rank 1 was killed: rank 0's party and kernel ended on the news.
    ended.unwrap();
    let (failure, at) = news.lock().unwrap().expect("the group's failure");
    assert_eq!(failure.rank(), 1, "{failure}");
    assert_eq!(
        failed,
        blocks * threads,
        "every thread's wait ended with an error"
    );
    let [Err((phase, error, party_end))] = results[..] else {
        panic!("rank 0's party did not fail: {results:?}");
    };
    assert_eq!(error, HostPartyError::Broken, "at phase {phase}");
    let after = at.elapsed();
    println!(
        "rank 0: {failure}; the party failed {:?} after the news, at phase {phase}; the kernel ended {after:?} after it",
        party_end.saturating_duration_since(at)
    );
    if common::under_compute_sanitizer().is_none() {
        assert!(
            party_end.saturating_duration_since(at) < Duration::from_secs(1),
            "the party ended {:?} after the news",
            party_end.saturating_duration_since(at)
        );
        assert!(
            after < Duration::from_secs(1),
            "the kernel ended {after:?} after the news"
        );
    }
}

/// What a rank of the handoff test counts on its GPU.
enum Counts {
    /// The producer's failed waits.
    Producer(scoped_sync::cuda::cudarc::driver::CudaSlice<u32>),
    /// The consumer's units, checksum, and out-of-order units or failed waits.
    Consumer(scoped_sync::cuda::cudarc::driver::CudaSlice<u64>),
}

/// Phases of the `System` barrier test.
const BARRIER_PHASES: u32 = 100_000;

/// One rank of the `System` barrier test: a `Barrier<System>` in rank 0's memory that
/// every thread of both ranks' launches arrives at, each checking a slot written by a
/// thread of the other process (`peer_barrier_phases`), as `gpu_peer`'s barrier in one
/// GPU's memory used by two GPUs of one process.
fn system_barrier_rank(gpu: &Gpu, group: &ProcessGroup) {
    let (blocks, threads) = (2_u32, 64_u32);
    let per_gpu = blocks * threads;
    let members = per_gpu * group.size() as u32;
    let barrier = gpu
        .place_for_processes(group, 0, &Barrier::new(members))
        .unwrap();
    let slots = gpu
        .zeros_for_processes(group, 0, 2 * members as usize)
        .unwrap();
    let failures = gpu.zeros::<u32>(1).unwrap();
    let args = KernelArgs::new()
        .arg(&barrier)
        .arg(&slots)
        .arg(members)
        .arg(group.rank() as u32 * per_gpu)
        .arg(BARRIER_PHASES)
        .arg(&failures);
    let kernel = gpu.kernel("peer_barrier_phases").unwrap();
    let started = Instant::now();
    // SAFETY: `peer_barrier_phases(barrier, slots, members, first, phases, failures)`:
    // the barrier expects every launch's threads (`members`), `slots` holds
    // `2 · members` words, each rank's members are its own range; everything is mapped
    // in every process and outlives the kernels (the group meets below first).
    unsafe { kernel.launch(LaunchConfig::new(blocks, threads), args) }.unwrap();
    gpu.synchronize().unwrap();
    let took = started.elapsed();
    assert_eq!(
        gpu.download(&failures).unwrap(),
        [0],
        "rank {}: stale partner slots or timed-out phases",
        group.rank()
    );
    println!(
        "rank {}: {BARRIER_PHASES} phases of a System barrier across {} processes: {took:?}",
        group.rank(),
        group.size()
    );
    group.barrier().unwrap();
}
