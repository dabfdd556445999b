//! `persistent_worker`: a kernel fed from this thread through a `HandoffChannel` in
//! mapped memory and stopped with a `BusStopSource`.

use std::time::{Duration, Instant};

use scoped_sync::cuda::{KernelArgs, LaunchConfig, Module, Runtime};
use scoped_sync::{BusStopSource, HandoffChannel};

use crate::Error;

/// Work items of a default run.
pub const DEFAULT_ITEMS: u64 = 100_000;
/// Ring slots: work items in flight at most.
const RING: u64 = 16;
/// A wait for the kernel gives up after this (a live kernel answers in microseconds).
const PATIENCE: Duration = Duration::from_secs(20);

/// As the kernel crate's `worker::answer`.
fn answer(item: u64) -> u64 {
    item.wrapping_mul(item).wrapping_add(1)
}

/// The work items: any numbers will do, as long as both sides agree.
fn item(index: u64) -> u64 {
    index.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7
}

pub fn run(runtime: &Runtime, module: &Module, items: u64) -> Result<(), Error> {
    let kernel = module.kernel("persistent_worker")?;
    let channel = runtime.place_mapped(HandoffChannel::new(0, 0))?;
    let stop = runtime.place_mapped(BusStopSource::new())?;
    let ring = runtime.mapped(2 * RING as usize)?; // RING u64s
    let results = runtime.mapped(2 * RING as usize)?;
    let stream = runtime.new_stream()?;
    let args = KernelArgs::new()
        .arg(&channel)
        .arg(&stop)
        .arg(&ring)
        .arg(&results)
        .arg(RING as u32);
    let (Some(mut to_gpu), Some(mut from_gpu)) = (channel.producer(), channel.consumer()) else {
        return Err("worker: the channel's host endpoints are taken".into());
    };
    let host = |kernel: &scoped_sync::cuda::beside::Beside<'_>| -> Result<(u64, Duration), Error> {
        let start = Instant::now();
        let (mut sent, mut received, mut checksum) = (0_u64, 0_u64, 0_u64);
        let fed = (|| -> Result<(), Error> {
            while received < items {
                while sent < items && sent - received < RING {
                    let work = item(sent);
                    to_gpu.release_with(1, |seq| ring.write_u64((seq % RING) as usize, work));
                    sent += 1;
                }
                let seq = from_gpu.acquire(kernel.wait().timeout(PATIENCE))?;
                let got = results.read_u64((seq % RING) as usize);
                if got != answer(item(seq)) {
                    return Err(format!(
                        "worker: item {seq}: got {got}, expected {}",
                        answer(item(seq))
                    )
                    .into());
                }
                checksum = checksum.wrapping_add(got);
                received += 1;
            }
            Ok(())
        })();
        let elapsed = start.elapsed();
        // On every path, failures included: the kernel ends only when asked to.
        stop.request_stop();
        fed.map(|()| (checksum, elapsed))
    };
    // SAFETY: the worker's parameters in order; all outlive the kernel, which ends
    // when stop is requested (the host's side does so on every path).
    let run = unsafe { kernel.launch_beside(LaunchConfig::new(1, 32).on(&stream), args, host) };
    stream.synchronize()?;
    run.launch?;
    let (checksum, elapsed) = run.host?;
    let expected = (0..items).fold(0_u64, |sum, index| sum.wrapping_add(answer(item(index))));
    if checksum != expected || channel.received() != items || channel.sent() != items {
        return Err(format!(
            "worker: {} units sent, {} answered, checksum {checksum:#x} (expected {items} and {expected:#x})",
            channel.sent(),
            channel.received()
        )
        .into());
    }
    println!(
        "worker: ok ({items} items through a HandoffChannel, up to {RING} in flight, every answer and the checksum right; {:.2} µs per item; stopped by BusStopSource)",
        elapsed.as_secs_f64() * 1e6 / items as f64
    );
    Ok(())
}
