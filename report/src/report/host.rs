//! The host section of the report: every primitive at `System` scope on CPU threads,
//! each next to its Rust peer and, given `--anchor`, libstdc++'s C++20 primitive, and
//! the atomic and fence costs beneath them. With `--scaling`, the barrier, semaphore and
//! latch workloads run at every thread count of [`thread_ladder`].

use std::time::Duration;

use scoped_sync::{Barrier, CountingSemaphore, FairSemaphore, Host, Latch, Scope, System};

use super::anchor::Anchor;
use super::atomics;
use super::measure::{iterations, ns_per_op, Plan};
use super::peers::{MutexCondvarLatch, MutexCondvarSemaphore};
use super::progress::Progress;
use super::sample::{Row, Sample, Stats};
use super::workloads;

/// The report's name of this backend.
const BACKEND: &str = "host";

/// A workload: the wall time of `n` iterations.
type Workload = Box<dyn Fn(u64) -> Duration>;

/// A multi-threaded workload: the wall time of `n` iterations on `threads` threads.
type Threaded = fn(usize, u64) -> Duration;

/// One measurement to make: ours and the peers', of the same shape.
struct Case {
    primitive: &'static str,
    op: String,
    threads: u32,
    /// The full run's iteration count (the plan scales it).
    iterations: u64,
    ours: Workload,
    peers: Vec<(&'static str, Workload)>,
    /// The anchor program's name of the same workload, if it has one.
    anchor: Option<&'static str>,
}

impl Case {
    fn new(
        primitive: &'static str,
        op: impl Into<String>,
        threads: u32,
        iterations: u64,
        ours: impl Fn(u64) -> Duration + 'static,
    ) -> Self {
        Self {
            primitive,
            op: op.into(),
            threads,
            iterations,
            ours: Box::new(ours),
            peers: Vec::new(),
            anchor: None,
        }
    }

    fn with_peer(mut self, name: &'static str, peer: impl Fn(u64) -> Duration + 'static) -> Self {
        self.peers.push((name, Box::new(peer)));
        self
    }

    fn with_anchor(mut self, workload: &'static str) -> Self {
        self.anchor = Some(workload);
        self
    }

    fn label(&self) -> String {
        let threads = match self.threads {
            1 => String::new(),
            n => format!(", {n} threads"),
        };
        format!("{} {}{threads}", self.primitive, self.op)
    }
}

/// Which thread counts the multi-threaded workloads run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// The report's usual shapes: barriers at 2 and 4 threads, one ping-pong pair, a
    /// one-thread latch (the shapes of the headline comparisons).
    Usual,
    /// Every count of [`thread_ladder`] for this many hardware threads.
    Scaling(u32),
}

/// 1, 2, 4, ... up to `cores`, `cores` itself, and `2 × cores`: the scaling curve, and
/// one point past the cores to show what oversubscription does.
pub fn thread_ladder(cores: u32) -> Vec<u32> {
    let cores = cores.max(1);
    let mut ladder: Vec<u32> = std::iter::successors(Some(1_u32), |n| n.checked_mul(2))
        .take_while(|&n| n <= cores)
        .collect();
    if ladder.last() != Some(&cores) {
        ladder.push(cores);
    }
    ladder.push(2 * cores);
    ladder
}

/// Iterations for a workload of `threads` threads whose full count at a few threads is
/// `base`: fewer when many threads share the cores, so that the slowest peer still
/// finishes in seconds.
fn per_thread_count(base: u64, threads: u32) -> u64 {
    (base * 4 / u64::from(threads.max(4))).max(base / 20)
}

