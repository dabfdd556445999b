//! [`MultiGrid`]: one barrier for cooperative grids on several GPUs of one machine.

use core::time::Duration;

use sync_shared::layout::grid::GRID_LINE_WORDS;
use sync_shared::layout::multi_grid::{inbox_line, RELEASE_LINE, VERDICT_WORD};
use sync_shared::{Backend, Device, Ordering, System};

use crate::block_barrier::{sync_block, sync_block_any};
use crate::geometry::{block_count, thread_in_block};
use crate::gpu::{GlobalTime, Gpu};
use crate::ptx_atomics::PtxScope;

/// How long [`MultiGrid::sync`] waits for the other GPUs before it panics (a block that
/// does not complete its GPU's arrival waits up to twice that for the verdict).
pub const MULTI_GRID_PATIENCE: Duration = Duration::from_secs(10);

/// Why a [`MultiGrid::sync_for`] returned without completing the phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiGridError {
    /// Some GPU did not arrive within the timeout (its kernel ended, trapped, or is
    /// late): this GPU gave up, and the barrier is broken for the rest of the launch.
    TimedOut,
    /// An earlier phase failed; every later phase fails at once.
    Broken,
}

/// The cooperative grids of one launch on several GPUs of a machine, with their
/// barrier. A kernel gets one only as its first parameter, filled in by the host's
/// `scoped_sync::cuda::MultiGrid::launch`, which launches every GPU's grid
/// cooperatively (every block of each co-resident) after checking that every GPU
/// reaches every other's memory.
///
/// [`sync`](Self::sync) runs in two levels. On each GPU the blocks meet at their
/// hardware barrier and thread 0 adds the block's arrival to the GPU's counter
/// (release, device scope), as [`Grid`](crate::Grid) does with one counter. The block
/// whose arrival completes its GPU then takes one system-scope `acq_rel` fence and
/// writes the phase into its own slot of every other GPU's inbox (relaxed stores over
/// NVLink or PCIe, issued back to back), and polls its own GPU's inbox (local memory)
/// until every other GPU's slot shows the phase; one more `acq_rel` fence, it settles
/// the GPU's verdict (a compare-and-swap), and writes the phase into its GPU's release
/// word, which that GPU's other blocks poll.
/// Every inbox slot and the release word is a 128-byte line of its own. (The design of
/// NCCL's device-API barrier in its unicast form, an epoch inbox per peer: one fence,
/// then relaxed stores to each peer, local polling.)
///
/// Memory ordering: a chain of release/acquire patterns, each at a scope that holds
/// both its threads: a block's release add and the completing block's read of the
/// counter (device scope); that block's `fence.acq_rel.sys` and its stores, and the
/// other GPU's completing block's relaxed reads of its inbox and its own
/// `fence.acq_rel.sys`; that fence and the verdict's compare-and-swap, and the other
/// blocks' relaxed read of the verdict plus `fence.acquire.gpu` (or their own swap). Fences are
/// cumulative, so every write made by any thread of any GPU before its `sync` is
/// visible to every thread of every GPU after it. (Generic-proxy writes: data written
/// by the tensor-memory accelerator needs its own proxy fence first.)
///
/// A GPU that never arrives (its kernel ended early or trapped) cannot hang the
/// others: every wait has a deadline ([`sync_for`](Self::sync_for)), after which every
/// block of the waiting GPU returns [`MultiGridError::TimedOut`] (one verdict per GPU
/// and phase) and the barrier stays broken on that GPU for the rest of the launch. A
/// GPU whose peers had already seen its arrival may pass that phase and fail at the
/// next.
///
/// Not built yet (see docs/multi-gpu.md): a split arrive/wait, host threads as parties,
/// the two-level local arrival of large grids.
///
/// Counterpart: `cooperative_groups::this_multi_grid().sync()` (removed in CUDA 12);
/// NCCL's `ncclLsaBarrierSession` for the whole grid.
///
/// ```ignore
/// #[no_mangle]
/// pub unsafe extern "gpu-kernel" fn step(mut gpus: MultiGrid, halo: *mut f32) {
///     for _ in 0..100 {
///         // ... write this GPU's halo into the neighbour's memory ...
///         gpus.sync();
///     }
/// }
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct MultiGrid {
    /// This GPU's arrival counter: block arrivals since the launch began, zeroed by the
    /// launch.
    arrivals: *mut u32,
    /// This GPU's exchange lines (`layout::multi_grid::words`), zeroed by the launch:
    /// the release line, then one inbox line per GPU.
    exchange: *mut u32,
    /// Every GPU's exchange lines, by rank, as this GPU reaches them (peer addresses).
    exchanges: *const *mut u32,
    /// This GPU's rank in the launch.
    rank: u32,
    /// GPUs in the launch.
    ranks: u32,
    /// Phases this thread has completed.
    phase: u32,
    /// Nonzero once a phase failed.
    broken: u32,
}

