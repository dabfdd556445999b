//! A persistent kernel fed by the host: one block stays resident, takes work items
//! from a ring in mapped memory as the host releases them through a `HandoffChannel`,
//! hands each answer back through the same channel, and ends when the host requests
//! stop on a `BusStopSource`. The kernel is `bus_persistent_worker` in `kernels/src/bus.rs`; the
//! host side is `harness::bus_demo::persistent_worker`, which launches the
//! kernel from a helper thread and feeds it from this one
//! (`sync_host::cuda::Kernel::launch_beside`), so the example also runs where launches
//! block until their kernel ends (`CUDA_LAUNCH_BLOCKING=1`).
//!
//! ```sh
//! cargo run --release --example persistent_kernel [ITEMS]
//! ```

use std::process::ExitCode;

use harness::bus_demo::{self, Paths, RoundTrips};
use harness::Gpu;
use scoped_sync::cuda::{CorePin, CudaError};

fn main() -> ExitCode {
    let items = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(100_000_u64);
    let runtime = match Gpu::open() {
        Ok(runtime) => runtime,
        Err(CudaError::NoDriver) => {
            eprintln!("skipped: no CUDA driver");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("persistent_kernel: {error}");
            return ExitCode::FAILURE;
        }
    };
    let run = || -> Result<(), Box<dyn std::error::Error>> {
        for window in [1, 16] {
            let run = bus_demo::persistent_worker(&runtime, items, window, 128)?;
            println!(
                "{} items, {} in flight: {:.3} M items/s, {:.2} µs per item",
                run.items,
                run.window,
                run.items_per_second() / 1e6,
                run.elapsed.as_secs_f64() * 1e6 / run.items as f64
            );
        }
        // Alternating, best of three each (the bus and the host core are noisy).
        // Raw spinning and the channel on one mapped line (see `RoundTrips`), from one
        // host core (see `CorePin`).
        let _pin = CorePin::current_core();
        let mut trips = RoundTrips::new(&runtime)?;
        let (mut handoff, mut raw, mut launch) = (f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..3 {
            let round_trip = trips.handoff(10_000, Paths::Exclusive)?;
            handoff = handoff.min(round_trip.as_secs_f64() * 1e6);
            raw = raw.min(trips.raw_spin(10_000)?.as_secs_f64() * 1e6);
            launch = launch.min(bus_demo::launch_round_trip(&runtime, 2_000)?.as_secs_f64() * 1e6);
        }
        println!(
            "round trip: handoff channel {handoff:.2} µs, raw spin on mapped memory {raw:.2} µs \
             ({:.2}x), launch + sync {launch:.2} µs ({:.1}x slower than the channel)",
            handoff / raw,
            launch / handoff
        );
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("persistent_kernel: {error}");
            ExitCode::FAILURE
        }
    }
}
