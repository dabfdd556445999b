//! Kernels on the GPU side of bus objects (objects in mapped or managed memory that host
//! threads use at the same time): ping-pongs, stress, the persistent worker of the
//! report's demonstration, and a kernel that traps while the host waits.
//! `tests/gpu_bus.rs`, `tests/gpu_fault.rs` and the report launch them.

use core::time::Duration;

use crate::count;
use sync_device::ptx_atomics::PtxScope;
use sync_device::{
    block_size, global_thread_index, sync_block, thread_in_block, Barrier, BusBarrier, BusLatch,
    BusStopSource, CountingSemaphore, DeviceWait, GlobalTime, Gpu, GpuToHost, HandoffChannel,
    HandoffSemaphore, HostToGpu, Latch, System,
};
use sync_shared::{Backend, Device, Ordering};

/// How long a test kernel waits for the host before it gives up and reports it.
const PATIENCE: Duration = Duration::from_secs(10);

/// The payload of unit `seq` in the stress tests (the host computes the same).
fn payload_of(seq: u64) -> u32 {
    (seq as u32).wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995
}

fn now() -> GlobalTime {
    <Gpu as Backend<System>>::now()
}

/// The baseline of the handoff round trip: the anchor's spin ping-pong on one word of
/// mapped memory (the host writes odd values, the GPU answers with the next even one).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_raw_pingpong(flag: *mut u32, rounds: u32) {
    for round in 0..rounds {
        // SAFETY: the host passes one mapped word that only this thread and the host
        // touch, with system-scope loads and stores.
        unsafe {
            while System::load_u32(flag, Ordering::Acquire) != 2 * round + 1 {}
            System::store_u32(flag, 2 * round + 2, Ordering::Release);
        }
    }
}

/// One GPU thread takes a unit the host released on `channel` and answers with one,
/// `rounds` times, through the exclusive endpoints (one store to release, polling to
/// acquire).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_pingpong(
    channel: *const HandoffChannel,
    rounds: u32,
    failures: *mut u32,
) {
    // SAFETY: the host passes a placed channel and a device word.
    let channel = unsafe { &*channel };
    let (Some(mut inbox), Some(mut outbox)) = (channel.consumer(), channel.producer()) else {
        count(failures);
        return;
    };
    for _ in 0..rounds {
        if inbox.acquire(DeviceWait::new().timeout(PATIENCE)).is_err() {
            count(failures);
            return;
        }
        outbox.release(1);
    }
}

/// As [`bus_pingpong`], through the shared paths (read-modify-writes on the GPU's side
/// words, in device memory beside the object in mapped memory).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_pingpong_shared(
    channel: *const HandoffChannel,
    rounds: u32,
    failures: *mut u32,
) {
    // SAFETY: as in `bus_pingpong`.
    let channel = unsafe { &*channel };
    for _ in 0..rounds {
        if channel
            .acquire(DeviceWait::new().timeout(PATIENCE))
            .is_err()
        {
            count(failures);
            return;
        }
        channel.release(1);
    }
}

/// The managed-memory variant of the ping-pong: ordinary `System`-scope semaphores
/// (read-modify-writes from both sides, atomic in managed memory with
/// `concurrentManagedAccess`).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_managed_pingpong(
    to_gpu: *const CountingSemaphore<{ sync_shared::SEMAPHORE_MAX }, System>,
    to_host: *const CountingSemaphore<{ sync_shared::SEMAPHORE_MAX }, System>,
    rounds: u32,
    failures: *mut u32,
) {
    // SAFETY: the host passes two semaphores placed in managed memory.
    let (to_gpu, to_host) = unsafe { (&*to_gpu, &*to_host) };
    for _ in 0..rounds {
        if !to_gpu.try_acquire_for(PATIENCE) {
            count(failures);
            return;
        }
        to_host.release(1);
    }
}

