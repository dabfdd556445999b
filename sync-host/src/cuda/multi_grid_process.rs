//! [`MultiGrid::join`], [`MultiGrid::join_with_host_parties`], [`MultiGrid::join_nvshmem`]
//! and [`MultiGrid::join_nvshmem_signals`]: the multi-GPU barrier across the processes of a
//! [`ProcessGroup`], one GPU each, and what a dead or failed process does to it.
//!
//! The kernels run the same `sync_device::MultiGrid` as in one process: only the
//! counters' addresses differ (each process maps every other's counter, see
//! `process_memory.rs`, or reaches every PE's copy in NVSHMEM's symmetric heap, see
//! `nvshmem/`), or, crossing through NVSHMEM's operations, how they are reached. What
//! the processes add:
//!
//! - before each launch, every process zeroes its own counter, then the group meets
//!   (an all-gather of the launch shapes, which must agree): no kernel adds to a
//!   counter still to be zeroed;
//! - when the group fails (a process ended without leaving, or reported its kernel's
//!   failure), each surviving process sets its give-up word
//!   (`layout::multi_grid::GIVE_UP_WORD` on the host line that `host_arrivals` of
//!   `sync_device::MultiGrid` points at), which its kernel's waits read each time they
//!   look at the clock once a wait has lasted a millisecond: the waiting block gives
//!   up as at its deadline and breaks the barrier on every GPU. A host store, no
//!   driver call: it works while a launch holds the context (`CUDA_LAUNCH_BLOCKING=1`),
//!   where a driver call would wait for the kernel. With host parties
//!   ([`MultiGrid::join_with_host_parties`]) that line is the parties' own, in host
//!   memory every process maps: the word then also ends every party's wait, and
//!   before each launch rank 0 zeroes the shared words between two meetings;
//! - after each launch a thread of the process watches the kernel (its completion
//!   event, every millisecond): a kernel that ends with an error (a trap) aborts the
//!   group, so that the other processes break their barriers too.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys;
use sync_shared::layout::multi_grid;

use super::multi_grid::{Counters, MultiGrid, MultiGridParam};
use super::multi_grid_host::HostPartyWords;
use super::process_memory::Sharing;
use super::{CudaError, Dim3, Nvshmem, PlacementError, ProcessMemory, Runtime, SymmetricMemory};
use crate::process::{FailureListener, ProcessGroup, ProcessGroupError};

/// How often the watch on a launched kernel asks whether it ended.
const KERNEL_WATCH_PERIOD: Duration = Duration::from_millis(1);

/// The cross-process part of a [`MultiGrid`] joined by this process.
pub(super) struct AcrossProcesses {
    group: ProcessGroup,
    /// Where the counter lines live.
    counters: CounterMemory,
    /// The give-up word (the arrival word of host-party words without parties).
    give_up: Arc<HostPartyWords>,
    _on_failure: FailureListener,
}

/// The memory of every rank's counter line, kept mapped while the barrier lives.
enum CounterMemory {
    /// Each process's own GPU memory, exported to the others (driver IPC), by rank.
    Driver(Vec<ProcessMemory>),
    /// One allocation of NVSHMEM's symmetric heap: each PE's copy is its counter.
    Nvshmem(SymmetricMemory),
}

impl CounterMemory {
    /// This process's own counter line, at its own address.
    fn own_address(&self, rank: usize) -> sys::CUdeviceptr {
        match self {
            Self::Driver(counters) => counters[rank].device_address(),
            Self::Nvshmem(memory) => memory.device_address(),
        }
    }
}

