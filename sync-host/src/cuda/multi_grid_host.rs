//! Host threads as parties of a multi-GPU barrier ([`HostParty`]): the words they
//! share with the GPUs' kernels, in pinned host memory that every GPU maps (one
//! process), or in host memory every process of a group maps (a barrier joined across
//! processes).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cudarc::driver::sys;
use sync_shared::layout::multi_grid::{BROKEN_FROM_WORD, COMPLETION_WORDS, GIVE_UP_WORD, POISONED};

use super::CudaError;

/// Spins of a host party's wait before it yields between polls.
const SPIN_POLLS: u32 = 256;

/// The host parties' words of one `MultiGrid` (`layout::multi_grid::COMPLETION_WORDS`):
/// a 128-byte line holding their arrival count, the first phase they broke and the
/// give-up word (read-modify-written by host threads only, read by the GPUs), then one
/// line per GPU holding the last phase it completed (stored by that GPU's block 0) and
/// the first phase it broke (stored by any of its blocks), read by the host. Pinned,
/// mapped and portable, so every GPU reaches it at one address; or, across processes,
/// host memory every process maps and registers with its GPU.
pub(super) struct HostPartyWords {
    host: NonNull<u64>,
    device: sys::CUdeviceptr,
    /// Whose memory it is: this process's pinned allocation, or the group's.
    #[cfg(target_os = "linux")]
    shared: Option<super::ProcessHostMemory>,
    ranks: usize,
    /// Host threads that take part in every phase (of every process).
    pub(super) parties: u32,
    /// Of those, the ones this process runs.
    pub(super) here: u32,
}

// SAFETY: the words are touched only through atomics (`AtomicU64` views) on the host.
unsafe impl Send for HostPartyWords {}
// SAFETY: as above.
unsafe impl Sync for HostPartyWords {}

impl HostPartyWords {
    /// Words for `parties` host threads and `ranks` GPUs; the caller has bound a
    /// context.
    pub(super) fn new(parties: u32, ranks: usize) -> Result<Self, CudaError> {
        let (host, device) = super::placement::allocate_mapped(Self::bytes(ranks))?;
        let words = Self {
            host: host.cast(),
            device,
            #[cfg(target_os = "linux")]
            shared: None,
            ranks,
            parties,
            here: parties,
        };
        words.zero();
        Ok(words)
    }

    /// Words for the `ranks` GPUs of `group` and the host parties of every process
    /// (`here` of them this process's), in host memory every process maps. Collective.
    #[cfg(target_os = "linux")]
    pub(super) fn for_processes(
        gpu: &super::Runtime,
        group: &crate::process::ProcessGroup,
        here: u32,
    ) -> Result<Self, CudaError> {
        let counts = group
            .all_gather_as("MultiGrid host parties", &here.to_le_bytes(), &[])
            .map_err(CudaError::ProcessGroup)?;
        let parties = counts
            .iter()
            .map(|part| u32::from_le_bytes(part.bytes[..4].try_into().expect("4 bytes")))
            .fold(0_u32, u32::saturating_add);
        let ranks = group.size();
        let memory = gpu.host_memory_for_processes(group, Self::bytes(ranks) / 4)?;
        // The slice's pointer, whose provenance spans every line (a reference to one
        // word would cover that word only).
        let host = NonNull::new(memory.host_u64s().as_ptr().cast_mut())
            .expect("a mapping is not null")
            .cast::<u64>();
        Ok(Self {
            host,
            device: memory.device_address(),
            shared: Some(memory),
            ranks,
            parties,
            here,
        })
    }

    /// The bytes of the words of `ranks` GPUs.
    fn bytes(ranks: usize) -> usize {
        (1 + ranks) * COMPLETION_WORDS * 8
    }

