//! Kernels of the host–device failure modes (`tests/gpu_host_device.rs`, the report's
//! host–device rows): a kernel that waits on a `HostToGpu` handoff semaphore while the
//! host makes driver calls, kernels that answer a host-set flag in each placement, and
//! the tiny kernel a stream gated on a bus word runs.
//!
//! Every wait here gives up after a patience the host passes (nanoseconds), so that a
//! flag that never arrives ends the kernel with a recorded failure instead of a hang.

use core::time::Duration;

use crate::count;
use sync_device::ptx_atomics::PtxScope;
use sync_device::{DeviceWait, GlobalTime, Gpu, HandoffSemaphore, HostToGpu, System};
use sync_shared::{Backend, Ordering};

/// What [`hd_wait_handoff`] writes to its `outcome` word.
const ACQUIRED: u32 = 1;
/// ... when its wait gave up.
const GAVE_UP: u32 = 2;

fn now() -> GlobalTime {
    <Gpu as Backend<System>>::now()
}

/// One thread stores 1 to `started` (mapped: the host learns that the kernel runs),
/// then acquires one unit of `work` through the consumer endpoint (polling one mapped
/// word), waiting up to `patience_ns`; then stores [`ACQUIRED`] or [`GAVE_UP`] to
/// `outcome` (mapped). The kernel the host's driver calls run beside.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn hd_wait_handoff(
    work: *const HandoffSemaphore<HostToGpu>,
    started: *mut u32,
    outcome: *mut u32,
    patience_ns: u64,
) {
    // SAFETY: a placed semaphore and two mapped words that only this thread writes.
    let work = unsafe { &*work };
    // SAFETY: as above; the host reads the words with system-scope loads.
    unsafe { System::store_u32(started, 1, Ordering::Release) };
    let Some(mut inbox) = work.consumer() else {
        // SAFETY: as above.
        unsafe { System::store_u32(outcome, GAVE_UP, Ordering::Release) };
        return;
    };
    let wait = DeviceWait::new().timeout(Duration::from_nanos(patience_ns));
    let result = if inbox.acquire(wait).is_ok() {
        ACQUIRED
    } else {
        GAVE_UP
    };
    // SAFETY: as above.
    unsafe { System::store_u32(outcome, result, Ordering::Release) };
}

/// `rounds` times, one thread acquires the next unit of `work` (the host releases one
/// per round, in mapped or managed memory) and answers by storing the unit's sequence
/// number + 1 to `answer` (mapped). A wait that gives up after `patience_ns` counts in
/// `failures` (device) and ends the kernel.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn hd_answer_handoff(
    work: *const HandoffSemaphore<HostToGpu>,
    answer: *mut u64,
    rounds: u32,
    patience_ns: u64,
    failures: *mut u32,
) {
    // SAFETY: a placed semaphore, a mapped word only this thread writes, a device word.
    let work = unsafe { &*work };
    let Some(mut inbox) = work.consumer() else {
        count(failures);
        return;
    };
    for _ in 0..rounds {
        let wait = DeviceWait::new().timeout(Duration::from_nanos(patience_ns));
        let Ok(seq) = inbox.acquire(wait) else {
            count(failures);
            return;
        };
        // SAFETY: as above.
        unsafe { System::store_u64(answer, seq + 1, Ordering::Release) };
    }
}

/// As [`hd_answer_handoff`] on a plain word (device memory the host sets through the
/// driver: a copy or a stream write on another stream): round `r` waits until `flag`
/// reads at least `r + 1` and answers `r + 1`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn hd_answer_word(
    flag: *const u64,
    answer: *mut u64,
    rounds: u32,
    patience_ns: u64,
    failures: *mut u32,
) {
    for round in 1..=u64::from(rounds) {
        let start = now();
        // SAFETY: the host passes a live 8-byte-aligned word; system-scope loads see a
        // copy engine's or the front end's writes.
        while unsafe { System::load_u64(flag, Ordering::Acquire) } < round {
            if now().0.saturating_sub(start.0) > patience_ns {
                count(failures);
                return;
            }
        }
        // SAFETY: a mapped word only this thread writes.
        unsafe { System::store_u64(answer, round, Ordering::Release) };
    }
}

/// The kernel behind a stream wait: copies the mapped `payload` word to `seen`
/// (mapped), then stores `value` to `ack` (mapped), both with system-scope accesses:
/// the host learns that the gated kernel ran and what it saw.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn hd_gated_ack(
    payload: *const u32,
    seen: *mut u32,
    ack: *mut u64,
    value: u64,
) {
    // SAFETY: mapped words the host passes; only this thread writes `seen` and `ack`.
    unsafe {
        let read = System::load_u32(payload, Ordering::Acquire);
        System::store_u32(seen, read, Ordering::Relaxed);
        System::store_u64(ack, value, Ordering::Release);
    }
}