impl MultiGrid {
    /// The barrier of this process's grid on `gpu` with the grids of every other
    /// process of `group`, one GPU each (rank `i` of the barrier is the group's rank
    /// `i`). Collective: every process of the group calls it. Each process's GPU holds
    /// its counter; every process maps every other's, after checking that its GPU
    /// reaches the others' memory with native atomics. Launch with
    /// [`launch`](Self::launch), one kernel: this process's.
    ///
    /// A process that dies (killed, crashed) or aborts ([`ProcessGroup::abort`]; a
    /// launch's kernel that fails aborts by itself) breaks the barrier in every other
    /// process: their kernels' waits end with `MultiGridError::Broken` (`sync` panics)
    /// as soon as the group's watcher sees it (a socket's end) and a wait that has lasted
    /// a millisecond next looks at the clock (every 32 polls), and
    /// their later launches fail with [`CudaError::ProcessGroup`].
    ///
    /// Counterpart: NCCL's LSA barrier across the processes of a node (each process's
    /// communicator, one GPU each), composed with `grid.sync()`.
    ///
    /// # Examples
    ///
    /// One process of a job started by `scoped-sync-run -n 2 -- my-program` (or
    /// mpirun, torchrun, srun): the same program runs in each process; `step(MultiGrid,
    /// u32)` calls `sync` once per step:
    ///
    /// ```no_run
    /// use sync_host::cuda::{KernelArgs, LaunchConfig, MultiGrid, Runtime};
    /// use sync_host::process::Rendezvous;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let rendezvous = Rendezvous::from_env()?;
    /// let gpu = Runtime::open(rendezvous.local_rank())?;
    /// let group = rendezvous.join()?;
    /// let mut barrier = MultiGrid::join(&gpu, &group)?;
    /// let kernel = gpu.load_file("k.ptx")?.kernel("step")?;
    /// // SAFETY: `step(MultiGrid, u32)`, the same number of `sync`s in every process.
    /// unsafe { barrier.launch(&[&kernel], LaunchConfig::new(132, 256), vec![KernelArgs::new().arg(&100_u32)]) }?;
    /// gpu.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`PlacementError::PeerAttribute`] where this GPU cannot reach another's memory
    /// with native atomics; [`CudaError::PeerNotVisible`] where another process's GPU
    /// is hidden from this one; a failed collective ([`CudaError::ProcessGroup`]) or
    /// driver call.
    ///
    /// # Panics
    ///
    /// If the group has more than [`multi_grid::MAX_RANKS`] (8) processes.
    pub fn join(gpu: &Runtime, group: &ProcessGroup) -> Result<Self, PlacementError> {
        Self::join_driver(gpu, group, None)
    }

    /// [`join`](Self::join), with this process's host parties where `parties_here`
    /// says so ([`join_with_host_parties`](Self::join_with_host_parties)).
    fn join_driver(
        gpu: &Runtime,
        group: &ProcessGroup,
        parties_here: Option<u32>,
    ) -> Result<Self, PlacementError> {
        at_most_max_ranks("MultiGrid::join", group.size(), "processes");
        let sharing = Sharing {
            object: "MultiGrid",
            rmw_from_every_party: true,
            len: multi_grid::WORDS * 4,
            bytes: None,
        };
        let counters: Vec<ProcessMemory> = gpu
            .share_with_processes(group, &sharing, |_| true)?
            .into_iter()
            .map(|memory| memory.expect("every rank owns a counter"))
            .collect();
        let mut addresses = [0; multi_grid::MAX_RANKS];
        for (address, memory) in addresses.iter_mut().zip(&counters) {
            *address = memory.device_address();
        }
        Self::across_processes(
            gpu,
            group,
            addresses,
            multi_grid::CROSSING_PEER_ATOMICS,
            CounterMemory::Driver(counters),
            parties_here,
        )
    }

    /// [`join`](Self::join), with `parties_here` host threads of this process taking
    /// part in every phase too (each process names its own; the barrier's host parties
    /// are all of them): the kernels then also wait for every process's parties, and a
    /// party waits for every process's GPU. The parties' words are host memory every
    /// process maps ([`ProcessHostMemory`](super::ProcessHostMemory)); launch with
    /// [`launch_with_host_parties`](Self::launch_with_host_parties), which runs this
    /// process's parties (a process with none may use [`launch`](Self::launch)). A dead
    /// or failed process ends every party's wait with [`HostPartyError::Broken`] and every
    /// kernel's wait as with [`join`](Self::join). Collective: every process calls it.
    ///
    /// One machine only: the parties' words are host memory the processes share.
    ///
    /// Counterpart: host threads of each process at a
    /// `cuda::barrier<thread_scope_system>` in memory every process maps, which needs
    /// host-native atomics (here the host only adds to a word the GPUs read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use sync_host::cuda::{KernelArgs, LaunchConfig, MultiGrid, Runtime};
    /// use sync_host::process::Rendezvous;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let rendezvous = Rendezvous::from_env()?;
    /// let gpu = Runtime::open(rendezvous.local_rank())?;
    /// let group = rendezvous.join()?;
    /// let mut barrier = MultiGrid::join_with_host_parties(&gpu, &group, 1)?;
    /// let kernel = gpu.load_file("k.ptx")?.kernel("step")?;
    /// // SAFETY: `step(MultiGrid)` in every process, 100 `sync`s; the party arrives 100 times.
    /// let outcomes = unsafe {
    ///     barrier.launch_with_host_parties(&[&kernel], LaunchConfig::new(132, 256), vec![KernelArgs::new()], |mut party| {
    ///         (0..100).try_for_each(|_| party.arrive_and_wait(Duration::from_secs(10)))
    ///     })
    /// }?;
    /// assert!(outcomes.iter().all(Result::is_ok));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`join`](Self::join), and a failed mapping of the parties' words
    /// ([`CudaError::HostMemory`], a driver call).
    ///
    /// [`HostPartyError::Broken`]: super::HostPartyError::Broken
    ///
    /// # Panics
    ///
    /// As [`join`](Self::join).
    pub fn join_with_host_parties(
        gpu: &Runtime,
        group: &ProcessGroup,
        parties_here: u32,
    ) -> Result<Self, PlacementError> {
        Self::join_driver(gpu, group, Some(parties_here))
    }

