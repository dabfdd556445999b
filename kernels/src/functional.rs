//! Kernels that exercise the primitives on the GPU (run by `tests/gpu.rs`).

use sync_device::{global_thread_count, global_thread_index, Gpu};
use sync_shared::{Backend, Barrier, Device, Latch, Ordering, Word};

/// Every thread adds 1 to `counter`, `iterations` times, with device-scope atomics.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn fetch_add_device(counter: *mut u32, iterations: u32) {
    // SAFETY: the host passes a live, aligned device word.
    let word = unsafe { Word::from_ptr(counter) };
    for _ in 0..iterations {
        <Gpu as Backend<Device>>::fetch_add(word, 1, Ordering::Relaxed);
    }
}

/// Phases of a grid-wide barrier: each thread writes its slot, waits, and checks its
/// neighbour's slot holds this phase; a mismatch (a barrier that released too early)
/// counts in `errors`. Needs a cooperative launch.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn grid_barrier_phases(
    barrier: *const Barrier<Device, Gpu>,
    slots: *mut u32,
    phases: u32,
    errors: *mut u32,
) {
    // SAFETY: the host passes a barrier with the shared layout, initialized for every
    // thread of the grid, and `global_thread_count()` slots.
    let (barrier, errors) = unsafe { (&*barrier, Word::from_ptr(errors)) };
    let me = global_thread_index();
    let neighbour = (me + 1) % global_thread_count();
    for phase in 1..=phases {
        // SAFETY: each thread writes only its own slot between barriers.
        unsafe { slots.add(me as usize).write_volatile(phase) };
        barrier.arrive_and_wait();
        // SAFETY: the barrier ordered the neighbour's write before this read.
        let seen = unsafe { slots.add(neighbour as usize).read_volatile() };
        if seen != phase {
            <Gpu as Backend<Device>>::fetch_add(errors, 1, Ordering::Relaxed);
        }
        barrier.arrive_and_wait();
    }
}

/// Every thread counts the latch down once and waits; then checks that every other
/// thread's flag is set (written before its count-down).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn latch_count_down_wait(
    latch: *const Latch<Device, Gpu>,
    flags: *mut u32,
    errors: *mut u32,
) {
    // SAFETY: as above: a latch with the shared layout counting every thread.
    let (latch, errors) = unsafe { (&*latch, Word::from_ptr(errors)) };
    let me = global_thread_index();
    let count = global_thread_count();
    // SAFETY: each thread writes only its own flag.
    unsafe { flags.add(me as usize).write_volatile(1) };
    latch.arrive_and_wait(1);
    let other = (me + count / 2 + 1) % count;
    // SAFETY: the latch ordered every flag write before this read.
    if unsafe { flags.add(other as usize).read_volatile() } != 1 {
        <Gpu as Backend<Device>>::fetch_add(errors, 1, Ordering::Relaxed);
    }
}

/// Thread 0 of each block writes its cluster rank and the cluster's block count to
/// `out[2 * block]` and `out[2 * block + 1]`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn cluster_rank_report(out: *mut u32) {
    let index = global_thread_index();
    let block_threads = global_thread_count() / sync_device::block_count();
    if index % block_threads == 0 {
        let block = (index / block_threads) as usize;
        let (rank, size) = sync_device::cluster_rank();
        // SAFETY: the host passes two words per block.
        unsafe {
            out.add(2 * block).write_volatile(rank);
            out.add(2 * block + 1).write_volatile(size);
        }
    }
}

/// Streams stores to `words` words of (typically mapped host) memory, `rounds` times
/// over, grid-stride; the last round leaves `rounds` in every word.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn stream_writes(dst: *mut u32, words: u32, rounds: u32) {
    let (first, stride) = (global_thread_index(), global_thread_count());
    for round in 1..=rounds {
        let mut word = first;
        while word < words {
            // SAFETY: the host passes `words` words.
            unsafe { dst.add(word as usize).write_volatile(round) };
            word += stride;
        }
    }
}
