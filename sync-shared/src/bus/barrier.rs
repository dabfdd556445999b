//! [`BusBarrier`]: a reusable barrier whose participants are host threads and GPU
//! threads (typically one per block).

use core::fmt;
use core::marker::PhantomData;

use super::counter::{BusPair, PublishedCount};
use super::{misuse, BusWait, GpuSideLines, Side, SideKind, SideLine};
use crate::primitive::{const_fn, Ordering};

/// A barrier of `host_parties` host participants and `gpu_parties` GPU participants.
///
/// Each side counts its own arrivals, cumulatively ([module protocol](super)): phase
/// `k` is complete once the host count reaches `(k + 1) * host_parties` and the GPU
/// count reaches `(k + 1) * gpu_parties`. A participant's arrival belongs to the phase
/// its side's count was in, so each participant must arrive once per phase, as with any
/// barrier.
///
/// Not supported, unlike [`Barrier`](crate::Barrier): a completion function (no thread
/// can run one before both sides are released without another bus round trip) and
/// `arrive_and_drop` (the parties of a side are fixed so that the phase can be computed
/// from the counts).
///
/// Counterpart: `cuda::barrier<thread_scope_system>` (which needs
/// `hostNativeAtomicSupported` for mapped memory).
///
/// # Memory ordering
///
/// Arrivals are releases, and a wait that returns is an acquire: what every
/// participant wrote before arriving at phase `k` is visible to every participant
/// after waiting for it.
#[repr(C)]
pub struct BusBarrier<B> {
    /// Bus words: arrivals published by each side (one line).
    arrived: BusPair,
    /// Each side's word: arrivals reserved by its threads.
    host_reserved: SideLine,
    gpu_reserved: SideLine,
    host_parties: u64,
    gpu_parties: u64,
    _marker: PhantomData<fn() -> B>,
}

/// The phase an arrival at a [`BusBarrier`] belongs to; [`BusBarrier::wait`] takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a token is needed to wait for the phase"]
pub struct BusArrivalToken {
    phase: u64,
}

impl BusArrivalToken {
    /// The phase number (0 for the first).
    pub fn phase(&self) -> u64 {
        self.phase
    }
}

impl<B: Side> BusBarrier<B> {
    const_fn! {
        /// A barrier of `host_parties` host and `gpu_parties` GPU participants.
        ///
        /// # Panics
        ///
        /// If both are 0.
        pub fn new(host_parties: u64, gpu_parties: u64) -> Self {
            assert!(
                host_parties > 0 || gpu_parties > 0,
                "BusBarrier::new: a barrier needs at least one participant"
            );
            Self {
                arrived: BusPair::new(0, 0),
                host_reserved: SideLine::new(0),
                gpu_reserved: SideLine::new(0),
                host_parties,
                gpu_parties,
                _marker: PhantomData,
            }
        }
    }

    /// Participants of each side: `(host, gpu)`.
    pub fn parties(&self) -> (u64, u64) {
        (self.host_parties, self.gpu_parties)
    }

    /// Arrives with `n` of this side's participants; returns the phase's token.
    ///
    /// # Panics
    ///
    /// If `n` is 0, or more than this side's participants still owe the phase (caught
    /// when visible: an arrival counted into the next phase before the current one
    /// completed).
    pub fn arrive(&self, n: u64) -> BusArrivalToken {
        let (count, parties, theirs, their_parties) = self.sides();
        let theirs = self.arrived.of(theirs);
        if n == 0 {
            misuse(
                "BusBarrier::arrive",
                "n = 0, but an arrival must count at least 1",
            );
        }
        let first = count.add_with::<B>(n, "BusBarrier::arrive", false, |first| {
            let phase = first / parties;
            // An arrival at phase k comes after its participant saw phase k - 1
            // complete, so the other side's count it can see is at least k * parties.
            let behind = B::load_bus(theirs, Ordering::Relaxed) < phase * their_parties;
            if first % parties + n > parties || behind {
                misuse(
                    "BusBarrier::arrive",
                    "more arrivals than this side's participants owe the phase",
                );
            }
        });
        BusArrivalToken {
            phase: first / parties,
        }
    }

    /// Whether the token's phase is complete.
    pub fn try_wait(&self, token: BusArrivalToken) -> bool {
        let done = token.phase + 1;
        B::load_bus(self.arrived.of(SideKind::Host), Ordering::Acquire) >= done * self.host_parties
            && B::load_bus(self.arrived.of(SideKind::Gpu), Ordering::Acquire)
                >= done * self.gpu_parties
    }

    /// Waits with `wait` until the token's phase is complete.
    pub fn wait<W: BusWait>(&self, token: BusArrivalToken, mut wait: W) -> Result<(), W::Error> {
        if self.try_wait(token) {
            return Ok(());
        }
        wait.wait_until(&mut || self.try_wait(token))
    }

    /// Arrives with one participant and waits for the phase.
    pub fn arrive_and_wait<W: BusWait>(&self, wait: W) -> Result<(), W::Error> {
        let token = self.arrive(1);
        self.wait(token, wait)
    }

    /// (this side's count, its parties, the other side, its parties).
    fn sides(&self) -> (PublishedCount<'_>, u64, SideKind, u64) {
        let (reserved, parties, other, other_parties) = match B::KIND {
            SideKind::Host => (
                &self.host_reserved,
                self.host_parties,
                SideKind::Gpu,
                self.gpu_parties,
            ),
            SideKind::Gpu => (
                &self.gpu_reserved,
                self.gpu_parties,
                SideKind::Host,
                self.host_parties,
            ),
        };
        if parties == 0 {
            misuse("BusBarrier::arrive", "this side has no participants");
        }
        let count = PublishedCount {
            published: self.arrived.of(B::KIND),
            reserved,
        };
        (count, parties, other, other_parties)
    }
}

// SAFETY: each side's `reserved` are the only side words; the GPU's is listed.
unsafe impl<B: Side> GpuSideLines for BusBarrier<B> {
    fn gpu_side_lines(&self) -> [Option<&SideLine>; 2] {
        [Some(&self.gpu_reserved), None]
    }
}

impl<B: Side> fmt::Debug for BusBarrier<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BusBarrier")
            .field("host_parties", &self.host_parties)
            .field("gpu_parties", &self.gpu_parties)
            .finish_non_exhaustive()
    }
}
