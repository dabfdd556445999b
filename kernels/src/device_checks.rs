//! Kernels that break the rules on purpose, for `tests/gpu_device_checks.rs`: each
//! broken precondition of a primitive (it must trap in every build, and print its
//! message in the checked build), each scope misuse (it must trap in the checked
//! build), and the legal uses next to them (which must never trap).
//!
//! | kernel | launch | what it does | release | checked |
//! |---|---|---|---|---|
//! | `check_barrier_arrive_zero` | 1 thread | `arrive(0)` | trap | message, trap |
//! | `check_barrier_over_arrive` | 1 thread | `arrive(3)` on a barrier of 2 | trap | message, trap |
//! | `check_barrier_new_above_max` | 1 thread | `Barrier::new(u32::MAX)` | trap | message, trap |
//! | `check_latch_count_down_past_zero` | 1 thread | `count_down(2)` on a latch of 1 | trap | message, trap |
//! | `check_semaphore_release_past_max` | 1 thread | `release(1)` on a full semaphore | trap | message, trap |
//! | `check_block_scope_across_blocks` | 2 blocks | both count down one `Block`-scope latch in global memory | runs | message, trap |
//! | `check_cluster_scope_across_clusters` | 2 clusters of 2 | all count down one `Cluster`-scope latch | runs | message, trap |
//! | `check_block_scope_in_other_blocks_shared` | 1 cluster of 2 | rank 1 reads a `Block`-scope latch in rank 0's shared memory | runs | message, trap |
//! | `check_block_scope_own_objects` | any | each block counts down its own `Block`-scope latch | runs | runs |
//! | `check_cluster_scope_own_objects` | clusters of 2 | each cluster counts down its own `Cluster`-scope latch | runs | runs |
//! | `check_block_scope_one_block` | any | only block `user` touches the latch | runs | runs |
//! | `check_block_barrier_not_placed` | 1 block | arrives on a `Barrier<Block>` written into shared memory, not placed | trap | message, trap |
//! | `check_block_barrier_placed_after_use` | 1 thread | places a barrier that has taken an arrival | trap | message, trap |
//! | `check_block_barrier_above_hardware` | 1 thread | places a barrier of 2²⁰ in shared memory | trap | message, trap |
//! | `check_block_barrier_init_in_place` | 1 block, dynamic shared memory | `init_in_place`, then phases that check each other's writes | runs | runs |
//! | `check_block_barrier_array_placed` | 1 block of up to 1024 | `init_block` of an array of two barriers, then phases on each in turn that check each other's writes | runs | runs |
//! | `check_bus_object_not_placed` | 1 thread | `request_stop` on a `BusStopSource` written into mapped memory by hand, not placed | trap | message, trap |

use sync_device::{
    block_index, block_size, cluster_rank, dynamic_shared, map_to_block, shared, sync_block,
    sync_cluster, thread_in_block, BusStopSource, Gpu,
};
use sync_shared::{Barrier, Block, Cluster, CountingSemaphore, Device, Latch};

/// A semaphore of maximum 4, for the release-past-maximum case.
pub type SmallSemaphore = CountingSemaphore<Device, Gpu, 4>;

/// `arrive(0)`: an arrival must count at least one.
///
/// # Safety
///
/// `barrier` is a live barrier with the shared layout.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_barrier_arrive_zero(barrier: *const Barrier<Device, Gpu>) {
    // SAFETY: the caller's contract.
    let barrier = unsafe { &*barrier };
    let _ = barrier.arrive(0);
}

/// `arrive(3)` on a barrier that expects 2.
///
/// # Safety
///
/// `barrier` is a live barrier with the shared layout, expecting 2.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_barrier_over_arrive(barrier: *const Barrier<Device, Gpu>) {
    // SAFETY: the caller's contract.
    let barrier = unsafe { &*barrier };
    let _ = barrier.arrive(3);
}

/// A barrier created on the device with an expected count above its maximum.
///
/// # Safety
///
/// None beyond a launch; `out` is a live word.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_barrier_new_above_max(out: *mut u32) {
    let barrier = Barrier::<Device, Gpu>::new(u32::MAX);
    // SAFETY: the caller's contract (never reached: `new` traps).
    unsafe { out.write_volatile(u32::from(barrier.arrive(1).parity())) };
}

/// `count_down(2)` on a latch whose counter is 1.
///
/// # Safety
///
/// `latch` is a live latch with the shared layout, counter 1.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_latch_count_down_past_zero(
    latch: *const Latch<Device, Gpu>,
) {
    // SAFETY: the caller's contract.
    unsafe { &*latch }.count_down(2);
}

