//! Handing units across the bus: [`HandoffSemaphore`] (one direction) and
//! [`HandoffChannel`] (both directions, counts on one cache line), with the exclusive
//! endpoints [`Producer`] and [`Consumer`].

use core::fmt;
use core::marker::PhantomData;

use super::counter::{claim_word, BusPair, PublishedCount};
use super::{
    misuse, BusWait, Direction, GpuSideLines, Line, Side, SideKind, SideLine, SideOf,
    BUS_COUNT_MAX, EXCLUSIVE,
};
use crate::primitive::{const_fn, Ordering};

/// The words of one direction: the releasing side's published count and the acquiring
/// side's count of units taken. Every handoff operation is written once, here.
#[derive(Clone, Copy)]
struct Direct<'a> {
    released: PublishedCount<'a>,
    /// Acquiring side's word: units acquired; `EXCLUSIVE` while a [`Consumer`] owns it.
    taken: &'a SideLine,
    /// Whether the releasing side's line may name another PE (only a `GpuToGpu`
    /// semaphore is placed in NVSHMEM's heap).
    may_cross: bool,
}

impl<'a> Direct<'a> {
    fn release_with<B: Side>(self, n: u64, fill: impl FnOnce(u64)) -> u64 {
        self.released
            .add_with::<B>(n, "HandoffSemaphore::release", self.may_cross, fill)
    }

    fn producer<B: Side>(self) -> Option<Producer<'a, B>> {
        let count = self.released.claim::<B>()?;
        let reading_pe = match self.may_cross {
            true => self.released.reading_pe::<B>(),
            false => None,
        };
        Some(Producer {
            released: self.released,
            count,
            reading_pe: reading_pe.map_or(0, |pe| u64::from(pe) + 1),
            _side: PhantomData,
        })
    }

    fn try_acquire<B: Side>(self) -> Option<u64> {
        let taken_word = B::side_word(self.taken);
        let mut taken = self.shared_taken(B::load_side(taken_word, Ordering::Relaxed));
        loop {
            if self.released.value::<B>(Ordering::Acquire) <= taken {
                return None;
            }
            match B::compare_exchange_side(
                taken_word,
                taken,
                taken + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(taken),
                Err(now) => taken = self.shared_taken(now),
            }
        }
    }

    fn acquire<B: Side, W: BusWait>(self, mut wait: W) -> Result<u64, W::Error> {
        loop {
            if let Some(unit) = self.try_acquire::<B>() {
                return Ok(unit);
            }
            let seen = self.shared_taken(B::load_side(B::side_word(self.taken), Ordering::Relaxed));
            wait.wait_until(&mut || self.released.value::<B>(Ordering::Relaxed) > seen)?;
        }
    }

    fn consumer<B: Side>(self) -> Option<Consumer<'a, B>> {
        let taken = claim_word::<B>(self.taken)?;
        Some(Consumer {
            released: self.released,
            taken_word: self.taken,
            taken,
            _side: PhantomData,
        })
    }

    fn shared_taken(self, taken: u64) -> u64 {
        if taken & EXCLUSIVE != 0 {
            misuse(
                "HandoffSemaphore::acquire",
                "a Consumer (exclusive endpoint) of this semaphore exists",
            );
        }
        taken
    }
}

