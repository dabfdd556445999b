//! Host–GPU handoff, measured: the round trip through a [`HandoffChannel`] in mapped
//! memory beside raw spinning on one mapped word and beside a kernel launch + stream
//! synchronize; a persistent kernel fed through a ring and cancelled by a
//! [`BusStopSource`]; the wake-up penalty of a wait after 5 ms, on each side. The
//! report (`cargo run --release`), `benches/gpu.rs` and `examples/persistent_kernel.rs`
//! run these.
//!
//! Every kernel here that the host feeds is launched with [`Kernel::launch_beside`]: from a
//! helper thread, the calling thread playing the host's side and waiting through the
//! [`Beside`] it gets, so that the measurements also run where launches block
//! (`CUDA_LAUNCH_BLOCKING=1`). The host's side keeps the calling thread (and so a
//! [`CorePin`](scoped_sync::cuda::CorePin) its caller set).
//!
//! [`HandoffChannel`]: scoped_sync::HandoffChannel
//! [`BusStopSource`]: scoped_sync::BusStopSource
//! [`Kernel::launch_beside`]: scoped_sync::cuda::Kernel::launch_beside

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use scoped_sync::cuda::cudarc::driver::sys;

use scoped_sync::cuda::beside::Beside;
use scoped_sync::cuda::{CudaError, HostWait, HostWaitError, KernelArgs, LaunchConfig, Stream};

use crate::Gpu;
use scoped_sync::{BusStopSource, CountingSemaphore, HandoffChannel};

/// A host wait in these measurements gives up after this.
const PATIENCE: Duration = Duration::from_secs(20);

