//! A persistent kernel fed by host threads: work units come through a
//! `HandoffChannel` in mapped memory, answers go back through it, and a
//! `BusStopSource` ends it.

use scoped_sync::prelude::*;

/// The answer to work item `item`. The host checks every answer against it.
pub fn answer(item: u64) -> u64 {
    item.wrapping_mul(item).wrapping_add(1)
}

/// Thread 0 takes the channel's GPU-side endpoints and loops: wait for a unit from the
/// host (the wait also watches `stop`), read work item `items[seq % ring]`, write
/// [`answer`] to `results[seq % ring]`, hand a unit back. The other threads of the
/// launch return at once: a channel's endpoints are exclusive.
///
/// Launch: one block, on a stream of its own, from a helper thread
/// (`Kernel::launch_beside`), while the host thread feeds it; ends when the host requests stop.
///
/// # Safety
///
/// `channel` and `stop` are placed for host and GPU (`Runtime::place_mapped`);
/// `items` and `results` are mapped rings of `ring` `u64`s; all outlive the launch.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn persistent_worker(
    channel: *const HandoffChannel,
    stop: *const BusStopSource,
    items: *const u64,
    results: *mut u64,
    ring: u32,
) {
    if thread_in_block() != 0 || block_index() != 0 {
        return;
    }
    // SAFETY: placed by the host, alive for the whole launch.
    let (channel, stop) = unsafe { (&*channel, &*stop) };
    let (Some(mut inbox), Some(mut outbox)) = (channel.consumer(), channel.producer()) else {
        return;
    };
    while let Ok(seq) = inbox.acquire(DeviceWait::new().stop(stop)) {
        let slot = (seq % u64::from(ring)) as usize;
        // SAFETY: the host wrote item `seq` before releasing unit `seq` (the acquire
        // orders this load after it); the ring has `ring` slots; a system-scope load
        // because the host writes this memory.
        let item = unsafe { System::load_u64(items.add(slot), Ordering::Relaxed) };
        // SAFETY: the host reads slot `slot` only after the release below.
        unsafe { System::store_u64(results.add(slot), answer(item), Ordering::Relaxed) };
        outbox.release(1);
    }
}
