//! The GPU's [`Side`] of bus objects, and [`DeviceWait`].

use core::time::Duration;

use sync_shared::bus::{BusStopSource, BusWait, BusWord, Side, SideKind, SideLine, WaitError};
use sync_shared::{Backend, Device, Ordering, System};

use crate::backend::gpu::{backoff_ns, cas_order, nanosleep, GlobalTime, Gpu, POLL_ROUNDS};
use crate::backend::pe_crossing;
use crate::ptx::atomics::PtxScope;

// SAFETY: bus words get `ld`/`st` at `.sys` scope (atomic on mapped memory as aligned
// 8-byte loads and stores); side words are the words the runtime attached to the
// object's GPU lines (`side_word`), in memory where the GPU's atomics are atomic (never
// pinned host memory), and get `.gpu`-scope atomics, atomic among the threads of one
// GPU, because no host thread and no other GPU touches a GPU's side word (a `GpuToGpu`
// object has one side word per GPU; the one word two GPUs may share, a stop source's
// claim, takes `compare_exchange_shared` at `.sys` scope); `pause` only sleeps; the
// operations on another PE's copy are NVSHMEM's, reached only for an object whose mark
// says it lies in NVSHMEM's symmetric heap.
unsafe impl Side for Gpu {
    const KIND: SideKind = SideKind::Gpu;

    #[inline(always)]
    fn load_bus(word: &BusWord, order: Ordering) -> u64 {
        // SAFETY: a live, aligned atomic word.
        unsafe { System::load_u64(word.as_ptr(), order) }
    }
    #[inline(always)]
    fn store_bus(word: &BusWord, value: u64, order: Ordering) {
        // SAFETY: as above.
        unsafe { System::store_u64(word.as_ptr(), value, order) }
    }
    #[inline(always)]
    fn side_word(line: &SideLine) -> &BusWord {
        line.attached_gpu_word()
    }
    #[inline(always)]
    fn load_side(word: &BusWord, order: Ordering) -> u64 {
        // SAFETY: as above.
        unsafe { Device::load_u64(word.as_ptr(), order) }
    }
    #[inline(always)]
    fn store_side(word: &BusWord, value: u64, order: Ordering) {
        // SAFETY: as above.
        unsafe { Device::store_u64(word.as_ptr(), value, order) }
    }
    #[inline(always)]
    fn fetch_add_side(word: &BusWord, value: u64, order: Ordering) -> u64 {
        // SAFETY: as above.
        unsafe { Device::fetch_add_u64(word.as_ptr(), value, order) }
    }
    #[inline(always)]
    fn compare_exchange_side(
        word: &BusWord,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        compare_exchange_at::<Device>(word, current, new, cas_order(success, failure))
    }
    #[inline(always)]
    fn compare_exchange_shared(
        word: &BusWord,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        // System scope, so that two GPUs sharing the word race atomically (the stop
        // source of a cross-GPU handoff).
        compare_exchange_at::<System>(word, current, new, cas_order(success, failure))
    }
    fn pause(round: &mut u32) {
        nanosleep(backoff_ns(*round));
        *round = round.saturating_add(1);
    }
    #[inline(always)]
    fn store_bus_on_pe(word: &BusWord, value: u64, pe: u32) {
        // SAFETY: a word of an object the runtime placed in NVSHMEM's symmetric heap for
        // PE `pe` (the mark that sent the caller here says so: `Side`'s contract).
        unsafe { pe_crossing::fenced_signal_set(word.as_ptr(), value, pe) }
    }
    #[inline(always)]
    fn quiet() {
        pe_crossing::quiet();
    }
    #[inline(always)]
    fn compare_exchange_on_pe(word: &BusWord, current: u64, new: u64, pe: u32) -> Result<u64, u64> {
        // SAFETY: as in `store_bus_on_pe`.
        let previous = unsafe { pe_crossing::compare_swap(word.as_ptr(), current, new, pe) };
        if previous == current {
            Ok(previous)
        } else {
            Err(previous)
        }
    }
}

/// A strong compare-and-exchange on a bus object's word at scope `S`: `Ok` with the
/// previous value if it was `current`, else `Err` with it.
#[inline(always)]
fn compare_exchange_at<S: PtxScope>(
    word: &BusWord,
    current: u64,
    new: u64,
    order: Ordering,
) -> Result<u64, u64> {
    // SAFETY: a live, aligned atomic word (see `Side for Gpu`).
    let previous = unsafe { S::cas_u64(word.as_ptr(), current, new, order) };
    if previous == current {
        Ok(previous)
    } else {
        Err(previous)
    }
}

/// Polls of a [`DeviceWait`] between looks at its deadline and stop source.
const LIMIT_EVERY: u32 = 4;
// The C++ header's inline polls come before this wait's first look at its limits.
const _: () = assert!(sync_shared::layout::handoff_consumer::INLINE_POLLS <= LIMIT_EVERY);

/// A GPU thread's wait for the host: polls with a capped exponential `nanosleep`
/// backoff (at most about 1 µs between polls, so a release after a long wait is seen
/// within a few microseconds), until a deadline (`%globaltimer`) or a stop request on
/// a [`BusStopSource`].
///
/// ```ignore
/// let unit = work.acquire(DeviceWait::new().stop(stop))?;
/// ```
#[derive(Clone, Copy)]
pub struct DeviceWait<'a> {
    deadline: Option<GlobalTime>,
    stop: Option<&'a BusStopSource<Gpu>>,
    spin: bool,
}

impl<'a> DeviceWait<'a> {
    /// Waits for ever.
    pub fn new() -> Self {
        Self {
            deadline: None,
            stop: None,
            spin: false,
        }
    }

    /// Polls without sleeping: for a thread that has nothing else to do while it
    /// waits, where each microsecond of latency counts (a ping-pong between two GPUs,
    /// where a backoff sleep adds to the release's travel time; docs/measurements.md,
    /// "Design figures behind the rustdoc"). It keeps its SM's issue slots busy: the
    /// other warps of the SM run slower meanwhile.
    pub fn spin(mut self) -> Self {
        self.spin = true;
        self
    }

    /// Ends the wait with [`WaitError::TimedOut`] after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        let now = <Gpu as Backend<System>>::now();
        self.deadline = Some(<Gpu as Backend<System>>::after(now, timeout));
        self
    }

    /// Ends the wait with [`WaitError::Stopped`] once either side requests stop on
    /// `stop`.
    pub fn stop(mut self, stop: &'a BusStopSource<Gpu>) -> Self {
        self.stop = Some(stop);
        self
    }
}

impl Default for DeviceWait<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl BusWait for DeviceWait<'_> {
    type Error = WaitError;

    fn wait_until(&mut self, ready: &mut dyn FnMut() -> bool) -> Result<(), WaitError> {
        let mut round = 0_u32;
        loop {
            if ready() {
                return Ok(());
            }
            // The limits every few polls: a poll of mapped memory crosses PCIe anyway,
            // and the stop source is another such read.
            if round % LIMIT_EVERY == LIMIT_EVERY - 1 {
                if self.stop.is_some_and(|stop| stop.stop_requested()) {
                    return Err(WaitError::Stopped);
                }
                if let Some(deadline) = self.deadline {
                    if <Gpu as Backend<System>>::now() >= deadline {
                        return Err(WaitError::TimedOut);
                    }
                }
            }
            if round >= POLL_ROUNDS && !self.spin {
                nanosleep(backoff_ns(round));
            }
            round = round.saturating_add(1);
        }
    }
}