/// Why a measurement failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum DemoError {
    /// A CUDA call failed.
    Cuda(CudaError),
    /// A host wait ended early.
    Wait(HostWaitError),
    /// An object could not be placed.
    Placement(scoped_sync::cuda::PlacementError),
    /// The kernel reported failures, or a result was wrong.
    Wrong(&'static str),
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoError::Cuda(error) => error.fmt(f),
            DemoError::Wait(error) => error.fmt(f),
            DemoError::Placement(error) => error.fmt(f),
            DemoError::Wrong(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for DemoError {}

impl From<CudaError> for DemoError {
    fn from(error: CudaError) -> Self {
        DemoError::Cuda(error)
    }
}
impl From<HostWaitError> for DemoError {
    fn from(error: HostWaitError) -> Self {
        DemoError::Wait(error)
    }
}
impl From<scoped_sync::cuda::PlacementError> for DemoError {
    fn from(error: scoped_sync::cuda::PlacementError) -> Self {
        DemoError::Placement(error)
    }
}

/// Launches `kernel` (one block of `block` threads) on `stream` from a helper thread,
/// runs the host's side `host` beside it on this thread ([`Kernel::launch_beside`]),
/// waits for the stream, and returns what `host` did. `host` waits for the kernel
/// through the [`Beside`] it gets, and must let the kernel end on every path, failures
/// included.
///
/// # Safety
///
/// The arguments match the kernel's parameters and outlive it (this waits for the
/// stream before it returns, also after a failure of `host`).
///
/// [`Kernel::launch_beside`]: scoped_sync::cuda::Kernel::launch_beside
unsafe fn beside<R>(
    runtime: &Gpu,
    stream: &Stream,
    (kernel, block): (&str, u32),
    args: KernelArgs<'_>,
    host: impl FnOnce(&Beside<'_>) -> Result<R, DemoError>,
) -> Result<R, DemoError> {
    let kernel = runtime.kernel(kernel)?;
    let config = LaunchConfig::new(1, block).on(stream);
    // SAFETY: the caller vouches for the arguments.
    let run = unsafe { kernel.launch_beside(config, args, host) };
    // A fault of the kernel shows here first (where launches block, in `run.launch`
    // too), and a failed launch next: the host's side then failed for them.
    stream.synchronize()?;
    run.launch?;
    run.host
}

/// The round trips of the comparison, all on one cache line of mapped memory:
/// raw spinning on the line's first word (the anchor's ping-pong), and a
/// [`HandoffChannel`] whose two published counts fill the same line.
///
/// One line for both because the latency of a mapped line depends on where it lands:
/// measured on an H100 with `scripts/gpu-mapped-line.cu` (9 alternating runs of 5000
/// round trips per case, host thread pinned to one of four cores in turn), three lines
/// of one allocation differed by up to 12% from one core, while raw spinning and the
/// channel's two words on the same line differed by 13 to 19 ns of about 2 µs on every
/// line and core. Separate allocations compare placements as much as protocols.
pub struct RoundTrips<'r> {
    runtime: &'r Gpu,
    line: scoped_sync::cuda::MappedBuffer<'r>,
}

impl<'r> RoundTrips<'r> {
    /// Allocates the line (with room for the whole channel).
    pub fn new(runtime: &'r Gpu) -> Result<Self, DemoError> {
        let words = std::mem::size_of::<HandoffChannel>() / 4;
        let line = runtime.mapped(words)?;
        let address = line.host_words().as_ptr() as usize;
        if address % std::mem::align_of::<HandoffChannel>() != 0 {
            return Err(DemoError::Wrong(
                "mapped memory is not aligned to a cache line",
            ));
        }
        Ok(Self { runtime, line })
    }

    /// Runs the later round trips with the kernels of `kernels` (a module with the
    /// same kernel names on the same GPU) on this line: two kernels compared on one
    /// line compare protocols, not placements.
    pub fn use_kernels(&mut self, kernels: &'r Gpu) -> Result<(), DemoError> {
        if kernels.ordinal() != self.runtime.ordinal() {
            return Err(DemoError::Wrong(
                "the kernels are on another GPU than the line",
            ));
        }
        self.runtime = kernels;
        Ok(())
    }

    /// Average round trip of the anchor's raw ping-pong: the host stores an odd value
    /// to the line's first word and spins until the GPU stores the next even one.
    pub fn raw_spin(&mut self, rounds: u32) -> Result<Duration, DemoError> {
        let word = &self.line.host_words()[0];
        word.store(0, Ordering::Relaxed);
        let stream = self.runtime.new_stream()?;
        let args = KernelArgs::new().arg(&self.line).arg(rounds);
        let host = |kernel: &Beside<'_>| -> Result<Duration, DemoError> {
            let start = Instant::now();
            let mut polls = 0_u32;
            for round in 0..rounds {
                word.store(2 * round + 1, Ordering::Release);
                while word.load(Ordering::Acquire) != 2 * round + 2 {
                    std::hint::spin_loop();
                    // The anchor's loop has no way out; this one asks about the kernel
                    // every 2^20 polls (milliseconds), which costs the loop one
                    // increment. It returns early only when the kernel has ended.
                    polls = polls.wrapping_add(1);
                    if polls % (1 << 20) == 0
                        && !kernel.is_running()?
                        && word.load(Ordering::Acquire) != 2 * round + 2
                    {
                        return Err(DemoError::Wrong("the raw ping-pong kernel ended early"));
                    }
                }
            }
            Ok(start.elapsed())
        };
        // SAFETY: `bus_raw_pingpong(u32*, u32)`; the line outlives the kernel.
        let took = unsafe { beside(self.runtime, &stream, ("bus_raw_pingpong", 1), args, host) }?;
        Ok(took / rounds.max(1))
    }

    /// Average round trip GPU release → host acquire → host release → GPU acquire
    /// through a fresh [`HandoffChannel`] on the line.
    pub fn handoff(&mut self, rounds: u32, paths: Paths) -> Result<Duration, DemoError> {
        // One clock reading before and one after the loop: a reading per round would
        // add to what is measured.
        let took = self.ping_pong(rounds, paths, |channel, kernel| {
            let start = Instant::now();
            match paths {
                Paths::Exclusive => {
                    let (mut outbox, mut inbox) = endpoints(channel)?;
                    for _ in 0..rounds {
                        let wait = kernel.wait().timeout(PATIENCE);
                        outbox.release(1);
                        inbox.acquire(wait)?;
                    }
                }
                Paths::Shared => {
                    for _ in 0..rounds {
                        let wait = kernel.wait().timeout(PATIENCE);
                        channel.release(1);
                        channel.acquire(wait)?;
                    }
                }
            }
            Ok(start.elapsed())
        })?;
        Ok(took / rounds.max(1))
    }

    /// `rounds` round trips through the exclusive endpoints, each timed alone, the host
    /// idling `idle` (untimed, its stream queried) before each release.
    fn each_round(&mut self, rounds: u32, idle: Duration) -> Result<Vec<Duration>, DemoError> {
        self.ping_pong(rounds, Paths::Exclusive, |channel, kernel| {
            let (mut outbox, mut inbox) = endpoints(channel)?;
            let mut took = Vec::with_capacity(rounds as usize);
            for _ in 0..rounds {
                let until = Instant::now() + idle;
                while Instant::now() < until {
                    kernel.is_running()?;
                    std::thread::sleep(Duration::from_micros(100).min(idle));
                }
                let wait = kernel.wait().timeout(PATIENCE);
                let start = Instant::now();
                outbox.release(1);
                inbox.acquire(wait)?;
                took.push(start.elapsed());
            }
            Ok(took)
        })
    }

    /// A fresh channel on the line, whose GPU side words the caller attaches
    /// (`attach_gpu_words`). `&mut self`: no kernel or borrow of an earlier one is left
    /// (every measurement synchronizes its stream before it returns).
    fn fresh_channel(&mut self) -> &HandoffChannel {
        let channel = self
            .line
            .host_words()
            .as_ptr()
            .cast::<HandoffChannel>()
            .cast_mut();
        // SAFETY: the buffer holds `size_of::<HandoffChannel>()` bytes aligned for it
        // (checked in `new`); the words are atomics (interior mutability) that nothing
        // else reads or writes now, as above; the channel is plain atomics, valid for
        // any bytes, and lives as long as the borrow of `self`.
        unsafe {
            channel.write(HandoffChannel::new(0, 0));
            &*channel
        }
    }

    /// Launches the ping-pong kernel of `paths` for `rounds` round trips on a fresh
    /// channel, runs the host's side `host(channel, kernel)` beside it, and checks the
    /// kernel.
    fn ping_pong<R>(
        &mut self,
        rounds: u32,
        paths: Paths,
        host: impl FnOnce(&HandoffChannel, &Beside<'_>) -> Result<R, DemoError>,
    ) -> Result<R, DemoError> {
        let (runtime, device_address) = (self.runtime, self.line.device_address());
        let channel = self.fresh_channel();
        let _gpu_words = runtime.attach_gpu_words(channel)?;
        let failures = runtime.zeros::<u32>(1)?;
        let stream = runtime.new_stream()?;
        let kernel = match paths {
            Paths::Exclusive => "bus_pingpong",
            Paths::Shared => "bus_pingpong_shared",
        };
        let args = KernelArgs::new()
            .arg(device_address)
            .arg(rounds)
            .arg(&failures);
        // SAFETY: `(channel*, u32, u32*)`; all outlive the kernel.
        let result = unsafe {
            beside(runtime, &stream, (kernel, 1), args, |kernel| {
                host(channel, kernel)
            })
        }?;
        if runtime.download(&failures)? != [0] {
            return Err(DemoError::Wrong(
                "the ping-pong kernel failed: a wait timed out or a count read back wrong",
            ));
        }
        Ok(result)
    }

    /// Each round trip, timed on the GPU, when the GPU releases after `wait` of the
    /// host waiting.
    fn host_wake(&mut self, wait: Duration, reps: u32) -> Result<Vec<Duration>, DemoError> {
        let (runtime, device_address) = (self.runtime, self.line.device_address());
        let channel = self.fresh_channel();
        let _gpu_words = runtime.attach_gpu_words(channel)?;
        let elapsed = runtime.zeros::<u64>(reps as usize)?;
        let stream = runtime.new_stream()?;
        let args = KernelArgs::new()
            .arg(device_address)
            .arg(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX))
            .arg(reps)
            .arg(&elapsed);
        let host = |kernel: &Beside<'_>| -> Result<(), DemoError> {
            let (mut outbox, mut inbox) = endpoints(channel)?;
            for _ in 0..reps {
                inbox.acquire(kernel.wait().timeout(PATIENCE))?;
                outbox.release(1);
            }
            Ok(())
        };
        // SAFETY: `bus_host_wake`'s parameters; all outlive the kernel.
        unsafe { beside(runtime, &stream, ("bus_host_wake", 1), args, host) }?;
        let elapsed = runtime.download(&elapsed)?;
        if elapsed.contains(&u64::MAX) {
            return Err(DemoError::Wrong("the GPU timed out waiting for the host"));
        }
        Ok(elapsed.into_iter().map(Duration::from_nanos).collect())
    }
}

