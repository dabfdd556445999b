//! The GPU conformance matrix: barrier, latch and semaphore at every scope (`Block`,
//! `Cluster`, `Device`, `System`) with the object in shared and in global memory, and
//! the hardware barriers (`SharedBarrier`, `BlockBarrier`, `ClusterBarrier` with
//! cluster sizes 2, 4 and 8, `Grid` at maximum occupancy). The kernels and what each
//! checks are in `kernels/src/conformance/`; they count failed checks and timed-out
//! waits in a report that the tests here assert is zero, naming the configuration and
//! the kernel source line of the first failure.
//!
//! On a machine without a CUDA driver every test prints "skipped: no CUDA driver" and
//! passes.

mod common;

use harness::Gpu;
use scoped_sync::cuda::cudarc::driver::CudaSlice;
use scoped_sync::cuda::{CudaError, Dim3, KernelArgs, LaunchConfig};
use scoped_sync::layout::grid;

/// Bytes of `objects` per team, words of `counters` per team, and words of `report`:
/// the same constants as in `kernels/src/conformance/mod.rs`.
const OBJECT_BYTES: usize = 64;
const COUNTER_WORDS: usize = 4;
const REPORT_WORDS: usize = 6;
/// `report[5]` bit (the kernels' `NO_WHOLE_BLOCK_MEETINGS`): the barrier matrices meet
/// with `arrive_and_wait` instead of a whole-block arrival. Set under synccheck, which
/// reports that meeting's block barrier when some warps of a block reach it split and
/// others not: the non-aligned barrier allows it, and ptxas leaves the warps of these
/// kernels split after their divergent phases (`docs/sanitizers.md`). The whole-block
/// arrival is judged by synccheck in `gpu_convergence` and in the latch matrix.
const NO_WHOLE_BLOCK_MEETINGS: u32 = 1;
/// The patience of the kernels' timed waits under compute-sanitizer, in milliseconds
/// (`report[4]`; elsewhere 0, the kernels' own 2 s): a tool slows kernels a
/// hundredfold, and under memcheck the semaphore stress starved threads past 2 s
/// (`docs/sanitizers.md`). A broken primitive still ends the launch, only later.
const SANITIZER_PATIENCE_MS: u32 = 60_000;

/// Barrier phases of the whole team before half of it drops out (the kernels then run
/// the drop phase and 4 more).
const BARRIER_ROUNDS: u32 = 10;
/// Phases of the grid-wide device barrier stress.
const DEVICE_BARRIER_PHASES: u32 = 50_000;
const PHASES_AFTER_DROP: u32 = 4;
/// Mutex acquisitions per team in the semaphore stress (the producer/consumer part
/// adds 1.5 × as many operations): `rounds = SEMAPHORE_ACQUISITIONS / team size`.
const SEMAPHORE_ACQUISITIONS: u32 = 65_536;
/// Threads per block of the matrix launches (clusters use smaller blocks, so that a
/// cluster of 8 stays small).
const BLOCK_THREADS: u32 = 256;
const CLUSTER_BLOCK_THREADS: u32 = 128;
/// Blocks of the launches with one team per block.
const BLOCK_TEAMS: u32 = 4;
/// Clusters of the launches with one team per cluster.
const CLUSTER_TEAMS: u32 = 2;
/// Cluster sizes every cluster configuration runs with.
const CLUSTER_SIZES: [u32; 3] = [2, 4, 8];

fn runtime() -> Option<Gpu> {
    common::gpu_runtime()
}

/// Whether the tests run under compute-sanitizer's `racecheck` (as the bundle's
/// `sanitize.sh` says in `SCOPED_SYNC_SANITIZER`). racecheck slows contended atomics
/// far more than a hundredfold: on an H100 the grid-wide barrier stress (50 000 phases
/// of 132 blocks) ran past 120 s, 10 000 phases of `Grid::sync` took 98 s, and the
/// semaphore stress in shared memory 66 to 110 s per configuration. Under it the
/// stress tests run a fiftieth of their phases and a 64th of their acquisitions: what
/// racecheck judges, the shared-memory accesses, does not need the long runs
/// (`docs/sanitizers.md`).
fn under_racecheck() -> bool {
    common::sanitizer_tool().as_deref() == Some("racecheck")
}

/// `phases`, or a fiftieth of them (at least 2) under racecheck.
fn stress_phases(phases: u32) -> u32 {
    if under_racecheck() {
        (phases / 50).max(2)
    } else {
        phases
    }
}

