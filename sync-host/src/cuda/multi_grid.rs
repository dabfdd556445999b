//! Cooperative launches on several GPUs that hand each kernel the barrier of them all
//! (`sync_device::MultiGrid`).

use std::sync::Arc;

use cudarc::driver::sys;
use sync_shared::layout::multi_grid;

use super::multi_grid_host::{HostParty, HostPartyWords};
use super::{CudaError, Kernel, KernelArgs, LaunchConfig, PeerMemory, PlacementError, Runtime};

/// The host's image of `sync_device::MultiGrid` for one GPU (`#[repr(C)]`:
/// [`multi_grid::MAX_RANKS`] addresses and the phase, then four u32, then the host
/// parties' two addresses, their count and the crossing; passed as the words of
/// [`words`](Self::words)).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(super) struct MultiGridParam {
    counters: [u64; multi_grid::MAX_RANKS],
    phase: u64,
    rank: u32,
    ranks: u32,
    broken: u32,
    arrived: u32,
    /// The host parties' arrival word, or a joined barrier's give-up word.
    pub(super) host_arrivals: u64,
    /// The GPUs' completion lines (with host parties).
    pub(super) completions: u64,
    /// Host parties of every process.
    pub(super) host_parties: u32,
    /// How the completing block reaches the other GPUs' counters
    /// (`multi_grid::CROSSING_*`).
    pub(super) crossing: u32,
}

sync_shared::assert_layout!(MultiGridParam, sync_shared::layout::MULTI_GRID);

/// One barrier for a cooperative grid on each of several GPUs of the machine: the
/// words each GPU's kernel gets through its `sync_device::MultiGrid` parameter. Made
/// once for a set of GPUs, then launched any number of times
/// ([`launch`](Self::launch)); each launch starts from phase 0.
///
/// On each GPU, in its own memory: a gather word its blocks add their arrivals to, and
/// an arrival counter that one block of every GPU adds its GPU's count to each phase, so
/// [`new`](Self::new) checks with the driver's peer attributes that every GPU reaches
/// every other's memory with native atomics.
///
/// Counterpart: a cooperative multi-device launch
/// (`cudaLaunchCooperativeKernelMultiDevice`, removed in CUDA 12) with
/// `cooperative_groups::this_multi_grid()`.
///
/// # Examples
///
/// ```no_run
/// use sync_host::cuda::{KernelArgs, LaunchConfig, MultiGrid, Runtime};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let gpus = [Runtime::open(0)?, Runtime::open(1)?];
/// let mut barrier = MultiGrid::new(&[&gpus[0], &gpus[1]])?;
/// let modules = [gpus[0].load_file("k.ptx")?, gpus[1].load_file("k.ptx")?];
/// let kernels = [modules[0].kernel("step")?, modules[1].kernel("step")?];
/// let args = vec![KernelArgs::new().arg(&100_u32), KernelArgs::new().arg(&100_u32)];
/// // SAFETY: `step(MultiGrid, u32)` on every GPU.
/// unsafe { barrier.launch(&[&kernels[0], &kernels[1]], LaunchConfig::new(132, 256), args) }?;
/// for gpu in &gpus {
///     gpu.synchronize()?;
/// }
/// # Ok(())
/// # }
/// ```
pub struct MultiGrid {
    /// The GPUs this process launches on: every rank's ([`new`](Self::new)), or its own
    /// ([`join`](Self::join)).
    runtimes: Vec<Runtime>,
    /// The counter lines (`params[_].counters[i]`).
    counters: Counters,
    /// The host parties' words, if the barrier has host parties (across processes,
    /// the same words as the give-up word's).
    host: Option<Arc<HostPartyWords>>,
    /// Each launched GPU's kernel parameter (phase 0), pointing at the words above.
    params: Vec<MultiGridParam>,
}

/// Where the GPUs' counter lines live.
pub(super) enum Counters {
    /// One process: each GPU's line in its own memory, reached by peer access.
    Peers(Vec<PeerMemory>),
    /// One process per GPU: every rank's line as this process maps it.
    #[cfg(target_os = "linux")]
    Processes(super::multi_grid_process::AcrossProcesses),
}

