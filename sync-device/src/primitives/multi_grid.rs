//! [`MultiGrid`]: one barrier for cooperative grids on several GPUs of one machine.

use core::time::Duration;

use sync_shared::layout::multi_grid::{
    BROKEN_FROM_WORD, COMPLETION_WORDS, GATHER_WORD, GIVE_UP_WORD, MAX_RANKS, POISONED, RELAY_WORD,
};
use sync_shared::{Backend, Device, Ordering, System};

use super::multi_grid_crossing::{
    add_to_counter, compare_swap_counter, load_counter, mark_counter,
};
use crate::backend::gpu::{GlobalTime, Gpu};
use crate::primitives::block_barrier::{sync_block, sync_block_any};
use crate::ptx::atomics::PtxScope;
use crate::ptx::geometry::{
    block_count, block_index, block_size, is_block_leader, thread_in_block,
};
use crate::ptx::global_atomics;
use crate::ptx::warp::{self, broadcast, broadcast_u64, lane, WARP_LANES};

/// How long [`MultiGrid::sync`] and [`MultiGrid::wait`] wait for the other GPUs before
/// they panic.
pub const MULTI_GRID_PATIENCE: Duration = Duration::from_secs(10);

/// How long a wait polls before it also reads its host's give-up word at each look at
/// the clock (a barrier joined across processes): a read of host memory is a PCIe
/// round trip, which a phase that completes in microseconds must not pay, and a dead
/// process is to be noticed within a second, not a microsecond.
const HOST_GIVE_UP_AFTER: Duration = Duration::from_millis(1);

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
    /// The barrier is broken from this phase on: a block of some GPU timed out, a
    /// thread or host party called abort, or an earlier phase of this block failed.
    /// Every later wait of every GPU fails at once.
    Broken,
}

/// A block's arrival at a phase of a [`MultiGrid`], to be waited for
/// ([`MultiGrid::wait`]) once the block has done the work that need not wait.
#[must_use = "a MultiGrid arrival must be waited for before the block arrives again"]
#[derive(Debug)]
pub struct MultiGridToken {
    phase: u64,
}

#[cfg(feature = "c-abi")]
impl MultiGridToken {
    /// The token of an arrival at `phase` (the C ABI passes tokens as phases).
    pub(crate) const fn from_phase(phase: u64) -> Self {
        Self { phase }
    }

    /// The phase the arrival belongs to.
    pub(crate) const fn phase(&self) -> u64 {
        self.phase
    }
}