/// Every thread releases `per_thread` units of `results` one at a time through the
/// shared path, writing unit `seq`'s payload to `payload[seq]` before it is published.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_release_stress(
    results: *const HandoffSemaphore<GpuToHost>,
    payload: *mut u32,
    per_thread: u32,
) {
    // SAFETY: a placed semaphore; `payload` has a slot per unit released in the run.
    let results = unsafe { &*results };
    for _ in 0..per_thread {
        results.release_with(1, |seq| {
            // SAFETY: each sequence number is handed to one releaser only.
            unsafe { payload.add(seq as usize).write_volatile(payload_of(seq)) }
        });
    }
}

/// Every thread acquires `per_thread` units of `work` through the shared path, checks
/// each unit's payload and counts the unit in `seen[seq]` (device memory).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_acquire_stress(
    work: *const HandoffSemaphore<HostToGpu>,
    payload: *const u32,
    seen: *mut u32,
    per_thread: u32,
    failures: *mut u32,
) {
    // SAFETY: a placed semaphore; `payload` and `seen` have a slot per unit.
    let work = unsafe { &*work };
    for _ in 0..per_thread {
        let Ok(seq) = work.acquire(DeviceWait::new().timeout(PATIENCE)) else {
            count(failures);
            return;
        };
        // SAFETY: unit `seq` was released after its payload was written.
        let value = unsafe { System::load_u32(payload.add(seq as usize), Ordering::Relaxed) };
        if value != payload_of(seq) {
            count(failures);
        }
        // SAFETY: in bounds (one slot per unit).
        count(unsafe { seen.add(seq as usize) });
    }
}

/// The persistent worker of the demonstration: thread 0 takes work item `k` from the
/// host (`items[k % ring]`) on `channel`, the whole block computes on it, thread 0
/// hands the result back (`results[k % ring]`), until the host requests stop on
/// `stop`. The block's threads each add `item * (thread + 1)`: the result is
/// `item * n (n + 1) / 2`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_persistent_worker(
    channel: *const HandoffChannel,
    stop: *const BusStopSource,
    items: *const u64,
    results: *mut u64,
    ring: u32,
    scratch: *mut u64,
) {
    // SAFETY: placed objects, mapped rings of `ring` slots, and two device words of
    // scratch for the block (the item and the running sum).
    let (channel, stop) = unsafe { (&*channel, &*stop) };
    let mut endpoints = if thread_in_block() == 0 {
        channel.endpoints()
    } else {
        None
    };
    // SAFETY: two words, as above.
    let (item, sum) = (scratch, unsafe { scratch.add(1) });
    loop {
        if let Some((_, inbox)) = endpoints.as_mut() {
            let next = match inbox.acquire(DeviceWait::new().stop(stop)) {
                // SAFETY: the slot of unit `seq` was written before it was released.
                Ok(seq) => unsafe {
                    System::load_u64(items.add(seq as usize % ring as usize), Ordering::Relaxed)
                },
                Err(_) => u64::MAX,
            };
            // SAFETY: block-private scratch words, published to the block by the barrier.
            unsafe {
                Device::store_u64(item, next, Ordering::Relaxed);
                Device::store_u64(sum, 0, Ordering::Relaxed);
            }
        }
        sync_block();
        // SAFETY: written by the leader before the barrier.
        let value = unsafe { Device::load_u64(item, Ordering::Relaxed) };
        if value == u64::MAX {
            return;
        }
        let share = value * (u64::from(thread_in_block()) + 1);
        // SAFETY: as above; the block's threads add atomically.
        unsafe { Device::fetch_add_u64(sum, share, Ordering::Relaxed) };
        sync_block();
        if let Some((outbox, _)) = endpoints.as_mut() {
            let seq = outbox.released();
            // SAFETY: as above; the host reads slot `seq % ring` after acquiring `seq`.
            unsafe {
                let total = Device::load_u64(sum, Ordering::Relaxed);
                let slot = results.add(seq as usize % ring as usize);
                System::store_u64(slot, total, Ordering::Relaxed);
            }
            outbox.release(1);
        }
    }
}

