//! `ss_handoff_*`, `ss_consumer_*`, `ss_producer_*`, `ss_bus_stop_*`,
//! `ss_bus_barrier_*` and `ss_bus_latch_*`: the GPU side of the objects host and GPU
//! threads share.

use sync_shared::bus::{BusArrivalToken, Consumer, GpuToGpu, GpuToHost, HostToGpu, Producer};

use super::{timeout, wait_status, write_into, SS_CLAIMED, SS_OK};
use crate::{BusBarrier, BusLatch, BusStopSource, DeviceWait, Gpu, HandoffChannel};

/// Storage of `ss_consumer` / `ss_producer`: an exclusive endpoint, which the caller
/// drops with `ss_consumer_drop` / `ss_producer_drop`.
#[repr(C, align(8))]
pub struct EndpointStorage([u64; 4]);

/// Storage of `ss_bus_arrival_token`.
#[repr(C, align(8))]
pub struct BusTokenStorage(u64);

/// The wait of a bus operation: until `nanoseconds` pass (`FOREVER`: no limit) or
/// stop is requested on `stop` (null: no stop source).
///
/// # Safety
///
/// `stop` is null or a live `BusStopSource` for `'a`.
unsafe fn device_wait<'a>(stop: *const BusStopSource, nanoseconds: u64) -> DeviceWait<'a> {
    let mut wait = DeviceWait::new();
    // SAFETY: forwarded.
    if let Some(stop) = unsafe { stop.as_ref() } {
        wait = wait.stop(stop);
    }
    if let Some(limit) = timeout(nanoseconds) {
        wait = wait.timeout(limit);
    }
    wait
}

/// Writes an acquired sequence number, returning the wait's status.
///
/// # Safety
///
/// `sequence` is null or valid for a write.
unsafe fn acquired<E: Into<super::Status>>(result: Result<u64, E>, sequence: *mut u64) -> u32 {
    match result {
        Ok(unit) => {
            if !sequence.is_null() {
                // SAFETY: forwarded.
                unsafe { sequence.write(unit) };
            }
            SS_OK
        }
        Err(error) => wait_status::<E>(Err(error)),
    }
}

/// Writes the sequence number of a unit `try_acquire` took, if it took one.
///
/// # Safety
///
/// `sequence` is null or valid for a write.
unsafe fn hand_out(unit: Option<u64>, sequence: *mut u64) -> bool {
    let Some(unit) = unit else { return false };
    if !sequence.is_null() {
        // SAFETY: forwarded.
        unsafe { sequence.write(unit) };
    }
    true
}

/// Places an endpoint, or reports it claimed.
///
/// # Safety
///
/// `storage` is empty endpoint storage.
unsafe fn claim<T>(endpoint: Option<T>, storage: *mut EndpointStorage) -> u32 {
    match endpoint {
        // SAFETY: forwarded.
        Some(endpoint) => unsafe {
            write_into(storage, endpoint);
            SS_OK
        },
        None => SS_CLAIMED,
    }
}

type GpuConsumer = Consumer<'static, Gpu>;
type GpuProducer = Producer<'static, Gpu>;

