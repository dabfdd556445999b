//! The host–device failure modes, measured: how long a flag the host sets takes to
//! reach a waiting kernel in each placement the runtime offers (round trips, the kernel
//! answering through mapped memory), and how long a stream gated on a handoff
//! semaphore's count ([`Stream::wait_released`]) takes to start its kernel after the
//! host releases, beside a spinning kernel acquiring the same units.
//! `tests/gpu_host_device.rs` runs these and checks that every flag arrives; the
//! report (`report/src/report/host_device.rs`) records the figures.
//!
//! [`Stream::wait_released`]: scoped_sync::cuda::Stream::wait_released

use std::time::{Duration, Instant};

use scoped_sync::cuda::beside::Beside;
use scoped_sync::cuda::cudarc::driver::sys;
use scoped_sync::cuda::{
    CudaError, HostWait, HostWaitError, KernelArgs, LaunchConfig, MappedBuffer, PlacementError,
    Stream, StreamMemOpError,
};
use scoped_sync::{BusWait, HandoffSemaphore, HostToGpu};

use crate::bus_demo::DemoError;
use crate::Gpu;

/// Why a measurement here failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostDeviceError {
    /// A launch, a wait, a placement, or a wrong result (as in `bus_demo`).
    Demo(DemoError),
    /// A stream memory operation was refused.
    StreamMemOp(StreamMemOpError),
}

impl std::fmt::Display for HostDeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Demo(error) => error.fmt(f),
            Self::StreamMemOp(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for HostDeviceError {}

impl From<DemoError> for HostDeviceError {
    fn from(error: DemoError) -> Self {
        Self::Demo(error)
    }
}
impl From<CudaError> for HostDeviceError {
    fn from(error: CudaError) -> Self {
        Self::Demo(DemoError::Cuda(error))
    }
}
impl From<HostWaitError> for HostDeviceError {
    fn from(error: HostWaitError) -> Self {
        Self::Demo(DemoError::Wait(error))
    }
}
impl From<PlacementError> for HostDeviceError {
    fn from(error: PlacementError) -> Self {
        Self::Demo(DemoError::Placement(error))
    }
}
impl From<StreamMemOpError> for HostDeviceError {
    fn from(error: StreamMemOpError) -> Self {
        Self::StreamMemOp(error)
    }
}

/// A result of this module.
type Result<T, E = HostDeviceError> = std::result::Result<T, E>;

/// A driver error as the runtime reports it.
fn driver(
    operation: &'static str,
) -> impl FnOnce(scoped_sync::cuda::cudarc::driver::DriverError) -> CudaError {
    move |error| CudaError::Driver { operation, error }
}

/// Where the flag lives and how the host sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlagPlacement {
    /// A `HandoffSemaphore<HostToGpu>` in pinned mapped memory
    /// ([`Runtime::place_mapped`](scoped_sync::cuda::Runtime::place_mapped)): the host
    /// releases a unit (one store), the kernel polls its consumer endpoint.
    Mapped,
    /// The same semaphore in managed memory
    /// ([`Runtime::place_managed`](scoped_sync::cuda::Runtime::place_managed)).
    Managed,
    /// A word of device memory (`cuMemAlloc`) set by a copy from pinned memory on
    /// another stream (`cuMemcpyHtoDAsync`).
    DeviceCopy,
    /// A word of device memory set by a stream write on another stream
    /// ([`Stream::write_value64`]).
    DeviceStreamWrite,
}

impl FlagPlacement {
    /// Every placement, in the order of the docs' table.
    pub const ALL: [FlagPlacement; 4] = [
        Self::Mapped,
        Self::Managed,
        Self::DeviceCopy,
        Self::DeviceStreamWrite,
    ];

    /// An identifier for records and messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mapped => "mapped",
            Self::Managed => "managed",
            Self::DeviceCopy => "device_copy",
            Self::DeviceStreamWrite => "device_stream_write",
        }
    }
}

