//! The device `FairSemaphore` under contention: threads of several blocks queue in
//! `WaiterSlot`s of their own in global memory (a GPU thread's stack is private to it).
//! `tests/gpu_conformance.rs` launches these and checks the words they leave.

use core::time::Duration;

use sync_device::ptx_atomics::PtxScope;
use sync_device::{global_thread_index, FairSemaphore, WaiterSlot};
use sync_shared::{Device, Ordering};

/// Words the mutex kernel leaves (the host allocates five zeroed `u32`s).
mod word {
    /// Plain (non-atomic) increments made while holding the semaphore.
    pub const GUARDED: usize = 0;
    /// Successful acquisitions, counted atomically.
    pub const ACQUIRED: usize = 1;
    /// Threads inside right now; must never exceed 1.
    pub const HOLDERS: usize = 2;
    /// Times a thread found another inside.
    pub const VIOLATIONS: usize = 3;
    /// Timed acquisitions that gave up.
    pub const TIMED_OUT: usize = 4;
}
/// Timeout of the timed acquisitions: short, so some give up under contention.
const TIMED: Duration = Duration::from_micros(20);

/// Writes a binary `FairSemaphore` with one unit at `semaphore` (it has pointers, so
/// the host cannot build it: host and device addresses differ). One thread.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_fair_semaphore_init(semaphore: *mut FairSemaphore<1>) {
    // SAFETY: the host passes room for one semaphore that nothing else uses yet.
    unsafe { semaphore.write(FairSemaphore::new(1)) };
}

/// Every thread takes the binary fair semaphore `rounds` times: every third time with
/// a timed acquire that may give up, otherwise with a blocking one. Inside, it checks
/// that it is alone and increments a plain counter. `slots` has one slot per thread.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_fair_semaphore_mutex(
    semaphore: *const FairSemaphore<1>,
    slots: *mut WaiterSlot,
    words: *mut u32,
    rounds: u32,
) {
    // SAFETY: the host passes an initialized semaphore, one slot per thread of the
    // launch (each thread takes only its own), and five words.
    let (semaphore, slot) =
        unsafe { (&*semaphore, &mut *slots.add(global_thread_index() as usize)) };
    let count = |index: usize| {
        // SAFETY: as above; these words are only touched atomically.
        unsafe { Device::fetch_add_u32(words.add(index), 1, Ordering::Relaxed) }
    };
    for round in 0..rounds {
        if round % 3 == 2 {
            if !semaphore.try_acquire_for_in(slot, TIMED) {
                count(word::TIMED_OUT);
                continue;
            }
        } else {
            semaphore.acquire_in(slot);
        }
        if count(word::HOLDERS) != 0 {
            count(word::VIOLATIONS);
        }
        // SAFETY: only the semaphore's holder touches this word; the acquire and the
        // release order the holders' accesses.
        unsafe {
            let guarded = words.add(word::GUARDED);
            guarded.write_volatile(guarded.read_volatile() + 1);
            Device::fetch_sub_u32(words.add(word::HOLDERS), 1, Ordering::Relaxed);
        }
        count(word::ACQUIRED);
        semaphore.release(1);
    }
}
