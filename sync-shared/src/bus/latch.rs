//! [`BusLatch`]: a latch counted down by host threads and GPU threads together.

use core::fmt;
use core::marker::PhantomData;

use super::counter::{BusPair, PublishedCount};
use super::{misuse, BusWait, GpuSideLines, Side, SideKind, SideLine, BUS_COUNT_MAX};
use crate::primitive::{const_fn, Ordering};

/// A single-use latch whose count-downs and waits come from both sides of the bus.
///
/// Each side counts its own count-downs ([module protocol](super)); the latch is open
/// when the two published counts together reach `expected`. `count_down` checks that
/// it does not count past `expected` against the counts it can see (a concurrent
/// count-down on the other side may not be visible yet, so an overrun is caught when
/// it is seen, never reported falsely).
///
/// Counterpart: `cuda::latch<thread_scope_system>` (which needs
/// `hostNativeAtomicSupported` for mapped memory).
///
/// # Memory ordering
///
/// Count-downs are releases and a wait that returns is an acquire: what any thread
/// wrote before counting down is visible after the wait.
#[repr(C)]
pub struct BusLatch<B> {
    /// Bus words: count-downs published by each side (one line).
    counted: BusPair,
    /// Each side's word: count-downs reserved by its threads.
    host_reserved: SideLine,
    gpu_reserved: SideLine,
    expected: u64,
    _marker: PhantomData<fn() -> B>,
}

impl<B: Side> BusLatch<B> {
    const_fn! {
        /// A latch that opens after `expected` count-downs.
        ///
        /// # Panics
        ///
        /// If `expected` exceeds [`BUS_COUNT_MAX`].
        pub fn new(expected: u64) -> Self {
            assert!(expected <= BUS_COUNT_MAX, "BusLatch::new: expected exceeds BUS_COUNT_MAX");
            Self {
                counted: BusPair::new(0, 0),
                host_reserved: SideLine::new(0),
                gpu_reserved: SideLine::new(0),
                expected,
                _marker: PhantomData,
            }
        }
    }

    /// The count-downs it waits for.
    pub fn expected(&self) -> u64 {
        self.expected
    }

    /// Count-downs seen so far from both sides.
    pub fn counted(&self) -> u64 {
        B::load_bus(self.counted.of(SideKind::Host), Ordering::Acquire)
            + B::load_bus(self.counted.of(SideKind::Gpu), Ordering::Acquire)
    }

    /// Counts down by `n`.
    ///
    /// # Panics
    ///
    /// If the count-downs seen, with this one, pass `expected`.
    pub fn count_down(&self, n: u64) {
        let (reserved, other) = match B::KIND {
            SideKind::Host => (&self.host_reserved, SideKind::Gpu),
            SideKind::Gpu => (&self.gpu_reserved, SideKind::Host),
        };
        let mine = PublishedCount {
            published: self.counted.of(B::KIND),
            reserved,
        };
        mine.add_with::<B>(n, "BusLatch::count_down", false, |first| {
            let seen = B::load_bus(self.counted.of(other), Ordering::Relaxed);
            if first + n + seen > self.expected {
                misuse(
                    "BusLatch::count_down",
                    "the count-downs pass the latch's expected count",
                );
            }
        });
    }

    /// Whether the latch is open.
    pub fn try_wait(&self) -> bool {
        self.counted() >= self.expected
    }

    /// Waits with `wait` until the latch is open.
    pub fn wait<W: BusWait>(&self, mut wait: W) -> Result<(), W::Error> {
        if self.try_wait() {
            return Ok(());
        }
        wait.wait_until(&mut || self.try_wait())
    }

    /// Counts down by `n`, then waits.
    ///
    /// # Panics
    ///
    /// As [`count_down`](Self::count_down).
    pub fn arrive_and_wait<W: BusWait>(&self, n: u64, wait: W) -> Result<(), W::Error> {
        self.count_down(n);
        self.wait(wait)
    }
}

// SAFETY: each side's `reserved` are the only side words; the GPU's is listed.
unsafe impl<B: Side> GpuSideLines for BusLatch<B> {
    fn gpu_side_lines(&self) -> [Option<&SideLine>; 2] {
        [Some(&self.gpu_reserved), None]
    }
}

impl<B: Side> fmt::Debug for BusLatch<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BusLatch")
            .field("counted", &self.counted())
            .field("expected", &self.expected)
            .finish()
    }
}