/// A counting semaphore handing units from the producing side of the bus to the
/// consuming side ([`Direction`]: [`GpuToHost`](super::GpuToHost) or
/// [`HostToGpu`](super::HostToGpu)), correct where the host and the GPU cannot both
/// read-modify-write one word (pinned mapped memory on PCIe).
///
/// Every unit has a sequence number: the `k`-th unit ever released is unit `k` (counting
/// from the initial count). A release reports the numbers it made available and an
/// acquire reports the number it took, so a ring of payload slots needs no other
/// bookkeeping: write slot `k % N` before releasing unit `k`, read it after acquiring
/// unit `k`.
///
/// - Any number of threads of the producing side may [`release`](Self::release)
///   concurrently; any number of threads of the consuming side may
///   [`acquire`](Self::acquire) concurrently. Each costs read-modify-writes on the
///   side's own words (the GPU's in GPU memory, see [`SideLine`]) besides the bus
///   traffic.
/// - One thread may instead take the side's exclusive endpoint
///   ([`producer`](Self::producer), [`consumer`](Self::consumer)): then a release is one
///   store and an acquire is polling one word.
///
/// For a round trip (work out, answer back) use a [`HandoffChannel`]: its two counts
/// share a cache line, which makes the round trip as fast as raw spinning on one word.
///
/// There is no `MAX` below [`BUS_COUNT_MAX`](super::BUS_COUNT_MAX): the producer never
/// waits for the consumer, and cumulative counts never wrap.
///
/// Counterpart: none in libcu++ (its `counting_semaphore<thread_scope_system>` needs
/// `hostNativeAtomicSupported` in mapped memory).
///
/// # Memory ordering
///
/// Releasing unit `k` happens before acquiring unit `k`: what the producer wrote before
/// the release is visible to the consumer after the acquire (system scope).
#[repr(C)]
pub struct HandoffSemaphore<D: Direction, B> {
    /// Bus word: units released, published by the producing side.
    released: Line,
    /// Producing side's word: units reserved by releasers.
    reserved: SideLine,
    /// Consuming side's word: units acquired.
    taken: SideLine,
    _marker: PhantomData<fn() -> (D, B)>,
}

impl<D: Direction, B: Side> HandoffSemaphore<D, B> {
    const_fn! {
        /// A semaphore holding `initial` units (numbered `0..initial`).
        pub fn new(initial: u64) -> Self {
            Self {
                released: Line::new(initial),
                reserved: SideLine::new(initial),
                taken: SideLine::new(0),
                _marker: PhantomData,
            }
        }
    }

    /// The largest count: [`BUS_COUNT_MAX`](super::BUS_COUNT_MAX).
    pub const fn max() -> u64 {
        BUS_COUNT_MAX
    }

    fn direct(&self) -> Direct<'_> {
        Direct {
            released: PublishedCount {
                published: &self.released.word,
                reserved: &self.reserved,
            },
            taken: &self.taken,
            may_cross: D::PRODUCER as u8 == SideKind::Gpu as u8
                && D::CONSUMER as u8 == SideKind::Gpu as u8,
        }
    }

    /// The bus word holding the published count of [`released`](Self::released), for
    /// readers that are no thread: a stream gated on the count
    /// (`sync_host::cuda::Stream::wait_released`) reads it at this word's address.
    pub fn released_word(&self) -> &super::BusWord {
        &self.released.word
    }

    /// Units released so far (cumulative, including the initial count), as published.
    /// Either side may ask.
    pub fn released(&self) -> u64 {
        self.direct().released.value::<B>(Ordering::Acquire)
    }

    /// Releases `n` units; returns the sequence number of the first.
    ///
    /// # Panics
    ///
    /// If a [`Producer`] of this semaphore exists, or the count would pass
    /// [`BUS_COUNT_MAX`](super::BUS_COUNT_MAX).
    #[inline]
    pub fn release(&self, n: u64) -> u64 {
        self.release_with(n, |_| {})
    }

    /// Releases `n` units after `fill(first)` ran: `fill` gets the sequence number of
    /// the first unit and writes the payloads of units `first..first + n`; the consumer
    /// sees them once it acquires those units. Returns `first`.
    ///
    /// # Panics
    ///
    /// As [`release`](Self::release), and when `fill` panics. The units are released
    /// all the same while that panic unwinds (with whatever `fill` wrote), so that the
    /// releasers after this one do not wait for ever for their turn to publish.
    #[inline]
    pub fn release_with(&self, n: u64, fill: impl FnOnce(u64)) -> u64 {
        let () = SideOf::<B, D>::PRODUCES;
        self.direct().release_with::<B>(n, fill)
    }

    /// Takes the producing side's exclusive endpoint, or `None` if one exists. While it
    /// lives, [`release`](Self::release) panics.
    pub fn producer(&self) -> Option<Producer<'_, B>> {
        let () = SideOf::<B, D>::PRODUCES;
        self.direct().producer::<B>()
    }

    /// Takes a unit if one is available now; returns its sequence number.
    ///
    /// # Panics
    ///
    /// If a [`Consumer`] of this semaphore exists.
    #[inline]
    pub fn try_acquire(&self) -> Option<u64> {
        let () = SideOf::<B, D>::CONSUMES;
        self.direct().try_acquire::<B>()
    }

    /// Takes a unit, waiting with `wait` until one is released; returns its sequence
    /// number, or the wait's error (timeout, stop, a dead kernel on the other side).
    ///
    /// # Panics
    ///
    /// If a [`Consumer`] of this semaphore exists.
    pub fn acquire<W: BusWait>(&self, wait: W) -> Result<u64, W::Error> {
        let () = SideOf::<B, D>::CONSUMES;
        self.direct().acquire::<B, W>(wait)
    }

    /// Takes the consuming side's exclusive endpoint, or `None` if one exists. While
    /// it lives, [`acquire`](Self::acquire) and [`try_acquire`](Self::try_acquire)
    /// panic.
    pub fn consumer(&self) -> Option<Consumer<'_, B>> {
        let () = SideOf::<B, D>::CONSUMES;
        self.direct().consumer::<B>()
    }
}