/// `release(1)` on a semaphore already at its maximum (4).
///
/// # Safety
///
/// `semaphore` is a live [`SmallSemaphore`] holding 4.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_semaphore_release_past_max(
    semaphore: *const SmallSemaphore,
) {
    // SAFETY: the caller's contract.
    unsafe { &*semaphore }.release(1);
}

/// Thread 0 of every block counts down the same `Block`-scope latch: a data race by the
/// memory model, since the blocks' atomics are not at a scope that includes each other.
///
/// # Safety
///
/// `latch` is a live latch with the shared layout and a counter of at least the block
/// count.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_scope_across_blocks(latch: *const Latch<Block, Gpu>) {
    if thread_in_block() == 0 {
        // SAFETY: the caller's contract.
        unsafe { &*latch }.count_down(1);
    }
}

/// Thread 0 of every block of every cluster counts down the same `Cluster`-scope latch.
///
/// # Safety
///
/// As [`check_block_scope_across_blocks`]; launched with clusters.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_cluster_scope_across_clusters(
    latch: *const Latch<Cluster, Gpu>,
) {
    if thread_in_block() == 0 {
        // SAFETY: the caller's contract.
        unsafe { &*latch }.count_down(1);
    }
}

/// Block rank 1 of the cluster polls a `Block`-scope latch that lives in rank 0's
/// shared memory (reached through distributed shared memory).
///
/// # Safety
///
/// Launched with clusters of 2 blocks; `out` is a live word.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_scope_in_other_blocks_shared(out: *mut u32) {
    let slot = shared!(CHECK_OTHER_BLOCKS_SHARED: Latch<Block, Gpu>);
    // SAFETY: every thread of the block runs this once.
    let own = unsafe { slot.init_block(Latch::new(1)) };
    sync_cluster();
    if cluster_rank().0 == 1 && thread_in_block() == 0 {
        // SAFETY: rank 0's instance, alive until the cluster barrier below.
        let theirs = unsafe { &*map_to_block(core::ptr::from_ref(own).cast_mut(), 0) };
        // SAFETY: the caller's contract.
        unsafe { out.write_volatile(u32::from(theirs.try_wait())) };
    }
    sync_cluster();
}

/// Every thread counts down its own block's `Block`-scope latch, `latches[block]`:
/// legal, must not trap.
///
/// # Safety
///
/// `latches` holds a latch per block, each counting the block's threads.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_scope_own_objects(latches: *const Latch<Block, Gpu>) {
    // SAFETY: the caller's contract.
    let latch = unsafe { &*latches.add(block_index() as usize) };
    latch.arrive_and_wait(1);
}

/// Every thread counts down its own cluster's `Cluster`-scope latch,
/// `latches[block / 2]`: legal, must not trap.
///
/// # Safety
///
/// Launched with clusters of 2 blocks along x; `latches` holds a latch per cluster,
/// each counting the cluster's threads.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_cluster_scope_own_objects(
    latches: *const Latch<Cluster, Gpu>,
) {
    // SAFETY: the caller's contract.
    let latch = unsafe { &*latches.add(block_index() as usize / 2) };
    latch.arrive_and_wait(1);
}

/// Only block `user` counts the latch down, once per thread: legal in any launch, and
/// across launches with different users.
///
/// # Safety
///
/// `latch` is a live latch with the shared layout and a counter of at least the block's
/// threads.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_scope_one_block(
    latch: *const Latch<Block, Gpu>,
    user: u32,
) {
    if block_index() == user {
        // SAFETY: the caller's contract.
        unsafe { &*latch }.count_down(1);
    }
}

/// A `Barrier<Block>` written into block-shared memory directly, never placed
/// (`Barrier::init_in_place`): the checked build traps on the marker before the first
/// arrival; in the release build `arrive_and_wait` leaves it to the hardware, whose
/// first `mbarrier` instruction on the unplaced bytes ends the kernel
/// (`HardwareBarrier::FAULTS_ON_UNPLACED`), and this case checks that it does.
///
/// # Safety
///
/// None beyond a launch of one block.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_barrier_not_placed() {
    let slot = shared!(CHECK_BLOCK_BARRIER_NOT_PLACED: Barrier<Block, Gpu>);
    if thread_in_block() == 0 {
        // SAFETY: the block's own variable, written before the block barrier below.
        unsafe { slot.as_ptr().write(Barrier::new(block_size())) };
    }
    sync_block();
    // SAFETY: written above; not placed, which is what this case checks.
    unsafe { &*slot.as_ptr() }.arrive_and_wait();
}