    /// [`join`](Self::join) with the counters in NVSHMEM's symmetric heap: the barrier
    /// of this process's grid with the grids of every other PE of `shmem` (rank `i` of
    /// the barrier is PE `i`), each GPU reaching the others' counters at the addresses
    /// `nvshmem_ptr` gives (NVLink or PCIe peer access: NVSHMEM's direct-pointer path).
    /// The kernels, the launch and what a dead or failed process does are those of
    /// [`join`](Self::join). Collective: every process calls it.
    ///
    /// Counterpart: NVSHMEM's `nvshmemx_barrier_all_block` composed with
    /// `grid.sync()` on each GPU.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use sync_host::cuda::{KernelArgs, LaunchConfig, MultiGrid, Nvshmem, Runtime};
    /// use sync_host::process::Rendezvous;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let rendezvous = Rendezvous::from_env()?;
    /// let gpu = Runtime::open(rendezvous.local_rank())?;
    /// let shmem = Nvshmem::start(&gpu, &rendezvous.join()?)?;
    /// let mut barrier = MultiGrid::join_nvshmem(&shmem)?;
    /// let kernel = gpu.load_file("k.ptx")?.kernel("step")?;
    /// // SAFETY: `step(MultiGrid, u32)`, the same number of `sync`s in every process.
    /// unsafe { barrier.launch(&[&kernel], LaunchConfig::new(132, 256), vec![KernelArgs::new().arg(&100_u32)]) }?;
    /// gpu.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`NvshmemError::NotReachable`](super::NvshmemError::NotReachable) where a
    /// peer's heap is not load/store reachable (there,
    /// [`join_nvshmem_signals`](Self::join_nvshmem_signals) crosses); otherwise as
    /// [`join`](Self::join).
    ///
    /// # Panics
    ///
    /// If the job has more than [`multi_grid::MAX_RANKS`] (8) PEs.
    pub fn join_nvshmem(shmem: &Nvshmem) -> Result<Self, PlacementError> {
        let (gpu, group) = (shmem.gpu(), shmem.group());
        at_most_max_ranks("MultiGrid::join_nvshmem", group.size(), "PEs");
        gpu.check_group_reach(group, "MultiGrid", true)?;
        let counters = shmem.zeros(multi_grid::WORDS * 4)?;
        let mut addresses = [0; multi_grid::MAX_RANKS];
        for (pe, address) in addresses.iter_mut().enumerate().take(group.size()) {
            *address = counters.peer_address(pe).map_err(CudaError::Nvshmem)?;
        }
        Self::across_processes(
            gpu,
            group,
            addresses,
            multi_grid::CROSSING_PEER_ATOMICS,
            CounterMemory::Nvshmem(counters),
            None,
        )
    }