/// The barrier, semaphore and latch cases at each thread count of `threads`.
fn thread_cases(threads: Threads) -> Vec<Case> {
    use workloads::*;

    let (barrier_threads, pair_threads, contended_threads, latch_threads) = match threads {
        Threads::Usual => (vec![2, 4], vec![2], vec![], vec![1]),
        Threads::Scaling(cores) => {
            let ladder = thread_ladder(cores);
            let even = ladder.iter().copied().filter(|n| n % 2 == 0).collect();
            (ladder.clone(), even, ladder.clone(), ladder)
        }
    };
    let fair_threads: Vec<u32> = contended_threads
        .iter()
        .copied()
        .filter(|&n| n > 1)
        .collect();
    // A workload of `threads` threads: ours, the Rust peer, the anchor's name for it.
    let threaded = |primitive,
                    op,
                    threads: u32,
                    iterations,
                    ours: Threaded,
                    peer,
                    theirs: Threaded,
                    anchor| {
        let n = threads as usize;
        Case::new(primitive, op, threads, iterations, move |i| ours(n, i))
            .with_peer(peer, move |i| theirs(n, i))
            .with_anchor(anchor)
    };
    let mut cases = Vec::new();
    for threads in barrier_threads {
        cases.push(threaded(
            "barrier",
            "arrive_and_wait",
            threads,
            per_thread_count(iterations::BARRIER_PHASES, threads),
            barrier_phases::<Barrier>,
            "std_barrier",
            barrier_phases::<std::sync::Barrier>,
            "barrier",
        ));
    }
    for threads in pair_threads {
        cases.push(threaded(
            "semaphore",
            "ping_pong",
            threads,
            per_thread_count(iterations::PING_PONG_ROUND_TRIPS, threads),
            ping_pong_pairs::<CountingSemaphore>,
            "mutex_condvar_semaphore",
            ping_pong_pairs::<MutexCondvarSemaphore>,
            "ping_pong",
        ));
    }
    for threads in contended_threads {
        cases.push(threaded(
            "semaphore",
            "acquire_release_contended",
            threads,
            iterations::CONTENDED_ACQUIRE_RELEASE,
            acquire_release_contended::<CountingSemaphore>,
            "mutex_condvar_semaphore",
            acquire_release_contended::<MutexCondvarSemaphore>,
            "contended",
        ));
    }
    // The FIFO variant on the contended workload, beside libstdc++'s (unfair)
    // semaphore: what first-come-first-served order costs under contention.
    for &threads in &fair_threads {
        let n = threads as usize;
        cases.push(
            Case::new(
                "fair_semaphore",
                "acquire_release_contended",
                threads,
                per_thread_count(iterations::CONTENDED_ACQUIRE_RELEASE, threads),
                move |i| acquire_release_contended::<FairSemaphore>(n, i),
            )
            .with_anchor("contended"),
        );
    }
    for threads in latch_threads {
        let rounds = if threads == 1 {
            iterations::LATCH_COUNT_DOWN_WAIT
        } else {
            per_thread_count(iterations::LATCH_ROUNDS, threads)
        };
        let n = threads as usize;
        cases.push(
            threaded(
                "latch",
                "count_down_wait",
                threads,
                rounds,
                latch_rounds::<Latch>,
                "mutex_condvar_latch",
                latch_rounds::<MutexCondvarLatch>,
                "latch",
            )
            .with_peer("crossbeam_wait_group", move |i| wait_group_rounds(n, i)),
        );
    }
    cases
}

/// Everything the host section measures, in report order.
fn cases(threads: Threads) -> Vec<Case> {
    use workloads::*;

    let mut cases = thread_cases(threads);
    cases.push(
        Case::new(
            "semaphore",
            "acquire_release_uncontended",
            1,
            iterations::ACQUIRE_RELEASE,
            acquire_release_uncontended::<CountingSemaphore>,
        )
        .with_peer(
            "mutex_condvar_semaphore",
            acquire_release_uncontended::<MutexCondvarSemaphore>,
        )
        .with_anchor("uncontended"),
    );
    // The FIFO variant on the same workloads, to show what fairness costs; its peers
    // would be the rows above again, so it has none of its own.
    cases.push(Case::new(
        "fair_semaphore",
        "ping_pong",
        2,
        iterations::PING_PONG_ROUND_TRIPS,
        ping_pong::<FairSemaphore>,
    ));
    cases.push(Case::new(
        "fair_semaphore",
        "acquire_release_uncontended",
        1,
        iterations::ACQUIRE_RELEASE,
        acquire_release_uncontended::<FairSemaphore>,
    ));
    // std has no stop token: these have the C++ anchor only.
    cases.push(
        Case::new(
            "stop_token",
            "stop_requested",
            1,
            iterations::STOP_REQUESTED_POLLS,
            stop_requested,
        )
        .with_anchor("stop_requested"),
    );
    cases.push(
        Case::new(
            "stop_callback",
            "register_drop",
            1,
            iterations::STOP_CALLBACKS,
            stop_callback_register_drop,
        )
        .with_anchor("stop_callback"),
    );
    for &op in atomics::ALL {
        cases.push(Case::new(
            op.primitive(),
            op.name(),
            1,
            iterations::ATOMIC_OPS,
            move |i| op.run::<System, Host>(i),
        ));
    }
    cases
}