/// Launches `kernel` (one block of `block` threads) on `stream` from a helper thread,
/// runs `host` beside it, waits for the stream, and returns what `host` returned.
///
/// # Safety
///
/// `args` match the kernel's parameters and outlive it (this waits for the stream
/// before it returns, also after a failure of `host`).
unsafe fn beside<R>(
    gpu: &Gpu,
    stream: &Stream,
    (kernel, block): (&str, u32),
    args: KernelArgs<'_>,
    host: impl FnOnce(&Beside<'_>) -> Result<R>,
) -> Result<R> {
    let kernel = gpu.kernel(kernel)?;
    let config = LaunchConfig::new(1, block).on(stream);
    // SAFETY: the caller vouches for the arguments.
    let run = unsafe { kernel.launch_beside(config, args, host) };
    stream.synchronize()?;
    run.launch?;
    run.host
}

/// A zeroed 8-byte word of device memory from `cuMemAlloc`, freed on drop (after the
/// kernels that use it have ended: its users synchronize their streams first).
struct DeviceWord<'g> {
    gpu: &'g Gpu,
    address: sys::CUdeviceptr,
}

impl<'g> DeviceWord<'g> {
    fn new(gpu: &'g Gpu) -> Result<Self> {
        gpu.cudarc_context()
            .bind_to_thread()
            .map_err(driver("bind the context"))?;
        let mut address = 0;
        // SAFETY: an out-pointer to a local.
        unsafe { sys::cuMemAlloc_v2(&mut address, 8) }
            .result()
            .map_err(driver("allocate a device word"))?;
        let word = Self { gpu, address };
        // SAFETY: the 8 bytes just allocated (two 32-bit words).
        unsafe { sys::cuMemsetD32_v2(address, 0, 2) }
            .result()
            .map_err(driver("zero a device word"))?;
        Ok(word)
    }
}

impl Drop for DeviceWord<'_> {
    fn drop(&mut self) {
        let _ = self.gpu.cudarc_context().bind_to_thread();
        // SAFETY: allocated in `new`, freed once; no kernel uses it any more.
        unsafe { sys::cuMemFree_v2(self.address) };
    }
}

/// Nanoseconds of `duration`, saturated.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// `rounds` round trips host sets the flag → the waiting kernel sees it → the kernel
/// answers in mapped memory → the host sees the answer, each timed on the host, with
/// the flag in `placement`. The kernel gives up after `patience` without the flag and
/// the host after `patience` without the answer: then the result is an error, never a
/// hang.
///
/// # Errors
///
/// [`DemoError::Placement`] where the placement is refused (managed memory without
/// `concurrentManagedAccess`), [`DemoError::Wait`] or [`DemoError::Wrong`] when a flag
/// or an answer did not arrive in time (inside [`HostDeviceError::Demo`]).
pub fn flag_round_trips(
    gpu: &Gpu,
    placement: FlagPlacement,
    rounds: u32,
    patience: Duration,
) -> Result<Vec<Duration>> {
    let answer = gpu.mapped(2)?;
    let failures = gpu.zeros::<u32>(1)?;
    let stream = gpu.new_stream()?;
    let took = match placement {
        FlagPlacement::Mapped | FlagPlacement::Managed => {
            let work = if placement == FlagPlacement::Mapped {
                gpu.place_mapped(HandoffSemaphore::<HostToGpu>::new(0))?
            } else {
                gpu.place_managed(HandoffSemaphore::<HostToGpu>::new(0))?
            };
            let args = KernelArgs::new()
                .arg(&work)
                .arg(&answer)
                .arg(rounds)
                .arg(nanos(patience))
                .arg(&failures);
            let host = |kernel: &Beside<'_>| {
                let mut producer = work
                    .producer()
                    .ok_or(DemoError::Wrong("a fresh semaphore has a free producer"))?;
                timed_rounds(kernel, &answer, rounds, patience, |_| {
                    producer.release(1);
                    Ok(())
                })
            };
            // SAFETY: `hd_answer_handoff(sem*, u64*, u32, u64, u32*)`; all outlive it.
            unsafe { beside(gpu, &stream, ("hd_answer_handoff", 1), args, host) }?
        }
        FlagPlacement::DeviceCopy | FlagPlacement::DeviceStreamWrite => {
            // Not from the runtime's stream-ordered pool (`Runtime::zeros`): the driver
            // refuses stream memory operations there.
            let flag = DeviceWord::new(gpu)?;
            let flag_address = flag.address;
            // The copies' sources: pinned, one slot per round (a pending copy's source
            // is never overwritten).
            let sources = gpu.mapped(2 * rounds as usize)?;
            for round in 0..rounds as usize {
                sources.write_u64(round, round as u64 + 1);
            }
            let other = gpu.new_stream()?;
            let args = KernelArgs::new()
                .arg(flag_address)
                .arg(&answer)
                .arg(rounds)
                .arg(nanos(patience))
                .arg(&failures);
            let host = |kernel: &Beside<'_>| {
                timed_rounds(kernel, &answer, rounds, patience, |round| {
                    set_device_flag(placement, &other, flag_address, &sources, round)
                })
            };
            // SAFETY: `hd_answer_word(u64*, u64*, u32, u64, u32*)`; all outlive it.
            let took = unsafe { beside(gpu, &stream, ("hd_answer_word", 1), args, host) };
            other.synchronize()?;
            took?
        }
    };
    if gpu.download(&failures)? != [0] {
        return Err(DemoError::Wrong("the kernel gave up waiting for the host's flag").into());
    }
    Ok(took)
}

