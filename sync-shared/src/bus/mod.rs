//! Objects that CPU threads and GPU threads use at the same time, in memory both reach
//! across a bus that cannot read-modify-write one word for both (PCIe with
//! `hostNativeAtomicSupported = 0`, as on the GPU machines measured in
//! docs/measurements.md).
//!
//! CUDA's atomicity rule for pinned mapped memory on such a machine: a system-scope
//! read-modify-write is *not* atomic; only naturally aligned loads and stores are, and
//! a read-modify-write at a narrower scope is atomic among the threads of that scope
//! only. So every object here is built from two kinds of word:
//!
//! - **bus words**, written by one side only with system-scope stores and read by the
//!   other side with system-scope loads;
//! - **side words**, read-modify-written by the threads of one side only, with atomics
//!   of that side's own scope (system on the host, device scope on the GPU), never
//!   touched by the other side. A GPU never read-modify-writes a word of memory the
//!   host may own: each side word of the GPU is a [`SideLine`], and GPU threads use the
//!   word at the address the runtime attached to it when it placed the object (in
//!   device memory for an object in mapped host memory). A GPU thread that finds no
//!   address there traps: the object was not placed by the runtime.
//!
//! Contention among the threads of one side is resolved on its side words; what the
//! other side must see is then *published* on a bus word in order (the protocol is in
//! `counter.rs`). Counts are cumulative `u64` and never wrap. The two sides' bus words
//! of an object share one cache line: a round trip then costs what raw spinning on one
//! mapped word costs (two lines measured 1.5 times slower).
//!
//! The types take a [`Side`] the way the other primitives take a backend: the host
//! aliases (`sync_host::HandoffSemaphore`) and the device aliases
//! (`sync_device::HandoffSemaphore`) have the same bytes, so an object placed in mapped
//! memory by the host is used by a kernel through the device alias. An operation that
//! belongs to the other side does not compile (a GPU thread cannot `acquire` from a
//! `GpuToHost` semaphore).
//!
//! Waits take a [`BusWait`]: on the host one that also queries the kernel's stream (the
//! forward-progress rule of the CUDA execution model, and the way a dead kernel is
//! noticed), on the GPU one that polls with a short sleep.

mod barrier;
mod counter;
mod handoff;
mod latch;
mod side_line;
mod stop;

pub use barrier::{BusArrivalToken, BusBarrier};
pub use handoff::{Consumer, HandoffChannel, HandoffSemaphore, Producer};
pub use latch::BusLatch;
pub use side_line::{Crossing, GpuSideLines, SideLine, ITS_OWN_WORD};
pub use stop::BusStopSource;

use core::fmt;
use core::marker::PhantomData;

use crate::primitive::{const_fn, AtomicU64, Ordering};

/// A 64-bit word of a bus object.
pub type BusWord = AtomicU64;

/// Which side of the bus a thread runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SideKind {
    /// A CPU thread.
    Host = 0,
    /// A GPU thread.
    Gpu = 1,
}

/// The operations a side of the bus performs on bus objects.
///
/// # Safety
///
/// - `load_bus`/`store_bus` are single-copy-atomic 64-bit loads and stores at system
///   scope with at least the given ordering;
/// - the `*_side` methods are atomic with respect to each other among all threads of
///   this side, at a scope that includes all of them, with at least the given ordering;
/// - [`pause`](Side::pause) only waits (it may return at once).
pub unsafe trait Side: 'static {
    /// Which side this is.
    const KIND: SideKind;

    /// System-scope load of a bus word.
    fn load_bus(word: &BusWord, order: Ordering) -> u64;
    /// System-scope store to a bus word this side owns.
    fn store_bus(word: &BusWord, value: u64, order: Ordering);
    /// The word this side's threads read-modify-write for `line`: the line's own word
    /// by default (the host, and CPU stand-ins in tests); the GPU's implementation
    /// follows the address the runtime attached ([`SideLine::gpu_word`]) and traps
    /// without one.
    #[inline(always)]
    fn side_word(line: &SideLine) -> &BusWord {
        line.word()
    }
    /// Load of a side word.
    fn load_side(word: &BusWord, order: Ordering) -> u64;
    /// Store to a side word.
    fn store_side(word: &BusWord, value: u64, order: Ordering);
    /// Wrapping add on a side word; returns the previous value.
    fn fetch_add_side(word: &BusWord, value: u64, order: Ordering) -> u64;
    /// Strong compare-and-exchange on a side word.
    fn compare_exchange_side(
        word: &BusWord,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;
    /// Strong compare-and-exchange on a side word that threads of several GPUs may
    /// race on (the GPU's claim word of a [`BusStopSource`] shared by two GPUs): the
    /// GPU's is at system scope; the host's, [`compare_exchange_side`](Self::compare_exchange_side).
    /// It is never given a word of memory the host owns (see [`SideLine`]).
    fn compare_exchange_shared(
        word: &BusWord,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        Self::compare_exchange_side(word, current, new, success, failure)
    }
    /// One step of a short wait for another thread of this side (a publisher ahead in
    /// line). `round` starts at 0.
    fn pause(round: &mut u32);

    /// Stores `value` to PE `pe`'s copy of `word` (an object in NVSHMEM's symmetric
    /// heap: [`Crossing`]), delivered after every put, atomic and store this thread
    /// issued to that PE before (`nvshmem_fence`, then `nvshmemx_signal_op` with
    /// `NVSHMEM_SIGNAL_SET`). Only the GPU's side crosses PEs: the default says so and
    /// panics.
    fn store_bus_on_pe(word: &BusWord, value: u64, pe: u32) {
        let _ = (word, value, pe);
        crossing_unsupported()
    }
    /// Waits until every NVSHMEM operation this thread issued is complete at its
    /// destination (`nvshmem_quiet`).
    fn quiet() {
        crossing_unsupported()
    }
    /// Strong compare-and-exchange on PE `pe`'s copy of a side word, with NVSHMEM's
    /// atomic (`nvshmem_uint64_atomic_compare_swap`): relaxed, atomic with NVSHMEM's
    /// atomics on the word only.
    fn compare_exchange_on_pe(word: &BusWord, current: u64, new: u64, pe: u32) -> Result<u64, u64> {
        let _ = (word, current, new, pe);
        crossing_unsupported()
    }
}