/// The number of progress steps [`measure`] takes.
pub fn steps(threads: Threads) -> usize {
    cases(threads).len()
}

/// Measures the host section under `plan`, announcing each case on `progress`; each
/// of `anchors` (libstdc++'s, libc++'s) adds its figure of each workload it has to the
/// row.
///
/// Ours, the peers and the anchors alternate within each repetition, so that a burst of
/// noise from another process is likely to hit all of them rather than one side of a
/// ratio.
pub fn measure(
    plan: Plan,
    threads: Threads,
    anchors: &[Anchor],
    progress: &mut Progress,
) -> Vec<Row> {
    cases(threads)
        .into_iter()
        .map(|case| {
            progress.step(&case.label());
            let n = plan.scale(case.iterations);
            let mut ours = Vec::new();
            let mut peers = vec![Vec::new(); case.peers.len()];
            // Per anchor: its figures, and whether it is still run (a stalled or
            // failing anchor is a finding, not a reason to stop measuring ours; its
            // remaining repetitions are skipped).
            let mut anchored: Vec<(Vec<f64>, bool)> =
                vec![(Vec::new(), case.anchor.is_some()); anchors.len()];
            for _ in 0..plan.repetitions.max(1) {
                ours.push(ns_per_op((case.ours)(n), n));
                for ((_, run), figures) in case.peers.iter().zip(&mut peers) {
                    figures.push(ns_per_op(run(n), n));
                }
                let Some(workload) = case.anchor else {
                    continue;
                };
                for (program, (figures, running)) in anchors.iter().zip(&mut anchored) {
                    if !*running {
                        continue;
                    }
                    match program.run(workload, case.threads, n) {
                        Ok(ns) => figures.push(ns),
                        Err(error) => {
                            eprintln!(
                                "scoped-sync: {} ({}): {error}",
                                case.label(),
                                program.implementation()
                            );
                            figures.clear();
                            *running = false;
                        }
                    }
                }
            }
            let sample = Sample::ours(
                BACKEND,
                System::NAME,
                case.primitive,
                case.op.as_str(),
                case.threads,
                Stats::of(&ours),
            );
            let mut row = Row::alone(sample);
            for ((name, _), figures) in case.peers.iter().zip(&peers) {
                row.peers.push(row.ours.peer(name, Stats::of(figures)));
            }
            for (program, (figures, _)) in anchors.iter().zip(&anchored) {
                if !figures.is_empty() {
                    row.peers
                        .push(row.ours.peer(program.implementation(), Stats::of(figures)));
                }
            }
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_doubles_to_the_cores_then_oversubscribes() {
        assert_eq!(thread_ladder(16), [1, 2, 4, 8, 16, 32]);
        assert_eq!(thread_ladder(2), [1, 2, 4]);
        assert_eq!(thread_ladder(6), [1, 2, 4, 6, 12]);
        assert_eq!(thread_ladder(1), [1, 2]);
    }

    #[test]
    fn every_scaling_workload_runs_at_every_rung() {
        let cases = thread_cases(Threads::Scaling(4));
        let at = |primitive: &str, op: &str| -> Vec<u32> {
            cases
                .iter()
                .filter(|case| case.primitive == primitive && case.op == op)
                .map(|case| case.threads)
                .collect()
        };
        assert_eq!(at("barrier", "arrive_and_wait"), [1, 2, 4, 8]);
        assert_eq!(at("semaphore", "ping_pong"), [2, 4, 8]);
        assert_eq!(at("semaphore", "acquire_release_contended"), [1, 2, 4, 8]);
        assert_eq!(at("fair_semaphore", "acquire_release_contended"), [2, 4, 8]);
        assert_eq!(at("latch", "count_down_wait"), [1, 2, 4, 8]);
        assert!(cases.iter().all(|case| case.anchor.is_some()));
    }
}
