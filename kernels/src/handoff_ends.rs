//! The two ends of the cross-GPU handoff tests and the round trip that measures it,
//! written once for both crates that build them: the main kernel crate (`peer.rs`:
//! objects placed for peers or processes, payloads stored through peer addresses) and
//! `kernels/nvshmem` (objects in NVSHMEM's symmetric heap, payloads put with NVSHMEM).

use core::time::Duration;

use sync_device::BusStopSource;
use sync_device::{DeviceWait, Gpu, GpuToGpu, HandoffSemaphore, WaitError};
use sync_shared::{Backend, System};

use crate::count;

/// How long a thread waits for the other GPU before it counts a failure and leaves
/// (a dead peer must end the test, not hang it).
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Payload slots of the cross-GPU handoff: the producer may run this many units ahead
/// of the consumer.
pub const HANDOFF_RING: u64 = 64;

/// The payload of unit `k` of the cross-GPU handoff (the host computes the checksum of
/// the same values).
pub fn handoff_payload(k: u64) -> u64 {
    k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k >> 7)
}

/// The producing end, in the calling thread: `units` units, each after a credit from
/// `credits` (the consumer hands a slot back), its payload written by `write(slot,
/// value)` into slot `k % HANDOFF_RING` of the consumer's ring, released on `work`
/// (exclusive endpoints); then it requests stop on `stop`. A wait that ends otherwise
/// counts in `failures`.
///
/// # Safety
///
/// `work` and `credits` (holding `HANDOFF_RING` units) and `stop` are live placed
/// objects this thread's GPU produces on and consumes from respectively; `failures` is
/// a live word of this GPU. One thread uses them at a time, beside one [`consume`].
pub unsafe fn produce(
    work: *const HandoffSemaphore<GpuToGpu>,
    credits: *const HandoffSemaphore<GpuToGpu>,
    units: u64,
    stop: *const BusStopSource,
    failures: *mut u32,
    mut write: impl FnMut(usize, u64),
) {
    // SAFETY: the caller's contract.
    let (work, credits, stop) = unsafe { (&*work, &*credits, &*stop) };
    let (Some(mut out), Some(mut back)) = (work.producer(), credits.consumer()) else {
        count(failures);
        return;
    };
    let wait = DeviceWait::new().timeout(PATIENCE);
    for k in 0..units {
        if back.acquire(wait).is_err() {
            count(failures);
            return;
        }
        // The slot's payload: the consumer handed it back (the credit just acquired)
        // and reads it after this release.
        out.release_with(1, |first| {
            write((first % HANDOFF_RING) as usize, handoff_payload(k))
        });
    }
    stop.request_stop();
}

/// The consuming end, in the calling thread: acquires units from `work` until a stop
/// request on `stop` (then takes what is left), adds each unit's payload (slot `k %
/// HANDOFF_RING` of `slots`) into `result[1]` (wrapping) and counts units in
/// `result[0]`, handing each slot back on `credits`; counts in `result[2]` a unit
/// whose sequence number is out of order and a wait that ended otherwise.
///
/// # Safety
///
/// As [`produce`], from the other end; `slots` holds `HANDOFF_RING` words of this GPU
/// that the producer writes; `result` holds three live words of this GPU.
pub unsafe fn consume(
    work: *const HandoffSemaphore<GpuToGpu>,
    credits: *const HandoffSemaphore<GpuToGpu>,
    slots: *const u64,
    stop: *const BusStopSource,
    result: *mut u64,
) {
    // SAFETY: the caller's contract.
    let (work, credits, stop) = unsafe { (&*work, &*credits, &*stop) };
    let (Some(mut inbox), Some(mut back)) = (work.consumer(), credits.producer()) else {
        // SAFETY: as above.
        unsafe { result.add(2).write(1) };
        return;
    };
    let (mut units, mut sum, mut bad) = (0u64, 0u64, 0u64);
    let mut take = |unit: u64| {
        if unit != units {
            bad += 1;
        }
        // SAFETY: slot `unit % HANDOFF_RING`, written before the unit's release.
        sum =
            sum.wrapping_add(unsafe { slots.add((unit % HANDOFF_RING) as usize).read_volatile() });
        units += 1;
    };
    loop {
        match inbox.acquire(DeviceWait::new().timeout(PATIENCE).stop(stop)) {
            Ok(unit) => {
                take(unit);
                back.release(1);
            }
            Err(WaitError::Stopped) => {
                // The stop was requested after the last release, and seeing it
                // acquires that release: drain what the last polls missed.
                while let Some(unit) = inbox.try_acquire() {
                    take(unit);
                }
                break;
            }
            Err(_) => {
                bad += 1;
                break;
            }
        }
    }
    // SAFETY: as above.
    unsafe {
        result.write(units);
        result.add(1).write(sum);
        result.add(2).write(bad);
    }
}

/// `rounds` round trips, in the calling thread: the `first` GPU releases a unit on
/// `outgoing` and waits for one on `incoming`, the other answers each; `spin` waits
/// without sleeping ([`DeviceWait::spin`]). The first GPU writes the time of rounds 2
/// to `rounds` (`%globaltimer`, nanoseconds) to `elapsed`, as
/// `baselines/multi_gpu_baselines.cu` times its raw ping-pong: the first round also
/// waits for the other GPU's kernel to start, which the launches' skew decides.
///
/// # Safety
///
/// Two live placed `GpuToGpu` semaphores holding 0 units, each GPU's `incoming` the
/// other's `outgoing`; `elapsed` a live word of this GPU.
pub unsafe fn ping_pong(
    outgoing: *const HandoffSemaphore<GpuToGpu>,
    incoming: *const HandoffSemaphore<GpuToGpu>,
    first: bool,
    rounds: u32,
    spin: bool,
    elapsed: *mut u64,
) {
    // SAFETY: the caller's contract.
    let (outgoing, incoming) = unsafe { (&*outgoing, &*incoming) };
    let (Some(mut out), Some(mut inbox)) = (outgoing.producer(), incoming.consumer()) else {
        return;
    };
    let wait = DeviceWait::new().timeout(PATIENCE);
    let wait = if spin { wait.spin() } else { wait };
    let mut start = <Gpu as Backend<System>>::now();
    for round in 0..rounds {
        if round == 1 {
            start = <Gpu as Backend<System>>::now();
        }
        if first {
            out.release(1);
        }
        if inbox.acquire(wait).is_err() {
            return;
        }
        if !first {
            out.release(1);
        }
    }
    if first {
        // SAFETY: the caller's contract.
        unsafe { elapsed.write(<Gpu as Backend<System>>::now().0 - start.0) };
    }
}