    /// Whether every process of a group maps these words ([`for_processes`](Self::for_processes)).
    pub(super) fn shared_by_processes(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.shared.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// Zeroes every word (between launches: no kernel runs).
    pub(super) fn zero(&self) {
        for line in 0..=self.ranks {
            for word in [0, BROKEN_FROM_WORD, GIVE_UP_WORD] {
                self.line_word(line, word).store(0, Ordering::Relaxed);
            }
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

    /// For a barrier joined across processes whose group failed: tells every wait of
    /// the kernels to give up at its next look at the clock, as at its deadline
    /// (`GIVE_UP_WORD`), and every host party's wait to fail.
    pub(super) fn give_up(&self) {
        self.line_word(0, GIVE_UP_WORD).store(1, Ordering::Relaxed);
    }

    /// Whether [`give_up`](Self::give_up) was called since the last zeroing.
    fn given_up(&self) -> bool {
        self.line_word(0, GIVE_UP_WORD).load(Ordering::Relaxed) != 0
    }

    /// The host parties' arrival count, plus `POISONED` once a party broke the barrier.
    fn arrivals(&self) -> &AtomicU64 {
        self.line_word(0, 0)
    }

    /// The first phase the host parties broke (0 while none did).
    fn parties_broken_from(&self) -> &AtomicU64 {
        self.line_word(0, BROKEN_FROM_WORD)
    }

    /// GPU `rank`'s completed phase.
    fn completion(&self, rank: usize) -> &AtomicU64 {
        self.line_word(1 + rank, 0)
    }

    /// The first phase a block of GPU `rank` broke (0 while none did).
    fn gpu_broken_from(&self, rank: usize) -> &AtomicU64 {
        self.line_word(1 + rank, BROKEN_FROM_WORD)
    }

    /// Word `word` of line `line` (0: the parties' arrivals, `1 + rank`: GPU `rank`'s
    /// completion).
    fn line_word(&self, line: usize, word: usize) -> &AtomicU64 {
        assert!(line <= self.ranks && word < COMPLETION_WORDS);
        // SAFETY: in the live allocation of `1 + ranks` lines, 8-byte aligned.
        unsafe { AtomicU64::from_ptr(self.host.as_ptr().add(line * COMPLETION_WORDS + word)) }
    }

    /// Whether the barrier is broken from `phase` or earlier, by a party or by a block
    /// of GPU `rank`.
    fn broken_by(&self, rank: usize, phase: u64) -> bool {
        let reaches = |first_failing: u64| first_failing != 0 && first_failing <= phase;
        reaches(self.gpu_broken_from(rank).load(Ordering::Relaxed))
            || reaches(self.parties_broken_from().load(Ordering::Relaxed))
    }

    /// Breaks the barrier from `first_failing` on: marks the arrival word (every GPU's
    /// block 0 reads it), then lowers the parties' broken-from word to the phase.
    fn break_from(&self, first_failing: u64) {
        self.arrivals().fetch_or(POISONED, Ordering::Relaxed);
        // Ok or Err: either way the word now names `first_failing` or an earlier phase.
        let _ = self.parties_broken_from().fetch_update(
            Ordering::Relaxed,
            Ordering::Relaxed,
            |current| (current == 0 || current > first_failing).then_some(first_failing),
        );
    }
}

impl Drop for HostPartyWords {
    fn drop(&mut self) {
        if self.shared_by_processes() {
            return; // the group's memory unmaps itself
        }
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
    /// The barrier is broken: a GPU's block or another party timed out, someone
    /// aborted, or (across processes) a process of the group died. Every later wait
    /// fails at once.
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

    /// Breaks the barrier from this party's next phase on: every wait for that phase or
    /// a later one, of every GPU and party, fails with `Broken`; waits for earlier
    /// phases complete normally (also where they see the completion only after the
    /// break).
    pub fn abort(&self) {
        self.words.break_from(self.phase + 1);
    }

    /// Polls every GPU's completion word until it shows this phase; fails once the
    /// barrier is broken from this phase or earlier.
    fn wait(&self, timeout: Duration) -> Result<(), HostPartyError> {
        let start = Instant::now();
        let mut polls = 0u32;
        for rank in 0..self.words.ranks {
            let completion = self.words.completion(rank);
            loop {
                if completion.load(Ordering::Acquire) >= self.phase {
                    break;
                }
                if self.words.broken_by(rank, self.phase) || self.words.given_up() {
                    return Err(HostPartyError::Broken);
                }
                polls = polls.saturating_add(1);
                if polls < SPIN_POLLS {
                    std::hint::spin_loop();
                    continue;
                }
                if start.elapsed() > timeout {
                    self.words.break_from(self.phase);
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