/// The cooperative grids of one launch on several GPUs of a machine, with their
/// barrier. A kernel gets one only as its first parameter, filled in by the host's
/// `scoped_sync::cuda::MultiGrid::launch`, which launches every GPU's grid
/// cooperatively (every block of each co-resident, the same shape on every GPU) after
/// checking that every GPU reaches every other's memory with native atomics.
///
/// Each GPU has, in its own memory, one arrival counter and one gather word (128-byte
/// lines of their own). A phase: the block meets at its hardware barrier; thread 0 adds
/// the block's arrival to its GPU's gather word (a device-scope release add); the block
/// whose add completes the GPU's count acquires the others', takes one system-scope
/// release fence and adds the GPU's block count to the counter of every GPU (relaxed
/// system-scope reductions, the peers' over NVLink); every block's first warp polls its
/// own GPU's counter (local memory; the lanes go by lane 0's read, so the warp meets
/// the block again whole) until every GPU's blocks are in, and takes an acquire fence;
/// the block meets again.
///
/// Why this design: a system-scope release fence is what publishes a block's writes to
/// another GPU, and it is the dearest step, dearer still when many blocks take it at
/// once. Here the blocks fence at device scope, and one block per GPU and phase fences
/// at system scope, for all of its GPU's blocks (the fence is cumulative over what it
/// acquired); the crossing is one reduction per GPU pair, and the poll stays in local
/// memory. NCCL's device-API barrier (`ncclLsaBarrierSession`) exchanges per-peer
/// epochs between blocks of the same index instead, each block with its own system
/// fence; the counter needs native peer atomics. Figures, and the same design beside
/// the classic two-level barrier in CUDA C++: docs/multi-gpu.md and
/// docs/measurements.md, "Design figures behind the rustdoc".
///
/// Memory ordering: a block's arrival is a release at device scope (the add on the
/// gather word), cumulative over what its threads wrote before the block barrier; the
/// completing block reads every earlier add through its own (observation order runs
/// through atomic operations) and acquires them with a device-scope fence, so they
/// precede its system-scope release fence, which is cumulative; its reductions to the
/// counters make the release pattern. The counters are read-modify-written only, so a
/// poll that reads a value with every GPU's forward in it reads after each of them, and
/// the relaxed poll plus the acquire fence make an acquire pattern that every GPU's
/// release pattern synchronizes with. So every write made by any thread of any GPU
/// before its `sync` is visible to every thread of every GPU after it. (Data written by
/// the tensor-memory accelerator needs its own proxy fence first.)
///
/// A GPU that never arrives (its kernel ended early or trapped) cannot hang the
/// others: every wait has a deadline ([`sync_for`](Self::sync_for),
/// [`wait_for`](Self::wait_for)). Breaking the barrier names the first phase that
/// fails: the phase a block gave up on, or for [`abort`](Self::abort) the caller's next
/// phase (its current one if it arrived and has not waited). The breaker marks every
/// GPU's counter (one bit, so that every poll sees it at once), then lowers the
/// counter line's broken-from word to that phase. A wait that sees the mark reads the
/// word: its phase fails with [`MultiGridError::Broken`] from the named phase on, and
/// completes normally before it, even if the wait sees the completion only after the
/// break (a phase the aborting thread saw complete completes for every thread, on every
/// GPU). The first block of a GPU to give up marks its GPU's counter by a
/// compare-and-swap from the count it last saw, so that it gives up only on a phase no
/// arrival moved since. (Two breakers naming different phases at once may leave a phase
/// between them complete for some waits and broken for others.)

