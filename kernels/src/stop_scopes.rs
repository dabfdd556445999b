//! Waits of block-scope objects ended by a stop source of device scope: a token wider
//! than the object it waits on, which the wait reads at the token's own scope.

use sync_device::{
    block_count, block_index, shared, thread_in_block, Barrier, CountingSemaphore, Gpu, Latch,
    StopSource,
};
use sync_shared::{Backend, Block, Device, Ordering, Stopped, Word};

/// Block 0's thread 0 requests stop on `source` once the three waiting threads of
/// every other block have counted themselves in `results[3]`, and adds 1 to
/// `results[4]` for the `true` that only the first request returns. In every other
/// block, on objects in its shared memory, with `source`'s device-scope token: thread
/// 0 acquires from a `CountingSemaphore<1, Block>` with no unit, thread 1 waits on a
/// `Latch<Block>` that nobody counts down, thread 2 arrives at a `Barrier<Block>` that
/// expects one more arrival, which never comes, and waits; each adds 1 to
/// `results[0]`, `[1]` or `[2]` when its wait ends with `Stopped`. The host passes a
/// new stop source and five zeroed words; the grid is small enough to be co-resident.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn block_waits_end_at_a_device_stop(
    source: *const StopSource<Device>,
    results: *mut u32,
) {
    let semaphore = shared!(STOP_SCOPES_SEMAPHORE: CountingSemaphore<1, Block>);
    let latch = shared!(STOP_SCOPES_LATCH: Latch<Block>);
    let barrier = shared!(STOP_SCOPES_BARRIER: Barrier<Block>);
    // SAFETY: every thread of the block runs each once.
    let (semaphore, latch, barrier) = unsafe {
        (
            semaphore.init_block(CountingSemaphore::new(0)),
            latch.init_block(Latch::new(1)),
            barrier.init_block(Barrier::new(2)),
        )
    };
    // SAFETY: the host passes a live stop source with the shared layout, and five
    // result words.
    let source = unsafe { &*source };
    // SAFETY: as above.
    let [semaphore_stopped, latch_stopped, barrier_stopped, registered, first] =
        [0, 1, 2, 3, 4].map(|i| unsafe { Word::from_ptr(results.add(i)) });
    let count = |word| {
        <Gpu as Backend<Device>>::fetch_add(word, 1, Ordering::Relaxed);
    };
    let thread = thread_in_block();
    if block_index() == 0 {
        if thread == 0 {
            let waiters = 3 * (block_count() - 1);
            while <Gpu as Backend<Device>>::load(registered, Ordering::Acquire) < waiters {
                <Gpu as Backend<Device>>::yield_now();
            }
            if source.request_stop() {
                count(first);
            }
        }
        return;
    }
    if thread > 2 {
        return;
    }
    <Gpu as Backend<Device>>::fetch_add(registered, 1, Ordering::Release);
    let stopped = match thread {
        0 => semaphore.acquire_stoppable(source.token()) == Err(Stopped),
        1 => latch.wait_stoppable(source.token()) == Err(Stopped),
        _ => barrier.arrive_and_wait_stoppable(source.token()) == Err(Stopped),
    };
    if stopped {
        count([semaphore_stopped, latch_stopped, barrier_stopped][thread as usize]);
    }
}