    /// [`join_nvshmem`](Self::join_nvshmem) crossing through NVSHMEM's device
    /// operations instead of load/store: each phase, one block of each GPU adds its
    /// GPU's arrivals to every PE's counter with NVSHMEM's signal add
    /// (`nvshmemx_signal_op`, `NVSHMEM_SIGNAL_ADD`), over whichever transport NVSHMEM
    /// picked for that PE (NVLink, PCIe, or a network: another machine), and polls its
    /// own copy. No peer needs to be load/store reachable. Collective: every process
    /// calls it.
    ///
    /// The kernels come from a crate built with sync-device's `nvshmem` feature, linked
    /// with NVSHMEM's device library by `sync_build::NvshmemShim` and loaded with
    /// [`Nvshmem::load`] (a kernel built without the feature traps at its first phase,
    /// saying so). Data a
    /// kernel writes to another PE with NVSHMEM's puts travels with a phase once the
    /// writing thread called `sync_device::nvshmem::quiet()` before its `sync`; data
    /// stored through `nvshmem_ptr` addresses travels as with [`join`](Self::join).
    /// Launch, failures and dead processes are [`join`](Self::join)'s.
    ///
    /// Counterpart: `nvshmemx_barrier_all_block` composed with `grid.sync()` where
    /// peers are remote; a signal-based barrier written with `nvshmemx_signal_op` and
    /// `nvshmem_signal_wait_until`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use sync_host::cuda::{EmbeddedModule, KernelArgs, LaunchConfig, MultiGrid, Nvshmem, Runtime};
    /// use sync_host::process::Rendezvous;
    ///
    /// // `include_cuda!` of a kernel crate with sync-device's `nvshmem` feature, linked
    /// // by `sync_build::NvshmemShim::new().link("...")` in build.rs.
    /// fn run(kernels: &EmbeddedModule) -> Result<(), Box<dyn std::error::Error>> {
    ///     let rendezvous = Rendezvous::from_env()?;
    ///     let gpu = Runtime::open(rendezvous.local_rank())?;
    ///     let shmem = Nvshmem::start(&gpu, &rendezvous.join()?)?;
    ///     let mut barrier = MultiGrid::join_nvshmem_signals(&shmem)?;
    ///     let module = shmem.load(kernels)?;
    ///     let kernel = module.kernel("step")?;
    ///     // SAFETY: `step(MultiGrid, u32)`, the same number of `sync`s in every process.
    ///     unsafe { barrier.launch(&[&kernel], LaunchConfig::new(132, 256), vec![KernelArgs::new().arg(&100_u32)]) }?;
    ///     gpu.synchronize()?;
    ///     Ok(())
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// A failed collective ([`CudaError::ProcessGroup`]), allocation or driver call.
    ///
    /// # Panics
    ///
    /// If the job has more than [`multi_grid::MAX_RANKS`] (8) PEs.
    pub fn join_nvshmem_signals(shmem: &Nvshmem) -> Result<Self, PlacementError> {
        let (gpu, group) = (shmem.gpu(), shmem.group());
        at_most_max_ranks("MultiGrid::join_nvshmem_signals", group.size(), "PEs");
        let counters = shmem.zeros(multi_grid::WORDS * 4)?;
        // NVSHMEM names a PE's copy by this PE's address and the PE's index.
        let mut addresses = [0; multi_grid::MAX_RANKS];
        addresses[..group.size()].fill(counters.device_address());
        Self::across_processes(
            gpu,
            group,
            addresses,
            multi_grid::CROSSING_NVSHMEM,
            CounterMemory::Nvshmem(counters),
            None,
        )
    }

    /// The barrier of this process (rank `group.rank()`) over the counters at
    /// `addresses` (by rank, as this process's kernels reach them by `crossing`), with
    /// `parties_here` host parties of this process in host words every process maps,
    /// or (`None`) a give-up word of its own.
    fn across_processes(
        gpu: &Runtime,
        group: &ProcessGroup,
        addresses: [sys::CUdeviceptr; multi_grid::MAX_RANKS],
        crossing: u32,
        counters: CounterMemory,
        parties_here: Option<u32>,
    ) -> Result<Self, PlacementError> {
        let rank = group.rank();
        gpu.bind()?;
        let give_up = Arc::new(match parties_here {
            None => HostPartyWords::new(0, 1)?,
            Some(here) => HostPartyWords::for_processes(gpu, group, here)?,
        });
        let on_failure = {
            let give_up = Arc::clone(&give_up);
            group.on_failure(move |_| give_up.give_up())
        };
        let mut param = MultiGridParam::new(
            addresses,
            u32::try_from(rank).expect("a rank below 8"),
            u32::try_from(group.size()).expect("a size up to 8"),
        );
        param.host_arrivals = give_up.arrivals_address();
        param.crossing = crossing;
        let host = (give_up.parties > 0).then(|| {
            param.completions = give_up.completions_address();
            param.host_parties = give_up.parties;
            Arc::clone(&give_up)
        });
        Ok(Self::from_parts(
            vec![gpu.clone()],
            Counters::Processes(AcrossProcesses {
                group: group.clone(),
                counters,
                give_up,
                _on_failure: on_failure,
            }),
            host,
            vec![param],
        ))
    }
}

