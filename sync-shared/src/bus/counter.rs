//! [`PublishedCount`]: a cumulative count that the threads of one side add to and the
//! other side reads, with no read-modify-write on the word the other side reads.
//!
//! # Protocol
//!
//! An adder *reserves* its units with a fetch-add on the side word `reserved`, which
//! gives it the sequence numbers `first..first + n`; then it *publishes* by storing
//! `first + n` to the bus word `published`, after waiting until `published == first`
//! (every adder ahead of it has published). The published value therefore only grows,
//! and when it reads `k`, the units `0..k` are all complete: a reader that sees `k` may
//! use whatever the adders of those units wrote before publishing (a slot per sequence
//! number, say).
//!
//! An exclusive endpoint sets [`EXCLUSIVE`] in `reserved` and then keeps the count in a
//! register: its adds are one store each, with no read-modify-write and no wait.
//!
//! # Across PEs
//!
//! An object in NVSHMEM's symmetric heap has a copy on each PE; the adding side's line
//! is marked with the reading side's PE ([`Crossing::ToPe`]). Publishing then sends the
//! value to that PE's copy of `published` first (NVSHMEM's signal set, after a fence),
//! then stores it in this PE's copy, which this side's adders wait on for their turn.
//! A shared adder also waits until its value is delivered (`quiet`) before that local
//! store hands the turn on: NVSHMEM orders one thread's operations to a PE, not two
//! threads', and the next adder's larger value must not arrive first.
//!
//! # Memory ordering
//!
//! The publishing store is a release, the loads of readers are acquire; the wait for
//! one's turn is an acquire load, so an adder's release also carries the writes of the
//! adders before it (a chain of release/acquire pairs). Across PEs, the fence before
//! the signal orders the adder's puts and stores to the reading PE before it.

use super::{misuse, BusWord, Crossing, Side, SideKind, SideLine, BUS_COUNT_MAX, EXCLUSIVE};
use crate::primitive::{const_fn, Ordering};

/// The published words of both sides on one 64-byte line. A round trip (one side
/// publishes, the other answers) then moves one cache line across the bus, as raw
/// spinning on one word does; with the two words on two lines it measured slower
/// (docs/measurements.md, `BusPair`).
#[repr(C, align(64))]
pub(crate) struct BusPair {
    host: BusWord,
    gpu: BusWord,
}

impl BusPair {
    const_fn! {
        pub(crate) fn new(host: u64, gpu: u64) -> Self {
            Self {
                host: BusWord::new(host),
                gpu: BusWord::new(gpu),
            }
        }
    }

    /// The word that `side` publishes.
    pub(crate) fn of(&self, side: SideKind) -> &BusWord {
        match side {
            SideKind::Host => &self.host,
            SideKind::Gpu => &self.gpu,
        }
    }
}

/// See the [module docs](self): a published bus word and the side word of the side
/// that adds to it.
#[derive(Clone, Copy)]
#[repr(C)] // the published address first: `layout::handoff_producer`
pub(crate) struct PublishedCount<'a> {
    /// Bus word: the count as published to the other side.
    pub(crate) published: &'a BusWord,
    /// Side word: units handed out to adders; [`EXCLUSIVE`] while an endpoint owns it.
    pub(crate) reserved: &'a SideLine,
}