impl MultiGrid {
    /// The barrier of grids on `gpus` (rank `i` is `gpus[i]`), after checking that
    /// each reaches every other's memory and enabling that access.
    ///
    /// # Errors
    ///
    /// [`PlacementError::PeerAttribute`] naming `CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED`
    /// where one GPU cannot reach another's memory, or
    /// `CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED` where its atomics there are not
    /// native (typical of PCIe peers); a failed driver call.
    ///
    /// # Panics
    ///
    /// If `gpus` is empty, names one GPU twice, or holds more than
    /// [`multi_grid::MAX_RANKS`] (8) GPUs.
    pub fn new(gpus: &[&Runtime]) -> Result<Self, PlacementError> {
        Self::with_host_parties(gpus, 0)
    }

    /// [`new`](Self::new), with `host_parties` host threads taking part in every phase
    /// too ([`launch_with_host_parties`](Self::launch_with_host_parties) runs them).
    /// Their words are pinned host memory that every GPU maps: each phase then also
    /// costs every GPU one read across PCIe (once its counter is complete) and, on
    /// block 0 of each GPU, a system-scope release to publish the completed phase.
    ///
    /// # Examples
    ///
    /// A host thread that prepares each step's input while two GPUs' grids wait for it
    /// at the barrier (`step(MultiGrid, *const u32)` calls `sync` once per step, then
    /// reads slot `step % 2`: the host writes a slot again only two phases later, after
    /// every GPU thread has arrived at the phase in between):
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use sync_host::cuda::{KernelArgs, LaunchConfig, MultiGrid, Runtime};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let gpus = [Runtime::open(0)?, Runtime::open(1)?];
    /// let mut barrier = MultiGrid::with_host_parties(&[&gpus[0], &gpus[1]], 1)?;
    /// let input = gpus[0].mapped(2)?; // portable: both GPUs read it
    /// let modules = [gpus[0].load_file("k.ptx")?, gpus[1].load_file("k.ptx")?];
    /// let kernels = [modules[0].kernel("step")?, modules[1].kernel("step")?];
    /// let args = (0..2).map(|_| KernelArgs::new().arg(&input)).collect();
    /// // SAFETY: `step(MultiGrid, *const u32)` on both GPUs, 100 `sync`s each; the
    /// // party arrives 100 times; `input` outlives the kernels.
    /// let outcomes = unsafe {
    ///     let config = LaunchConfig::new(132, 256);
    ///     barrier.launch_with_host_parties(&[&kernels[0], &kernels[1]], config, args, |mut party| {
    ///         for step in 0..100 {
    ///             input.host_words()[step as usize % 2].store(step, std::sync::atomic::Ordering::Relaxed);
    ///             party.arrive_and_wait(Duration::from_secs(10))?;
    ///         }
    ///         Ok::<(), sync_host::cuda::HostPartyError>(())
    ///     })
    /// }?;
    /// assert!(outcomes.iter().all(Result::is_ok));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), and a failed allocation of the mapped words.
    ///
    /// # Panics
    ///
    /// As [`new`](Self::new).
    pub fn with_host_parties(gpus: &[&Runtime], host_parties: u32) -> Result<Self, PlacementError> {
        assert!(!gpus.is_empty(), "MultiGrid::new: no GPUs");
        assert!(
            gpus.len() <= multi_grid::MAX_RANKS,
            "MultiGrid::new: {} GPUs, at most {} take part in one barrier",
            gpus.len(),
            multi_grid::MAX_RANKS
        );
        for (i, gpu) in gpus.iter().enumerate() {
            assert!(
                gpus[..i]
                    .iter()
                    .all(|other| other.ordinal() != gpu.ordinal()),
                "MultiGrid::new: GPU {} is named twice",
                gpu.ordinal()
            );
        }
        let ranks = u32::try_from(gpus.len()).expect("fewer than 2³² GPUs");
        let mut counters = Vec::with_capacity(gpus.len());
        for (i, owner) in gpus.iter().enumerate() {
            let users: Vec<&Runtime> = gpus
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &user)| user)
                .collect();
            counters.push(owner.peer_memory(
                "MultiGrid",
                true,
                &[0; multi_grid::WORDS * 4],
                &users,
            )?);
        }
        let mut addresses = [0; multi_grid::MAX_RANKS];
        for (address, memory) in addresses.iter_mut().zip(&counters) {
            *address = memory.device_address();
        }
        let host = if host_parties == 0 {
            None
        } else {
            gpus[0].bind()?;
            Some(Arc::new(HostPartyWords::new(host_parties, gpus.len())?))
        };
        // Unified addressing: every GPU reaches a counter at the owner's address, and
        // the portable host words at one address.
        let params = (0..ranks)
            .map(|rank| MultiGridParam {
                host_arrivals: host.as_deref().map_or(0, HostPartyWords::arrivals_address),
                completions: host
                    .as_deref()
                    .map_or(0, HostPartyWords::completions_address),
                host_parties,
                ..MultiGridParam::new(addresses, rank, ranks)
            })
            .collect();
        Ok(Self {
            runtimes: gpus.iter().map(|&gpu| gpu.clone()).collect(),
            counters: Counters::Peers(counters),
            host,
            params,
        })
    }

    /// A barrier from its parts (`join`, `join_with_host_parties`).
    #[cfg(target_os = "linux")]
    pub(super) fn from_parts(
        runtimes: Vec<Runtime>,
        counters: Counters,
        host: Option<Arc<HostPartyWords>>,
        params: Vec<MultiGridParam>,
    ) -> Self {
        Self {
            runtimes,
            counters,
            host,
            params,
        }
    }

    /// GPUs in the barrier (in every process, for a barrier [`join`](Self::join)ed).
    pub fn ranks(&self) -> usize {
        self.params[0].ranks as usize
    }

    /// Launches `kernels[i]` (a kernel of GPU `i`'s runtime) cooperatively on each GPU,
    /// `config`'s shape each, on each runtime's default stream, each from a host
    /// thread of its own (so the kernels meet even where a launch returns only when its
    /// kernel ends, `CUDA_LAUNCH_BLOCKING=1`): its first parameter is the GPU's
    /// `sync_device::MultiGrid`, then `args[i]`. The launches are cooperative whether
    /// `config` says so or not. First every GPU's shape is checked;
    /// then every GPU's stream is waited for (an earlier launch's kernels included),
    /// every GPU's counter is zeroed, and that is waited for on every GPU (so no
    /// kernel adds to a counter still to be zeroed). Returns once every kernel is
    /// launched; synchronize the runtimes to wait for them. `&mut self`: one launch of a
    /// barrier at a time.
    ///
    /// A barrier [`join`](Self::join)ed across processes launches one kernel, on this
    /// process's GPU: each process zeroes its own counter, then the group meets and
    /// checks that every process launches the same shape.
    ///
    /// # Errors
    ///
    /// [`CudaError::GridTooLarge`] if a GPU cannot hold every block of its grid at once,
    /// [`CudaError::LaunchDoesNotFit`] for a shape beyond a kernel's limits (both
    /// checked on every GPU before anything is launched); a failed driver call. If one
    /// GPU's launch fails after another's succeeded, the launched kernels run until
    /// their waits time out: synchronize every runtime before using the barrier again.
    /// Across processes: [`CudaError::ProcessGroup`] if the group failed or the shapes
    /// differ (`ProcessGroupError::Mismatch`); a launch that fails aborts the group.
    ///
    /// # Panics
    ///
    /// If `kernels` and `args` do not hold one entry per GPU this process launches
    /// on, with `kernels[i]` a kernel of GPU `i`, or if `config` names a stream (each
    /// GPU's launch is on its runtime's own stream).
    ///
    /// # Safety
    ///
    /// Each kernel's first parameter is a `sync_device::MultiGrid` and the rest match
    /// `args[i]`, pointing at memory that outlives the kernels; every thread of every
    /// kernel calls `sync` equally often (one that stops makes the others time out).
    pub unsafe fn launch(
        &mut self,
        kernels: &[&Kernel],
        config: LaunchConfig<'_>,
        args: Vec<KernelArgs<'_>>,
    ) -> Result<(), CudaError> {
        assert!(
            self.host.as_ref().is_none_or(|words| words.here == 0),
            "MultiGrid::launch: the barrier has host parties in this process; launch it with launch_with_host_parties"
        );
        // SAFETY: the caller's contract.
        unsafe { self.launch_with_host_parties(kernels, config, args, |_| ()) }?;
        Ok(())
    }

    /// [`launch`](Self::launch), and one host thread per host party of this process
    /// ([`with_host_parties`](Self::with_host_parties),
    /// [`join_with_host_parties`](Self::join_with_host_parties)) running `party` with its
    /// [`HostParty`] while the kernels run; returns once every kernel is launched and
    /// every party returned, with the parties' results. (A launch may return only when
    /// its kernel ends, `CUDA_LAUNCH_BLOCKING=1`: the parties run beside the launching
    /// threads, so the kernels meet them either way.)
    ///
    /// # Errors
    ///
    /// As [`launch`](Self::launch). The parties run even if a launch fails: give their
    /// waits a timeout.
    ///
    /// # Panics
    ///
    /// As [`launch`](Self::launch), or if `party` panics.
    ///
    /// # Safety
    ///
    /// As [`launch`](Self::launch); every party calls
    /// [`HostParty::arrive_and_wait`] as often as each kernel thread calls `sync`.
    pub unsafe fn launch_with_host_parties<R: Send>(
        &mut self,
        kernels: &[&Kernel],
        config: LaunchConfig<'_>,
        args: Vec<KernelArgs<'_>>,
        party: impl Fn(HostParty<'_>) -> R + Sync,
    ) -> Result<Vec<R>, CudaError> {
        assert!(
            kernels.len() == self.runtimes.len() && args.len() == self.runtimes.len(),
            "MultiGrid::launch: {} kernels and {} argument lists for the {} GPUs this process launches on",
            kernels.len(),
            args.len(),
            self.runtimes.len()
        );
        assert!(
            config.stream.is_none(),
            "MultiGrid::launch: each GPU's kernel runs on its runtime's own stream; the config names none"
        );
        let config = config.cooperative();
        let (grid, block, shared) = (config.grid, config.block, config.shared_memory_bytes);
        for (rank, (kernel, runtime)) in kernels.iter().zip(&self.runtimes).enumerate() {
            assert_eq!(
                kernel.runtime.ordinal(),
                runtime.ordinal(),
                "MultiGrid::launch: rank {rank}'s kernel `{}` is GPU {}'s, the barrier's rank {rank} is GPU {}",
                kernel.name(),
                kernel.runtime.ordinal(),
                runtime.ordinal()
            );
            kernel.check_fits(grid, block, shared)?;
            kernel.check_coresident(grid, block, config.cluster, shared)?;
        }
        // Every GPU's earlier work (a kernel of an earlier launch may still add to a
        // peer's counter) ends before any counter is zeroed, and every zeroing before
        // any kernel starts.
        self.synchronize_all("wait for the GPUs before a multi-GPU launch")?;
        match &self.counters {
            Counters::Peers(counters) => {
                for (counter, runtime) in counters.iter().zip(&self.runtimes) {
                    runtime.bind()?;
                    let stream = runtime.stream.cu_stream();
                    // SAFETY: the GPU's live counter line; no kernel uses it (every
                    // stream synchronized above).
                    unsafe {
                        sys::cuMemsetD32Async(
                            counter.device_address(),
                            0,
                            multi_grid::WORDS,
                            stream,
                        )
                        .result()
                        .map_err(CudaError::driver("zero a multi-GPU barrier's counter"))?;
                    }
                }
                if let Some(host) = &self.host {
                    host.zero();
                }
                self.synchronize_all("wait for the multi-GPU barrier's zeroing")?;
            }
            #[cfg(target_os = "linux")]
            Counters::Processes(across) => {
                across.prepare_launch(&self.runtimes[0], grid, block, shared)?;
            }
        }
        let (host, party) = (self.host.as_deref(), &party);
        std::thread::scope(|scope| {
            let parties: Vec<_> = host
                .into_iter()
                .flat_map(|words| (0..words.here).map(move |_| words))
                .map(|words| scope.spawn(move || party(HostParty::new(words))))
                .collect();
            let launches: Vec<_> = kernels
                .iter()
                .zip(&self.runtimes)
                .zip(args)
                .zip(&self.params)
                .map(|(((kernel, runtime), args), param)| {
                    scope.spawn(move || {
                        let args = KernelArgs::new().words(&param.words()).append(args);
                        let stream = runtime.default_stream();
                        // SAFETY: the caller vouches for the kernel's parameters; the
                        // barrier's words live as long as `self`, whose earlier
                        // launches have finished.
                        unsafe { kernel.launch(config.on(&stream), args) }
                    })
                })
                .collect();
            // Every thread is joined (the scope joins the rest if one fails first).
            let launched = launches
                .into_iter()
                .try_for_each(|launch| launch.join().expect("a launch thread panicked"));
            #[cfg(target_os = "linux")]
            let launched = match &self.counters {
                Counters::Processes(across) => match launched {
                    Ok(()) => across.watch_kernel(&self.runtimes[0]),
                    // The others' kernels would wait for this one's until their deadline.
                    Err(error) => {
                        across.abort();
                        Err(error)
                    }
                },
                Counters::Peers(_) => launched,
            };
            let results = parties
                .into_iter()
                .map(|party| party.join().expect("a host party panicked"))
                .collect();
            launched.map(|()| results)
        })
    }
}