/// Under compute-sanitizer, writes `line` to stderr at once (not captured by libtest):
/// which configuration a slow or stuck test is in.
fn progress(line: impl std::fmt::Display) {
    use std::io::Write;
    if common::under_compute_sanitizer().is_some() {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// Who shares one object, and how the kernel is launched.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// A plain launch of `blocks` blocks; one team per block.
    Blocks { blocks: u32, threads: u32 },
    /// A cluster launch (`LaunchConfig::cluster`) of `clusters` clusters of `size`
    /// blocks; one team per cluster.
    Clusters {
        clusters: u32,
        size: u32,
        threads: u32,
    },
    /// A cooperative launch with a grid barrier (`KernelArgs::grid_barrier`) of at most
    /// `blocks` blocks (fewer if that many cannot be co-resident); one team, the grid.
    Grid { blocks: u32, threads: u32 },
}

/// A matrix kernel's launch result.
#[derive(Debug)]
struct Outcome {
    /// The kernel's report: failed checks, timed-out waits, and the source lines of the
    /// first of each.
    report: Vec<u32>,
    /// `COUNTER_WORDS` per team.
    counters: Vec<u32>,
    teams: usize,
    team_size: u32,
    /// The shape actually launched (a grid clamped to what fits).
    shape: Shape,
}

impl Outcome {
    /// A description of the failed checks and timeouts, if any.
    fn failures(&self) -> Option<String> {
        let (errors, timeouts) = (self.report[0], self.report[1]);
        (errors != 0 || timeouts != 0).then(|| {
            format!(
                "{errors} failed checks (first at {}), {timeouts} timed-out waits (first at {})",
                source_position(self.report[2]),
                source_position(self.report[3])
            )
        })
    }

    /// Counter `index` of every team.
    fn counter(&self, index: usize) -> Vec<u32> {
        (0..self.teams)
            .map(|team| self.counters[team * COUNTER_WORDS + index])
            .collect()
    }
}

/// Launches matrix kernel `name` (parameters `(objects, slots, counters, report,
/// rounds)`, preceded by a `Grid` for grid shapes) on zeroed buffers sized for
/// `shape`, and reads back the report and the counters.
fn run_matrix_kernel(
    gpu: &Gpu,
    name: &str,
    shape: Shape,
    rounds: impl Fn(u32) -> u32,
) -> Result<Outcome, CudaError> {
    let kernel = gpu.kernel(name)?;
    let shape = match shape {
        Shape::Grid { blocks, threads } => Shape::Grid {
            blocks: blocks.min(kernel.max_coresident_blocks(threads)?),
            threads,
        },
        other => other,
    };
    let (teams, team_size) = match shape {
        Shape::Blocks { blocks, threads } => (blocks, threads),
        Shape::Clusters {
            clusters,
            size,
            threads,
        } => (clusters, size * threads),
        Shape::Grid { blocks, threads } => (1, blocks * threads),
    };
    let rounds = rounds(team_size);
    let teams = teams as usize;
    // u64 elements: the objects need 8-byte alignment.
    let objects = gpu.zeros::<u64>(teams * OBJECT_BYTES / 8)?;
    let slots = gpu.zeros::<u32>(teams * 2 * team_size as usize)?;
    let counters = gpu.zeros::<u32>(teams * COUNTER_WORDS)?;
    let report = gpu.upload(&report_words())?;
    match shape {
        // SAFETY: (u8 pointer, u32 pointer, u32 pointer, u32 pointer, u32) is the
        // signature of every matrix kernel; the buffers are sized per team as the
        // kernels expect and outlive the launch (the downloads below wait for it).
        Shape::Blocks { blocks, threads } => unsafe {
            kernel.launch(
                LaunchConfig::new(blocks, threads),
                KernelArgs::new()
                    .arg(&objects)
                    .arg(&slots)
                    .arg(&counters)
                    .arg(&report)
                    .arg(rounds),
            )
        }?,
        Shape::Clusters {
            clusters,
            size,
            threads,
        } => {
            let args = KernelArgs::new()
                .arg(&objects)
                .arg(&slots)
                .arg(&counters)
                .arg(&report)
                .arg(rounds);
            let config = LaunchConfig::new(clusters * size, threads).cluster(size);
            // SAFETY: as above (four pointers and a u32), on the default stream that
            // the downloads below wait for.
            unsafe { kernel.launch(config, args) }?
        }
        // SAFETY: the grid kernels take a `Grid` and then the matrix parameters; the
        // grid fits (clamped above) and the buffers hold the one team.
        Shape::Grid { blocks, threads } => unsafe {
            kernel.launch(
                LaunchConfig::new(blocks, threads).cooperative(),
                KernelArgs::new()
                    .grid_barrier()
                    .arg(&objects)
                    .arg(&slots)
                    .arg(&counters)
                    .arg(&report)
                    .arg(rounds),
            )
        }?,
    }
    Ok(Outcome {
        report: gpu.download(&report)?,
        counters: gpu.download(&counters)?,
        teams,
        team_size,
        shape,
    })
}

/// The initial report of a matrix kernel: zero counts, the patience of its timed
/// waits (`report[4]`): [`SANITIZER_PATIENCE_MS`] under compute-sanitizer, else 0 (the
/// kernels' own), and the options (`report[5]`): [`NO_WHOLE_BLOCK_MEETINGS`] under
/// synccheck.
fn report_words() -> [u32; REPORT_WORDS] {
    let patience = if common::under_compute_sanitizer().is_some() {
        SANITIZER_PATIENCE_MS
    } else {
        0
    };
    let options = if common::sanitizer_tool().as_deref() == Some("synccheck") {
        NO_WHOLE_BLOCK_MEETINGS
    } else {
        0
    };
    [0, 0, 0, 0, patience, options]
}

/// Every configuration of matrix family `family` (`barrier`, `latch`, `semaphore`):
/// kernel name and launch shape. The grid team has at most `grid_blocks` blocks.
fn configurations(family: &str, grid_blocks: u32) -> Vec<(String, Shape)> {
    let mut list = Vec::new();
    for memory in [
        "block_shared",
        "block_global",
        "device_shared",
        "system_shared",
    ] {
        list.push((
            format!("conf_{family}_{memory}"),
            Shape::Blocks {
                blocks: BLOCK_TEAMS,
                threads: BLOCK_THREADS,
            },
        ));
    }
    for size in CLUSTER_SIZES {
        for memory in ["cluster_shared", "cluster_global"] {
            list.push((
                format!("conf_{family}_{memory}"),
                Shape::Clusters {
                    clusters: CLUSTER_TEAMS,
                    size,
                    threads: CLUSTER_BLOCK_THREADS,
                },
            ));
        }
    }
    for memory in ["device_global", "system_global"] {
        list.push((
            format!("conf_{family}_{memory}"),
            Shape::Grid {
                blocks: grid_blocks,
                threads: BLOCK_THREADS,
            },
        ));
    }
    list
}

/// Runs every configuration of `family`, checks each outcome with `extra` (which
/// returns a failure description, or `None`), and fails listing every configuration
/// that failed.
fn run_family(
    gpu: &Gpu,
    family: &str,
    grid_blocks: u32,
    rounds: impl Fn(u32) -> u32 + Copy,
    extra: impl Fn(&Outcome) -> Option<String>,
) {
    run_configurations(
        gpu,
        family,
        configurations(family, grid_blocks),
        rounds,
        extra,
    );
}

/// Runs the configurations `list` of `family`, as [`run_family`] does.
fn run_configurations(
    gpu: &Gpu,
    family: &str,
    list: Vec<(String, Shape)>,
    rounds: impl Fn(u32) -> u32 + Copy,
    extra: impl Fn(&Outcome) -> Option<String>,
) {
    let mut failed = Vec::new();
    for (name, shape) in list {
        progress(format_args!("{name} {shape:?}: launching"));
        let start = std::time::Instant::now();
        let before = failed.len();
        match run_matrix_kernel(gpu, &name, shape, rounds) {
            Ok(outcome) => {
                let problems: Vec<String> = [outcome.failures(), extra(&outcome)]
                    .into_iter()
                    .flatten()
                    .collect();
                if !problems.is_empty() {
                    failed.push(format!(
                        "{name} {:?}: {}",
                        outcome.shape,
                        problems.join("; ")
                    ));
                }
            }
            Err(error) => failed.push(format!("{name} {shape:?}: launch failed: {error}")),
        }
        progress(format_args!(
            "{name}: {} after {:.1?}",
            if failed.len() == before {
                "ok"
            } else {
                "FAILED"
            },
            start.elapsed()
        ));
    }
    assert!(
        failed.is_empty(),
        "{family} conformance failed in {} configuration(s):\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn barrier_conformance_matrix() {
    let Some(gpu) = runtime() else { return };
    let grid_blocks = gpu.sm_count().unwrap();
    let phases = BARRIER_ROUNDS + 1 + PHASES_AFTER_DROP;
    run_family(
        &gpu,
        "barrier",
        grid_blocks,
        |_| BARRIER_ROUNDS,
        |outcome| {
            let completions = outcome.counter(0);
            completions
                .iter()
                .any(|&count| count != phases)
                .then(|| format!("completion counts per team {completions:?}, expected {phases} each (once per phase)"))
        },
    );
}

#[test]
fn barrier_without_completion_conformance_matrix() {
    let Some(gpu) = runtime() else { return };
    let grid_blocks = gpu.sm_count().unwrap();
    run_family(
        &gpu,
        "plain_barrier",
        grid_blocks,
        |_| BARRIER_ROUNDS,
        |_| None,
    );
}

/// The barrier matrices' `Block`-scope barrier in block-shared memory (the hardware
/// form, the `mbarrier`), with and without completion, with a block barrier between
/// member 0's form check and the phases (the kernels' `check_barrier_settled`). What
/// `racecheck` judges of that configuration of the two barrier matrices: written when
/// a barrier became the `mbarrier` at its first operation, which raced the first
/// arrivals (`docs/sanitizers.md`); `init_block` now places it before publishing it.
#[test]
fn barrier_in_block_shared_memory_with_its_form_settled_first() {
    let Some(gpu) = runtime() else { return };
    let shape = Shape::Blocks {
        blocks: BLOCK_TEAMS,
        threads: BLOCK_THREADS,
    };
    let phases = BARRIER_ROUNDS + 1 + PHASES_AFTER_DROP;
    run_configurations(
        &gpu,
        "barrier",
        vec![("conf_barrier_settled_block_shared".to_owned(), shape)],
        |_| BARRIER_ROUNDS,
        |outcome| {
            let completions = outcome.counter(0);
            completions.iter().any(|&count| count != phases).then(|| {
                format!("completion counts per team {completions:?}, expected {phases} each")
            })
        },
    );
    run_configurations(
        &gpu,
        "plain_barrier",
        vec![("conf_plain_barrier_settled_block_shared".to_owned(), shape)],
        |_| BARRIER_ROUNDS,
        |_| None,
    );
}

/// The configurations of `barrier_without_completion_conformance_matrix` with the
/// barrier in shared memory at `Device` and `System` scope and at `Cluster` scope with
/// clusters of 2 and 4 (the portable form: arrivals and the reopening are
/// read-modify-writes, waits are loads): with
/// `barrier_in_block_shared_memory_with_its_form_settled_first`, what `racecheck`
/// judges of that matrix. With clusters of 8 racecheck reports the other blocks'
/// accesses to the barrier in rank 0's shared memory as made to "a block that might
/// have already exited" (`docs/sanitizers.md`).
#[test]
fn barrier_without_completion_in_shared_memory_at_wider_scopes() {
    let Some(gpu) = runtime() else { return };
    let list = configurations("plain_barrier", 0)
        .into_iter()
        .filter(|(name, shape)| {
            name.ends_with("_shared")
                && !name.ends_with("block_shared")
                && !matches!(shape, Shape::Clusters { size: 8, .. })
        })
        .collect();
    run_configurations(&gpu, "plain_barrier", list, |_| BARRIER_ROUNDS, |_| None);
}

#[test]
fn generic_block_barrier_in_shared_memory_times_out_and_stays_usable() {
    let Some(gpu) = runtime() else { return };
    let outcome = run_block_kernel(&gpu, "conf_generic_block_barrier_timeout", 0);
    let completions = outcome.counter(0);
    assert!(
        completions.iter().all(|&count| count == 2),
        "completions per block {completions:?}, expected 2 (two phases)"
    );
}

#[test]
fn device_barrier_stress_across_the_grid() {
    let Some(gpu) = runtime() else { return };
    let shape = Shape::Grid {
        blocks: gpu.sm_count().unwrap(),
        threads: BLOCK_THREADS,
    };
    let phases = stress_phases(DEVICE_BARRIER_PHASES);
    let outcome = run_matrix_kernel(&gpu, "conf_device_barrier_stress", shape, |_| phases)
        .unwrap_or_else(|error| {
            panic!("conf_device_barrier_stress {shape:?}: launch failed: {error}")
        });
    if let Some(failures) = outcome.failures() {
        panic!("conf_device_barrier_stress {shape:?}: {failures}");
    }
}

#[test]
fn latch_conformance_matrix() {
    let Some(gpu) = runtime() else { return };
    let grid_blocks = gpu.sm_count().unwrap();
    run_family(&gpu, "latch", grid_blocks, |_| 0, |_| None);
}

/// Mutex acquisitions per thread for a team of `size` threads (at least 2). Under
/// racecheck a 64th of the stress: with the semaphores in shared memory a team's
/// 65 536 acquisitions took 66 to 110 s per configuration there (H100, 8 processes at
/// once), and starved threads past even the sanitizer's 60 s patience.
fn semaphore_rounds(size: u32) -> u32 {
    let acquisitions = if under_racecheck() {
        SEMAPHORE_ACQUISITIONS / 64
    } else {
        SEMAPHORE_ACQUISITIONS
    };
    (acquisitions / size).max(2)
}

/// The semaphore family's own check: the mutex-protected count of every team.
fn semaphore_counts(outcome: &Outcome) -> Option<String> {
    let expected = outcome.team_size * semaphore_rounds(outcome.team_size);
    let counts = outcome.counter(1);
    counts
        .iter()
        .any(|&count| count != expected)
        .then(|| format!("mutex-protected counts per team {counts:?}, expected {expected} each"))
}

#[test]
fn semaphore_conformance_matrix_and_stress() {
    let Some(gpu) = runtime() else { return };
    // A smaller grid team: the stress is one contended word, and 8 blocks of 256
    // threads already make 2048 contenders.
    run_family(&gpu, "semaphore", 8, semaphore_rounds, semaphore_counts);
}

/// The semaphore configurations with the semaphores in shared memory, with the
/// counter the mutex protects in global memory instead of beside them (the kernels'
/// `check_semaphores_guarding_global`): what `racecheck` judges in place of
/// `semaphore_conformance_matrix_and_stress`, whose shared-memory counter it reports
/// because it does not model the order of an atomics-based acquire and release
/// (`docs/sanitizers.md`). It runs everywhere, as the matrix does.
#[test]
fn semaphore_in_shared_memory_guarding_a_global_counter() {
    let Some(gpu) = runtime() else { return };
    // Under racecheck, not the clusters of 8: there the 1024 threads of a cluster
    // stalled on the mutex in 5 of 7 runs on an H200 (about 1600 of 2048 acquisitions;
    // the rest timed out, after 60 s and after 240 s alike; the semaphore free and
    // working at the end; 0 hazards) and passed in the other two. Natively they pass
    // in every run (`docs/sanitizers.md`, run F).
    let list = configurations("semaphore_global_guard", 0)
        .into_iter()
        .filter(|(name, _)| name.ends_with("_shared"))
        .filter(|(_, shape)| {
            !(under_racecheck() && matches!(shape, Shape::Clusters { size: 8, .. }))
        })
        .collect();
    run_configurations(
        &gpu,
        "semaphore_global_guard",
        list,
        semaphore_rounds,
        semaphore_counts,
    );
}

/// Runs a block-team kernel with the matrix signature on `BLOCK_TEAMS` blocks.
fn run_block_kernel(gpu: &Gpu, name: &str, rounds: u32) -> Outcome {
    let shape = Shape::Blocks {
        blocks: BLOCK_TEAMS,
        threads: BLOCK_THREADS,
    };
    let outcome = run_matrix_kernel(gpu, name, shape, |_| rounds)
        .unwrap_or_else(|error| panic!("{name} {shape:?}: launch failed: {error}"));
    if let Some(failures) = outcome.failures() {
        panic!("{name} {shape:?}: {failures}");
    }
    outcome
}

#[test]
fn shared_barrier_tokens_parity_and_drop() {
    let Some(gpu) = runtime() else { return };
    run_block_kernel(&gpu, "conf_shared_barrier_phases", BARRIER_ROUNDS);
}

#[test]
fn shared_barrier_timed_wait_times_out_and_the_barrier_stays_usable() {
    let Some(gpu) = runtime() else { return };
    run_block_kernel(&gpu, "conf_shared_barrier_timeout", 0);
}

#[test]
fn block_barrier_completion_runs_once_per_phase() {
    let Some(gpu) = runtime() else { return };
    let outcome = run_block_kernel(&gpu, "conf_block_barrier_completion", BARRIER_ROUNDS);
    assert_eq!(
        outcome.counter(0),
        vec![BARRIER_ROUNDS; BLOCK_TEAMS as usize],
        "conf_block_barrier_completion: completions per block"
    );
}

#[test]
fn cluster_barrier_over_distributed_shared_memory_with_cluster_sizes_2_4_8() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("conf_cluster_barrier").unwrap();
    let (clusters, phases) = (4_u32, 12_u32);
    for size in CLUSTER_SIZES {
        let counters = gpu.zeros::<u32>(clusters as usize).unwrap();
        let report = gpu.zeros::<u32>(REPORT_WORDS).unwrap();
        let args = KernelArgs::new().arg(&counters).arg(&report).arg(phases);
        let config = LaunchConfig::new(clusters * size, CLUSTER_BLOCK_THREADS).cluster(size);
        // SAFETY: (u32 pointer, u32 pointer, u32) is the kernel's signature; the
        // buffers outlive the launch (the downloads below wait for it on the same
        // stream).
        unsafe { kernel.launch(config, args) }
            .unwrap_or_else(|error| panic!("cluster size {size}: launch failed: {error}"));
        assert_no_failed_checks(&gpu, &report, &format!("cluster size {size}"));
        assert_eq!(
            gpu.download(&counters).unwrap(),
            vec![(phases + 1) / 3; clusters as usize],
            "cluster size {size}: completions per cluster"
        );
    }
}

/// The kernels' files, in the order of their `SOURCE` numbers.
const SOURCES: [&str; 5] = [
    "mod.rs",
    "barrier.rs",
    "hardware.rs",
    "latch.rs",
    "semaphore.rs",
];
/// Lines per file in a recorded position (`LINES_PER_SOURCE` in the kernels).
const LINES_PER_SOURCE: u32 = 10_000;

/// Where a recorded position is: `kernels/src/conformance/FILE:LINE`.
fn source_position(position: u32) -> String {
    let file = SOURCES
        .get((position / LINES_PER_SOURCE) as usize)
        .unwrap_or(&"?");
    format!(
        "kernels/src/conformance/{file}:{}",
        position % LINES_PER_SOURCE
    )
}

/// Fails if the kernel that wrote `report` counted a failed check, naming `what` and
/// the kernel line of the first.
fn assert_no_failed_checks(gpu: &Gpu, report: &CudaSlice<u32>, what: &str) {
    let report = gpu.download(report).unwrap();
    assert_eq!(
        report[0],
        0,
        "{what}: {} failed checks (first at {})",
        report[0],
        source_position(report[2])
    );
}

/// Runs `conf_grid_sync` for `phases` phases on `blocks` blocks of `block` threads and
/// checks that every thread ran every phase.
fn grid_sync_phases(gpu: &Gpu, blocks: u32, block: impl Into<Dim3>, phases: u32) {
    let kernel = gpu.kernel("conf_grid_sync").unwrap();
    let block: Dim3 = block.into();
    let threads = (blocks * block.count().unwrap()) as usize;
    let slots = gpu.zeros::<u32>(2 * threads).unwrap();
    let report = gpu.zeros::<u32>(REPORT_WORDS).unwrap();
    // SAFETY: (Grid, u32 pointer, u32, u32 pointer) is the kernel's signature; `slots`
    // holds two words per thread; the buffers outlive the launch.
    unsafe {
        kernel.launch(
            LaunchConfig::new(blocks, block).cooperative(),
            KernelArgs::new()
                .grid_barrier()
                .arg(&slots)
                .arg(phases)
                .arg(&report),
        )
    }
    .unwrap();
    assert_no_failed_checks(gpu, &report, &format!("{blocks} blocks × {block:?}"));
    let slots = gpu.download(&slots).unwrap();
    let (last, before) = if phases % 2 == 0 {
        (&slots[..threads], &slots[threads..])
    } else {
        (&slots[threads..], &slots[..threads])
    };
    assert!(
        last.iter().all(|&slot| slot == phases) && before.iter().all(|&slot| slot == phases - 1),
        "{blocks} blocks × {block:?}: every thread ran every phase"
    );
}

#[test]
fn grid_sync_10000_phases_at_maximum_occupancy() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("conf_grid_sync").unwrap();
    let block = 128_u32;
    let blocks = kernel.max_coresident_blocks(block).unwrap();
    grid_sync_phases(&gpu, blocks, block, stress_phases(10_000));
}