/// How the two sides use the handoff semaphores of a round trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paths {
    /// One exclusive endpoint per side and direction: stores and polls only.
    Exclusive,
    /// The shared paths: read-modify-writes on each side's own words (the GPU's in
    /// device memory, attached to the channel in mapped memory).
    Shared,
}

/// The host's exclusive endpoints of a fresh channel: (to the GPU, from the GPU).
fn endpoints(
    channel: &HandoffChannel,
) -> Result<
    (
        scoped_sync::Producer<'_, scoped_sync::Host>,
        scoped_sync::Consumer<'_, scoped_sync::Host>,
    ),
    DemoError,
> {
    channel
        .producer()
        .zip(channel.consumer())
        .ok_or(DemoError::Wrong("a fresh channel has free endpoints"))
}

/// Average round trip through two ordinary `System`-scope [`CountingSemaphore`]s in
/// managed memory (read-modify-writes from both sides; the pages migrate).
pub fn managed_round_trip(runtime: &Gpu, rounds: u32) -> Result<Duration, DemoError> {
    let to_gpu =
        runtime.place_managed(CountingSemaphore::<{ scoped_sync::SEMAPHORE_MAX }>::new(0))?;
    let to_host =
        runtime.place_managed(CountingSemaphore::<{ scoped_sync::SEMAPHORE_MAX }>::new(0))?;
    let failures = runtime.zeros::<u32>(1)?;
    let stream = runtime.new_stream()?;
    let args = KernelArgs::new()
        .arg(&to_gpu)
        .arg(&to_host)
        .arg(rounds)
        .arg(&failures);
    let host = |kernel: &Beside<'_>| -> Result<Duration, DemoError> {
        let start = Instant::now();
        for _ in 0..rounds {
            to_gpu.release(1);
            to_host.acquire(kernel.wait().timeout(PATIENCE))?;
        }
        Ok(start.elapsed())
    };
    // SAFETY: `(sem*, sem*, u32, u32*)`; all outlive the kernel.
    let took = unsafe { beside(runtime, &stream, ("bus_managed_pingpong", 1), args, host) }?;
    if runtime.download(&failures)? != [0] {
        return Err(DemoError::Wrong("the managed ping-pong kernel timed out"));
    }
    Ok(took / rounds)
}