/// A [`HandoffSemaphore`] each way between host and GPU, with the two released counts
/// on one cache line: on each side, [`release`](Self::release) hands units to the other
/// side and [`acquire`](Self::acquire) takes the units the other side released.
///
/// A round trip (the host hands out work, the GPU answers) then moves one cache line
/// across the bus, as raw spinning on one mapped word does; two semaphores, a line
/// each, are slower (docs/measurements.md, "Design figures behind the rustdoc").
///
/// # Memory ordering
///
/// As [`HandoffSemaphore`], in each direction.
#[repr(C)]
pub struct HandoffChannel<B> {
    /// Bus words: units the host released, units the GPU released.
    released: BusPair,
    host_reserved: SideLine,
    host_taken: SideLine,
    gpu_reserved: SideLine,
    gpu_taken: SideLine,
    _marker: PhantomData<fn() -> B>,
}

impl<B: Side> HandoffChannel<B> {
    const_fn! {
        /// A channel with `to_gpu` units waiting for the GPU and `to_host` for the host.
        pub fn new(to_gpu: u64, to_host: u64) -> Self {
            Self {
                released: BusPair::new(to_gpu, to_host),
                host_reserved: SideLine::new(to_gpu),
                host_taken: SideLine::new(0),
                gpu_reserved: SideLine::new(to_host),
                gpu_taken: SideLine::new(0),
                _marker: PhantomData,
            }
        }
    }