#[test]
fn grid_sync_on_both_sides_of_the_two_level_form() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("conf_grid_sync").unwrap();
    // 128 threads: 16 blocks per SM fit on sm_90, 2112 on an H100.
    let block = 128_u32;
    let max = kernel.max_coresident_blocks(block).unwrap();
    let from = grid::GRID_TWO_LEVEL_FROM;
    // The largest one-level grid, the smallest two-level one, one whose last group is
    // a single block, and one whose last group is partly filled.
    let sizes = [
        from - 1,
        from,
        from + 1,
        from + grid::GRID_GROUP_BLOCKS / 2 + 1,
    ];
    for blocks in sizes {
        if blocks > max {
            common::skip(&format!(
                "grid of {blocks} × {block}: only {max} blocks fit at once on this GPU"
            ));
            continue;
        }
        grid_sync_phases(&gpu, blocks, block, stress_phases(2_000));
    }
}

#[test]
fn grid_sync_with_blocks_of_any_shape_in_both_forms() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("conf_grid_sync").unwrap();
    let sms = gpu.sm_count().unwrap();
    // A block's first warp does its part of the barrier: blocks smaller than a warp
    // (their shuffles name only the lanes they have), one thread, a partial second
    // warp, and a 3-D block whose first warp spans rows and layers; each in one level
    // (one block per SM) and in two (the smallest two-level grid).
    let shapes: [Dim3; 5] = [
        Dim3::x(1),
        Dim3::x(20),
        Dim3::x(48),
        Dim3::new(8, 3, 2),
        Dim3::new(5, 7, 3),
    ];
    for block in shapes {
        let threads = block.count().unwrap();
        let max = kernel.max_coresident_blocks(threads).unwrap();
        for blocks in [sms, grid::GRID_TWO_LEVEL_FROM] {
            if blocks > max {
                common::skip(&format!(
                    "grid of {blocks} × {threads}: only {max} blocks fit at once on this GPU"
                ));
                continue;
            }
            grid_sync_phases(&gpu, blocks, block, stress_phases(1_000));
        }
    }
}