impl MultiGrid {
    /// Waits until every thread of every GPU's grid has called `sync` as many times as
    /// this one. Everything written by any thread of any GPU before its call is visible
    /// to every thread of every GPU after it. Collective: every thread of every GPU's
    /// grid must call it.
    ///
    /// # Panics
    ///
    /// If some GPU does not arrive within [`MULTI_GRID_PATIENCE`] (10 s), or an earlier
    /// phase failed. A panic on the GPU is a `trap`, which ends the kernel and loses the
    /// CUDA context of its GPU: use [`sync_for`](Self::sync_for) to handle a dead peer
    /// and keep the context.
    #[inline]
    pub fn sync(&mut self) {
        if let Err(error) = self.sync_for(MULTI_GRID_PATIENCE) {
            panic!("MultiGrid::sync: {error:?}");
        }
    }

    /// [`sync`](Self::sync), waiting about `timeout` for the other GPUs (a block that
    /// does not complete its GPU waits up to twice that for the verdict); on
    /// [`MultiGridError::TimedOut`] every thread of this GPU returns the error, and
    /// every later call on this GPU returns [`MultiGridError::Broken`]. Other GPUs may
    /// complete the failed phase (they saw this GPU arrive) and time out at the next.
    pub fn sync_for(&mut self, timeout: Duration) -> Result<(), MultiGridError> {
        if self.broken != 0 {
            return Err(MultiGridError::Broken);
        }
        self.phase = self.phase.wrapping_add(1);
        sync_block();
        let mine = thread_in_block() == 0 && self.arrive(timeout);
        if sync_block_any(mine) {
            self.broken = 1;
            return Err(MultiGridError::TimedOut);
        }
        Ok(())
    }

    /// Thread 0's part of a phase, between the block's two barriers: whether the phase
    /// failed.
    ///
    /// The completing block waits for the other GPUs until `timeout` from now; the
    /// GPU's other blocks wait for its release a timeout longer. Whoever decides first
    /// settles the GPU's verdict for the phase ([`settle`]): the completing block after
    /// its exchange, or a block that gave up waiting (then: failed). So every block of
    /// a GPU returns the same verdict, even when the completing block arrived late.
    fn arrive(&self, timeout: Duration) -> bool {
        let deadline = <Gpu as Backend<System>>::after(<Gpu as Backend<System>>::now(), timeout);
        let release = self.line(self.exchange, RELEASE_LINE);
        let verdict = release.wrapping_add(VERDICT_WORD);
        let target = self.phase.wrapping_mul(block_count());
        // SAFETY: the launch passes a live, zeroed device word for this GPU's grid,
        // which only these atomics touch.
        let before = unsafe { Device::fetch_add_u32(self.arrivals, 1, Ordering::Release) };
        if before.wrapping_add(1) == target {
            let failed = self.exchange_with_peers(deadline);
            let failed = settle(verdict, self.phase, failed);
            // SAFETY: this GPU's release word, written by its completing block only.
            unsafe { Device::store_u32(release, self.phase, Ordering::Release) };
            failed
        } else {
            // Once the release shows, the verdict is settled and `settle` reads it;
            // past the deadline this block proposes a failure itself.
            let _released = wait_for::<Device>(
                release,
                self.phase,
                <Gpu as Backend<System>>::after(deadline, timeout),
            );
            settle(verdict, self.phase, true)
        }
    }

