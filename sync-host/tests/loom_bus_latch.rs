//! loom models of `BusLatch` (how they run: `loom_bus_support`).
#![cfg(loom)]

mod loom_bus_support;
mod loom_support;

// std's Arc, not loom's, as in the other models: a failing model reports its first
// panic instead of aborting in loom's Arc destructor while unwinding.
use std::sync::Arc;

use loom::thread;
use loom_bus_support::*;
use loom_support::Data;
use sync_host::Host;
use sync_shared::bus::BusLatch;

/// A latch of 2: a host thread and a GPU thread each write their slot and
/// `arrive_and_wait(1)`. Proves count-downs from both sides open the latch (neither
/// wait hangs) and a returned wait sees the other side's write, in both directions.
#[test]
fn latch_count_downs_from_both_sides() {
    loom::model(|| {
        let latch = Arc::new(BusLatch::<Host>::new(2));
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let kernel = {
            let (latch, slots) = (latch.clone(), slots.clone());
            thread::spawn(move || {
                slots[1].set(2);
                gpu(&*latch).arrive_and_wait(1, LoomWait::new()).unwrap();
                assert_eq!(slots[0].get(), 1);
            })
        };

        slots[0].set(1);
        latch.arrive_and_wait(1, LoomWait::new()).unwrap();
        assert_eq!(slots[1].get(), 2);
        kernel.join().unwrap();
        assert_eq!(latch.counted(), 2);
    });
}

/// A latch of 3: two host threads write their slots and count down by one each (the
/// publish protocol on the host's side); a GPU thread counts down by one and waits.
/// Proves the GPU's wait returns only when all three are published, and then sees
/// both host threads' writes, also when the host count it reads was published by the
/// later host adder.
#[test]
fn latch_two_host_count_downs_and_a_gpu_waiter() {
    loom::model(|| {
        let latch = Arc::new(BusLatch::<Host>::new(3));
        let slots = Arc::new([Data::new(0), Data::new(0)]);

        let mut hosts = Pending::new(
            (0..2)
                .map(|me| {
                    let (latch, slots) = (latch.clone(), slots.clone());
                    thread::spawn(move || {
                        slots[me].set(me as u32 + 1);
                        latch.count_down(1);
                    })
                })
                .collect(),
        );

        // This thread plays the GPU.
        let gpu = gpu(&*latch);
        gpu.count_down(1);
        wait_for(&mut hosts, |wait| gpu.wait(wait));
        assert_eq!(slots[0].get() + slots[1].get(), 3);
        hosts.join();
        assert!(gpu.try_wait() && latch.try_wait());
    });
}
