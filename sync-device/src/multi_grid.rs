//! [`MultiGrid`]: one barrier for cooperative grids on several GPUs of one machine.

use core::time::Duration;

use sync_shared::layout::multi_grid::{
    BROKEN_WORD, COMPLETION_WORDS, MAX_RANKS, POISONED, RELAY_WORD,
};
use sync_shared::{Backend, Device, Ordering, System};

use crate::block_barrier::{sync_block, sync_block_any};
use crate::geometry::{block_count, block_index, thread_in_block};
use crate::gpu::{GlobalTime, Gpu};
use crate::ptx_atomics::PtxScope;

/// How long [`MultiGrid::sync`] and [`MultiGrid::wait`] wait for the other GPUs before
/// they panic.
pub const MULTI_GRID_PATIENCE: Duration = Duration::from_secs(10);

/// Polls of the counter between looks at the clock (`%globaltimer` costs about as much
/// as a poll, and a deadline need not be met to the nanosecond).
const POLLS_PER_CLOCK_READ: u32 = 32;

/// Why a [`MultiGrid::sync_for`] or [`MultiGrid::wait_for`] returned without completing
/// the phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiGridError {
    /// Some GPU did not arrive within the timeout (its kernel ended, trapped, or is
    /// late), and this block was the first of its GPU to give up: it broke the barrier
    /// on every GPU.
    TimedOut,
    /// The barrier is broken: a block of some GPU timed out, a thread called
    /// [`MultiGrid::abort`], or an earlier phase of this block failed. Every later wait
    /// of every GPU fails at once.
    Broken,
}

/// A block's arrival at a phase of a [`MultiGrid`], to be waited for
/// ([`MultiGrid::wait`]) once the block has done the work that need not wait.
#[must_use = "a MultiGrid arrival must be waited for before the block arrives again"]
#[derive(Debug)]
pub struct MultiGridToken {
    phase: u64,
}

/// The cooperative grids of one launch on several GPUs of a machine, with their
/// barrier. A kernel gets one only as its first parameter, filled in by the host's
/// `scoped_sync::cuda::MultiGrid::launch`, which launches every GPU's grid
/// cooperatively (every block of each co-resident, the same shape on every GPU) after
/// checking that every GPU reaches every other's memory with native atomics.
///
/// Each GPU has one arrival counter (a 128-byte line) in its own memory. A phase:
/// the block meets at its hardware barrier; thread 0 takes one system-scope release
/// fence and adds the block's arrival to the counter of every GPU (relaxed
/// system-scope adds, the peers' over NVLink, issued back to back without waiting for
/// replies); then it polls its own GPU's counter (local memory) until every block of
/// every GPU has arrived, and takes an acquire fence; the block meets again.
///
/// Why this design: on an H100 one thread's system-scope release fence costs about
/// 1.5 µs whatever is outstanding (an acquire fence 0.03 µs), and a relaxed store
/// reaches the peer GPU in about 0.8 µs over NVLink. Every block fences for its own
/// writes at the same time as the others, so one fence and one NVLink crossing lie on
/// the critical path. A two-level design (gather on each GPU, then the completing
/// block fences and writes the peers' inboxes) puts a device-scope gather, the fence,
/// the crossing, a second fence and a device-scope release in a row: 5.5 µs per phase
/// in CUDA C++ where this one takes 3.7 µs (two H100s, 132 blocks per GPU;
/// `baselines/multi_gpu_baselines.cu`, docs/multi-gpu.md).
/// NCCL's device-API barrier (`ncclLsaBarrierSession`) exchanges per-peer epochs
/// instead, with one fence per exchange; this counter needs native peer atomics.
///
/// Memory ordering: each block's arrival is a release pattern (the fence, then its
/// add) at system scope, cumulative over what the block's threads wrote before the
/// block barrier; the counter is read-modify-written only, so a poll that reads the
/// last arrival's add reads after every add (observation order runs through atomic
/// operations), and the relaxed poll plus the acquire fence make an acquire pattern
/// that every block's release pattern synchronizes with. So every write made by any
/// thread of any GPU before its `sync` is visible to every thread of every GPU after
/// it. (Data written by the tensor-memory accelerator needs its own proxy fence
/// first.)
///
/// A GPU that never arrives (its kernel ended early or trapped) cannot hang the
/// others: every wait has a deadline ([`sync_for`](Self::sync_for),
/// [`wait_for`](Self::wait_for)). The first block of a GPU to give up marks its GPU's
/// counter broken by a compare-and-swap from the count it last saw, so that no block
/// of that GPU passes the phase it failed (a poll that would see the phase complete
/// sees the mark); then it marks every other GPU's counter, whose waits end with
/// [`MultiGridError::Broken`] (a GPU that already saw the phase complete passes it
/// and fails at the next). [`abort`](Self::abort) marks them all from any thread.
///
/// Host threads may take part too (`cuda::MultiGrid::with_host_parties`): each phase
/// then also waits until every host party has added its arrival to a word in mapped
/// host memory, which block 0 of each GPU reads once the GPUs' counter is complete and
/// relays to the GPU's other blocks through a word in the GPU's memory; block 0 then
/// publishes the completed phase to the host with a system-scope release.
///
/// Not built (see docs/multi-gpu.md): the two-level local arrival of grids beyond
/// about 1500 blocks per GPU.
///
/// Counterpart: `cooperative_groups::this_multi_grid().sync()` (removed in CUDA 12);
/// NCCL's `ncclLsaBarrierSession` for the whole grid with release/acquire order.
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
    /// Every GPU's arrival counter (`layout::multi_grid`), by rank, as this GPU
    /// reaches it (peer addresses; the first `ranks`): arrivals of every block of every
    /// GPU since the launch, plus [`POISONED`] once broken. Zeroed by the launch.
    counters: [*mut u64; MAX_RANKS],
    /// Phases this thread has arrived at.
    phase: u64,
    /// This GPU's rank in the launch.
    rank: u32,
    /// GPUs in the launch.
    ranks: u32,
    /// Nonzero once a phase failed.
    broken: u32,
    /// Nonzero between an [`arrive`](Self::arrive) and its wait.
    arrived: u32,
    /// Host parties' arrivals (mapped host memory, added to by host threads only),
    /// plus [`POISONED`] once a host party broke the barrier; unused without host
    /// parties.
    host_arrivals: *const u64,
    /// Per GPU, the last phase it completed (mapped host memory, one line per GPU,
    /// written by block 0 of that GPU), which host parties wait for; unused without
    /// host parties.
    completions: *mut u64,
    /// Host threads taking part in every phase (`cuda::MultiGrid::with_host_parties`).
    host_parties: u32,
    /// Padding to the host's layout.
    _reserved: u32,
}

