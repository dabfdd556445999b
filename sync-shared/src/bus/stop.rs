//! [`BusStopSource`]: a stop request that either side can make and both sides see.

use core::fmt;
use core::marker::PhantomData;

use super::counter::BusPair;
use super::{BusWait, Crossing, GpuSideLines, Side, SideKind, SideLine};
use crate::backend::Backend;
use crate::primitive::{const_fn, Ordering};
use crate::scope::Scope;
use crate::stop_token::StopSource;

/// A stop flag for work that spans the bus: the host stops a persistent kernel, or a
/// kernel asks the host to stop (and the host runs its callbacks, see
/// [`forward_to`](Self::forward_to)).
///
/// Each side has its own request word, written only by that side; a stop is requested
/// when either is set.
///
/// Placed in NVSHMEM's symmetric heap for a job's PEs, a GPU's request reaches every
/// PE's copy (the copies lie in GPU memory, which host threads do not reach).
///
/// Counterpart: `std::stop_source` across the bus. Callbacks stay on the side that
/// registered them: a GPU cannot run a host closure, so host callbacks live on an
/// ordinary host [`StopSource`] that [`forward_to`](Self::forward_to) triggers.
///
/// # Memory ordering
///
/// A request is a release and [`stop_requested`](Self::stop_requested) an acquire:
/// what the requester wrote before is visible to a thread that sees the request.
#[repr(C)]
pub struct BusStopSource<B> {
    /// Bus words: 1 once that side requested stop (one line).
    requested: BusPair,
    /// Host-side word: claimed by the first host request.
    host_claim: SideLine,
    /// GPU-side word: claimed by the first GPU request.
    gpu_claim: SideLine,
    _marker: PhantomData<fn() -> B>,
}

impl<B: Side> BusStopSource<B> {
    const_fn! {
        /// A source with no stop requested.
        pub fn new() -> Self {
            Self {
                requested: BusPair::new(0, 0),
                host_claim: SideLine::new(0),
                gpu_claim: SideLine::new(0),
                _marker: PhantomData,
            }
        }
    }

    /// Requests stop. Returns `true` if this call made the request: the first on its
    /// side, with no request of the other side seen before it. Of two requests made at
    /// the same moment from the two sides, both may get `true` (there is no word both
    /// could update), but never both `false`. Once any request has returned,
    /// [`stop_requested`](Self::stop_requested) is `true` for its caller, and what the
    /// caller wrote before it is visible to whoever sees the request.
    pub fn request_stop(&self) -> bool {
        let (claim, other) = match B::KIND {
            SideKind::Host => (&self.host_claim, SideKind::Gpu),
            SideKind::Gpu => (&self.gpu_claim, SideKind::Host),
        };
        // Looked at before this side's store, with acquire: if each side saw the
        // other's request, each side's load would have to follow the other's store,
        // which follows that side's load — a cycle. So at most one side sees the other.
        let other_seen = B::load_bus(self.requested.of(other), Ordering::Acquire) != 0;
        if let (SideKind::Gpu, Crossing::ToEveryPe(pes)) = (B::KIND, claim.crossing()) {
            return self.request_on_every_pe(claim, pes) && !other_seen;
        }
        // Shared: two GPUs may both request through the GPU's claim (a word in GPU
        // memory: see `SideLine`).
        let first_here = B::compare_exchange_shared(
            B::side_word(claim),
            0,
            1,
            Ordering::Relaxed,
            Ordering::Relaxed,
        )
        .is_ok();
        // Every request stores, not only the first of its side: a later one must not
        // return before the request is visible, and its caller's writes must be
        // published too. Only this side writes the word, so storing 1 again is harmless.
        B::store_bus(self.requested.of(B::KIND), 1, Ordering::Release);
        first_here && !other_seen
    }

    /// A GPU's request on a source in NVSHMEM's symmetric heap, shared by PEs `0..pes`
    /// ([`Crossing::ToEveryPe`]): the claim is PE 0's copy of the GPU's claim word
    /// (NVSHMEM's compare-and-swap, so one GPU request of all PEs is the first), and
    /// the request word is set in every PE's copy (after a fence per PE, which carries
    /// the requester's earlier puts and stores to that PE) and delivered before this
    /// returns.
    #[cold]
    fn request_on_every_pe(&self, claim: &SideLine, pes: u32) -> bool {
        let first = B::compare_exchange_on_pe(B::side_word(claim), 0, 1, 0).is_ok();
        let word = self.requested.of(SideKind::Gpu);
        for pe in 0..pes {
            B::store_bus_on_pe(word, 1, pe);
        }
        B::quiet();
        B::store_bus(word, 1, Ordering::Release);
        first
    }

    /// Whether either side requested stop.
    #[inline]
    pub fn stop_requested(&self) -> bool {
        self.requested_by_host() || self.requested_by_gpu()
    }

    /// Whether the host requested stop.
    #[inline]
    pub fn requested_by_host(&self) -> bool {
        B::load_bus(self.requested.of(SideKind::Host), Ordering::Acquire) != 0
    }

    /// Whether the GPU requested stop.
    #[inline]
    pub fn requested_by_gpu(&self) -> bool {
        B::load_bus(self.requested.of(SideKind::Gpu), Ordering::Acquire) != 0
    }

    /// Waits with `wait` until stop is requested (by either side).
    pub fn wait<W: BusWait>(&self, mut wait: W) -> Result<(), W::Error> {
        if self.stop_requested() {
            return Ok(());
        }
        wait.wait_until(&mut || self.stop_requested())
    }

    /// Waits until stop is requested, then requests stop on `target` (an ordinary
    /// source of this side), which runs its callbacks in this thread. Returns whether
    /// this call made `target`'s request.
    pub fn forward_to<S: Scope, T: Backend<S>, W: BusWait>(
        &self,
        target: &StopSource<S, T>,
        wait: W,
    ) -> Result<bool, W::Error> {
        self.wait(wait)?;
        Ok(target.request_stop())
    }
}

// SAFETY: the two claims are the only side words; the GPU's is listed.
unsafe impl<B: Side> GpuSideLines for BusStopSource<B> {
    fn gpu_side_lines(&self) -> [Option<&SideLine>; 2] {
        [Some(&self.gpu_claim), None]
    }
}

impl<B: Side> Default for BusStopSource<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Side> fmt::Debug for BusStopSource<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BusStopSource")
            .field("requested_by_host", &self.requested_by_host())
            .field("requested_by_gpu", &self.requested_by_gpu())
            .finish()
    }
}