/// `conf_barrier_phases_{device,system}` (see the kernel): every block meets a barrier
/// through `WholeBlock` and every thread's `arrive_and_wait` in turn, the odd blocks
/// drop out halfway, the even blocks go on.
fn barrier_phases(gpu: &Gpu, scope: &str, blocks: u32, block: Dim3, phases: u32) {
    let kernel = gpu.kernel(&format!("conf_barrier_phases_{scope}")).unwrap();
    let threads = (blocks * block.count().unwrap()) as usize;
    let object = gpu.zeros::<u8>(OBJECT_BYTES).unwrap();
    let slots = gpu.zeros::<u32>(2 * threads).unwrap();
    let report = gpu.zeros::<u32>(REPORT_WORDS).unwrap();
    // SAFETY: (Grid, object pointer, u32 pointer, u32, u32 pointer) is the kernel's
    // signature; `object` holds a barrier, `slots` two words per thread; the buffers
    // outlive the launch.
    unsafe {
        kernel.launch(
            LaunchConfig::new(blocks, block).cooperative(),
            KernelArgs::new()
                .grid_barrier()
                .arg(&object)
                .arg(&slots)
                .arg(phases)
                .arg(&report),
        )
    }
    .unwrap();
    assert_no_failed_checks(
        gpu,
        &report,
        &format!("{scope}, {blocks} blocks × {block:?}"),
    );
    // The even blocks' last phase, 2 × phases + 1, is odd: buffer 1.
    let per_block = block.count().unwrap() as usize;
    let last = &gpu.download(&slots).unwrap()[threads..];
    let stayed = last
        .chunks(per_block)
        .step_by(2)
        .all(|slots| slots.iter().all(|&slot| slot == 2 * phases + 1));
    assert!(
        stayed,
        "{scope}, {blocks} blocks × {block:?}: every thread of the even blocks ran every phase"
    );
}