impl MultiGrid {
    /// Waits until every thread of every GPU's grid has called `sync` as many times as
    /// this one. Everything written by any thread of any GPU before its call is visible
    /// to every thread of every GPU after it. Collective: every thread of every GPU's
    /// grid must call it.
    ///
    /// # Panics
    ///
    /// If some GPU does not arrive within [`MULTI_GRID_PATIENCE`] (10 s), or the
    /// barrier is broken. A panic on the GPU is a `trap`, which ends the kernel and
    /// loses the CUDA context of its GPU: use [`sync_for`](Self::sync_for) to handle a
    /// dead peer and keep the context.
    #[inline]
    pub fn sync(&mut self) {
        if let Err(error) = self.sync_for(MULTI_GRID_PATIENCE) {
            panic!("MultiGrid::sync: {error:?}");
        }
    }

    /// [`sync`](Self::sync), waiting at most about `timeout` for the other GPUs; every
    /// thread of the block returns the same result.
    ///
    /// # Errors
    ///
    /// [`MultiGridError::TimedOut`] in the block that gave up first on its GPU,
    /// [`MultiGridError::Broken`] in every other block whose wait the failure ended
    /// (see [`MultiGridError`]).
    #[inline]
    pub fn sync_for(&mut self, timeout: Duration) -> Result<(), MultiGridError> {
        let token = self.arrive();
        self.wait_for(token, timeout)
    }

    /// The block's arrival at the next phase, without waiting: what the block's threads
    /// wrote before it is released to every thread of every GPU that completes the
    /// phase. Wait for the phase with [`wait`](Self::wait) or
    /// [`wait_for`](Self::wait_for) before arriving again; work in between that does
    /// not need the other GPUs' writes overlaps the exchange. Collective: every thread
    /// of the block calls it.
    ///
    /// Counterpart: `std::barrier::arrive` (C++20) for a whole grid.
    ///
    /// # Panics
    ///
    /// If the block arrived and has not waited since.
    #[inline]
    pub fn arrive(&mut self) -> MultiGridToken {
        assert!(
            self.arrived == 0,
            "MultiGrid::arrive: the block arrived and has not waited since"
        );
        self.arrived = 1;
        self.phase += 1;
        sync_block();
        if thread_in_block() == 0 && self.broken == 0 {
            self.add_arrival();
        }
        MultiGridToken { phase: self.phase }
    }