/// Sets the device-memory flag to `round + 1` through the driver, on `other`.
fn set_device_flag(
    placement: FlagPlacement,
    other: &Stream,
    flag: sys::CUdeviceptr,
    sources: &MappedBuffer<'_>,
    round: u32,
) -> Result<()> {
    if placement == FlagPlacement::DeviceStreamWrite {
        // SAFETY: `flag` is a live device word that the kernel only reads.
        unsafe { other.write_value64(flag, u64::from(round) + 1) }?;
        return Ok(());
    }
    other
        .cudarc()
        .context()
        .bind_to_thread()
        .map_err(driver("bind the context"))?;
    let source = sources.host_words()[2 * round as usize..].as_ptr();
    // SAFETY: 8 bytes from a pinned slot that lives (unchanged) until `other` is
    // synchronized, into a live device word; a stream of the bound context.
    unsafe { sys::cuMemcpyHtoDAsync_v2(flag, source.cast(), 8, other.cudarc().cu_stream()) }
        .result()
        .map_err(driver("copy the flag to device memory"))?;
    Ok(())
}

/// `rounds` rounds of: `set(round)`, then wait through `kernel` (up to `patience`)
/// until `answer` (u64 word 0) reads `round + 1`; each round timed.
fn timed_rounds(
    kernel: &Beside<'_>,
    answer: &MappedBuffer<'_>,
    rounds: u32,
    patience: Duration,
    mut set: impl FnMut(u32) -> Result<()>,
) -> Result<Vec<Duration>> {
    let mut took = Vec::with_capacity(rounds as usize);
    for round in 0..rounds {
        let expected = u64::from(round) + 1;
        let mut wait = kernel.wait().timeout(patience);
        let start = Instant::now();
        set(round)?;
        wait.wait_until(&mut || answer.read_u64(0) >= expected)?;
        took.push(start.elapsed());
    }
    Ok(took)
}