/// Which barrier the phases of [`barrier_phase`] go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseBarrier {
    /// A [`BusBarrier`] in mapped memory.
    ///
    /// [`BusBarrier`]: scoped_sync::BusBarrier
    Bus,
    /// The ordinary `System`-scope [`Barrier`] in managed memory (read-modify-writes
    /// from both sides).
    ///
    /// [`Barrier`]: scoped_sync::Barrier
    Managed,
}

/// Mean time of a barrier phase whose participants are one host thread and one GPU
/// thread (each writes a word before arriving that the other reads after the phase).
pub fn barrier_phase(
    runtime: &Gpu,
    phases: u32,
    barrier: PhaseBarrier,
) -> Result<Duration, DemoError> {
    match barrier {
        PhaseBarrier::Bus => {
            let barrier = runtime.place_mapped(scoped_sync::BusBarrier::new(1, 1))?;
            timed_phases(
                runtime,
                (barrier.device_address(), "bus_barrier_phases"),
                phases,
                |wait| barrier.arrive_and_wait(wait),
            )
        }
        PhaseBarrier::Managed => {
            let barrier = runtime.place_managed(scoped_sync::Barrier::new(2))?;
            timed_phases(
                runtime,
                (barrier.device_address(), "bus_managed_barrier_phases"),
                phases,
                |wait| barrier.arrive_and_wait(wait),
            )
        }
    }
}

