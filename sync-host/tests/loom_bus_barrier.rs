//! loom models of `BusBarrier` (how they run: `loom_bus_support`).
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
use sync_shared::bus::BusBarrier;

/// One host and one GPU participant, two phases; each writes its slot of the phase
/// before arriving and reads the other's after the wait. The host uses split
/// `arrive`/`wait`. Proves the tokens carry phases 0 and 1, neither side passes a
/// phase before the other arrived, and a write before phase `k` is seen after it by
/// the other side (also in phase 1, where the counts to reach are 2).
#[test]
fn barrier_two_phases_across_the_bus() {
    loom::model(|| {
        let barrier = Arc::new(BusBarrier::<Host>::new(1, 1));
        // written[phase][side]
        let written = Arc::new([[Data::new(0), Data::new(0)], [Data::new(0), Data::new(0)]]);

        let kernel = {
            let (barrier, written) = (barrier.clone(), written.clone());
            thread::spawn(move || {
                let gpu = gpu(&*barrier);
                for phase in 0..2 {
                    written[phase][1].set(1);
                    gpu.arrive_and_wait(LoomWait::new()).unwrap();
                    assert_eq!(written[phase][0].get(), 1);
                }
            })
        };

        for phase in 0..2 {
            written[phase][0].set(1);
            let token = barrier.arrive(1);
            assert_eq!(token.phase(), phase as u64);
            barrier.wait(token, LoomWait::new()).unwrap();
            assert_eq!(written[phase][1].get(), 1);
        }
        kernel.join().unwrap();
    });
}

/// One host and two GPU participants, one phase: the GPU's arrivals go through the
/// publish protocol on its side; one GPU participant only arrives. Proves no waiter
/// passes before all three arrived, and each sees the others' writes, also when the
/// GPU count the host reads was published by the later GPU arrival.
#[test]
fn barrier_two_gpu_participants() {
    loom::model(|| {
        let barrier = Arc::new(BusBarrier::<Host>::new(1, 2));
        // Participant `i` writes `i + 1` to `slots[i]`: all written, they sum to 6.
        let slots = Arc::new([Data::new(0), Data::new(0), Data::new(0)]);
        let sum = |slots: &[Data; 3]| slots.iter().map(Data::get).sum::<u32>();

        let waiter = {
            let (barrier, slots) = (barrier.clone(), slots.clone());
            thread::spawn(move || {
                slots[1].set(2);
                gpu(&*barrier).arrive_and_wait(LoomWait::new()).unwrap();
                assert_eq!(sum(&slots), 6);
            })
        };
        let mut arriver = {
            let (barrier, slots) = (barrier.clone(), slots.clone());
            Pending::new(vec![thread::spawn(move || {
                slots[2].set(3);
                gpu(&*barrier).arrive(1).phase()
            })])
        };

        slots[0].set(1);
        let token = barrier.arrive(1);
        wait_for(&mut arriver, |wait| barrier.wait(token, wait));
        assert_eq!(sum(&slots), 6);
        assert_eq!(arriver.results(), [0]);
        waiter.join().unwrap();
    });
}