/// The shared and the exclusive forms of one handoff object: `$acquire` and
/// `$release` say which the GPU may do.
macro_rules! handoff_abi {
    ($module:ident, $object:ty, $prefix:literal, release: $release:tt, acquire: $acquire:tt) => {
        mod $module {
            use super::*;

            type Object = $object;

            handoff_abi!(@release $release, $prefix);
            handoff_abi!(@acquire $acquire, $prefix);
        }
    };
    (@release true, $prefix:literal) => {
        /// `release(n)`: returns the first unit's sequence number.
        #[export_name = concat!($prefix, "_release")]
        pub unsafe extern "C" fn release(object: *const Object, n: u64) -> u64 {
            // SAFETY: a live object placed for host and GPU.
            unsafe { (*object).release(n) }
        }

        /// Claims the exclusive producer into `storage`: `SS_OK` or `SS_CLAIMED`.
        #[export_name = concat!($prefix, "_producer")]
        pub unsafe extern "C" fn producer(object: *const Object, storage: *mut EndpointStorage) -> u32 {
            // SAFETY: the object outlives the endpoint (the header's contract).
            let object: &'static Object = unsafe { &*object };
            // SAFETY: empty storage.
            unsafe { claim::<GpuProducer>(object.producer(), storage) }
        }
    };
    (@acquire true, $prefix:literal) => {
        /// `try_acquire()`: true and the unit's sequence number, or false.
        #[export_name = concat!($prefix, "_try_acquire")]
        pub unsafe extern "C" fn try_acquire(object: *const Object, sequence: *mut u64) -> bool {
            // SAFETY: a live object; `sequence` null or writable.
            unsafe { hand_out((*object).try_acquire(), sequence) }
        }

        /// `acquire(wait)`: `SS_OK` and the unit's sequence number, `SS_TIMED_OUT` or
        /// `SS_STOPPED`.
        #[export_name = concat!($prefix, "_acquire")]
        pub unsafe extern "C" fn acquire(
            object: *const Object,
            stop: *const BusStopSource,
            nanoseconds: u64,
            sequence: *mut u64,
        ) -> u32 {
            // SAFETY: a live object and stop source (or null); `sequence` null or writable.
            unsafe { acquired((*object).acquire(device_wait(stop, nanoseconds)), sequence) }
        }

        /// Claims the exclusive consumer into `storage`: `SS_OK` or `SS_CLAIMED`.
        #[export_name = concat!($prefix, "_consumer")]
        pub unsafe extern "C" fn consumer(object: *const Object, storage: *mut EndpointStorage) -> u32 {
            // SAFETY: the object outlives the endpoint (the header's contract).
            let object: &'static Object = unsafe { &*object };
            // SAFETY: empty storage.
            unsafe { claim::<GpuConsumer>(object.consumer(), storage) }
        }
    };
    (@release false, $prefix:literal) => {};
    (@acquire false, $prefix:literal) => {};
}

handoff_abi!(channel, HandoffChannel, "ss_handoff_channel", release: true, acquire: true);
handoff_abi!(to_gpu, crate::HandoffSemaphore<HostToGpu>, "ss_handoff_to_gpu", release: false, acquire: true);
handoff_abi!(to_host, crate::HandoffSemaphore<GpuToHost>, "ss_handoff_to_host", release: true, acquire: false);
handoff_abi!(gpu_to_gpu, crate::HandoffSemaphore<GpuToGpu>, "ss_handoff_gpu_to_gpu", release: true, acquire: true);

/// Units the GPU released into the channel so far.
///
/// # Safety
///
/// `channel` is live.
#[no_mangle]
pub unsafe extern "C" fn ss_handoff_channel_sent(channel: *const HandoffChannel) -> u64 {
    // SAFETY: forwarded.
    unsafe { (*channel).sent() }
}

/// Units the host released into the channel so far.
///
/// # Safety
///
/// `channel` is live.
#[no_mangle]
pub unsafe extern "C" fn ss_handoff_channel_received(channel: *const HandoffChannel) -> u64 {
    // SAFETY: forwarded.
    unsafe { (*channel).received() }
}

/// The consumer's `try_acquire()`.
///
/// # Safety
///
/// `consumer` holds a consumer a `_consumer` claim wrote; `sequence` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ss_consumer_try_acquire(
    consumer: *mut EndpointStorage,
    sequence: *mut u64,
) -> bool {
    // SAFETY: forwarded.
    unsafe { hand_out((*consumer.cast::<GpuConsumer>()).try_acquire(), sequence) }
}

/// The consumer's `acquire(wait)`: `SS_OK` and the unit's sequence number,
/// `SS_TIMED_OUT` or `SS_STOPPED`.
///
/// # Safety
///
/// As [`ss_consumer_try_acquire`]; `stop` null or live.
#[no_mangle]
pub unsafe extern "C" fn ss_consumer_acquire(
    consumer: *mut EndpointStorage,
    stop: *const BusStopSource,
    nanoseconds: u64,
    sequence: *mut u64,
) -> u32 {
    // SAFETY: forwarded.
    let consumer = unsafe { &mut *consumer.cast::<GpuConsumer>() };
    // SAFETY: forwarded.
    unsafe { acquired(consumer.acquire(device_wait(stop, nanoseconds)), sequence) }
}