/// Panics unless `count` ranks fit one barrier ([`multi_grid::MAX_RANKS`]).
fn at_most_max_ranks(what: &str, count: usize, ranks: &str) {
    assert!(
        count <= multi_grid::MAX_RANKS,
        "{what}: {count} {ranks}, at most {} take part in one barrier",
        multi_grid::MAX_RANKS
    );
}

impl AcrossProcesses {
    /// Zeroes this process's counter once its GPU's earlier work ended (the caller
    /// synchronized), then meets the group, which checks that every process launches
    /// the same shape: after this every counter is zeroed and no kernel runs.
    pub(super) fn prepare_launch(
        &self,
        gpu: &Runtime,
        grid: Dim3,
        block: Dim3,
        shared: u32,
    ) -> Result<(), CudaError> {
        if let Some(failure) = self.group.failure() {
            return Err(CudaError::ProcessGroup(ProcessGroupError::PeerFailed(
                failure,
            )));
        }
        let own = self.counters.own_address(self.group.rank());
        // A failure from here on poisons the word again (and the meeting below fails).
        // Words every process maps are zeroed once every process met (below).
        if !self.give_up.shared_by_processes() {
            self.give_up.zero();
        }
        gpu.bind()?;
        // SAFETY: this process's live counter line; no kernel uses it (the caller
        // synchronized the GPU).
        unsafe { sys::cuMemsetD32_v2(own, 0, multi_grid::WORDS) }
            .result()
            .map_err(CudaError::driver("zero a multi-GPU barrier's counter"))?;
        gpu.synchronize()?;
        let shape = format!(
            "{}×{}×{} blocks of {}×{}×{} threads, {shared} B of shared memory",
            grid.x, grid.y, grid.z, block.x, block.y, block.z
        );
        let shapes = self
            .group
            .all_gather_as("MultiGrid::launch", shape.as_bytes(), &[])
            .map_err(CudaError::ProcessGroup)?;
        if let Some((rank, theirs)) = shapes
            .iter()
            .map(|part| String::from_utf8_lossy(&part.bytes))
            .enumerate()
            .find(|(_, theirs)| *theirs != shape)
        {
            return Err(CudaError::ProcessGroup(ProcessGroupError::Mismatch {
                what: format!(
                    "MultiGrid launch shapes: rank {} launches {shape}, rank {rank} {theirs}",
                    self.group.rank()
                ),
            }));
        }
        if self.give_up.shared_by_processes() {
            // Every process's earlier kernel ended (each synchronized before the
            // meeting): rank 0 zeroes the words they share, and nobody launches before
            // it did. A failure after the zeroing sets the give-up word again; one
            // before it fails the meeting below in every process.
            if self.group.rank() == 0 {
                self.give_up.zero();
            }
            self.group
                .all_gather_as("MultiGrid host words zeroed", &[], &[])
                .map_err(CudaError::ProcessGroup)?;
        }
        Ok(())
    }

    /// Tells the group this process's launch failed.
    pub(super) fn abort(&self) {
        self.group.abort();
    }

    /// Watches the kernel just launched on `gpu`'s stream from a thread of its own:
    /// if it ends with an error, the group is aborted.
    pub(super) fn watch_kernel(&self, gpu: &Runtime) -> Result<(), CudaError> {
        let event = gpu
            .stream
            .record_event(None)
            .map_err(CudaError::driver("record the multi-GPU kernel's end"))?;
        let (group, gpu) = (self.group.clone(), gpu.clone());
        std::thread::Builder::new()
            .name("multi-grid-watch".into())
            .spawn(move || {
                if gpu.bind().is_err() {
                    return;
                }
                loop {
                    // SAFETY: a live event of this context.
                    match unsafe { sys::cuEventQuery(event.cu_event()) } {
                        sys::CUresult::CUDA_ERROR_NOT_READY => {
                            if group.failure().is_some() {
                                return;
                            }
                            std::thread::sleep(KERNEL_WATCH_PERIOD);
                        }
                        sys::CUresult::CUDA_SUCCESS => return,
                        _ => {
                            group.abort();
                            return;
                        }
                    }
                }
            })
            .map_err(|_| CudaError::Measurement("start the multi-GPU kernel's watch"))?;
        Ok(())
    }
}