#[test]
fn device_and_system_barriers_met_by_blocks_and_warps_of_any_shape_with_drops() {
    let Some(gpu) = runtime() else { return };
    let sms = gpu.sm_count().unwrap();
    // A block's first warp does its part of a whole-block arrival, and a whole warp
    // arrives as one: blocks smaller than a warp (their shuffles name only the lanes
    // they have; every lane arrives alone), one thread, a partial second warp (a whole
    // warp and lanes alone in one phase), full blocks, and 3-D blocks whose warps span
    // rows and layers.
    let shapes: [Dim3; 7] = [
        Dim3::x(1),
        Dim3::x(20),
        Dim3::x(48),
        Dim3::x(128),
        Dim3::x(1024),
        Dim3::new(8, 3, 2),
        Dim3::new(5, 7, 3),
    ];
    for scope in ["device", "system"] {
        for block in shapes {
            barrier_phases(&gpu, scope, sms, block, stress_phases(1_000));
        }
        // Two blocks per SM where they fit: arrivals from blocks sharing an SM.
        barrier_phases(&gpu, scope, 2 * sms, Dim3::x(128), stress_phases(1_000));
    }
}

/// `conf_barrier_lanes_apart_device` (see the kernel): the lanes of each warp split
/// between two device barriers by parity, every thread arriving on its own; a warp's
/// lanes then each arrive alone.
#[test]
fn device_barriers_met_by_the_lanes_of_one_warp_on_two_barriers() {
    let Some(gpu) = runtime() else { return };
    let blocks = gpu.sm_count().unwrap();
    let block = Dim3::x(128);
    let threads = (blocks * 128) as usize;
    // The checked kernels' generic path took 65 s for 1000 phases on an H200 (the
    // release build's PTX a fraction of a second): a tenth there.
    let checked = std::env::var("SCOPED_SYNC_KERNELS").is_ok_and(|build| build == "checked");
    let phases = stress_phases(if checked { 100 } else { 1_000 });
    let kernel = gpu.kernel("conf_barrier_lanes_apart_device").unwrap();
    let objects = gpu.zeros::<u8>(OBJECT_BYTES).unwrap();
    let slots = gpu.zeros::<u32>(2 * threads).unwrap();
    let report = gpu.zeros::<u32>(REPORT_WORDS).unwrap();
    // SAFETY: (Grid, objects pointer, u32 pointer, u32, u32 pointer) is the kernel's
    // signature; `objects` holds two barriers, `slots` two words per thread; the
    // buffers outlive the launch.
    unsafe {
        kernel.launch(
            LaunchConfig::new(blocks, block).cooperative(),
            KernelArgs::new()
                .grid_barrier()
                .arg(&objects)
                .arg(&slots)
                .arg(phases)
                .arg(&report),
        )
    }
    .unwrap();
    assert_no_failed_checks(
        &gpu,
        &report,
        &format!("{blocks} blocks × 128, lanes apart"),
    );
    let last = &gpu.download(&slots).unwrap()[(phases % 2) as usize * threads..][..threads];
    assert!(
        last.iter().all(|&slot| slot == phases),
        "every thread ran every phase"
    );
}