    /// The direction this side releases into.
    fn outgoing(&self) -> Direct<'_> {
        let (reserved, taken) = match B::KIND {
            SideKind::Host => (&self.host_reserved, &self.gpu_taken),
            SideKind::Gpu => (&self.gpu_reserved, &self.host_taken),
        };
        Direct {
            released: PublishedCount {
                published: self.released.of(B::KIND),
                reserved,
            },
            taken,
            may_cross: false,
        }
    }

    /// The direction this side acquires from.
    fn incoming(&self) -> Direct<'_> {
        let (other, reserved, taken) = match B::KIND {
            SideKind::Host => (SideKind::Gpu, &self.gpu_reserved, &self.host_taken),
            SideKind::Gpu => (SideKind::Host, &self.host_reserved, &self.gpu_taken),
        };
        Direct {
            released: PublishedCount {
                published: self.released.of(other),
                reserved,
            },
            taken,
            may_cross: false,
        }
    }

    /// Units this side released so far (cumulative).
    pub fn sent(&self) -> u64 {
        self.outgoing().released.value::<B>(Ordering::Acquire)
    }

    /// Units the other side released so far (cumulative).
    pub fn received(&self) -> u64 {
        self.incoming().released.value::<B>(Ordering::Acquire)
    }

    /// Releases `n` units to the other side; returns the first's sequence number.
    ///
    /// # Panics
    ///
    /// As [`HandoffSemaphore::release`].
    #[inline]
    pub fn release(&self, n: u64) -> u64 {
        self.release_with(n, |_| {})
    }

    /// As [`HandoffSemaphore::release_with`], to the other side.
    #[inline]
    pub fn release_with(&self, n: u64, fill: impl FnOnce(u64)) -> u64 {
        self.outgoing().release_with::<B>(n, fill)
    }

    /// This side's exclusive endpoint for releasing, or `None` if one exists.
    pub fn producer(&self) -> Option<Producer<'_, B>> {
        self.outgoing().producer::<B>()
    }

    /// Takes a unit the other side released, if one is available now.
    ///
    /// # Panics
    ///
    /// As [`HandoffSemaphore::try_acquire`].
    #[inline]
    pub fn try_acquire(&self) -> Option<u64> {
        self.incoming().try_acquire::<B>()
    }

    /// Takes a unit the other side released, waiting with `wait`.
    ///
    /// # Panics
    ///
    /// As [`HandoffSemaphore::acquire`].
    pub fn acquire<W: BusWait>(&self, wait: W) -> Result<u64, W::Error> {
        self.incoming().acquire::<B, W>(wait)
    }

    /// This side's exclusive endpoint for acquiring, or `None` if one exists.
    pub fn consumer(&self) -> Option<Consumer<'_, B>> {
        self.incoming().consumer::<B>()
    }

    /// This side's two exclusive endpoints at once, both or none: `None` if either
    /// exists already. Of many threads that race for them, one gets both and the rest
    /// get `None`; two separate claims (`producer()`, then `consumer()`) could leave one
    /// thread with the producer and another with the consumer, and a worker that needs
    /// both would then never serve.
    ///
    /// # Examples
    ///
    /// ```
    /// use scoped_sync::HandoffChannel;
    ///
    /// let channel = HandoffChannel::new(0, 0);
    /// let (mut outbox, mut inbox) = channel.endpoints().expect("nobody holds them yet");
    /// assert!(channel.endpoints().is_none());
    /// assert_eq!(outbox.release(1), 0);
    /// assert_eq!(inbox.try_acquire(), None);
    /// ```
    pub fn endpoints(&self) -> Option<(Producer<'_, B>, Consumer<'_, B>)> {
        // The producer is claimed first: a racer that loses it stops there, so only its
        // winner ever claims the consumer. If the consumer is taken (claimed alone
        // elsewhere), dropping the producer hands its count back.
        let producer = self.producer()?;
        let consumer = self.consumer()?;
        Some((producer, consumer))
    }
}

/// The producing side's exclusive endpoint of a [`HandoffSemaphore`] or a direction of
/// a [`HandoffChannel`]: the one thread holding it releases with a single store (no
/// read-modify-write, no wait). Dropping it hands the count back to the shared
/// `release`.
#[repr(C)] // `layout::handoff_producer`: the C++ header releases inline from it
pub struct Producer<'a, B: Side> {
    released: PublishedCount<'a>,
    count: u64,
    /// 0, or 1 + the PE whose copy of the object the consumer polls (an object in
    /// NVSHMEM's symmetric heap): read once, when the endpoint is claimed.
    reading_pe: u64,
    _side: PhantomData<fn() -> B>,
}

impl<B: Side> Producer<'static, B> {
    /// The offsets of the published count's address, of the count and of the reading
    /// PE in a producer, for the assertion that they are `layout::handoff_producer`'s.
    #[doc(hidden)]
    pub const FIELD_OFFSETS: (usize, usize, usize) = (
        core::mem::offset_of!(Self, released)
            + core::mem::offset_of!(PublishedCount<'static>, published),
        core::mem::offset_of!(Self, count),
        core::mem::offset_of!(Self, reading_pe),
    );
}