/// Units the consumer acquired so far.
///
/// # Safety
///
/// As [`ss_consumer_try_acquire`].
#[no_mangle]
pub unsafe extern "C" fn ss_consumer_acquired(consumer: *const EndpointStorage) -> u64 {
    // SAFETY: forwarded.
    unsafe { (*consumer.cast::<GpuConsumer>()).acquired() }
}

/// Drops the consumer, handing its count back to the shared `acquire`.
///
/// # Safety
///
/// As [`ss_consumer_try_acquire`]; dropped once.
#[no_mangle]
pub unsafe extern "C" fn ss_consumer_drop(consumer: *mut EndpointStorage) {
    // SAFETY: forwarded.
    unsafe { core::ptr::drop_in_place(consumer.cast::<GpuConsumer>()) }
}

/// The producer's `release(n)`: returns the first unit's sequence number.
///
/// # Safety
///
/// `producer` holds a producer a `_producer` claim wrote.
#[no_mangle]
pub unsafe extern "C" fn ss_producer_release(producer: *mut EndpointStorage, n: u64) -> u64 {
    // SAFETY: forwarded.
    unsafe { (*producer.cast::<GpuProducer>()).release(n) }
}

/// Units the producer released so far.
///
/// # Safety
///
/// As [`ss_producer_release`].
#[no_mangle]
pub unsafe extern "C" fn ss_producer_released(producer: *const EndpointStorage) -> u64 {
    // SAFETY: forwarded.
    unsafe { (*producer.cast::<GpuProducer>()).released() }
}

/// Drops the producer, handing its count back to the shared `release`.
///
/// # Safety
///
/// As [`ss_producer_release`]; dropped once.
#[no_mangle]
pub unsafe extern "C" fn ss_producer_drop(producer: *mut EndpointStorage) {
    // SAFETY: forwarded.
    unsafe { core::ptr::drop_in_place(producer.cast::<GpuProducer>()) }
}

/// `request_stop()`: true only for the first request of either side.
///
/// # Safety
///
/// `stop` is live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_stop_request_stop(stop: *const BusStopSource) -> bool {
    // SAFETY: forwarded.
    unsafe { (*stop).request_stop() }
}

/// `stop_requested()`, by either side.
///
/// # Safety
///
/// `stop` is live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_stop_stop_requested(stop: *const BusStopSource) -> bool {
    // SAFETY: forwarded.
    unsafe { (*stop).stop_requested() }
}

/// Whether the host requested stop.
///
/// # Safety
///
/// `stop` is live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_stop_requested_by_host(stop: *const BusStopSource) -> bool {
    // SAFETY: forwarded.
    unsafe { (*stop).requested_by_host() }
}

/// Waits until stop is requested: `SS_OK` or `SS_TIMED_OUT`.
///
/// # Safety
///
/// `stop` is live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_stop_wait(stop: *const BusStopSource, nanoseconds: u64) -> u32 {
    // SAFETY: forwarded.
    unsafe { wait_status((*stop).wait(device_wait(core::ptr::null(), nanoseconds))) }
}

/// `arrive(n)` into the caller's token storage.
///
/// # Safety
///
/// `barrier` is live; `token` is token storage.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_barrier_arrive(
    barrier: *const BusBarrier,
    n: u64,
    token: *mut BusTokenStorage,
) {
    // SAFETY: forwarded.
    unsafe { write_into(token, (*barrier).arrive(n)) }
}

/// Reads the token in the caller's storage.
///
/// # Safety
///
/// `token` holds a token [`ss_bus_barrier_arrive`] wrote.
unsafe fn bus_token(token: *const BusTokenStorage) -> BusArrivalToken {
    // SAFETY: forwarded.
    unsafe { token.cast::<BusArrivalToken>().read() }
}