/// `conf_latch_rounds_{block,device}` (see the kernels): rounds of latches counted
/// down by every thread with `arrive_and_wait(n)`, whole warps as one and lanes alone.
fn latch_rounds(gpu: &Gpu, scope: &str, blocks: u32, block: Dim3, rounds: u32) {
    let kernel = gpu.kernel(&format!("conf_latch_rounds_{scope}")).unwrap();
    let threads = (blocks * block.count().unwrap()) as usize;
    let latches = gpu.zeros::<u8>(OBJECT_BYTES).unwrap();
    let slots = gpu.zeros::<u32>(2 * threads).unwrap();
    let report = gpu.zeros::<u32>(REPORT_WORDS).unwrap();
    let mut args = KernelArgs::new().grid_barrier();
    if scope == "device" {
        args = args.arg(&latches);
    }
    let args = args.arg(&slots).arg(rounds).arg(&report);
    // SAFETY: (Grid, [latches,] u32 pointer, u32, u32 pointer) is the kernel's
    // signature; `latches` holds three latches, `slots` two words per thread; the
    // buffers outlive the launch.
    unsafe { kernel.launch(LaunchConfig::new(blocks, block).cooperative(), args) }.unwrap();
    assert_no_failed_checks(
        gpu,
        &report,
        &format!("{scope}, {blocks} blocks × {block:?}"),
    );
    let last = if rounds % 2 == 0 {
        &gpu.download(&slots).unwrap()[..threads]
    } else {
        &gpu.download(&slots).unwrap()[threads..]
    };
    assert!(
        last.iter().all(|&slot| slot == rounds),
        "{scope}, {blocks} blocks × {block:?}: every thread ran every round"
    );
}

