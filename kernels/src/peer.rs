//! Kernels of `tests/gpu_peer.rs`: `System`-scope objects in one GPU's memory that
//! kernels on two GPUs use at once (peer access, `Runtime::place_for_peers`).

use core::time::Duration;

use sync_device::{global_thread_count, global_thread_index, Gpu, MultiGrid};
use sync_shared::{Backend, Barrier, Device, Latch, Ordering, System, Word};

/// How long a thread waits for the other GPU before it counts a failure and leaves
/// (a dead peer must end the test, not hang it).
const PATIENCE: Duration = Duration::from_secs(10);

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

/// `phases` phases of the launch's [`MultiGrid`] barrier, each waited for at most
/// `timeout_ms`. In phase `p` every thread writes `p` to its slot of buffer `p % 2`
/// (`slots`: two buffers of `ranks × threads per GPU` words in memory every GPU
/// reaches; this GPU's threads from `rank × threads per GPU`) with a plain store, syncs,
/// then reads the slot of the thread with its own index on the next GPU (a plain load)
/// and counts a failure in
/// `failures` unless it holds `p` (a write before the barrier on one GPU must be seen
/// after it on the other). A phase that fails counts in `timeouts` and ends the thread.
///
/// # Safety
///
/// Launched through `MultiGrid::launch` with the same grid on every GPU; `slots`
/// holds `2 · ranks · threads` words; `failures` and `timeouts` point to live words
/// of this GPU.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn multi_grid_phases(
    mut gpus: MultiGrid,
    slots: *mut u32,
    phases: u32,
    timeout_ms: u32,
    failures: *mut u32,
    timeouts: *mut u32,
) {
    // SAFETY: the caller's contract.
    let (failures, timeouts) = unsafe { (Word::from_ptr(failures), Word::from_ptr(timeouts)) };
    let (threads, me) = (global_thread_count(), global_thread_index());
    let all = threads * gpus.ranks();
    let mine = gpus.rank() * threads + me;
    let theirs = (gpus.rank() + 1) % gpus.ranks() * threads + me;
    let timeout = Duration::from_millis(u64::from(timeout_ms));
    for phase in 1..=phases {
        let buffer = (phase % 2 * all) as usize;
        // Plain (weak) accesses, which the L1 may cache: only the barrier's fences make
        // the other GPU's write visible here.
        // SAFETY: `buffer + mine` is below `2 · all`, in `slots`; no other thread
        // touches this slot until the neighbour reads it after this phase's barrier.
        unsafe { slots.add(buffer + mine as usize).write(phase) };
        if gpus.sync_for(timeout).is_err() {
            <Gpu as Backend<Device>>::fetch_add(timeouts, 1, Ordering::Relaxed);
            return;
        }
        // SAFETY: in `slots`; the barrier orders the other GPU's write of this slot
        // before this read, and its next write needs this thread's arrival in the phase
        // after next.
        if unsafe { slots.add(buffer + theirs as usize).read() } != phase {
            <Gpu as Backend<Device>>::fetch_add(failures, 1, Ordering::Relaxed);
        }
    }
}