/// Stops a side whose bus words cannot cross PEs (the host's) from using an object
/// marked for NVSHMEM's crossing.
#[cold]
#[inline(never)]
#[track_caller]
fn crossing_unsupported() -> ! {
    misuse(
        "bus object in NVSHMEM's symmetric heap",
        "only GPU threads of the PEs it was placed for cross PEs through it",
    )
}

/// Which side produces and which side consumes a [`HandoffSemaphore`].
pub trait Direction: 'static {
    /// The side that releases.
    const PRODUCER: SideKind;
    /// The side that acquires.
    const CONSUMER: SideKind;
}

/// GPU threads release, host threads acquire (results coming back).
#[derive(Clone, Copy, Debug)]
pub struct GpuToHost;
/// Host threads release, GPU threads acquire (work going out).
#[derive(Clone, Copy, Debug)]
pub struct HostToGpu;
/// Threads of one GPU release, threads of another GPU acquire (a pipeline stage handing
/// work to the next GPU). Both ends are GPU sides; the object sits in the consuming
/// GPU's memory (its polls stay local, the producer's stores cross the link) and is
/// placed with `Runtime::place_for_peers`, which checks that the producing GPU's
/// atomics there are native (its own side word lives there too, attached in place).
/// Each GPU's side word is read-modify-written by that GPU's threads only.
#[derive(Clone, Copy, Debug)]
pub struct GpuToGpu;

impl Direction for GpuToHost {
    const PRODUCER: SideKind = SideKind::Gpu;
    const CONSUMER: SideKind = SideKind::Host;
}
impl Direction for HostToGpu {
    const PRODUCER: SideKind = SideKind::Host;
    const CONSUMER: SideKind = SideKind::Gpu;
}
impl Direction for GpuToGpu {
    const PRODUCER: SideKind = SideKind::Gpu;
    const CONSUMER: SideKind = SideKind::Gpu;
}

/// How a thread of one side waits for the other side.
///
/// The host's implementation (`sync_host::cuda::HostWait`) spins, then backs off, and
/// queries the kernel's stream while it waits; the GPU's (`sync_device::DeviceWait`)
/// polls with a short sleep. Both honour a deadline and a stop request.
pub trait BusWait {
    /// Why a wait ended without its condition.
    type Error;
    /// Calls `ready` until it returns `true`, pausing between calls; returns an error
    /// instead when the wait must end early.
    fn wait_until(&mut self, ready: &mut dyn FnMut() -> bool) -> Result<(), Self::Error>;
}

impl<W: BusWait + ?Sized> BusWait for &mut W {
    type Error = W::Error;
    fn wait_until(&mut self, ready: &mut dyn FnMut() -> bool) -> Result<(), Self::Error> {
        (**self).wait_until(ready)
    }
}

/// Why a device-side bus wait ended early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// The deadline passed.
    TimedOut,
    /// Stop was requested.
    Stopped,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WaitError::TimedOut => "the wait timed out",
            WaitError::Stopped => "the wait was interrupted by a stop request",
        })
    }
}

impl core::error::Error for WaitError {}

/// A bus word alone on its 64-byte line, so that one side's polling does not pull in
/// the lines the other side writes (side words: [`SideLine`]).
#[repr(C, align(64))]
pub(crate) struct Line {
    pub(crate) word: BusWord,
}

impl Line {
    const_fn! {
        pub(crate) fn new(value: u64) -> Self {
            Self { word: BusWord::new(value) }
        }
    }
}

/// Compile-time checks that side `B` may perform an operation of direction `D`.
pub(crate) struct SideOf<B, D>(PhantomData<fn() -> (B, D)>);

impl<B: Side, D: Direction> SideOf<B, D> {
    pub(crate) const PRODUCES: () = assert!(
        B::KIND as u8 == D::PRODUCER as u8,
        "this side of the bus only acquires from this HandoffSemaphore (see its Direction)"
    );
    pub(crate) const CONSUMES: () = assert!(
        B::KIND as u8 == D::CONSUMER as u8,
        "this side of the bus only releases to this HandoffSemaphore (see its Direction)"
    );
}

/// Set in a side word while an exclusive endpoint ([`Producer`], [`Consumer`]) owns it;
/// counts stay far below.
pub(crate) const EXCLUSIVE: u64 = 1 << 63;

/// The highest cumulative count: beyond it a count would reach the value that marks a
/// word held by an exclusive endpoint.
pub const BUS_COUNT_MAX: u64 = EXCLUSIVE - 1;

/// Stops with a usage error (a trap on the device).
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn misuse(operation: &'static str, what: &'static str) -> ! {
    #[cfg(all(target_arch = "nvptx64", debug_assertions))]
    crate::vprintf::print_misuse(operation, what);
    panic!("{operation}: {what}")
}