    /// Waits for the phase of `token`, at most [`MULTI_GRID_PATIENCE`]. Collective:
    /// every thread of the block calls it.
    ///
    /// # Panics
    ///
    /// As [`sync`](Self::sync), or if `token` is not the block's last arrival.
    #[inline]
    pub fn wait(&mut self, token: MultiGridToken) {
        if let Err(error) = self.wait_for(token, MULTI_GRID_PATIENCE) {
            panic!("MultiGrid::wait: {error:?}");
        }
    }

    /// Waits for the phase of `token`, at most about `timeout`; every thread of the
    /// block returns the same result. Collective: every thread of the block calls it.
    ///
    /// # Errors
    ///
    /// As [`sync_for`](Self::sync_for).
    ///
    /// # Panics
    ///
    /// If `token` is not the block's last arrival.
    // Inlined, as is everything it calls on the way that succeeds: a call that takes
    // the barrier by reference kept it in local memory, which measured 4.2 µs per phase
    // instead of 3.9 at 132 × 1024 threads per GPU (two H100s).
    #[inline]
    pub fn wait_for(
        &mut self,
        token: MultiGridToken,
        timeout: Duration,
    ) -> Result<(), MultiGridError> {
        assert!(
            self.arrived != 0 && token.phase == self.phase,
            "MultiGrid::wait: not the block's last arrival"
        );
        self.arrived = 0;
        if self.broken != 0 {
            return Err(MultiGridError::Broken);
        }
        let verdict = if thread_in_block() == 0 {
            self.await_phase(token.phase, timeout)
        } else {
            Ok(())
        };
        // One block-wide vote in the common case; a second only on failure, to tell
        // every thread which failure thread 0 saw.
        if sync_block_any(verdict.is_err()) {
            self.broken = 1;
            let timed_out = sync_block_any(verdict == Err(MultiGridError::TimedOut));
            return Err(if timed_out {
                MultiGridError::TimedOut
            } else {
                MultiGridError::Broken
            });
        }
        Ok(())
    }

    /// Breaks the barrier on every GPU: every wait in progress or to come, on every GPU,
    /// returns [`MultiGridError::Broken`] (waits that already saw their phase complete
    /// return normally). Any thread may call it, for example on finding bad input,
    /// so that the other GPUs stop instead of waiting for a phase that will not come.
    ///
    /// Counterpart: NCCL's abort flag on its device barrier's waits.
    #[inline]
    pub fn abort(&self) {
        for counter in self.live_counters() {
            // SAFETY: the launch passes `ranks` live counter addresses this GPU reaches.
            unsafe { System::fetch_or_u64(counter, POISONED, Ordering::Relaxed) };
        }
        tell_host_parties_broken(self.completion());
    }

    /// Thread 0's arrival: the release fence, then one add to every GPU's counter.
    #[inline(always)]
    fn add_arrival(&self) {
        System::fence(Ordering::Release);
        for counter in self.live_counters() {
            // SAFETY: as in `abort`.
            unsafe { System::fetch_add_u64(counter, 1, Ordering::Relaxed) };
        }
    }