impl PublishedCount<'_> {
    /// The published count (either side may read it).
    #[inline]
    pub(crate) fn value<B: Side>(&self, order: Ordering) -> u64 {
        B::load_bus(self.published, order)
    }

    /// Adds `n` units (owning side only): `fill(first)` runs after the units' sequence
    /// numbers `first..first + n` are reserved and before they are published. Only an
    /// object that `may_cross` PEs (a `GpuToGpu` semaphore) reads its crossing: the
    /// others' GPU lines may lie in mapped host memory, where each read crosses PCIe.
    #[inline]
    pub(crate) fn add_with<B: Side>(
        &self,
        n: u64,
        operation: &'static str,
        may_cross: bool,
        fill: impl FnOnce(u64),
    ) -> u64 {
        // Read before the reservation: its latency overlaps the reservation's.
        let reading_pe = if may_cross {
            self.reading_pe::<B>()
        } else {
            None
        };
        let first = B::fetch_add_side(B::side_word(self.reserved), n, Ordering::Relaxed);
        if first & EXCLUSIVE != 0 {
            misuse(
                operation,
                "an exclusive endpoint of this side owns the count",
            );
        }
        if first.checked_add(n).is_none_or(|end| end > BUS_COUNT_MAX) {
            misuse(operation, "the cumulative count would exceed BUS_COUNT_MAX");
        }
        // If `fill` (a caller's closure, or a primitive's misuse check) panics, the
        // units are published all the same while the panic unwinds: unpublished, they
        // would stop every later adder of this side in `publish` for ever.
        let publish_on_unwind = PublishOnUnwind::<B> {
            count: self,
            first,
            n,
            reading_pe,
            _side: core::marker::PhantomData,
        };
        fill(first);
        core::mem::forget(publish_on_unwind);
        self.publish::<B>(first, n, reading_pe);
        first
    }

    /// Stores `first + n` once every unit before `first` is published (also to
    /// `reading_pe`'s copy).
    #[inline]
    fn publish<B: Side>(&self, first: u64, n: u64, reading_pe: Option<u32>) {
        let mut round = 0;
        while B::load_bus(self.published, Ordering::Acquire) != first {
            B::pause(&mut round);
        }
        self.store_published::<B>(first + n, reading_pe, true);
    }

    /// The PE whose copy of the object the reading side polls, where the adding side
    /// (a GPU's) was placed in NVSHMEM's symmetric heap for another PE: see the
    /// [module docs](self).
    #[inline(always)]
    pub(crate) fn reading_pe<B: Side>(&self) -> Option<u32> {
        match B::KIND {
            SideKind::Host => None,
            SideKind::Gpu => match self.reserved.crossing() {
                Crossing::ToPe(pe) => Some(pe),
                Crossing::None | Crossing::ToEveryPe(_) => None,
            },
        }
    }

    /// Publishes `value`: to `reading_pe`'s copy first where there is one (delivered
    /// before returning if `hands_on`, a shared adder whose store lets the next one
    /// publish), then to this copy.
    #[inline(always)]
    fn store_published<B: Side>(&self, value: u64, reading_pe: Option<u32>, hands_on: bool) {
        if let Some(pe) = reading_pe {
            B::store_bus_on_pe(self.published, value, pe);
            if hands_on {
                B::quiet();
            }
        }
        B::store_bus(self.published, value, Ordering::Release);
    }

    /// Makes the calling thread the only adder of its side: returns the count, which
    /// the caller then keeps and publishes with
    /// [`publish_exclusive`](Self::publish_exclusive), or `None` if an endpoint
    /// already exists.
    pub(crate) fn claim<B: Side>(&self) -> Option<u64> {
        let reserved = claim_word::<B>(self.reserved)?;
        // Adders that reserved before the claim may still be publishing.
        let mut round = 0;
        while B::load_bus(self.published, Ordering::Acquire) != reserved {
            B::pause(&mut round);
        }
        Some(reserved)
    }

    /// An exclusive endpoint's add: `count` was the count, `count + n` is published
    /// (also to `reading_pe`'s copy, as the endpoint found it when it claimed: one
    /// thread's signals to a PE arrive in order).
    #[inline]
    pub(crate) fn publish_exclusive<B: Side>(
        &self,
        count: u64,
        n: u64,
        reading_pe: Option<u32>,
        operation: &'static str,
    ) {
        if count.checked_add(n).is_none_or(|end| end > BUS_COUNT_MAX) {
            misuse(operation, "the cumulative count would exceed BUS_COUNT_MAX");
        }
        self.store_published::<B>(count + n, reading_pe, false);
    }

    /// Ends an exclusive endpoint whose count is `count`.
    pub(crate) fn unclaim<B: Side>(&self, count: u64) {
        B::store_side(B::side_word(self.reserved), count, Ordering::Release);
    }
}

/// Publishes reserved units while a panic in the adder's `fill` unwinds (dropped only
/// then; the normal path forgets it).
struct PublishOnUnwind<'a, B: Side> {
    count: &'a PublishedCount<'a>,
    first: u64,
    n: u64,
    reading_pe: Option<u32>,
    _side: core::marker::PhantomData<fn() -> B>,
}

impl<B: Side> Drop for PublishOnUnwind<'_, B> {
    fn drop(&mut self) {
        self.count.publish::<B>(self.first, self.n, self.reading_pe);
    }
}

/// Sets [`EXCLUSIVE`] in a side word; returns the count it held, or `None` if it was
/// already set.
pub(crate) fn claim_word<B: Side>(line: &SideLine) -> Option<u64> {
    let word = B::side_word(line);
    let mut value = B::load_side(word, Ordering::Relaxed);
    loop {
        if value & EXCLUSIVE != 0 {
            return None;
        }
        match B::compare_exchange_side(
            word,
            value,
            value | EXCLUSIVE,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => return Some(value),
            Err(now) => value = now,
        }
    }
}
