//! The host section of the report: every primitive at `System` scope on CPU threads,
//! each next to its peer, and the atomic and fence costs beneath them.

use std::time::Duration;

use scoped_sync::{Barrier, CountingSemaphore, FairSemaphore, Host, Latch, Scope, System};

use super::atomics;
use super::measure::{iterations, ns_per_op, Best, Plan};
use super::peers::{MutexCondvarLatch, MutexCondvarSemaphore};
use super::progress::Progress;
use super::sample::{Row, Sample};
use super::workloads;

/// The report's name of this backend.
const BACKEND: &str = "host";

/// A workload: the wall time of `n` iterations.
type Workload = Box<dyn Fn(u64) -> Duration>;

/// One measurement to make: ours, and optionally the peer's, of the same shape.
struct Case {
    primitive: &'static str,
    op: String,
    threads: u32,
    /// The full run's iteration count (the plan scales it).
    iterations: u64,
    ours: Workload,
    peer: Option<(&'static str, Workload)>,
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
            peer: None,
        }
    }

    fn with_peer(mut self, name: &'static str, peer: impl Fn(u64) -> Duration + 'static) -> Self {
        self.peer = Some((name, Box::new(peer)));
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

/// Everything the host section measures, in report order.
fn cases() -> Vec<Case> {
    use workloads::*;

    let mut cases = Vec::new();
    for threads in [2_u32, 4] {
        let n = threads as usize;
        cases.push(
            Case::new(
                "barrier",
                "arrive_and_wait",
                threads,
                iterations::BARRIER_PHASES,
                move |i| barrier_phases::<Barrier>(n, i),
            )
            .with_peer("std_barrier", move |i| {
                barrier_phases::<std::sync::Barrier>(n, i)
            }),
        );
    }
    cases.push(
        Case::new(
            "semaphore",
            "ping_pong",
            2,
            iterations::PING_PONG_ROUND_TRIPS,
            ping_pong::<CountingSemaphore>,
        )
        .with_peer(
            "mutex_condvar_semaphore",
            ping_pong::<MutexCondvarSemaphore>,
        ),
    );
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
        ),
    );
    // The FIFO variant on the same workloads, to show what fairness costs; its peer
    // would be the rows above again, so it has none of its own.
    cases.push(Case::new(
        "semaphore",
        "fair_ping_pong",
        2,
        iterations::PING_PONG_ROUND_TRIPS,
        ping_pong::<FairSemaphore>,
    ));
    cases.push(Case::new(
        "semaphore",
        "fair_acquire_release_uncontended",
        1,
        iterations::ACQUIRE_RELEASE,
        acquire_release_uncontended::<FairSemaphore>,
    ));
    cases.push(
        Case::new(
            "latch",
            "count_down_wait",
            1,
            iterations::LATCH_COUNT_DOWN_WAIT,
            count_down_wait::<Latch>,
        )
        .with_peer("mutex_condvar_latch", count_down_wait::<MutexCondvarLatch>),
    );
    // std has no stop token: these stand alone (compare-host.sh sets them beside
    // libstdc++'s `std::stop_token`).
    cases.push(Case::new(
        "stop_token",
        "stop_requested",
        1,
        iterations::STOP_REQUESTED_POLLS,
        stop_requested,
    ));
    cases.push(Case::new(
        "stop_callback",
        "register_drop",
        1,
        iterations::STOP_CALLBACKS,
        stop_callback_register_drop,
    ));
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
pub fn steps() -> usize {
    cases().len()
}

/// Measures the host section under `plan`, announcing each case on `progress`.
///
/// Ours and the peer alternate within each repetition, so that a burst of noise from
/// another process is likely to hit both rather than only one side of a ratio.
pub fn measure(plan: Plan, progress: &mut Progress) -> Vec<Row> {
    let scope = System::NAME;
    let sample = |primitive: String, op: &str, threads: u32, best: Best| Sample {
        backend: BACKEND,
        scope,
        primitive,
        op: op.to_owned(),
        threads,
        ns_per_op: best.get().expect("at least one repetition"),
        launch: None,
        cycles_per_op: None,
    };
    cases()
        .into_iter()
        .map(|case| {
            progress.step(&case.label());
            let n = plan.scale(case.iterations);
            let (mut ours, mut peer) = (Best::default(), Best::default());
            for _ in 0..plan.repetitions.max(1) {
                ours.add(ns_per_op((case.ours)(n), n));
                if let Some((_, run)) = &case.peer {
                    peer.add(ns_per_op(run(n), n));
                }
            }
            Row {
                ours: sample(case.primitive.to_owned(), &case.op, case.threads, ours),
                peer: case
                    .peer
                    .as_ref()
                    .map(|(name, _)| sample(format!("peer:{name}"), &case.op, case.threads, peer)),
            }
        })
        .collect()
}