/// A barrier that has taken an arrival in its portable form (in global memory), then
/// copied into block-shared memory and placed: placing traps.
///
/// # Safety
///
/// Launched with one thread; `barrier` is a live barrier with the shared layout,
/// expecting 2.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_barrier_placed_after_use(
    barrier: *mut Barrier<Block, Gpu>,
) {
    // SAFETY: the caller's contract.
    let _token = unsafe { &*barrier }.arrive(1);
    let slot = shared!(CHECK_BLOCK_BARRIER_PLACED_AFTER_USE: Barrier<Block, Gpu>);
    // SAFETY: one thread; the copy is the block's only barrier object from here on.
    let _placed = unsafe { slot.init_block(barrier.read()) };
}

/// A barrier in block-shared memory expecting more arrivals than the `mbarrier` holds
/// (2²⁰ − 1): placing traps.
///
/// # Safety
///
/// None beyond a launch of one thread.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_barrier_above_hardware() {
    let slot = shared!(CHECK_BLOCK_BARRIER_ABOVE_HARDWARE: Barrier<Block, Gpu>);
    // SAFETY: one thread, once.
    let _placed = unsafe { slot.init_block(Barrier::new(1 << 20)) };
}

/// A `Barrier<Block>` in the launch's dynamic shared memory, placed with
/// `Barrier::init_in_place`; then `rounds` rounds in which every thread writes its
/// word, meets the others, and checks its neighbour's (a wrong value panics, which
/// traps), and meets them again before the next write.
///
/// # Safety
///
/// One block; the launch gives at least 16 bytes of dynamic shared memory plus 4 per
/// thread.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_barrier_init_in_place(rounds: u32) {
    let barrier = dynamic_shared::<Barrier<Block, Gpu>>();
    // SAFETY: the words after the barrier, inside the launch's dynamic shared memory.
    let words = unsafe { barrier.add(1) }.cast::<u32>();
    let me = thread_in_block();
    if me == 0 {
        // SAFETY: the block's dynamic shared memory, written and placed by one thread
        // before the block barrier below.
        unsafe {
            barrier.write(Barrier::new(block_size()));
            (*barrier).init_in_place();
        }
    }
    sync_block();
    // SAFETY: placed above, alive for the block.
    let barrier = unsafe { &*barrier };
    assert!(barrier.uses_hardware());
    let next = (me + 1) % block_size();
    for round in 0..rounds {
        // SAFETY: one word per thread; the barrier orders the accesses.
        unsafe { words.add(me as usize).write_volatile(round * 4096 + me) };
        barrier.arrive_and_wait();
        // SAFETY: as above.
        let theirs = unsafe { words.add(next as usize).read_volatile() };
        assert!(theirs == round * 4096 + next);
        barrier.arrive_and_wait();
    }
}

/// An array of two `Barrier<Block>` placed by `SharedSlot::init_block` (each element
/// must become a hardware barrier); then `rounds` rounds in which every thread writes
/// its word, meets the others at the first barrier, checks its neighbour's, and meets
/// them at the second before the next write.
///
/// # Safety
///
/// One block of at most 1024 threads.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_block_barrier_array_placed(rounds: u32) {
    let barriers = shared!(CHECK_BLOCK_BARRIER_ARRAY: [Barrier<Block, Gpu>; 2]);
    let words = shared!(CHECK_BLOCK_BARRIER_ARRAY_WORDS: [u32; 1024])
        .as_ptr()
        .cast::<u32>();
    let threads = block_size();
    // SAFETY: every thread of the block runs this once.
    let [write_done, read_done] =
        unsafe { barriers.init_block([Barrier::new(threads), Barrier::new(threads)]) };
    assert!(write_done.uses_hardware() && read_done.uses_hardware());
    let me = thread_in_block();
    let next = (me + 1) % threads;
    for round in 0..rounds {
        // SAFETY: one word per thread (at most 1024); the barriers order the accesses.
        unsafe { words.add(me as usize).write_volatile(round * 4096 + me) };
        write_done.arrive_and_wait();
        // SAFETY: as above.
        let theirs = unsafe { words.add(next as usize).read_volatile() };
        assert!(theirs == round * 4096 + next);
        read_done.arrive_and_wait();
    }
}

/// `request_stop` on a stop source that the host wrote into mapped memory by hand
/// instead of placing it: its GPU claim has no word in GPU memory attached.
///
/// # Safety
///
/// `stop` is a live stop source with the shared layout.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn check_bus_object_not_placed(stop: *const BusStopSource) {
    // SAFETY: the caller's contract.
    let stop = unsafe { &*stop };
    let _ = stop.request_stop();
}