#[test]
fn latches_counted_down_by_warps_and_lanes_of_any_shape() {
    let Some(gpu) = runtime() else { return };
    let sms = gpu.sm_count().unwrap();
    // Whole warps count down as one where their lanes' counts agree (even warps), lanes
    // alone where they differ (odd warps) or where the warp is partial.
    let shapes: [Dim3; 6] = [
        Dim3::x(1),
        Dim3::x(20),
        Dim3::x(48),
        Dim3::x(128),
        Dim3::x(1024),
        Dim3::new(5, 7, 3),
    ];
    for block in shapes {
        latch_rounds(&gpu, "block", sms, block, stress_phases(1_000));
        latch_rounds(&gpu, "device", sms, block, stress_phases(1_000));
    }
}

#[test]
fn grid_launch_refuses_one_block_more_than_can_be_coresident() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("conf_grid_sync").unwrap();
    let block = 128_u32;
    let max = kernel.max_coresident_blocks(block).unwrap();
    let slots = gpu.zeros::<u32>(2).unwrap();
    let report = gpu.zeros::<u32>(REPORT_WORDS).unwrap();
    // SAFETY: as in grid_sync_phases; the launch must be
    // refused before it happens.
    let refused = unsafe {
        kernel.launch(
            LaunchConfig::new(max + 1, block).cooperative(),
            KernelArgs::new()
                .grid_barrier()
                .arg(&slots)
                .arg(1_u32)
                .arg(&report),
        )
    };
    match refused {
        Err(CudaError::GridTooLarge {
            requested,
            max: limit,
        }) => assert_eq!((requested, limit), (max + 1, max)),
        other => panic!("expected GridTooLarge, got {other:?}"),
    }
}

