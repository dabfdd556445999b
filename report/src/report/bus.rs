//! The host–GPU section of the report: the handoff round trip through
//! `HandoffSemaphore`s in mapped memory beside raw spinning on mapped memory and beside
//! a kernel launch + stream synchronize; the ordinary semaphores in managed memory; the
//! persistent worker kernel fed through a ring and stopped by a `BusStopSource`
//! (items/s); and the wake-up penalty after a 5 ms wait on each side. All in one run
//! (`harness::bus_demo`). Then the rows of [`host_device`](super::host_device).

use std::time::Duration;

use harness::bus_demo::{self, DemoError, Paths, PhaseBarrier, RoundTrips, WakeUp};
use harness::Gpu;
use scoped_sync::cuda::CorePin;

use super::measure::Plan;
use super::progress::Progress;
use super::sample::{Row, Sample, Stats};

/// Progress steps [`measure`] takes.
pub fn steps() -> usize {
    7 + super::host_device::steps()
}

/// How long the waits of the wake-up rows are (the figure).
const LONG_WAIT: Duration = Duration::from_millis(5);

/// A one-off figure (a duration per operation) of the host–GPU section.
fn ours(primitive: &'static str, op: &str, threads: u32, took: Duration) -> Sample {
    Sample::ours(
        "cuda",
        "system",
        primitive,
        op,
        threads,
        Stats::single(took.as_secs_f64() * 1e9),
    )
    .launched(1, threads.max(1))
}

/// Durations in ns as statistics.
fn stats(durations: &[Duration]) -> Stats {
    let ns: Vec<f64> = durations.iter().map(|d| d.as_secs_f64() * 1e9).collect();
    Stats::of(&ns)
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
    let (mut raw, mut exclusive, mut launch) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 * plan.repetitions.max(1) {
        raw.push(trips.raw_spin(rounds / 3)?);
        exclusive.push(trips.handoff(rounds / 3, Paths::Exclusive)?);
        launch.push(bus_demo::launch_round_trip(runtime, rounds / 30)?);
    }
    let endpoints = Sample::ours(
        "cuda",
        "system",
        "handoff_channel",
        "round_trip",
        1,
        stats(&exclusive),
    )
    .variant("endpoints")
    .launched(1, 1);
    let raw = stats(&raw);
    rows.push(Row {
        peers: vec![
            endpoints.peer("raw_spin_on_mapped_memory", raw),
            endpoints.peer("kernel_launch_and_stream_sync", stats(&launch)),
        ],
        ours: endpoints,
    });
    progress.step("cuda host<->gpu shared paths");
    let shared = Sample::ours(
        "cuda",
        "system",
        "handoff_channel",
        "round_trip",
        1,
        stats(&[trips.handoff(rounds / 10, Paths::Shared)?]),
    )
    .variant("shared_paths")
    .launched(1, 1);
    drop(pin);
    rows.push(Row::beside(
        shared.clone(),
        shared.peer("raw_spin_on_mapped_memory", raw),
    ));
    progress.step("cuda managed semaphores");
    match bus_demo::managed_round_trip(runtime, rounds / 20) {
        Ok(managed) => rows.push(Row::alone(
            ours("semaphore", "round_trip", 1, managed).variant("managed_memory"),
        )),
        Err(DemoError::Placement(refused)) => eprintln!("scoped-sync: {refused}"),
        Err(other) => return Err(other),
    }
    progress.step("cuda host+gpu barrier phases");
    let bus = bus_demo::barrier_phase(runtime, rounds / 10, PhaseBarrier::Bus)?;
    // Two parties: one host thread and one GPU thread (a launch of 1 × 1).
    let bus = ours("bus_barrier", "arrive_and_wait", 2, bus)
        .variant("one_host_one_gpu_thread")
        .launched(1, 1);
    let managed =
        match bus_demo::barrier_phase(runtime, (rounds / 400).max(10), PhaseBarrier::Managed) {
            // Our own `Barrier<System>`, placed in managed memory: the general type
            // beside the bus object made for this shape.
            Ok(managed) => {
                Some(bus.peer("scoped_sync_barrier_in_managed_memory", stats(&[managed])))
            }
            Err(DemoError::Placement(refused)) => {
                eprintln!("scoped-sync: {refused}");
                None
            }
            Err(other) => return Err(other),
        };
    rows.push(Row {
        ours: bus,
        peers: managed.into_iter().collect(),
    });
    progress.step("cuda persistent worker");
    let threads = 128;
    for window in [1, 16] {
        let run = bus_demo::persistent_worker(runtime, u64::from(rounds), window, threads)?;
        let per_item = run.elapsed / u32::try_from(run.items).unwrap_or(u32::MAX);
        rows.push(Row::alone(
            ours("persistent_worker", "item", threads, per_item)
                .variant(format!("window_{}", run.window)),
        ));
    }
    progress.step("cuda host wake-up after 5 ms");
    let reps = if plan.repetitions > 1 { 20 } else { 4 };
    let host = bus_demo::host_wake_up(runtime, LONG_WAIT, reps)?;
    rows.push(wake_up_row("host", host, reps));
    progress.step("cuda device wake-up after 5 ms");
    let device = bus_demo::device_wake_up(runtime, LONG_WAIT, reps)?;
    rows.push(wake_up_row("device", device, reps));
    // The host-device failure modes' rows (placements, the stream gate) last; a
    // failure there leaves the rows above standing.
    match super::host_device::measure(runtime, plan, progress) {
        Ok(more) => rows.extend(more),
        Err(error) => eprintln!("scoped-sync: the host-device rows failed: {error}"),
    }
    Ok(rows)
}

/// A wake-up row: round trips after the long wait (ours) beside plain round trips of
/// the same channel (the difference is the penalty); `waiting_side` is `host` or
/// `device`.
fn wake_up_row(waiting_side: &str, wake_up: WakeUp, repetitions: u32) -> Row {
    let stats = |best: Duration, median: Duration, worst: Duration| Stats {
        min: best.as_secs_f64() * 1e9,
        median: median.as_secs_f64() * 1e9,
        max: worst.as_secs_f64() * 1e9,
        repetitions,
    };
    let ours = Sample::ours(
        "cuda",
        "system",
        "handoff_channel",
        "round_trip_after_5ms_wait",
        1,
        stats(
            wake_up.after_wait_best,
            wake_up.after_wait,
            wake_up.after_wait_worst,
        ),
    )
    .variant(format!("{waiting_side}_waits"))
    .launched(1, 1);
    let plain = ours.peer(
        "same_channel_without_the_wait",
        stats(wake_up.plain_best, wake_up.plain, wake_up.plain_worst),
    );
    Row::beside(ours, plain)
}
