//! Kernels of `tests/gpu_peer.rs`: `System`-scope objects in one GPU's memory that
//! kernels on two GPUs use at once (peer access, `Runtime::place_for_peers`).

use core::time::Duration;

use sync_device::{global_thread_index, BusStopSource, Gpu, GpuToGpu, HandoffSemaphore, MultiGrid};
use sync_shared::{Backend, Barrier, Device, Latch, Ordering, System, Word};

use crate::count;

use crate::handoff_ends::{consume, ping_pong, produce, PATIENCE};

/// Every thread counts the latch down once and waits (timed) for it to open, then adds
/// 1 to `opened` (device memory of this GPU); a wait that ran out adds 1 to `failures`.
///
/// # Safety
///
/// `latch` points to a live `Latch<System>` every thread of this launch and of the
/// other GPU's launch counts down once; `opened` and `failures` to live words.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn peer_latch_count_down_and_wait(
    latch: *const Latch<System, Gpu>,
    opened: *mut u32,
    failures: *mut u32,
) {
    // SAFETY: the caller's contract.
    let (latch, opened, failures) =
        unsafe { (&*latch, Word::from_ptr(opened), Word::from_ptr(failures)) };
    latch.count_down(1);
    let word = if latch.try_wait_for(PATIENCE) {
        opened
    } else {
        failures
    };
    <Gpu as Backend<Device>>::fetch_add(word, 1, Ordering::Relaxed);
}

/// `phases` phases of a `System`-scope barrier whose members are the threads of this
/// launch (members `first .. first + threads`) and of the other GPU's. In phase `p`
/// every member writes `p` to its slot of buffer `p % 2` (`slots`: two buffers of
/// `members` words, in peer memory both GPUs reach), arrives and waits; then it reads
/// the slot of the member half the team away, which sits on the other GPU when both
/// launches are the same size, and counts a failure in `failures` (this GPU's memory)
/// unless it holds `p` (a write before the barrier on one GPU must be seen after it on
/// the other). A phase not complete within 10 s counts a failure and ends the kernel.
///
/// # Safety
///
/// `barrier` points to a live `Barrier<System>` expecting `members` arrivals per
/// phase, all of them threads of the two launches; `slots` to `2 · members` words;
/// `failures` to a live word; `first` plus this launch's thread count at most `members`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn peer_barrier_phases(
    barrier: *const Barrier<System, Gpu>,
    slots: *mut u32,
    members: u32,
    first: u32,
    phases: u32,
    failures: *mut u32,
) {
    // SAFETY: the caller's contract.
    let (barrier, failures) = unsafe { (&*barrier, Word::from_ptr(failures)) };
    let me = first + global_thread_index();
    let partner = (me + members / 2) % members;
    for phase in 1..=phases {
        let buffer = (phase % 2 * members) as usize;
        // SAFETY: `buffer + me < 2 · members`, within `slots`.
        let (mine, theirs) = unsafe {
            (
                Word::from_ptr(slots.add(buffer + me as usize)),
                Word::from_ptr(slots.add(buffer + partner as usize)),
            )
        };
        <Gpu as Backend<System>>::store(mine, phase, Ordering::Relaxed);
        let token = barrier.arrive(1);
        if !barrier.try_wait_for(&token, PATIENCE) {
            <Gpu as Backend<Device>>::fetch_add(failures, 1, Ordering::Relaxed);
            return;
        }
        // The barrier's release and acquire at `System` scope order the partner's
        // store before this load; the next write of that slot needs this thread's
        // arrival in the phase after next.
        if <Gpu as Backend<System>>::load(theirs, Ordering::Relaxed) != phase {
            <Gpu as Backend<Device>>::fetch_add(failures, 1, Ordering::Relaxed);
        }
    }
}

/// The producing GPU's end of a cross-GPU handoff, in thread 0: `units` units, each
/// after a credit from `credits` (the consumer hands a slot back), its payload written
/// into slot `k % HANDOFF_RING` of `slots`, released on `work` (exclusive endpoints:
/// one store per release, local polls); then it requests stop on `stop`. A wait that
/// ends otherwise counts in `failures`.
///
/// # Safety
///
/// `work` (in the consumer's memory), `credits` (in this GPU's memory, holding
/// `HANDOFF_RING` units) and `stop` are live placed objects; `slots` holds
/// `HANDOFF_RING` words the consumer reads; `failures` is a live word of this GPU. One
/// launch uses them at a time, beside one `peer_handoff_consume`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn peer_handoff_produce(
    work: *const HandoffSemaphore<GpuToGpu>,
    credits: *const HandoffSemaphore<GpuToGpu>,
    slots: *mut u64,
    units: u64,
    stop: *const BusStopSource,
    failures: *mut u32,
) {
    if global_thread_index() == 0 {
        // SAFETY: the caller's contract.
        unsafe { produce(work, credits, units, stop, failures, store_into(slots)) };
    }
}