#[test]
fn fair_semaphore_as_a_mutex_with_waiter_slots_in_global_memory() {
    let Some(gpu) = runtime() else { return };
    let init = gpu.kernel("conf_fair_semaphore_init").unwrap();
    let kernel = gpu.kernel("conf_fair_semaphore_mutex").unwrap();
    let (blocks, block, rounds) = (8_u32, 64_u32, 300_u32);
    let threads = (blocks * block) as usize;
    // Room for the semaphore and one slot per thread; host and device lay both out
    // alike (a word and two 64-bit pointers), and zero bytes are an unused slot.
    let semaphore = gpu
        .zeros::<u8>(std::mem::size_of::<scoped_sync::FairSemaphore<1>>())
        .unwrap();
    let slots = gpu
        .zeros::<u8>(threads * std::mem::size_of::<scoped_sync::WaiterSlot>())
        .unwrap();
    let words = gpu.zeros::<u32>(5).unwrap();
    // SAFETY: (semaphore pointer) and (semaphore pointer, slot pointer, u32 pointer,
    // u32) are the kernels' signatures; the buffers outlive both launches, which run in
    // order on one stream.
    unsafe {
        init.launch(LaunchConfig::new(1, 1), KernelArgs::new().arg(&semaphore))
            .unwrap();
        kernel
            .launch(
                LaunchConfig::new(blocks, block),
                KernelArgs::new()
                    .arg(&semaphore)
                    .arg(&slots)
                    .arg(&words)
                    .arg(rounds),
            )
            .unwrap();
    }
    let [guarded, acquired, _holders, violations, timed_out] =
        <[u32; 5]>::try_from(gpu.download(&words).unwrap()).unwrap();
    let attempts = threads as u32 * rounds;
    assert_eq!(
        violations, 0,
        "two holders of a binary fair semaphore at once"
    );
    assert_eq!(acquired + timed_out, attempts, "every attempt ended once");
    assert_eq!(guarded, acquired, "the guarded counter lost increments");
    let blocking = threads as u32 * (rounds - rounds / 3);
    assert!(
        acquired >= blocking,
        "{acquired} acquisitions, fewer than the {blocking} blocking ones"
    );
}
