//! The README's persistent worker kernel (section 3), compiled as written there.

use scoped_sync::prelude::*;

#[no_mangle]
pub unsafe extern "gpu-kernel" fn worker(
    channel: *const HandoffChannel,
    stop: *const BusStopSource,
    items: *const u64,
    results: *mut u64,
    ring: u32,
) {
    // SAFETY: placed by the host for the whole launch.
    let (channel, stop) = unsafe { (&*channel, &*stop) };
    // Both endpoints in one claim: of all the launch's threads, exactly one serves (two
    // separate claims could give the consumer to one thread and the producer to another).
    let Some((mut outbox, mut inbox)) = channel.endpoints() else {
        return;
    };
    while let Ok(seq) = inbox.acquire(DeviceWait::new().stop(stop)) {
        let slot = (seq % u64::from(ring)) as usize;
        // SAFETY: the host wrote slot `seq` before releasing unit `seq` (the acquire
        // orders these accesses after it); system scope, because the host writes and
        // reads this memory.
        unsafe {
            let item = System::load_u64(items.add(slot), Ordering::Relaxed);
            System::store_u64(results.add(slot), item.wrapping_mul(3), Ordering::Relaxed);
        }
        outbox.release(1);
    }
}
