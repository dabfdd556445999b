//! The host–GPU section of the report: the handoff round trip through
//! `HandoffSemaphore`s in mapped memory beside raw spinning on mapped memory and beside
//! a kernel launch + stream synchronize; the ordinary semaphores in managed memory; the
//! persistent worker kernel fed through a ring and stopped by a `BusStopSource`
//! (items/s); and the wake-up penalty after a 5 ms wait on each side. All in one run
//! (`harness::bus_demo`).

use std::time::Duration;

use harness::bus_demo::{self, DemoError, Paths, PhaseBarrier, RoundTrips, WakeUp};
use harness::Gpu;
use scoped_sync::cuda::CorePin;

use super::measure::Plan;
use super::progress::Progress;
use super::sample::{Row, Sample};

/// Progress steps [`measure`] takes.
pub fn steps() -> usize {
    8
}

/// How long the waits of the wake-up rows are (the figure).
const LONG_WAIT: Duration = Duration::from_millis(5);

fn sample(primitive: &str, op: &str, threads: u32, took: Duration) -> Sample {
    Sample {
        backend: "cuda",
        scope: "system",
        primitive: primitive.to_owned(),
        op: op.to_owned(),
        threads,
        ns_per_op: took.as_secs_f64() * 1e9,
        launch: Some((1, threads.max(1))),
        cycles_per_op: None,
    }
}

/// Measures the section; `plan` scales the rounds.
pub fn measure(runtime: &Gpu, plan: Plan, progress: &mut Progress) -> Result<Vec<Row>, DemoError> {
    let rounds = u32::try_from(plan.scale(20_000)).unwrap_or(20_000).max(100);
    let mut rows = Vec::new();

    // The round trips alternate, best of the repetitions each: the bus is noisy, and a
    // comparison is only fair within one stretch of time. Raw spinning and the channel
    // share one mapped line (see `RoundTrips`) and one host core (see `CorePin`).
    progress.step("cuda host<->gpu round trips");
    let pin = CorePin::current_core();
    let mut trips = RoundTrips::new(runtime)?;
    let (mut raw, mut exclusive, mut launch) = (Duration::MAX, Duration::MAX, Duration::MAX);
    for _ in 0..3 * plan.repetitions.max(1) {
        raw = raw.min(trips.raw_spin(rounds / 3)?);
        exclusive = exclusive.min(trips.handoff(rounds / 3, Paths::Exclusive)?);
        launch = launch.min(bus_demo::launch_round_trip(runtime, rounds / 30)?);
    }
    let raw = sample("peer:raw spin on mapped memory", "round trip", 1, raw);
    rows.push(Row {
        ours: sample("handoff_channel", "round trip, endpoints", 1, exclusive),
        peer: Some(raw.clone()),
    });
    progress.step("cuda host<->gpu shared paths");
    let shared = trips.handoff(rounds / 10, Paths::Shared)?;
    drop(pin);
    rows.push(Row {
        ours: sample("handoff_channel", "round trip, shared paths", 1, shared),
        peer: Some(raw),
    });
    progress.step("cuda launch + synchronize");
    let launch = sample("peer:launch + stream sync", "round trip", 1, launch);
    rows.push(Row {
        ours: sample("handoff_channel", "round trip, endpoints", 1, exclusive),
        peer: Some(launch),
    });
    progress.step("cuda managed semaphores");
    match bus_demo::managed_round_trip(runtime, rounds / 20) {
        Ok(managed) => rows.push(Row {
            ours: sample("semaphore in managed memory", "round trip", 1, managed),
            peer: None,
        }),
        Err(DemoError::Placement(refused)) => eprintln!("scoped-sync: {refused}"),
        Err(other) => return Err(other),
    }
    progress.step("cuda host+gpu barrier phases");
    let bus = bus_demo::barrier_phase(runtime, rounds / 10, PhaseBarrier::Bus)?;
    let managed =
        match bus_demo::barrier_phase(runtime, (rounds / 400).max(10), PhaseBarrier::Managed) {
            Ok(managed) => Some(sample(
                "peer:Barrier<System> in managed memory",
                "phase",
                1,
                managed,
            )),
            Err(DemoError::Placement(refused)) => {
                eprintln!("scoped-sync: {refused}");
                None
            }
            Err(other) => return Err(other),
        };
    rows.push(Row {
        ours: sample("bus_barrier", "phase, 1 host + 1 GPU thread", 1, bus),
        peer: managed,
    });
    progress.step("cuda persistent worker");
    let threads = 128;
    for window in [1, 16] {
        let run = bus_demo::persistent_worker(runtime, u64::from(rounds), window, threads)?;
        let per_item = run.elapsed / u32::try_from(run.items).unwrap_or(u32::MAX);
        rows.push(Row {
            ours: sample(
                "persistent worker",
                &format!(
                    "item, {} in flight ({:.2} M items/s)",
                    run.window,
                    run.items_per_second() / 1e6
                ),
                threads,
                per_item,
            ),
            peer: None,
        });
    }
    progress.step("cuda host wake-up after 5 ms");
    let reps = if plan.repetitions > 1 { 20 } else { 4 };
    let host = bus_demo::host_wake_up(runtime, LONG_WAIT, reps)?;
    rows.push(wake_up_row("host wait", host));
    progress.step("cuda device wake-up after 5 ms");
    let device = bus_demo::device_wake_up(runtime, LONG_WAIT, reps)?;
    rows.push(wake_up_row("device wait", device));
    Ok(rows)
}

/// A wake-up row: the median round trip after the long wait (the worst in the op's
/// text), beside the plain median round trip (the difference is the penalty).
fn wake_up_row(primitive: &str, wake_up: WakeUp) -> Row {
    Row {
        ours: sample(
            primitive,
            &format!(
                "round trip after waiting 5 ms (median; worst {:.1} µs)",
                wake_up.after_wait_worst.as_secs_f64() * 1e6
            ),
            1,
            wake_up.after_wait,
        ),
        peer: Some(sample(
            "peer:plain round trip",
            "round trip (median)",
            1,
            wake_up.plain,
        )),
    }
}