impl MultiGrid {
    /// Waits for every GPU's stream.
    fn synchronize_all(&self, operation: &'static str) -> Result<(), CudaError> {
        self.runtimes.iter().try_for_each(|runtime| {
            runtime
                .stream
                .synchronize()
                .map_err(CudaError::driver(operation))
        })
    }
}

impl MultiGridParam {
    /// Rank `rank`'s parameter of a barrier of `ranks` GPUs at `counters`, at phase 0,
    /// without host parties.
    pub(super) fn new(counters: [u64; multi_grid::MAX_RANKS], rank: u32, ranks: u32) -> Self {
        Self {
            counters,
            phase: 0,
            rank,
            ranks,
            broken: 0,
            arrived: 0,
            host_arrivals: 0,
            completions: 0,
            host_parties: 0,
            crossing: multi_grid::CROSSING_PEER_ATOMICS,
        }
    }

    /// The parameter as the launch's 8-byte words: 112 bytes, little-endian (the
    /// addresses, the phase, then `rank` and `ranks`, then `broken` and `arrived`, two
    /// to a word, then the host parties' two addresses, their count and the crossing).
    fn words(&self) -> [u64; multi_grid::MAX_RANKS + 6] {
        let mut words = [0; multi_grid::MAX_RANKS + 6];
        words[..multi_grid::MAX_RANKS].copy_from_slice(&self.counters);
        words[multi_grid::MAX_RANKS..].copy_from_slice(&[
            self.phase,
            u64::from(self.rank) | u64::from(self.ranks) << 32,
            u64::from(self.broken) | u64::from(self.arrived) << 32,
            self.host_arrivals,
            self.completions,
            u64::from(self.host_parties) | u64::from(self.crossing) << 32,
        ]);
        words
    }
}

impl std::fmt::Debug for MultiGrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiGrid")
            .field(
                "gpus",
                &self
                    .runtimes
                    .iter()
                    .map(Runtime::ordinal)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}