/// `try_wait(token)`.
///
/// # Safety
///
/// `barrier` is live; `token` holds its token.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_barrier_try_wait(
    barrier: *const BusBarrier,
    token: *const BusTokenStorage,
) -> bool {
    // SAFETY: forwarded.
    unsafe { (*barrier).try_wait(bus_token(token)) }
}

/// `wait(token, wait)`: `SS_OK`, `SS_TIMED_OUT` or `SS_STOPPED`.
///
/// # Safety
///
/// As [`ss_bus_barrier_try_wait`]; `stop` null or live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_barrier_wait(
    barrier: *const BusBarrier,
    token: *const BusTokenStorage,
    stop: *const BusStopSource,
    nanoseconds: u64,
) -> u32 {
    // SAFETY: forwarded.
    unsafe { wait_status((*barrier).wait(bus_token(token), device_wait(stop, nanoseconds))) }
}

/// `arrive_and_wait(wait)`: `SS_OK`, `SS_TIMED_OUT` or `SS_STOPPED`.
///
/// # Safety
///
/// `barrier` is live; `stop` null or live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_barrier_arrive_and_wait(
    barrier: *const BusBarrier,
    stop: *const BusStopSource,
    nanoseconds: u64,
) -> u32 {
    // SAFETY: forwarded.
    unsafe { wait_status((*barrier).arrive_and_wait(device_wait(stop, nanoseconds))) }
}

/// `count_down(n)`.
///
/// # Safety
///
/// `latch` is live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_latch_count_down(latch: *const BusLatch, n: u64) {
    // SAFETY: forwarded.
    unsafe { (*latch).count_down(n) }
}

/// `try_wait()`.
///
/// # Safety
///
/// `latch` is live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_latch_try_wait(latch: *const BusLatch) -> bool {
    // SAFETY: forwarded.
    unsafe { (*latch).try_wait() }
}

/// `wait(wait)`: `SS_OK`, `SS_TIMED_OUT` or `SS_STOPPED`.
///
/// # Safety
///
/// `latch` is live; `stop` null or live.
#[no_mangle]
pub unsafe extern "C" fn ss_bus_latch_wait(
    latch: *const BusLatch,
    stop: *const BusStopSource,
    nanoseconds: u64,
) -> u32 {
    // SAFETY: forwarded.
    unsafe { wait_status((*latch).wait(device_wait(stop, nanoseconds))) }
}

/// `arrive_and_wait(n, wait)`: `SS_OK`, `SS_TIMED_OUT` or `SS_STOPPED`.
///
/// # Safety
///
/// As [`ss_bus_latch_wait`].
#[no_mangle]
pub unsafe extern "C" fn ss_bus_latch_arrive_and_wait(
    latch: *const BusLatch,
    n: u64,
    stop: *const BusStopSource,
    nanoseconds: u64,
) -> u32 {
    // SAFETY: forwarded.
    unsafe { wait_status((*latch).arrive_and_wait(n, device_wait(stop, nanoseconds))) }
}

sync_shared::assert_layout!(EndpointStorage, sync_shared::layout::HANDOFF_ENDPOINT);
const _: () = {
    use sync_shared::layout::handoff_producer::{COUNT, PUBLISHED, READING_PE};
    let (published, count, reading_pe) = GpuProducer::FIELD_OFFSETS;
    assert!(
        published == PUBLISHED && count == COUNT && reading_pe == READING_PE,
        "Producer's fields moved: the header's inline release reads layout::handoff_producer"
    );
};
const _: () = {
    use sync_shared::layout::handoff_consumer::{PUBLISHED, TAKEN};
    let (published, taken) = GpuConsumer::FIELD_OFFSETS;
    assert!(
        published == PUBLISHED && taken == TAKEN,
        "Consumer's fields moved: the header's inline polls read layout::handoff_consumer"
    );
};
sync_shared::assert_layout!(BusTokenStorage, sync_shared::layout::BUS_ARRIVAL_TOKEN);