/// Runs `phases` phases of a barrier-phase kernel (`bus_barrier_phases` or its managed
/// twin) on the barrier at `address` with one block, the host arriving with
/// `arrive_and_wait`; checks what each side saw; the mean phase.
fn timed_phases(
    runtime: &Gpu,
    (address, kernel): (sys::CUdeviceptr, &str),
    phases: u32,
    arrive_and_wait: impl Fn(HostWait<'_>) -> Result<(), HostWaitError>,
) -> Result<Duration, DemoError> {
    let gpu_data = runtime.mapped(phases as usize)?;
    let host_data = runtime.mapped(phases as usize)?;
    let copied = runtime.zeros::<u32>(phases as usize)?;
    let failures = runtime.zeros::<u32>(1)?;
    let stream = runtime.new_stream()?;
    let args = KernelArgs::new()
        .arg(address)
        .arg(phases)
        .arg(&gpu_data)
        .arg(&host_data)
        .arg(&copied)
        .arg(&failures);
    let host = |kernel: &Beside<'_>| -> Result<(Duration, bool), DemoError> {
        let mut late = false;
        let start = Instant::now();
        for phase in 0..phases {
            host_data.host_words()[phase as usize].store(phase + 1, Ordering::Relaxed);
            arrive_and_wait(kernel.wait().timeout(PATIENCE))?;
            late |= gpu_data.read(phase as usize) != phase + 1;
        }
        Ok((start.elapsed(), late))
    };
    // SAFETY: the barrier-phase kernels' parameters; all outlive the kernel.
    let (took, late) = unsafe { beside(runtime, &stream, (kernel, 1), args, host) }?;
    let copied = runtime.download(&copied)?;
    if late || runtime.download(&failures)? != [0] || !copied.iter().copied().eq(1..=phases) {
        return Err(DemoError::Wrong("a barrier phase did not order the writes"));
    }
    Ok(took / phases.max(1))
}

/// Average time of launching an empty kernel and synchronizing its stream.
pub fn launch_round_trip(runtime: &Gpu, rounds: u32) -> Result<Duration, DemoError> {
    let stream = runtime.new_stream()?;
    let kernel = runtime.kernel("bus_empty")?;
    let run = || -> Result<(), CudaError> {
        // SAFETY: `bus_empty()` takes nothing.
        unsafe { kernel.launch(LaunchConfig::new(1, 1).on(&stream), KernelArgs::new()) }?;
        stream.synchronize()
    };
    run()?;
    let start = Instant::now();
    for _ in 0..rounds {
        run()?;
    }
    Ok(start.elapsed() / rounds)
}

/// What a run of the persistent worker measured.
#[derive(Clone, Copy, Debug)]
pub struct WorkerRun {
    /// Items handed out and answered.
    pub items: u64,
    /// Items in flight at most (the ring's slots).
    pub window: u64,
    /// Wall time of the items, from the first release to the last answer.
    pub elapsed: Duration,
}

impl WorkerRun {
    /// Items per second.
    pub fn items_per_second(&self) -> f64 {
        self.items as f64 / self.elapsed.as_secs_f64()
    }
}