impl<B: Side> Producer<'_, B> {
    /// Releases `n` units; returns the sequence number of the first.
    #[inline]
    pub fn release(&mut self, n: u64) -> u64 {
        self.release_with(n, |_| {})
    }

    /// Releases `n` units after `fill(first)` wrote their payloads; returns `first`.
    #[inline]
    pub fn release_with(&mut self, n: u64, fill: impl FnOnce(u64)) -> u64 {
        let first = self.count;
        fill(first);
        let reading_pe = self.reading_pe.checked_sub(1).map(|pe| pe as u32);
        self.released
            .publish_exclusive::<B>(first, n, reading_pe, "Producer::release");
        self.count = first + n;
        first
    }

    /// Units released so far (cumulative).
    pub fn released(&self) -> u64 {
        self.count
    }
}

impl<B: Side> Drop for Producer<'_, B> {
    fn drop(&mut self) {
        self.released.unclaim::<B>(self.count);
    }
}

/// The consuming side's exclusive endpoint of a [`HandoffSemaphore`] or a direction of
/// a [`HandoffChannel`]: the one thread holding it acquires by polling the released
/// count, with no read-modify-write. Dropping it hands the count back to the shared
/// `acquire`.
#[repr(C)] // `layout::handoff_consumer`: the C++ header polls inline from it
pub struct Consumer<'a, B: Side> {
    released: PublishedCount<'a>,
    taken_word: &'a SideLine,
    taken: u64,
    _side: PhantomData<fn() -> B>,
}

impl<B: Side> Consumer<'static, B> {
    /// The offsets of the published count's address and of the units taken in a
    /// consumer, for the assertion that they are `layout::handoff_consumer`'s.
    #[doc(hidden)]
    pub const FIELD_OFFSETS: (usize, usize) = (
        core::mem::offset_of!(Self, released)
            + core::mem::offset_of!(PublishedCount<'static>, published),
        core::mem::offset_of!(Self, taken),
    );
}

impl<B: Side> Consumer<'_, B> {
    /// Takes a unit if one is available; returns its sequence number.
    #[inline]
    pub fn try_acquire(&mut self) -> Option<u64> {
        if self.released.value::<B>(Ordering::Acquire) > self.taken {
            self.taken += 1;
            Some(self.taken - 1)
        } else {
            None
        }
    }

    /// Takes a unit, waiting with `wait`; returns its sequence number or the wait's
    /// error.
    #[inline]
    pub fn acquire<W: BusWait>(&mut self, mut wait: W) -> Result<u64, W::Error> {
        let unit = self.taken;
        let released = self.released;
        // Acquire polls: the poll that ends the wait is the synchronizing read, so no
        // second read follows it (on the GPU each read of mapped memory crosses PCIe).
        if released.value::<B>(Ordering::Acquire) <= unit {
            wait.wait_until(&mut || released.value::<B>(Ordering::Acquire) > unit)?;
        }
        self.taken = unit + 1;
        Ok(unit)
    }

    /// Units acquired so far (cumulative).
    pub fn acquired(&self) -> u64 {
        self.taken
    }
}

impl<B: Side> Drop for Consumer<'_, B> {
    fn drop(&mut self) {
        B::store_side(B::side_word(self.taken_word), self.taken, Ordering::Release);
    }
}

// SAFETY: the producing side's `reserved` and the consuming side's `taken` are the
// only side words, and the GPU's are listed.
unsafe impl<D: Direction, B: Side> GpuSideLines for HandoffSemaphore<D, B> {
    fn gpu_side_lines(&self) -> [Option<&SideLine>; 2] {
        [
            (D::PRODUCER == SideKind::Gpu).then_some(&self.reserved),
            (D::CONSUMER == SideKind::Gpu).then_some(&self.taken),
        ]
    }
}

// SAFETY: the GPU's two side words of the four.
unsafe impl<B: Side> GpuSideLines for HandoffChannel<B> {
    fn gpu_side_lines(&self) -> [Option<&SideLine>; 2] {
        [Some(&self.gpu_reserved), Some(&self.gpu_taken)]
    }
}

impl<D: Direction, B: Side> fmt::Debug for HandoffSemaphore<D, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffSemaphore")
            .field("released", &self.released())
            .finish_non_exhaustive()
    }
}

impl<B: Side> fmt::Debug for HandoffChannel<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffChannel")
            .field("sent", &self.sent())
            .field("received", &self.received())
            .finish_non_exhaustive()
    }
}
