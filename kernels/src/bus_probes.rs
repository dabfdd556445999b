//! Codegen probes of the bus promise, never launched: `tests/ptx_bus.rs` reads their
//! PTX and checks that no read-modify-write addresses the memory a kernel parameter
//! points at (the bus objects, which may lie in pinned host memory), only words whose
//! addresses the kernel loaded (the GPU side words the runtime attached).
//!
//! `bus_side_operations` calls every GPU-side operation of every bus object;
//! `bus_side_rmw_on_a_bus_word` breaks the promise on purpose (an atomic add on a
//! semaphore's published count), so the check is seen to catch it.

use core::time::Duration;

use sync_device::ptx_atomics::PtxScope;
use sync_device::{
    BusBarrier, BusLatch, BusStopSource, DeviceWait, GpuToGpu, GpuToHost, HandoffChannel,
    HandoffSemaphore, HostToGpu,
};
use sync_shared::{Device, Ordering};

const PATIENCE: Duration = Duration::from_millis(1);

/// Every GPU-side operation of every bus object, shared and exclusive endpoints.
///
/// # Safety
///
/// Never launched: the parameters would be live bus objects placed by the runtime.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_side_operations(
    work: *const HandoffSemaphore<HostToGpu>,
    results: *const HandoffSemaphore<GpuToHost>,
    peer: *const HandoffSemaphore<GpuToGpu>,
    channel: *const HandoffChannel,
    latch: *const BusLatch,
    barrier: *const BusBarrier,
    stop: *const BusStopSource,
) {
    // SAFETY: the caller's contract.
    let (work, results, peer, channel, latch, barrier, stop) = unsafe {
        (
            &*work, &*results, &*peer, &*channel, &*latch, &*barrier, &*stop,
        )
    };
    let wait = || DeviceWait::new().timeout(PATIENCE).stop(stop);
    let mut taken = work.try_acquire().unwrap_or(0);
    taken += work.acquire(wait()).unwrap_or(0);
    if let Some(mut consumer) = work.consumer() {
        taken += consumer.try_acquire().unwrap_or(0);
        taken += consumer.acquire(wait()).unwrap_or(0);
    }
    results.release(1);
    results.release_with(2, |first| taken += first);
    if let Some(mut producer) = results.producer() {
        producer.release(1);
    }
    peer.release(1);
    taken += peer.acquire(wait()).unwrap_or(0);
    if let Some(mut producer) = peer.producer() {
        producer.release(1);
    }
    if let Some(mut consumer) = peer.consumer() {
        taken += consumer.acquire(wait()).unwrap_or(0);
    }
    channel.release(1);
    taken += channel.try_acquire().unwrap_or(0);
    taken += channel.acquire(wait()).unwrap_or(0);
    if let Some(mut producer) = channel.producer() {
        producer.release(1);
    }
    if let Some(mut consumer) = channel.consumer() {
        taken += consumer.acquire(wait()).unwrap_or(0);
    }
    let _ = latch.arrive_and_wait(1, wait());
    let token = barrier.arrive(1);
    let _ = barrier.wait(token, wait());
    if taken == 0 && stop.request_stop() {
        let _ = stop.wait(wait());
    }
}

/// Breaks the promise on purpose: an atomic add on a bus word (the semaphore's
/// published count, which the host reads).
///
/// # Safety
///
/// Never launched.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_side_rmw_on_a_bus_word(
    work: *const HandoffSemaphore<HostToGpu>,
) {
    // SAFETY: the caller's contract.
    let word = unsafe { &*work }.released_word();
    // SAFETY: a live, aligned word (were it launched).
    unsafe { Device::fetch_add_u64(word.as_ptr(), 1, Ordering::Relaxed) };
}
