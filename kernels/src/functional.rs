//! Kernels that exercise the primitives on the GPU (run by `tests/gpu.rs`).

use sync_device::{global_thread_count, global_thread_index, Gpu};
use sync_shared::{
    Backend, Barrier, CountingSemaphore, Device, Latch, Ordering, StopCallback, StopSource,
    Stopped, Word,
};

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

/// Every thread writes its `Backend::thread_id` to `ids[global_thread_index()]`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn thread_ids(ids: *mut u64) {
    let id = <Gpu as Backend<Device>>::thread_id() as u64;
    // SAFETY: the host passes one slot per thread of the grid.
    unsafe { ids.add(global_thread_index() as usize).write_volatile(id) };
}

/// Bytes the host gives each block for its stop callback in
/// [`stoppable_waits_end_at_stop`].
const CALLBACK_SLOT_BYTES: usize = 128;

/// Checks at compile time that a `T` fits a slot of `CALLBACK_SLOT_BYTES`, 8-aligned.
fn fits_callback_slot<T>(_: &T) {
    const {
        assert!(core::mem::size_of::<T>() <= CALLBACK_SLOT_BYTES && core::mem::align_of::<T>() <= 8)
    };
}

/// Block 0's part of the stop tests: once all `waiters` blocks have registered their
/// callbacks (`registered`), requests stop, adding 1 to `first` if it was the first.
fn request_stop_once_registered(
    source: &StopSource<Device, Gpu>,
    registered: &Word,
    first: &Word,
    waiters: u32,
) {
    while <Gpu as Backend<Device>>::load(registered, Ordering::Acquire) < waiters {
        <Gpu as Backend<Device>>::yield_now();
    }
    if source.request_stop() {
        <Gpu as Backend<Device>>::fetch_add(first, 1, Ordering::Relaxed);
    }
}

/// Waits until block 0's `request_stop` has returned (`first` set). A stoppable wait
/// ends as soon as the stop flag is published, before every callback has run; a
/// callback dropped then would be deregistered unrun (as it should), so the tests keep
/// theirs until the request is over.
fn until_stop_returned(first: &Word) {
    while <Gpu as Backend<Device>>::load(first, Ordering::Acquire) == 0 {
        <Gpu as Backend<Device>>::yield_now();
    }
}

/// Stoppable waits on the GPU, ended by a stop request from another block:
/// - thread 0 of every block but block 0 registers a stop callback that adds 1 to
///   `results[0]`, then waits to acquire from `semaphore` (which nobody releases) with
///   a stop token, and adds 1 to `results[1]` when that wait ends with `Stopped`;
/// - thread 0 of block 0 waits until every other block has registered (`results[2]`
///   counts them), then requests stop, which runs every callback in its thread, and
///   adds 1 to `results[3]` for the `true` that only the first request returns; the
///   other blocks drop their callbacks only after that.
///
/// The callbacks live in `callbacks` (global memory, `CALLBACK_SLOT_BYTES` per block,
/// 8-aligned), not on the stack: a GPU thread's stack is local memory, which the
/// requesting thread of another block cannot reach. The host passes a zeroed
/// `StopSource<Device>` (its new state) and a semaphore whose count is 0; the grid is
/// small enough to be co-resident.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn stoppable_waits_end_at_stop(
    semaphore: *const CountingSemaphore<Device, Gpu>,
    source: *const StopSource<Device, Gpu>,
    callbacks: *mut u8,
    results: *mut u32,
) {
    if sync_device::thread_in_block() != 0 {
        return;
    }
    // SAFETY: the host passes live, aligned objects with the shared layouts, and four
    // result words.
    let (semaphore, source) = unsafe { (&*semaphore, &*source) };
    // SAFETY: as above.
    let [called, stopped, registered, first] =
        [0, 1, 2, 3].map(|i| unsafe { Word::from_ptr(results.add(i)) });
    let waiters = sync_device::block_count() - 1;
    let block = sync_device::block_index();
    if block == 0 {
        request_stop_once_registered(source, registered, first, waiters);
        return;
    }
    let callback = StopCallback::new(source.token(), move || {
        <Gpu as Backend<Device>>::fetch_add(called, 1, Ordering::Relaxed);
    });
    fits_callback_slot(&callback);
    // SAFETY: each block has its own slot of `CALLBACK_SLOT_BYTES`, 8-aligned, which
    // fits the callback (checked above); it stays in place until dropped below.
    let callback = unsafe {
        let slot = callbacks.add(block as usize * CALLBACK_SLOT_BYTES).cast();
        core::ptr::write(slot, callback);
        core::pin::Pin::new_unchecked(&*slot)
    };
    callback.register();
    <Gpu as Backend<Device>>::fetch_add(registered, 1, Ordering::Release);
    if semaphore.acquire_stoppable(source.token()) == Err(Stopped) {
        <Gpu as Backend<Device>>::fetch_add(stopped, 1, Ordering::Relaxed);
    }
    until_stop_returned(first);
    // SAFETY: the callback was written above and is dropped once, here.
    unsafe { core::ptr::drop_in_place(core::ptr::from_ref(callback.get_ref()).cast_mut()) };
}

/// [`stoppable_waits_end_at_stop`] with the callbacks in `sync_device::StopCallbackSlot`s
/// (one per block, `slots`) instead of placed by hand, plus what the slot promises:
/// a second placement in a held slot is refused (`results[4]` counts the refusals), and
/// once the guard drops the slot takes a new callback, which, placed after the stop,
/// runs at once (so `results[0]` ends at twice the waiters).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn stop_callbacks_in_slots(
    semaphore: *const CountingSemaphore<Device, Gpu>,
    source: *const StopSource<Device, Gpu>,
    slots: *const sync_device::StopCallbackSlot,
    results: *mut u32,
) {
    const { assert!(core::mem::size_of::<sync_device::StopCallbackSlot>() == 128) };
    if sync_device::thread_in_block() != 0 {
        return;
    }
    // SAFETY: the host passes live, aligned objects with the shared layouts, a zeroed
    // slot per block, and five result words.
    let (semaphore, source) = unsafe { (&*semaphore, &*source) };
    let block = sync_device::block_index();
    // SAFETY: as above.
    let slot = unsafe { &*slots.add(block as usize) };
    // SAFETY: as above.
    let [called, stopped, registered, first, refused] =
        [0, 1, 2, 3, 4].map(|i| unsafe { Word::from_ptr(results.add(i)) });
    let waiters = sync_device::block_count() - 1;
    if block == 0 {
        request_stop_once_registered(source, registered, first, waiters);
        return;
    }
    let count_call = move || {
        <Gpu as Backend<Device>>::fetch_add(called, 1, Ordering::Relaxed);
    };
    let Some(placed) = slot.place(source.token(), count_call) else {
        // An empty slot refused: counted as registered so that block 0 does not wait
        // for ever; the test sees the missing call.
        <Gpu as Backend<Device>>::fetch_add(registered, 1, Ordering::Release);
        return;
    };
    if slot.place(source.token(), count_call).is_none() {
        <Gpu as Backend<Device>>::fetch_add(refused, 1, Ordering::Relaxed);
    }
    <Gpu as Backend<Device>>::fetch_add(registered, 1, Ordering::Release);
    if semaphore.acquire_stoppable(source.token()) == Err(Stopped) {
        <Gpu as Backend<Device>>::fetch_add(stopped, 1, Ordering::Relaxed);
    }
    until_stop_returned(first);
    drop(placed);
    // The slot is free again; a callback placed after the stop runs at once.
    let _again = slot.place(source.token(), count_call);
}