/// Every thread of the block races for `channel`'s two endpoints at once, `rounds`
/// times; `winners[r]` counts the threads that got them in round `r` (one, if they
/// cannot split). The winner serves: it takes unit `r` of those the host released
/// before the launch and answers with one; `failures` counts a winner that found
/// no unit, the wrong one, or an endpoint still free while it held both.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_endpoints_race(
    channel: *const HandoffChannel,
    rounds: u32,
    winners: *mut u32,
    failures: *mut u32,
) {
    // SAFETY: a placed channel, `rounds` device words and one.
    let channel = unsafe { &*channel };
    for round in 0..rounds {
        sync_block();
        let mut claim = channel.endpoints();
        if let Some((outbox, inbox)) = claim.as_mut() {
            // SAFETY: in bounds.
            count(unsafe { winners.add(round as usize) });
            let held = channel.producer().is_none() && channel.consumer().is_none();
            if !held || inbox.try_acquire() != Some(u64::from(round)) {
                count(failures);
            }
            outbox.release(1);
        }
        // Every racer has tried before the winner's endpoints go back.
        sync_block();
        drop(claim);
    }
}

/// Runs for about `after_ns`, then traps: the host's wait on a semaphore this kernel
/// would have released must end with an error.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_trap_after(after_ns: u64) {
    let start = now();
    while now().0 < start.0 + after_ns {}
    // SAFETY: `trap` aborts the kernel, which is the point.
    unsafe { core::arch::asm!("trap;", options(noreturn)) }
}

/// Every thread counts down `latch` by one and waits for it; `failures` counts waits
/// that gave up.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_latch_count_down(latch: *const BusLatch, failures: *mut u32) {
    // SAFETY: a placed latch.
    let latch = unsafe { &*latch };
    if latch
        .arrive_and_wait(1, DeviceWait::new().timeout(PATIENCE))
        .is_err()
    {
        count(failures);
    }
}

/// As [`bus_latch_count_down`], with the ordinary `System`-scope latch (placed in
/// managed memory: read-modify-writes from both sides).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_managed_latch_count_down(
    latch: *const Latch<System>,
    failures: *mut u32,
) {
    // SAFETY: a placed latch.
    let latch = unsafe { &*latch };
    latch.count_down(1);
    if !latch.try_wait_for(PATIENCE) {
        count(failures);
    }
}

/// A barrier that a block's thread 0 takes part in for [`barrier_phases`].
trait PhaseBarrier {
    /// Arrives and waits for the phase; `false` if the wait gave up.
    fn arrive_and_wait_patiently(&self) -> bool;
}

impl PhaseBarrier for BusBarrier {
    fn arrive_and_wait_patiently(&self) -> bool {
        self.arrive_and_wait(DeviceWait::new().timeout(PATIENCE))
            .is_ok()
    }
}

impl PhaseBarrier for Barrier<System> {
    fn arrive_and_wait_patiently(&self) -> bool {
        let token = self.arrive(1);
        self.try_wait_for(&token, PATIENCE)
    }
}

/// Thread 0 of each block is a participant of `barrier` for `phases` phases: before
/// arriving at phase `p` it writes `gpu_data[block * phases + p]`; after the phase it
/// copies the host's `host_data[p]` to `copied[block * phases + p]`.
///
/// # Safety
///
/// `gpu_data` and `host_data` are mapped arrays of `blocks * phases` and `phases`
/// words, `copied` a device array like `gpu_data`, `failures` a device word.
unsafe fn barrier_phases(
    barrier: &impl PhaseBarrier,
    phases: u32,
    gpu_data: *mut u32,
    host_data: *const u32,
    copied: *mut u32,
    failures: *mut u32,
) {
    if thread_in_block() != 0 {
        return;
    }
    let block = global_thread_index() / block_size();
    for phase in 0..phases {
        let slot = (block * phases + phase) as usize;
        // SAFETY: this block's own slot.
        unsafe { System::store_u32(gpu_data.add(slot), phase + 1, Ordering::Relaxed) };
        if !barrier.arrive_and_wait_patiently() {
            count(failures);
            return;
        }
        // SAFETY: the host wrote `host_data[phase]` before arriving at this phase.
        unsafe {
            let value = System::load_u32(host_data.add(phase as usize), Ordering::Relaxed);
            copied.add(slot).write_volatile(value);
        }
    }
}