/// The consuming GPU's end of a cross-GPU handoff, in thread 0: acquires units from
/// `work` until a stop request on `stop` (then takes what is left), adds each unit's
/// payload into `result[1]` (wrapping) and counts units in `result[0]`, handing each
/// slot back on `credits`; counts in `result[2]` a unit whose sequence number is out of
/// order and a wait that ended otherwise.
///
/// # Safety
///
/// As [`peer_handoff_produce`]; `result` holds three live words of this GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn peer_handoff_consume(
    work: *const HandoffSemaphore<GpuToGpu>,
    credits: *const HandoffSemaphore<GpuToGpu>,
    slots: *const u64,
    stop: *const BusStopSource,
    result: *mut u64,
) {
    if global_thread_index() == 0 {
        // SAFETY: the caller's contract.
        unsafe { consume(work, credits, slots, stop, result) };
    }
}

/// One GPU of a ring of handoffs: thread 0 consumes from the previous GPU (the first
/// five parameters, as [`peer_handoff_consume`]'s) while thread 32, in another warp,
/// produces `units` units for the next (the last six, as [`peer_handoff_produce`]'s).
/// One kernel per GPU, so that the ring needs no two kernels of one GPU to run at once.
///
/// # Safety
///
/// As [`peer_handoff_consume`] for the incoming link and [`peer_handoff_produce`] for
/// the outgoing one; a block of at least 33 threads.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "gpu-kernel" fn peer_handoff_relay(
    in_work: *const HandoffSemaphore<GpuToGpu>,
    in_credits: *const HandoffSemaphore<GpuToGpu>,
    in_slots: *const u64,
    in_stop: *const BusStopSource,
    result: *mut u64,
    out_work: *const HandoffSemaphore<GpuToGpu>,
    out_credits: *const HandoffSemaphore<GpuToGpu>,
    out_slots: *mut u64,
    units: u64,
    out_stop: *const BusStopSource,
    failures: *mut u32,
) {
    match global_thread_index() {
        // SAFETY: the caller's contract.
        0 => unsafe { consume(in_work, in_credits, in_slots, in_stop, result) },
        // SAFETY: the caller's contract.
        32 => unsafe {
            produce(
                out_work,
                out_credits,
                units,
                out_stop,
                failures,
                store_into(out_slots),
            )
        },
        _ => {}
    }
}

/// A producer's payload writer: stores into the consumer's ring of `HANDOFF_RING` words
/// at `slots` (peer memory this GPU reaches), which the consumer reads after the
/// unit's release.
fn store_into(slots: *mut u64) -> impl FnMut(usize, u64) {
    move |slot, value| {
        // SAFETY: `slot < HANDOFF_RING`, a slot the consumer handed back (see `produce`).
        unsafe { slots.add(slot).write_volatile(value) }
    }
}

/// One thread of each GPU: `rounds` round trips; the `first` GPU releases a unit on
/// `outgoing` (in the peer's memory) and waits for one on `incoming` (in its own), the
/// other answers each; `spin` waits without sleeping ([`DeviceWait::spin`]). The first
/// GPU writes the time of rounds 2 to `rounds` (`%globaltimer`, nanoseconds) to
/// `elapsed`, as `baselines/multi_gpu_baselines.cu` times its raw ping-pong: the first
/// round also waits for the other GPU's kernel to start, which the launches' skew decides.
///
/// # Safety
///
/// Two live placed `GpuToGpu` semaphores holding 0 units, each GPU's `incoming` the
/// other's `outgoing`; `elapsed` a live word of this GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn peer_ping_pong(
    outgoing: *const HandoffSemaphore<GpuToGpu>,
    incoming: *const HandoffSemaphore<GpuToGpu>,
    first: u32,
    rounds: u32,
    spin: u32,
    elapsed: *mut u64,
) {
    if global_thread_index() == 0 {
        // SAFETY: the caller's contract.
        unsafe { ping_pong(outgoing, incoming, first != 0, rounds, spin != 0, elapsed) };
    }
}

/// `phases` phases of `MultiGrid::sync_for` (at most `timeout_ms` each) with host
/// parties: before phase `p`, thread 0 of block 0 writes `p` into `gpu_slots[2 · rank
/// + p % 2]` (mapped host memory); after it, thread 0 of every block checks that
/// `host_slot[p % 2]` (written by the host party before it arrived) holds `p`, and
/// counts in `failures` if not. A failed phase counts in `timeouts` and ends the
/// thread.
///
/// # Safety
///
/// Launched through `MultiGrid::launch_with_host_parties` with the same grid on every
/// GPU; `host_slot` holds 2 words and `gpu_slots` `2 · ranks` words of mapped host
/// memory; `failures` and `timeouts` point to live words of this GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn multi_grid_host_phases(
    mut gpus: MultiGrid,
    host_slot: *const u32,
    gpu_slots: *mut u32,
    phases: u32,
    timeout_ms: u32,
    failures: *mut u32,
    timeouts: *mut u32,
) {
    let timeout = Duration::from_millis(u64::from(timeout_ms));
    let leader = sync_device::thread_in_block() == 0;
    for phase in 1..=phases {
        let parity = (phase % 2) as usize;
        if global_thread_index() == 0 {
            // SAFETY: this GPU's slot of the parity; the host reads it after the phase
            // and the next write to it is two phases on.
            unsafe {
                gpu_slots
                    .add(2 * gpus.rank() as usize + parity)
                    .write_volatile(phase)
            };
        }
        if gpus.sync_for(timeout).is_err() {
            count(timeouts);
            return;
        }
        // SAFETY: the host's slot of the parity, written before its arrival.
        if leader && unsafe { host_slot.add(parity).read_volatile() } != phase {
            count(failures);
        }
    }
}