    /// Thread 0's wait: polls this GPU's counter until every block of every GPU has
    /// arrived at `phase`, the barrier is broken, or `timeout` passes.
    #[inline(always)]
    fn await_phase(&self, phase: u64, timeout: Duration) -> Result<(), MultiGridError> {
        let parties = u64::from(block_count()) * u64::from(self.ranks);
        let target = phase * parties;
        let mut deadline: Option<GlobalTime> = None;
        let mut polls = 0u32;
        loop {
            // SAFETY: this GPU's live counter.
            let seen = unsafe { System::load_u64(self.counter_of(self.rank), Ordering::Relaxed) };
            if seen & POISONED != 0 {
                return Err(MultiGridError::Broken);
            }
            if seen >= target && self.host_arrived(phase)? {
                System::fence(Ordering::Acquire);
                self.publish_completion(phase);
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            if polls % POLLS_PER_CLOCK_READ == 0 {
                let now = <Gpu as Backend<System>>::now();
                let deadline =
                    *deadline.get_or_insert_with(|| <Gpu as Backend<System>>::after(now, timeout));
                // Past the deadline, one more look at the host's word (the GPUs may be
                // complete and a host party just arrived) before giving up.
                if now > deadline
                    && !(seen >= target && self.host_arrived(phase)?)
                    && give_up(
                        self.counters,
                        self.ranks,
                        self.rank,
                        seen,
                        self.completion(),
                    )
                {
                    return Err(MultiGridError::TimedOut);
                }
            }
        }
    }

    /// Whether every host party has arrived at `phase` (always, without host parties);
    /// `Broken` if a host party broke the barrier. Block 0 reads the host's word (a
    /// PCIe round trip, made only once the GPUs' counter is complete) and, once it
    /// shows the phase, acquires and relays it to the GPU's other blocks through the
    /// relay word in the GPU's memory, which they poll instead.
    #[inline(always)]
    fn host_arrived(&self, phase: u64) -> Result<bool, MultiGridError> {
        if self.host_parties == 0 {
            return Ok(true);
        }
        let relay = self.counter_of(self.rank).wrapping_add(RELAY_WORD);
        if block_index() != 0 {
            // SAFETY: this GPU's live relay word, stored by its block 0 only.
            return Ok(unsafe { Device::load_u64(relay, Ordering::Relaxed) } >= phase);
        }
        // SAFETY: the launch passes a live mapped word when there are host parties.
        let seen = unsafe { System::load_u64(self.host_arrivals.cast_mut(), Ordering::Relaxed) };
        if seen & POISONED != 0 {
            return Err(MultiGridError::Broken);
        }
        if seen < phase * u64::from(self.host_parties) {
            return Ok(false);
        }
        System::fence(Ordering::Acquire);
        // SAFETY: as above.
        unsafe { Device::store_u64(relay, phase, Ordering::Release) };
        Ok(true)
    }

    /// With host parties, block 0 tells them that this GPU completed `phase`: a
    /// system-scope release (what every thread of every GPU wrote before the phase,
    /// acquired just before, goes with it), then a store into this GPU's completion
    /// word.
    #[inline(always)]
    fn publish_completion(&self, phase: u64) {
        if self.host_parties != 0 && block_index() == 0 {
            System::fence(Ordering::Release);
            // SAFETY: this GPU's live completion word (mapped), stored by its block 0
            // only.
            unsafe { System::store_u64(self.completion(), phase, Ordering::Relaxed) };
        }
    }

    /// This GPU's completion word (null without host parties).
    #[inline(always)]
    fn completion(&self) -> *mut u64 {
        if self.host_parties == 0 {
            core::ptr::null_mut()
        } else {
            self.completions
                .wrapping_add(self.rank as usize * COMPLETION_WORDS)
        }
    }

    /// GPU `rank`'s counter as this GPU reaches it. Chosen by constant indices, not
    /// `counters[rank]`, so that the barrier stays in registers: a dynamic index, like
    /// a reference to it passed to a function that is not inlined, keeps it in local
    /// memory.
    #[inline(always)]
    fn counter_of(&self, rank: u32) -> *mut u64 {
        let mut found = core::ptr::null_mut();
        for (index, &counter) in self.counters.iter().enumerate() {
            if index as u32 == rank {
                found = counter;
            }
        }
        found
    }

    /// The counters of the launch's GPUs (the first `ranks`), by constant indices.
    #[inline(always)]
    fn live_counters(&self) -> impl Iterator<Item = *mut u64> + '_ {
        self.counters.iter().take(self.ranks as usize).copied()
    }

    /// Phases this thread has arrived at.
    pub fn phase(&self) -> u64 {
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

/// Marks GPU `rank`'s counter broken if it still holds `seen` (the phase is not
/// complete), then every other GPU's, and GPU `rank`'s broken word for the host parties
/// (`completion` is null without): whether this call broke the barrier. A failed
/// swap means a block arrived or another block gave up: poll again. (The counters by
/// value, not `&MultiGrid`: a reference would keep the caller's barrier in local
/// memory.)
#[cold]
#[inline(never)]
fn give_up(
    counters: [*mut u64; MAX_RANKS],
    ranks: u32,
    rank: u32,
    seen: u64,
    completion: *mut u64,
) -> bool {
    let live = &counters[..ranks as usize];
    let own = live[rank as usize];
    // SAFETY: this GPU's live counter.
    let before = unsafe { System::cas_u64(own, seen, seen | POISONED, Ordering::Relaxed) };
    if before != seen {
        return false;
    }
    for &counter in live.iter().filter(|&&counter| counter != own) {
        // SAFETY: the launch passes `ranks` live counter addresses this GPU reaches.
        unsafe { System::fetch_or_u64(counter, POISONED, Ordering::Relaxed) };
    }
    tell_host_parties_broken(completion);
    true
}

/// Marks the barrier broken in this GPU's completion line (`completion`; null without
/// host parties), which the host parties' waits watch.
fn tell_host_parties_broken(completion: *mut u64) {
    if !completion.is_null() {
        // SAFETY: this GPU's live completion line in mapped host memory.
        unsafe { System::store_u64(completion.wrapping_add(BROKEN_WORD), 1, Ordering::Relaxed) };
    }
}