/// `rounds` round trips host releases a unit → a kernel gated behind
/// [`Stream::wait_released`] starts → it answers in mapped memory → the host sees the
/// answer, each timed on the host from the release. Before each release the wait and
/// the kernel are queued and the host idles `settle` (untimed) so that the front end
/// is already parked on the wait. Default launch mode only (the host's thread queues
/// the launches).
///
/// # Errors
///
/// [`HostDeviceError::StreamMemOp`] if the stream wait is refused,
/// [`DemoError::Wrong`] if a gated kernel saw a wrong payload, [`DemoError::Wait`] if an
/// answer did not come within `patience`.
pub fn gated_round_trips(
    gpu: &Gpu,
    rounds: u32,
    settle: Duration,
    patience: Duration,
) -> Result<Vec<Duration>> {
    let work = gpu.place_mapped(HandoffSemaphore::<HostToGpu>::new(0))?;
    let words = gpu.mapped(8)?; // u64 0: the answer; u32 4: payload; u32 6: seen
    let stream = gpu.new_stream()?;
    let kernel = gpu.kernel("hd_gated_ack")?;
    let mut producer = work
        .producer()
        .ok_or(DemoError::Wrong("a fresh semaphore has a free producer"))?;
    let mut took = Vec::with_capacity(rounds as usize);
    let result = (|| {
        for round in 1..=u64::from(rounds) {
            stream.wait_released(&work, round)?;
            let args = KernelArgs::new()
                .arg(words.device_address() + 16)
                .arg(words.device_address() + 24)
                .arg(&words)
                .arg(round);
            // SAFETY: `hd_gated_ack(u32*, u32*, u64*, u64)`; the buffer outlives it
            // (the stream is synchronized below before anything drops).
            unsafe { kernel.launch(LaunchConfig::new(1, 1).on(&stream), args) }?;
            idle(&stream, settle)?;
            words.host_words()[4].store(round as u32, std::sync::atomic::Ordering::Relaxed);
            let start = Instant::now();
            producer.release(1);
            let mut wait = HostWait::on(&stream).timeout(patience);
            wait.wait_until(&mut || words.read_u64(0) >= round)?;
            took.push(start.elapsed());
            if words.read(6) != round as u32 {
                return Err(DemoError::Wrong("the gated kernel missed the payload").into());
            }
        }
        Ok(())
    })();
    // A wait left unsatisfied after a failure would keep the stream (and the drops
    // below, which wait for the context) waiting: release what it waits for.
    if result.is_err() {
        producer.release(u64::from(rounds));
    }
    drop(producer);
    stream.synchronize()?;
    result.map(|()| took)
}

/// `rounds` round trips host releases a unit → a spinning kernel acquires it (the
/// consumer endpoint, polling) → it answers in mapped memory → the host sees the
/// answer: the peer of [`gated_round_trips`] with the same words and answer path, each
/// round timed on the host from the release after an untimed idle of `settle`.
pub fn spinning_round_trips(
    gpu: &Gpu,
    rounds: u32,
    settle: Duration,
    patience: Duration,
) -> Result<Vec<Duration>> {
    let work = gpu.place_mapped(HandoffSemaphore::<HostToGpu>::new(0))?;
    let answer = gpu.mapped(2)?;
    let failures = gpu.zeros::<u32>(1)?;
    let stream = gpu.new_stream()?;
    let args = KernelArgs::new()
        .arg(&work)
        .arg(&answer)
        .arg(rounds)
        .arg(nanos(patience + settle))
        .arg(&failures);
    let host = |kernel: &Beside<'_>| {
        let mut producer = work
            .producer()
            .ok_or(DemoError::Wrong("a fresh semaphore has a free producer"))?;
        let mut took = Vec::with_capacity(rounds as usize);
        for round in 1..=u64::from(rounds) {
            let until = Instant::now() + settle;
            while Instant::now() < until {
                kernel.is_running()?;
            }
            let mut wait = kernel.wait().timeout(patience);
            let start = Instant::now();
            producer.release(1);
            wait.wait_until(&mut || answer.read_u64(0) >= round)?;
            took.push(start.elapsed());
        }
        Ok(took)
    };
    // SAFETY: `hd_answer_handoff(sem*, u64*, u32, u64, u32*)`; all outlive it.
    let took = unsafe { beside(gpu, &stream, ("hd_answer_handoff", 1), args, host) }?;
    if gpu.download(&failures)? != [0] {
        return Err(DemoError::Wrong("the spinning kernel gave up").into());
    }
    Ok(took)
}

/// Idles `settle`, querying `stream` (the host's part in its progress).
fn idle(stream: &Stream, settle: Duration) -> Result<()> {
    let until = Instant::now() + settle;
    while Instant::now() < until {
        stream.is_busy()?;
    }
    Ok(())
}
