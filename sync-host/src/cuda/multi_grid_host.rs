//! Host threads as parties of a multi-GPU barrier ([`HostParty`]): the words they
//! share with the GPUs' kernels, in pinned host memory that every GPU maps.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cudarc::driver::sys;
use sync_shared::layout::multi_grid::{BROKEN_WORD, COMPLETION_WORDS, POISONED};

use super::CudaError;

/// Spins of a host party's wait before it yields between polls.
const SPIN_POLLS: u32 = 256;

/// The host parties' words of one `MultiGrid`: a 128-byte line holding their arrival
/// count (read-modify-written by host threads only, read by the GPUs), then one line
/// per GPU holding the last phase it completed (stored by that GPU's block 0) and
/// whether it broke the barrier (stored by any of its blocks), read by the host. Pinned, mapped and portable, so every GPU reaches it at one address.
pub(super) struct HostPartyWords {
    host: NonNull<u64>,
    device: sys::CUdeviceptr,
    ranks: usize,
    /// Host threads that take part in every phase.
    pub(super) parties: u32,
}

// SAFETY: the words are touched only through atomics (`AtomicU64` views) on the host.
unsafe impl Send for HostPartyWords {}
// SAFETY: as above.
unsafe impl Sync for HostPartyWords {}

impl HostPartyWords {
    /// Words for `parties` host threads and `ranks` GPUs; the caller has bound a
    /// context.
    pub(super) fn new(parties: u32, ranks: usize) -> Result<Self, CudaError> {
        let bytes = (1 + ranks) * COMPLETION_WORDS * 8;
        let (host, device) = super::placement::allocate_mapped(bytes)?;
        let words = Self {
            host: host.cast(),
            device,
            ranks,
            parties,
        };
        words.zero();
        Ok(words)
    }

    /// Zeroes every word (between launches: no kernel runs).
    pub(super) fn zero(&self) {
        self.arrivals().store(0, Ordering::Relaxed);
        for rank in 0..self.ranks {
            self.completion(rank).store(0, Ordering::Relaxed);
            self.broken(rank).store(0, Ordering::Relaxed);
        }
    }

    /// The device address of the arrival count (`MultiGrid::host_arrivals`).
    pub(super) fn arrivals_address(&self) -> u64 {
        self.device
    }

    /// The device address of the first completion word (`MultiGrid::completions`).
    pub(super) fn completions_address(&self) -> u64 {
        self.device + (COMPLETION_WORDS * 8) as u64
    }

    fn arrivals(&self) -> &AtomicU64 {
        // SAFETY: word 0 of the live allocation, 8-byte aligned (page-aligned base).
        unsafe { AtomicU64::from_ptr(self.host.as_ptr()) }
    }

    /// GPU `rank`'s completed phase.
    fn completion(&self, rank: usize) -> &AtomicU64 {
        self.completion_line_word(rank, 0)
    }

    /// Nonzero once a block of GPU `rank` broke the barrier.
    fn broken(&self, rank: usize) -> &AtomicU64 {
        self.completion_line_word(rank, BROKEN_WORD)
    }

    /// Word `word` of GPU `rank`'s completion line (line `1 + rank`).
    fn completion_line_word(&self, rank: usize, word: usize) -> &AtomicU64 {
        assert!(rank < self.ranks && word < COMPLETION_WORDS);
        // SAFETY: in the live allocation of `1 + ranks` lines, 8-byte aligned.
        unsafe { AtomicU64::from_ptr(self.host.as_ptr().add((1 + rank) * COMPLETION_WORDS + word)) }
    }
}

impl Drop for HostPartyWords {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc in `new`, freed once; the owning
        // `MultiGrid` waits for every GPU's stream before it drops this.
        unsafe { sys::cuMemFreeHost(self.host.as_ptr().cast()) };
    }
}

/// Why a [`HostParty`] wait returned without completing the phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostPartyError {
    /// Some GPU did not complete the phase within the timeout (its kernel ended,
    /// trapped, or is late): this party broke the barrier for every GPU and party.
    TimedOut,
    /// The barrier is broken: a GPU's block or another party timed out, or someone
    /// aborted. Every later wait fails at once.
    Broken,
}

impl std::fmt::Display for HostPartyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HostPartyError::TimedOut => "a GPU did not complete the phase in time",
            HostPartyError::Broken => "the multi-GPU barrier is broken",
        })
    }
}

impl std::error::Error for HostPartyError {}

/// A host thread's place in a `MultiGrid` launched with host parties
/// ([`MultiGrid::launch_with_host_parties`](super::MultiGrid::launch_with_host_parties)):
/// each phase completes once every block of every GPU and every host party has
/// arrived.
///
/// Memory ordering: an arrival is a release (what the thread wrote before it, in any
/// memory the GPUs reach, is visible to every GPU thread after the phase); a completed
/// wait acquires what every GPU thread wrote before the phase (each GPU's block 0
/// publishes its GPU's completion with a system-scope release after acquiring every
/// GPU's arrivals).
///
/// Counterpart: a host thread at a `cuda::barrier<thread_scope_system>` in managed
/// memory (libcu++), which needs host-native atomics; here the host only adds to a
/// word the GPUs read, and reads words the GPUs write.
pub struct HostParty<'a> {
    words: &'a HostPartyWords,
    phase: u64,
    broken: bool,
}

impl<'a> HostParty<'a> {
    pub(super) fn new(words: &'a HostPartyWords) -> Self {
        Self {
            words,
            phase: 0,
            broken: false,
        }
    }

    /// Arrives at the next phase and waits, at most about `timeout`, until every GPU
    /// completed it.
    ///
    /// # Errors
    ///
    /// [`HostPartyError::TimedOut`] if a GPU did not complete the phase in time (the
    /// barrier is then broken for every party), [`HostPartyError::Broken`] if it was
    /// broken before or meanwhile.
    pub fn arrive_and_wait(&mut self, timeout: Duration) -> Result<(), HostPartyError> {
        if self.broken {
            return Err(HostPartyError::Broken);
        }
        self.phase += 1;
        self.words.arrivals().fetch_add(1, Ordering::Release);
        let result = self.wait(timeout);
        self.broken = result.is_err();
        result
    }

    /// Phases this party has arrived at.
    pub fn phase(&self) -> u64 {
        self.phase
    }

    /// Breaks the barrier: every wait of every GPU and party, in progress or to come,
    /// fails with `Broken` (waits that already saw their phase complete return
    /// normally).
    pub fn abort(&self) {
        self.words.arrivals().fetch_or(POISONED, Ordering::Relaxed);
    }

    /// Polls every GPU's completion word until it shows this phase.
    fn wait(&self, timeout: Duration) -> Result<(), HostPartyError> {
        let start = Instant::now();
        let mut polls = 0u32;
        for rank in 0..self.words.ranks {
            let completion = self.words.completion(rank);
            loop {
                let seen = completion.load(Ordering::Acquire);
                if seen & POISONED != 0
                    || self.words.arrivals().load(Ordering::Relaxed) & POISONED != 0
                {
                    return Err(HostPartyError::Broken);
                }
                if seen >= self.phase {
                    break;
                }
                polls = polls.saturating_add(1);
                if polls < SPIN_POLLS {
                    std::hint::spin_loop();
                    continue;
                }
                if start.elapsed() > timeout {
                    self.abort();
                    return Err(HostPartyError::TimedOut);
                }
                std::thread::yield_now();
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for HostParty<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostParty")
            .field("phase", &self.phase)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}