/// Host threads may take part too (`cuda::MultiGrid::with_host_parties`): each phase
/// then also waits until every host party has added its arrival to a word in mapped
/// host memory, which block 0 of each GPU reads once the GPUs' counter is complete and
/// relays to the GPU's other blocks through a word in the GPU's memory; block 0 then
/// publishes the completed phase to the host with a system-scope release.
///
/// Across processes, one GPU each (`cuda::MultiGrid::join`), the kernels are the same;
/// each process maps the others' counters, and its host tells its waits to give up
/// through a word of mapped host memory when another process dies or aborts: they read
/// it when they look at the clock once a wait has lasted a millisecond, and give up as
/// at their deadline. With host parties across processes
/// (`cuda::MultiGrid::join_with_host_parties`) the host words are host memory every
/// process maps, and that word lies on their arrival line.
///
/// Where the GPUs cannot load from or store to each other's memory (other machines),
/// `cuda::MultiGrid::join_nvshmem_signals` puts the counters in NVSHMEM's symmetric
/// heap and the completing block crosses with NVSHMEM's signal add, one per PE, instead
/// of its reductions (the breaks with NVSHMEM's atomics); the rest is as above. Such a
/// kernel comes from a crate built with sync-device's `nvshmem` feature, loaded by
/// `cuda::Nvshmem::load`. Data put with NVSHMEM (not stored through a peer address)
/// travels with a phase once the putting thread called [`nvshmem::quiet`](crate::nvshmem)
/// before its `sync`.
///
/// Not built (see docs/multi-gpu.md): the two-level local arrival of grids beyond
/// about 1500 blocks per GPU.
///
/// Counterpart: `cooperative_groups::this_multi_grid().sync()` (removed in CUDA 12);
/// NCCL's `ncclLsaBarrierSession` for the whole grid with release/acquire order.
///
/// ```ignore
/// #[no_mangle]
/// pub unsafe extern "gpu-kernel" fn exchange(mut gpus: MultiGrid, halo: *mut f32) {
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
    /// plus [`POISONED`] once a host party broke the barrier; the line's
    /// [`GIVE_UP_WORD`] is set once the process group of a barrier joined across
    /// processes failed (a wait then gives up at its next look at the clock, as at its
    /// deadline). Without host parties: null, or for a barrier joined across processes
    /// that line alone.
    host_arrivals: *const u64,
    /// Per GPU, the last phase it completed (mapped host memory, one line per GPU,
    /// written by block 0 of that GPU), which host parties wait for; unused without
    /// host parties.
    completions: *mut u64,
    /// Host threads taking part in every phase (`cuda::MultiGrid::with_host_parties`).
    host_parties: u32,
    /// How the completing block reaches the other GPUs' counters
    /// (`layout::multi_grid::CROSSING_*`): their peer addresses, or NVSHMEM's
    /// operations on this PE's copy in the symmetric heap (every `counters` entry).
    crossing: u32,
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
        self.phase = self.phase.wrapping_add(1);
        sync_block();
        if is_block_leader() && self.broken == 0 {
            self.add_arrival(self.phase);
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
    // the barrier by reference kept it in local memory, which measured slower
    // (docs/measurements.md, `MultiGrid`).
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
        // The block's first warp waits, every lane on lane 0's reads, so that it meets
        // the rest of the block at the vote whole: a warp that thread 0 alone left for
        // the poll reached the vote split, which synccheck reports as divergent
        // threads at a block barrier.
        let verdict = if thread_in_block() < WARP_LANES {
            self.await_phase(token.phase, timeout)
        } else {
            Ok(())
        };
        // One block-wide vote in the common case; a second only on failure, to tell
        // every thread which failure the first warp saw.
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

    /// Breaks the barrier on every GPU from this thread's next phase on (its current
    /// phase if it arrived and has not waited): every wait for that phase or a later
    /// one, on every GPU and host party, fails with [`MultiGridError::Broken`]; waits
    /// for earlier phases complete normally. Any thread may call it, for example on
    /// finding bad input, so that the other GPUs stop instead of waiting for a phase
    /// that will not come.
    ///
    /// Counterpart: NCCL's abort flag on its device barrier's waits (which ends every
    /// wait in progress, completed or not).
    #[inline]
    pub fn abort(&self) {
        let first_failing = if self.arrived != 0 {
            self.phase
        } else {
            self.phase + 1
        };
        break_from(
            self.counters,
            self.ranks,
            self.crossing,
            first_failing,
            self.completion(),
        );
    }

    /// Thread 0's arrival at `phase`: a device-scope release add to this GPU's gather
    /// word; the block whose add completes the GPU's count for the phase acquires the
    /// others' arrivals, takes the one system-scope release fence of the GPU's phase,
    /// and adds the GPU's block count to every GPU's counter.
    #[inline(always)]
    fn add_arrival(&self, phase: u64) {
        let blocks = u64::from(block_count());
        let gather = self.counter_of(self.rank).wrapping_add(GATHER_WORD);
        // SAFETY: this GPU's live gather word (device memory), on its own line.
        let before = unsafe { global_atomics::fetch_add_release_gpu(gather, 1) };
        // Wrapping arithmetic in the per-phase path (counts stay far below 2^63): an
        // overflow check keeps more values live, and a kernel at 1024 threads a block
        // has 64 registers a thread.
        if before.wrapping_add(1) == phase.wrapping_mul(blocks) {
            Device::fence(Ordering::Acquire);
            System::fence(Ordering::Release);
            for (rank, counter) in (0..).zip(self.live_counters()) {
                // SAFETY: the launch passes `ranks` live counter addresses this GPU
                // reaches by `crossing` (device memory of the GPUs).
                unsafe { add_to_counter(self.crossing, counter, rank, blocks) };
            }
        }
    }

    /// The first warp's wait: polls this GPU's counter until every block of every GPU
    /// has arrived at `phase`, the barrier is broken from `phase` or earlier, or
    /// `timeout` passes. Every lane of the warp runs it and goes by lane 0's reads
    /// (the lanes load the same word: one memory request), so each branch is the same
    /// for the whole warp; read-modify-writes are lane 0's alone.
    #[inline(always)]
    fn await_phase(&self, phase: u64, timeout: Duration) -> Result<(), MultiGridError> {
        let lanes = warp_lanes();
        let parties = u64::from(block_count()).wrapping_mul(u64::from(self.ranks));
        let target = phase.wrapping_mul(parties);
        let own = self.counter_of(self.rank);
        let mut first_look: Option<GlobalTime> = None;
        let mut polls = 0u32;
        // The loop makes no call but `give_up`'s: every call in it costs registers (the
        // calling convention's), and a kernel at 1024 threads a block has 64.
        let outcome = loop {
            // Polls that only wait for the count: the fewer instructions a poll takes,
            // the sooner after the last arrival one reads it. A poisoned count passes
            // the comparison too; the clock is read every POLLS_PER_CLOCK_READ polls.
            let seen = loop {
                // SAFETY: this GPU's live counter, in its device memory.
                let seen =
                    broadcast_u64(lanes, unsafe { global_atomics::load_relaxed_sys(own) }, 0);
                polls = polls.wrapping_add(1);
                if seen >= target || polls % POLLS_PER_CLOCK_READ == 0 {
                    break seen;
                }
            };
            // The common case first, in as few instructions as possible between the
            // poll that sees the phase complete and the block's vote (each is latency
            // on every phase's critical path): complete, unbroken, no host parties.
            if seen >= target && seen & POISONED == 0 && self.host_parties == 0 {
                System::fence(Ordering::Acquire);
                return Ok(());
            }
            let spared = seen & POISONED == 0
                || match break_reaching(lanes, own, phase) {
                    Break::Reaches => break Outcome::Failed(MultiGridError::Broken),
                    Break::Pending => false,
                    Break::Spares => true,
                };
            if spared && seen & !POISONED >= target {
                match self.host_arrived(lanes, phase) {
                    HostParties::Arrived => break Outcome::Complete,
                    HostParties::Broke => break Outcome::HostPartiesBroke,
                    HostParties::NotYet => {}
                }
            }
            if polls % POLLS_PER_CLOCK_READ == 0 {
                let now = <Gpu as Backend<System>>::now();
                let first = *first_look.get_or_insert(now);
                // Lane 0's clock (or, once the wait is long, its host's give-up word)
                // and lane 0's swap decide for the warp.
                let long = now > <Gpu as Backend<System>>::after(first, HOST_GIVE_UP_AFTER);
                let expired = now > <Gpu as Backend<System>>::after(first, timeout)
                    || (long && self.host_gave_up());
                if broadcast(lanes, u32::from(expired), 0) != 0 {
                    let gave_up = lane() == 0
                        && give_up(
                            self.counters,
                            self.ranks,
                            self.rank,
                            self.crossing,
                            seen,
                            phase,
                            self.completion(),
                        );
                    if broadcast(lanes, u32::from(gave_up), 0) != 0 {
                        break Outcome::Failed(MultiGridError::TimedOut);
                    }
                }
            }
        };
        match outcome {
            Outcome::Complete => {
                System::fence(Ordering::Acquire);
                self.publish_completion(phase);
                Ok(())
            }
            Outcome::Failed(error) => Err(error),
            // Carried to every GPU's counter, so that this GPU's other blocks, which wait
            // on the relay, and the other GPUs stop at once.
            Outcome::HostPartiesBroke => {
                if lane() == 0 {
                    break_from(
                        self.counters,
                        self.ranks,
                        self.crossing,
                        phase,
                        self.completion(),
                    );
                }
                // The lanes meet again before the block's vote, as the broadcast after
                // `give_up` makes them: without it the warp reached the vote split.
                warp::sync(lanes);
                Err(MultiGridError::Broken)
            }
        }
    }

    /// Whether the host asked every wait to give up (a barrier joined across processes,
    /// whose host line's [`GIVE_UP_WORD`] is set once another process of the group died
    /// or aborted; never set for a barrier of one process). One read of mapped host
    /// memory, made only by a wait that has lasted [`HOST_GIVE_UP_AFTER`].
    #[inline(always)]
    fn host_gave_up(&self) -> bool {
        !self.host_arrivals.is_null()
            // SAFETY: a non-null `host_arrivals` starts a live mapped line of
            // `COMPLETION_WORDS` words.
            && unsafe {
                System::load_u64(
                    self.host_arrivals.cast_mut().wrapping_add(GIVE_UP_WORD),
                    Ordering::Relaxed,
                )
            } != 0
    }

    /// Whether every host party has arrived at `phase` (always, without host parties),
    /// or broke the barrier from `phase` or earlier. Block 0 reads the host's word (a
    /// PCIe round trip, made only once the GPUs' counter is complete) and, once it
    /// shows the phase, acquires and relays it to the GPU's other blocks through the
    /// relay word in the GPU's memory, which they poll instead. Run by the first warp
    /// (`lanes`), on lane 0's reads; every lane stores the same relay value.
    #[inline(always)]
    fn host_arrived(&self, lanes: u32, phase: u64) -> HostParties {
        if self.host_parties == 0 {
            return HostParties::Arrived;
        }
        let relay = self.counter_of(self.rank).wrapping_add(RELAY_WORD);
        if block_index() != 0 {
            // SAFETY: this GPU's live relay word, stored by its block 0 only.
            let relayed = broadcast_u64(
                lanes,
                unsafe { Device::load_u64(relay, Ordering::Relaxed) },
                0,
            );
            return if relayed >= phase {
                HostParties::Arrived
            } else {
                HostParties::NotYet
            };
        }
        let host = self.host_arrivals.cast_mut();
        // SAFETY: the launch passes a live mapped word when there are host parties.
        let seen = broadcast_u64(
            lanes,
            unsafe { System::load_u64(host, Ordering::Relaxed) },
            0,
        );
        if seen & POISONED != 0 {
            match break_reaching(lanes, host, phase) {
                Break::Reaches => return HostParties::Broke,
                Break::Pending => return HostParties::NotYet,
                Break::Spares => {}
            }
        }
        if seen & !POISONED < phase.wrapping_mul(u64::from(self.host_parties)) {
            return HostParties::NotYet;
        }
        System::fence(Ordering::Acquire);
        // SAFETY: as above.
        unsafe { Device::store_u64(relay, phase, Ordering::Release) };
        HostParties::Arrived
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

/// How a wait ends (`MultiGrid::await_phase`'s loop).
enum Outcome {
    /// Every party arrived.
    Complete,
    /// Timed out, or the barrier broke from this phase or earlier.
    Failed(MultiGridError),
    /// A host party broke the barrier from this phase or earlier: carry it to the GPUs.
    HostPartiesBroke,
}

/// What block 0 finds in the host parties' arrival word (`MultiGrid::host_arrived`).
enum HostParties {
    /// Every party arrived at the phase.
    Arrived,
    /// Not every party yet (or a break whose phase is not written yet).
    NotYet,
    /// A party broke the barrier from this phase or earlier.
    Broke,
}

/// What a marked count's broken-from word says about a phase.
enum Break {
    /// The word is still 0: a break in progress; look again.
    Pending,
    /// The break starts at this phase or earlier: the phase fails.
    Reaches,
    /// The break starts later: the phase completes normally.
    Spares,
}

/// Reads the broken-from word beside `count` (a counter, or the host parties' arrival
/// word) once `count` is marked broken, and what it says about `phase`: lane 0's read,
/// for every lane of `lanes`.
#[inline(always)]
fn break_reaching(lanes: u32, count: *mut u64, phase: u64) -> Break {
    // SAFETY: the word beside a live count, on its line (device or mapped host memory).
    let first_failing =
        unsafe { System::load_u64(count.wrapping_add(BROKEN_FROM_WORD), Ordering::Relaxed) };
    let first_failing = broadcast_u64(lanes, first_failing, 0);
    match first_failing {
        0 => Break::Pending,
        first if first <= phase => Break::Reaches,
        _ => Break::Spares,
    }
}

/// The lanes of the block's first warp (all 32 unless the block is smaller).
#[inline(always)]
fn warp_lanes() -> u32 {
    1_u32
        .checked_shl(block_size())
        .map_or(u32::MAX, |bit| bit - 1)
}

/// Gives up on `phase`: marks GPU `rank`'s counter broken if it still holds `seen`
/// (no block arrived since the last look), then breaks the barrier from `phase` on:
/// whether this call broke it. A failed swap means a block arrived or another block
/// gave up: poll again. (The counters by value, not `&MultiGrid`: a reference would keep
/// the caller's barrier in local memory.)
#[cold]
#[inline(never)]
fn give_up(
    counters: [*mut u64; MAX_RANKS],
    ranks: u32,
    rank: u32,
    crossing: u32,
    seen: u64,
    phase: u64,
    completion: *mut u64,
) -> bool {
    let own = counters[rank as usize];
    // SAFETY: this GPU's live counter.
    let before = unsafe { compare_swap_counter(crossing, own, rank, seen, seen | POISONED) };
    if before != seen {
        return false;
    }
    break_from(counters, ranks, crossing, phase, completion);
    true
}

/// Breaks the barrier from `first_failing` on: marks every GPU's counter, then lowers
/// every counter line's broken-from word to `first_failing` (a wait that sees a mark
/// before the word looks again), and names the phase on this GPU's completion line for
/// the host parties (`completion`; null without).
#[cold]
#[inline(never)]
fn break_from(
    counters: [*mut u64; MAX_RANKS],
    ranks: u32,
    crossing: u32,
    first_failing: u64,
    completion: *mut u64,
) {
    let live = &counters[..ranks as usize];
    for (rank, &counter) in (0..).zip(live) {
        // SAFETY: the launch passes `ranks` live counter addresses this GPU reaches by
        // `crossing`.
        unsafe { mark_counter(crossing, counter, rank) };
    }
    for (rank, &counter) in (0..).zip(live) {
        // SAFETY: the word beside a live counter, on its line.
        unsafe {
            lower_to(
                crossing,
                counter.wrapping_add(BROKEN_FROM_WORD),
                rank,
                first_failing,
            )
        };
    }
    if !completion.is_null() {
        // SAFETY: this GPU's live completion line in mapped host memory, which the GPUs
        // only store to (a store, not a minimum: two blocks of one GPU breaking from
        // different phases at once may leave either).
        unsafe {
            System::store_u64(
                completion.wrapping_add(BROKEN_FROM_WORD),
                first_failing,
                Ordering::Relaxed,
            )
        };
    }
}

/// Lowers GPU `rank`'s broken-from word `word` to `phase` (0, "not broken", counts as
/// above any phase).
///
/// # Safety
///
/// `word` is a live `u64` of GPU `rank`'s counter line, as this GPU reaches it by
/// `crossing`.
unsafe fn lower_to(crossing: u32, word: *mut u64, rank: u32, phase: u64) {
    // SAFETY: the caller's contract.
    let mut current = unsafe { load_counter(crossing, word, rank) };
    while current == 0 || current > phase {
        // SAFETY: as above.
        let before = unsafe { compare_swap_counter(crossing, word, rank, current, phase) };
        if before == current {
            return;
        }
        current = before;
    }
}