    /// The completing block's exchange: its GPU's phase to every peer, then every
    /// peer's from the inbox. Whether some peer did not arrive by `deadline`.
    ///
    /// Memory ordering: the first `acq_rel` fence acquires this GPU's arrivals (the
    /// add's reply read the counter's chain of release adds) and releases them with the
    /// relaxed stores to the peers; the second acquires the peers' (their stores, read
    /// by the polls) and releases everything to this GPU's blocks through the verdict
    /// and the release word.
    fn exchange_with_peers(&self, deadline: GlobalTime) -> bool {
        System::fence(Ordering::AcqRel);
        for peer in 0..self.ranks {
            if peer != self.rank {
                // SAFETY: the launch passes `ranks` exchange addresses this GPU reaches;
                // slot `rank` of each is written by this GPU only.
                unsafe {
                    let exchange = *self.exchanges.add(peer as usize);
                    let slot = self.line(exchange, inbox_line(self.rank));
                    System::store_u32(slot, self.phase, Ordering::Relaxed);
                }
            }
        }
        let mut failed = false;
        for peer in 0..self.ranks {
            if peer != self.rank {
                let slot = self.line(self.exchange, inbox_line(peer));
                if !wait_for::<System>(slot, self.phase, deadline) {
                    failed = true;
                    break;
                }
            }
        }
        System::fence(Ordering::AcqRel);
        failed
    }

    /// The first word of line `line` of the exchange at `base`.
    #[inline(always)]
    fn line(&self, base: *mut u32, line: usize) -> *mut u32 {
        base.wrapping_add(line * GRID_LINE_WORDS)
    }

    /// Phases this thread has completed.
    pub fn phase(&self) -> u32 {
        self.phase
    }

    /// This GPU's rank in the launch.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// GPUs in the launch.
    pub fn ranks(&self) -> u32 {
        self.ranks
    }
}

/// Polls `word` with relaxed loads at scope `S` until it reaches `target` (wrapping
/// comparison, as in `Grid`), or `deadline` (`%globaltimer`) passes: whether it
/// reached it.
#[inline(always)]
fn wait_for<S: PtxScope>(word: *mut u32, target: u32, deadline: GlobalTime) -> bool {
    loop {
        // SAFETY: a live barrier word of the launch (see the callers).
        let value = unsafe { S::load_u32(word, Ordering::Relaxed) };
        if (value.wrapping_sub(target) as i32) >= 0 {
            return true;
        }
        if <Gpu as Backend<System>>::now() > deadline {
            return false;
        }
    }
}

/// Settles the verdict of phase `phase` in `word` (the phase's low 31 bits, shifted
/// left, plus 1 if it failed): the first proposal of the phase wins; returns whether
/// the settled verdict is "failed".
///
/// Memory ordering: `acq_rel` compare-and-swaps: a block that settles after the
/// completing block acquires what that block released (its fence, then its swap).
fn settle(word: *mut u32, phase: u32, failed: bool) -> bool {
    let tag = phase & (u32::MAX >> 1);
    let proposal = tag << 1 | u32::from(failed);
    // SAFETY: this GPU's verdict word, zeroed by the launch, touched only here.
    let mut current = unsafe { Device::load_u32(word, Ordering::Relaxed) };
    loop {
        if current >> 1 == tag {
            // Already settled: acquire it as the swap would have.
            Device::fence(Ordering::Acquire);
            return current & 1 != 0;
        }
        // SAFETY: as above.
        let seen = unsafe { Device::cas_u32(word, current, proposal, Ordering::AcqRel) };
        if seen == current {
            return failed;
        }
        current = seen;
    }
}
