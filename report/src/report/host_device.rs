//! The host–device rows of the report (docs/host-device.md): the round trip of a flag
//! the host sets, to a waiting kernel and back, in each placement the runtime offers;
//! and a kernel gated behind a stream wait on a handoff semaphore's count
//! (`Stream::wait_released`) beside a spinning kernel acquiring the same units, each
//! from the host's release to the kernel's answer (`harness::host_device`).
//!
//! Each round is timed alone on the host: the records' statistics are over the rounds
//! (`repetitions` = rounds), not over repeated runs.

use std::time::Duration;

use harness::host_device::{self, FlagPlacement, HostDeviceError};
use harness::Gpu;
use scoped_sync::cuda::CorePin;

use super::measure::Plan;
use super::progress::Progress;
use super::sample::{Row, Sample, Stats};

/// How long the host idles (untimed) before each release of the gate rows, so that
/// the GPU is parked on the wait (or spinning) when the release comes.
const SETTLE: Duration = Duration::from_micros(200);
/// A flag or an answer later than this fails the section.
const PATIENCE: Duration = Duration::from_secs(10);

/// Progress steps [`measure`] takes.
pub fn steps() -> usize {
    FlagPlacement::ALL.len() + 1
}

/// Statistics over per-round durations, in ns.
fn stats(durations: &[Duration]) -> Stats {
    let ns: Vec<f64> = durations.iter().map(|d| d.as_secs_f64() * 1e9).collect();
    Stats::of(&ns)
}

/// Measures the rows; `plan` scales the rounds.
pub fn measure(
    runtime: &Gpu,
    plan: Plan,
    progress: &mut Progress,
) -> Result<Vec<Row>, HostDeviceError> {
    let rounds = u32::try_from(plan.scale(2_000)).unwrap_or(2_000).max(50);
    let mut rows = Vec::new();
    // The host's side on one core, as the round trips of the bus rows.
    let pin = CorePin::current_core();
    for placement in FlagPlacement::ALL {
        progress.step(&format!("cuda host flag, {}", placement.name()));
        match host_device::flag_round_trips(runtime, placement, rounds, PATIENCE) {
            Ok(took) => rows.push(Row::alone(
                Sample::ours("cuda", "system", "host_flag", "round_trip", 1, stats(&took))
                    .variant(placement.name())
                    .launched(1, 1),
            )),
            Err(HostDeviceError::Demo(harness::bus_demo::DemoError::Placement(refused))) => {
                eprintln!("scoped-sync: {refused}");
            }
            Err(other) => return Err(other),
        }
    }
    progress.step("cuda stream gated on a handoff semaphore");
    let gated = host_device::gated_round_trips(runtime, rounds, SETTLE, PATIENCE)?;
    let spinning = host_device::spinning_round_trips(runtime, rounds, SETTLE, PATIENCE)?;
    drop(pin);
    let ours = Sample::ours(
        "cuda",
        "system",
        "handoff_semaphore",
        "release_to_kernel_answer",
        1,
        stats(&gated),
    )
    .variant("stream_wait")
    .launched(1, 1);
    rows.push(Row::beside(
        ours.clone(),
        ours.peer("spinning_kernel", stats(&spinning)),
    ));
    Ok(rows)
}