/// Runs the persistent worker kernel (one block of `threads`): the host feeds `items`
/// work items through a ring of `window` slots in mapped memory (a [`HandoffChannel`]
/// counts them out and the answers back), checks each answer, and finally stops the
/// kernel through a [`BusStopSource`].
pub fn persistent_worker(
    runtime: &Gpu,
    items: u64,
    window: u64,
    threads: u32,
) -> Result<WorkerRun, DemoError> {
    let ring = usize::try_from(window.max(1)).unwrap_or(1);
    let channel = runtime.place_mapped(HandoffChannel::new(0, 0))?;
    let stop = runtime.place_mapped(BusStopSource::new())?;
    let inputs = runtime.mapped(ring * 2)?;
    let outputs = runtime.mapped(ring * 2)?;
    let scratch = runtime.zeros::<u64>(2)?;
    let stream = runtime.new_stream()?;
    let args = KernelArgs::new()
        .arg(&channel)
        .arg(&stop)
        .arg(&inputs)
        .arg(&outputs)
        .arg(ring as u32)
        .arg(&scratch);
    let block = u64::from(threads);
    let answer_of = |item: u64| item * block * (block + 1) / 2;
    let (mut outbox, mut inbox) = endpoints(&channel)?;
    let host = |kernel: &Beside<'_>| -> Result<Duration, DemoError> {
        let start = Instant::now();
        let (mut sent, mut received) = (0_u64, 0_u64);
        let outcome = (|| {
            while received < items {
                while sent < items && sent - received < ring as u64 {
                    inputs.write_u64(sent as usize % ring, sent + 1);
                    outbox.release(1);
                    sent += 1;
                }
                let unit = inbox.acquire(kernel.wait().timeout(PATIENCE))?;
                if outputs.read_u64(unit as usize % ring) != answer_of(unit + 1) {
                    return Err(DemoError::Wrong("the worker returned a wrong answer"));
                }
                received += 1;
            }
            Ok(())
        })();
        let elapsed = start.elapsed();
        // On every path, failures included: the kernel ends only when asked to, and
        // where launches block the helper thread's launch returns only then.
        stop.request_stop();
        outcome.map(|()| elapsed)
    };
    // SAFETY: the worker's parameters in order; all outlive the kernel.
    let elapsed = unsafe {
        beside(
            runtime,
            &stream,
            ("bus_persistent_worker", threads),
            args,
            host,
        )
    }?;
    Ok(WorkerRun {
        items,
        window: ring as u64,
        elapsed,
    })
}

/// A wake-up measurement: round trips when the waiting side had been waiting only for
/// the round trip itself, and when it had been waiting longer. Medians, because a
/// single descheduling of the host thread (hundreds of microseconds in a virtual
/// machine) would dominate a mean of a few repetitions; the worst case is kept too.
#[derive(Clone, Copy, Debug)]
pub struct WakeUp {
    /// Median round trip with no extra wait.
    pub plain: Duration,
    /// Fastest round trip with no extra wait.
    pub plain_best: Duration,
    /// Slowest round trip with no extra wait.
    pub plain_worst: Duration,
    /// Median round trip after the long wait.
    pub after_wait: Duration,
    /// Fastest round trip after the long wait.
    pub after_wait_best: Duration,
    /// Slowest round trip after the long wait.
    pub after_wait_worst: Duration,
}

impl WakeUp {
    fn of(mut plain: Vec<Duration>, mut after_wait: Vec<Duration>) -> Self {
        plain.sort_unstable();
        after_wait.sort_unstable();
        Self {
            plain: plain.get(plain.len() / 2).copied().unwrap_or_default(),
            plain_best: plain.first().copied().unwrap_or_default(),
            plain_worst: plain.last().copied().unwrap_or_default(),
            after_wait: after_wait
                .get(after_wait.len() / 2)
                .copied()
                .unwrap_or_default(),
            after_wait_best: after_wait.first().copied().unwrap_or_default(),
            after_wait_worst: after_wait.last().copied().unwrap_or_default(),
        }
    }

    /// The penalty of the long wait in nanoseconds (median; negative: within noise).
    pub fn penalty_ns(&self) -> f64 {
        (self.after_wait.as_secs_f64() - self.plain.as_secs_f64()) * 1e9
    }
}

/// The host's wake-up penalty: the round trip (timed on the GPU) when the host has been
/// waiting `waited` before the GPU releases, beside the plain round trip; `reps` of each.
pub fn host_wake_up(runtime: &Gpu, waited: Duration, reps: u32) -> Result<WakeUp, DemoError> {
    let mut trips = RoundTrips::new(runtime)?;
    let plain = trips.host_wake(Duration::ZERO, reps)?;
    Ok(WakeUp::of(plain, trips.host_wake(waited, reps)?))
}

/// The GPU's wake-up penalty: the round trip (timed on the host) when the GPU has been
/// waiting `waited` for the host's release, beside the plain round trip; `reps` of each.
pub fn device_wake_up(runtime: &Gpu, waited: Duration, reps: u32) -> Result<WakeUp, DemoError> {
    let mut trips = RoundTrips::new(runtime)?;
    let plain = trips.each_round(reps, Duration::ZERO)?;
    Ok(WakeUp::of(plain, trips.each_round(reps, waited)?))
}
