//! loom models of `BusStopSource` (how they run: `loom_bus_support`).
#![cfg(loom)]

mod loom_bus_support;
mod loom_support;

// std's Arc, not loom's, as in the other models: a failing model reports its first
// panic instead of aborting in loom's Arc destructor while unwinding.
use std::sync::Arc;

use loom::thread;
use loom_bus_support::*;
use loom_support::{Data, Seen};
use sync_host::{Host, StopSource, System};
use sync_shared::bus::{BusStopSource, HandoffSemaphore, HostToGpu};

/// The host hands one unit of work to a GPU thread that serves until stopped, then
/// writes a flag and requests stop. The GPU acquires with a wait that ends at the stop
/// request; once stopped, it drains with `try_acquire`. Proves the host's request
/// reaches the GPU (the wait ends, also while it waits for work), publishes what the
/// host wrote before it (the flag, and the released count: the unit is never lost,
/// whether the GPU took it before the stop or drains it after), and that the first
/// request reports `true` and later ones `false`.
#[test]
fn stop_from_the_host_ends_a_gpu_wait() {
    const SERVED_BEFORE_STOP: u32 = 1;
    const DRAINED_AFTER_STOP: u32 = 2;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let work = Arc::new(HandoffSemaphore::<HostToGpu, Host>::new(0));
        let stop = Arc::new(BusStopSource::<Host>::new());
        let task = Arc::new(Data::new(0));
        let flag = Arc::new(Data::new(0));

        let kernel = {
            let (work, stop, task, flag) = (work.clone(), stop.clone(), task.clone(), flag.clone());
            thread::spawn(move || {
                let (work, stop) = (gpu(&*work), gpu(&*stop));
                let stopped = || stop.stop_requested();
                let mut served = 0;
                while let Ok(unit) = work.acquire(LoomWait::stop(&stopped)) {
                    assert_eq!((unit, task.get()), (0, 7));
                    served += 1;
                    SEEN.mark(SERVED_BEFORE_STOP);
                }
                assert!(stop.requested_by_host() && !stop.requested_by_gpu());
                assert_eq!(flag.get(), 1);
                if let Some(unit) = work.try_acquire() {
                    assert_eq!((unit, task.get()), (0, 7));
                    served += 1;
                    SEEN.mark(DRAINED_AFTER_STOP);
                }
                assert_eq!(served, 1, "the unit released before the stop");
                assert!(!stop.request_stop(), "the host asked first");
            })
        };

        work.release_with(1, |_| task.set(7));
        flag.set(1);
        assert!(stop.request_stop());
        assert!(!stop.request_stop(), "only the first request on a side");
        kernel.join().unwrap();
        assert!(stop.requested_by_gpu());
    });
    SEEN.assert_all(SERVED_BEFORE_STOP | DRAINED_AFTER_STOP);
}

/// A GPU thread writes its result and requests stop; the host forwards the bus request
/// to an ordinary host `StopSource`, whose registered callback reads the result in the
/// forwarding thread. Proves the GPU's request ends the host's wait, publishes the
/// GPU's write to the host (to the callback, through `forward_to`), and that
/// `forward_to` makes the target's request.
#[test]
fn stop_from_the_gpu_forwarded_to_host_callbacks() {
    loom::model(|| {
        let stop = Arc::new(BusStopSource::<Host>::new());
        let result = Arc::new(Data::new(0));

        let kernel = {
            let (stop, result) = (stop.clone(), result.clone());
            thread::spawn(move || {
                result.set(42);
                assert!(gpu(&*stop).request_stop());
            })
        };

        let source = StopSource::<System>::new();
        let ran = Data::new(0);
        let callback = sync_host::stop_callback(source.token(), || {
            assert_eq!(result.get(), 42);
            ran.set(1);
        });
        assert_eq!(stop.forward_to(&source, LoomWait::new()), Ok(true));
        assert_eq!(ran.get(), 1);
        assert!(stop.requested_by_gpu() && !stop.requested_by_host());
        drop(callback);
        kernel.join().unwrap();
    });
}

/// Both sides request stop at the same time, each after writing its slot. Proves
/// both requests are seen by both sides, each side that sees the other's request sees
/// the other's write, and that both calls may report making the request (as the
/// documentation says). Whether at least one always does is
/// [`stop_concurrent_requests_one_reports_making_it`]'s question.
#[test]
fn stop_requested_by_both_sides() {
    const BOTH_TRUE: u32 = 1;
    static SEEN: Seen = Seen::new();
    loom::model(|| {
        let stop = Arc::new(BusStopSource::<Host>::new());
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let kernel = {
            let (stop, slots) = (stop.clone(), slots.clone());
            thread::spawn(move || {
                let stop = gpu(&*stop);
                slots[1].set(2);
                let made = stop.request_stop();
                if stop.requested_by_host() {
                    assert_eq!(slots[0].get(), 1);
                }
                made
            })
        };

        slots[0].set(1);
        let made_here = stop.request_stop();
        if stop.requested_by_gpu() {
            assert_eq!(slots[1].get(), 2);
        }
        let made_there = kernel.join().unwrap();
        assert!(stop.requested_by_host() && stop.requested_by_gpu());
        if made_here && made_there {
            SEEN.mark(BOTH_TRUE);
        }
    });
    SEEN.assert_all(BOTH_TRUE);
}

/// When both sides request stop at once, at least one call reports having made the
/// request. (This model found the first version, which stored its own word and then
/// loaded the other's, returning `false` on both sides; `request_stop` now loads the
/// other side's word with acquire before storing its own, which leaves "both `true`"
/// possible but not "both `false`".)
#[test]
fn stop_concurrent_requests_one_reports_making_it() {
    loom::model(|| {
        let stop = Arc::new(BusStopSource::<Host>::new());
        let kernel = {
            let stop = stop.clone();
            thread::spawn(move || gpu(&*stop).request_stop())
        };
        let made_here = stop.request_stop();
        let made_there = kernel.join().unwrap();
        assert!(
            made_here || made_there,
            "neither side's request_stop reported making the request"
        );
    });
}

/// Two threads of one side request stop: `stop_requested()` is `true` right after
/// either `request_stop()` returned (C++'s postcondition). (This model found the first
/// version, whose losing caller returned at once, possibly before the winner stored
/// the request, and published none of its own writes; every request now stores the
/// side's word, an idempotent store of 1.)
#[test]
fn stop_requested_after_any_request_returns() {
    loom::model(|| {
        let stop = Arc::new(BusStopSource::<Host>::new());
        let other = {
            let stop = stop.clone();
            thread::spawn(move || {
                stop.request_stop();
                assert!(
                    stop.stop_requested(),
                    "stop not requested after request_stop"
                );
            })
        };
        stop.request_stop();
        assert!(
            stop.stop_requested(),
            "stop not requested after request_stop"
        );
        other.join().unwrap();
    });
}