/// [`barrier_phases`] on a [`BusBarrier`].
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_barrier_phases(
    barrier: *const BusBarrier,
    phases: u32,
    gpu_data: *mut u32,
    host_data: *const u32,
    copied: *mut u32,
    failures: *mut u32,
) {
    // SAFETY: a placed barrier; the arrays as `barrier_phases` needs them.
    unsafe { barrier_phases(&*barrier, phases, gpu_data, host_data, copied, failures) }
}

/// [`barrier_phases`] on the ordinary `System`-scope barrier (placed in managed
/// memory).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_managed_barrier_phases(
    barrier: *const Barrier<System>,
    phases: u32,
    gpu_data: *mut u32,
    host_data: *const u32,
    copied: *mut u32,
    failures: *mut u32,
) {
    // SAFETY: as in `bus_barrier_phases`.
    unsafe { barrier_phases(&*barrier, phases, gpu_data, host_data, copied, failures) }
}

/// Waits until stop is requested on `stop` (by the host), then records it in `seen`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_stop_wait(stop: *const BusStopSource, seen: *mut u32) {
    // SAFETY: a placed stop source and a device word.
    let stop = unsafe { &*stop };
    if stop.wait(DeviceWait::new().timeout(PATIENCE)).is_ok() {
        count(seen);
    }
}

/// Requests stop on `stop` from the GPU; `first` counts calls that returned `true`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_stop_request(stop: *const BusStopSource, first: *mut u32) {
    // SAFETY: a placed stop source and a device word.
    if unsafe { &*stop }.request_stop() {
        count(first);
    }
}

/// The host's wake-up penalty: `reps` times, the GPU waits `wait_ns`, releases a unit
/// to the host on `channel` and times (`%globaltimer`) until the host's answer arrives;
/// `elapsed[r]` gets the nanoseconds. With `wait_ns = 0` this is the plain round trip.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_host_wake(
    channel: *const HandoffChannel,
    wait_ns: u64,
    reps: u32,
    elapsed: *mut u64,
) {
    // SAFETY: a placed channel and `reps` device words.
    let channel = unsafe { &*channel };
    let (Some(mut outbox), Some(mut inbox)) = (channel.producer(), channel.consumer()) else {
        return;
    };
    for rep in 0..reps as usize {
        let start = now();
        while now().0 < start.0 + wait_ns {}
        let released = now();
        outbox.release(1);
        let answered = inbox.acquire(DeviceWait::new().timeout(PATIENCE)).is_ok();
        let took = if answered {
            now().0 - released.0
        } else {
            u64::MAX
        };
        // SAFETY: in bounds.
        unsafe { elapsed.add(rep).write_volatile(took) };
    }
}

/// Does nothing: the launch + synchronize baseline of the handoff round trip.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_empty() {}

/// Builds a bus object in place in host-allocated mapped memory (the rotation tests:
/// constructed by the GPU, then used by the host and by kernels): `kind` 0: a
/// `GpuToHost` `HandoffSemaphore` holding `a` units, 1: a `HandoffChannel` with `a`
/// units to the GPU and `b` to the host, 2: a `BusLatch` expecting `a`, 3: a
/// `BusBarrier` of `a` host and `b` GPU participants, 4: a `BusStopSource`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn bus_construct(kind: u32, object: *mut u8, a: u64, b: u64) {
    // SAFETY: the host passes room for the object (64-byte aligned) that nothing uses
    // meanwhile; it reads the object after the kernel ends.
    unsafe {
        match kind {
            0 => object
                .cast::<HandoffSemaphore<GpuToHost>>()
                .write(HandoffSemaphore::new(a)),
            1 => object
                .cast::<HandoffChannel>()
                .write(HandoffChannel::new(a, b)),
            2 => object.cast::<BusLatch>().write(BusLatch::new(a)),
            3 => object.cast::<BusBarrier>().write(BusBarrier::new(a, b)),
            _ => object.cast::<BusStopSource>().write(BusStopSource::new()),
        }
    }
}
