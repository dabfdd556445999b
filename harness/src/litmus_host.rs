//! Litmus tests between a host thread and the GPU over mapped memory: runs the kernels
//! of `kernels/src/litmus_host.rs` (message passing both ways, store buffering), plays
//! the host's role of every instance, and counts each outcome.
//!
//! `scoped-sync --litmus` prints the table; `tests/gpu_litmus_host.rs` checks that no
//! forbidden (or impossible) outcome shows.
//!
//! # How a case runs
//!
//! The GPU runs [`GRID`] × [`BLOCK`] threads, one instance each; the host plays the
//! other role of all of them, batch after batch (the kernel's module docs describe the
//! handshake and how the GPU paces its warps to meet the host). The kernel is launched
//! from a thread of its own: under `CUDA_LAUNCH_BLOCKING=1` a launch returns only when
//! the kernel ends, and this kernel runs only while the host plays beside it
//! ([`Kernel::launch_beside`]).
//!
//! [`Kernel::launch_beside`]: scoped_sync::cuda::Kernel::launch_beside
//!
//! Waits are bounded: the host waits for the GPU through [`Beside::wait`] (a
//! [`HostWait`](scoped_sync::cuda::HostWait): stream queries for forward progress, and a kernel
//! that faulted or ended ends the wait) and gives up after [`PATIENCE`]. On any failure
//! the host stores the kernel's `ABORT` in `go`, and every GPU thread leaves; a GPU
//! thread that waits for a lost host gives up by itself after its own patience.

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sync_shared::bus::BusWait;

use scoped_sync::cuda::beside::Beside;
use scoped_sync::cuda::{
    CorePin, CudaError, HostWaitError, KernelArgs, LaunchConfig, MappedBuffer, Stream,
};

use crate::Gpu;

/// Blocks of a launch (all co-resident: the host waits for every block each batch).
pub const GRID: u32 = 8;
/// Threads per block (a multiple of the warp: a warp shares its delay).
pub const BLOCK: u32 = 64;
/// Instances per batch: one per GPU thread.
pub const INSTANCES_PER_BATCH: u64 = (GRID * BLOCK) as u64;
/// Batches per launch (a launch of them takes well under a second).
const BATCHES_PER_LAUNCH: u64 = 1024;
/// Words per line (128 bytes), as the kernels lay memory out.
const LINE_WORDS: usize = 32;
/// Locations per instance and GPU result registers per instance.
const LOCATIONS: usize = 2;
const REGISTERS: usize = 2;
/// What the host stores in `go` to stop the kernel (the kernel's `ABORT`).
const ABORT: u32 = u32::MAX;
/// The largest random shift of the GPU's schedule against the host's, either way: a
/// few bus round trips, since when a `go` reaches the GPU and when its accesses reach
/// host memory are not known in advance.
const SPREAD: Duration = Duration::from_micros(3);
/// The host's time per instance assumed before the first batch is measured.
const FIRST_PACE_NS: f64 = 50.0;
/// How long the host waits for the GPU at any one point (a batch takes microseconds
/// to a millisecond).
pub const PATIENCE: Duration = Duration::from_secs(10);
/// Histogram slots: two registers, each old (0), new (1) or impossible (2), two bits
/// apart.
pub const OUTCOMES: usize = 16;

/// An outcome's register: the value read was written by the previous batch.
const OLD: usize = 0;
/// The value read was written by this batch.
const NEW: usize = 1;
/// Neither: the handshake and coherence forbid it in every variant.
const IMPOSSIBLE: usize = 2;

/// Which roles the host and the GPU play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Message passing, host to GPU: the host writes `x` then the flag `y`, the GPU
    /// reads `y` (`r0`) then `x` (`r1`).
    MpToGpu,
    /// Message passing, GPU to host: the GPU writes, the host reads `y` (`r0`) then
    /// `x` (`r1`).
    MpToHost,
    /// Store buffering: the host stores `x` and reads `y` (`r0`), the GPU stores `y`
    /// and reads `x` (`r1`).
    Sb,
}

impl Shape {
    fn kernel(self) -> &'static str {
        match self {
            Shape::MpToGpu => "litmus_host_mp_to_gpu",
            Shape::MpToHost => "litmus_host_mp_to_host",
            Shape::Sb => "litmus_host_sb",
        }
    }

    /// The test, as the table names it.
    pub fn test(self) -> &'static str {
        match self {
            Shape::MpToGpu | Shape::MpToHost => "MP",
            Shape::Sb => "SB",
        }
    }

    /// Who writes and who reads, as the table names it.
    pub fn direction(self) -> &'static str {
        match self {
            Shape::MpToGpu => "host→GPU",
            Shape::MpToHost => "GPU→host",
            Shape::Sb => "host↔GPU",
        }
    }

    /// The weak outcome: MP `r0` new, `r1` old (the flag seen, the data not); SB both
    /// old.
    pub fn weak(self) -> usize {
        match self {
            Shape::MpToGpu | Shape::MpToHost => outcome(NEW, OLD),
            Shape::Sb => outcome(OLD, OLD),
        }
    }
}

/// One case: a shape's variant, and what the memory models say of its weak outcome.
#[derive(Clone, Copy, Debug)]
pub struct HostCase {
    /// The roles.
    pub shape: Shape,
    /// The variant (see the shape's table in `kernels/src/litmus_host.rs`).
    pub variant: u32,
    /// What the variant does, for the table: the GPU's side, then the host's.
    pub what: &'static str,
    /// Whether the models allow the weak outcome.
    pub weak_allowed: bool,
}

impl HostCase {
    /// The case in words: `MP host→GPU variant 1 (ld.acquire.sys / Release)`.
    pub fn label(&self) -> String {
        format!(
            "{} {} variant {} ({})",
            self.shape.test(),
            self.shape.direction(),
            self.variant,
            self.what
        )
    }
}

const fn case(shape: Shape, variant: u32, what: &'static str, weak_allowed: bool) -> HostCase {
    HostCase {
        shape,
        variant,
        what,
        weak_allowed,
    }
}

/// Every case the suite runs (reasons in `kernels/src/litmus_host.rs`).
pub const CASES: &[HostCase] = &[
    case(Shape::MpToGpu, 0, "relaxed", true),
    case(Shape::MpToGpu, 1, "ld.acquire.sys / Release", false),
    case(Shape::MpToGpu, 2, "fence.acq_rel.sys / Release", false),
    case(Shape::MpToGpu, 3, "ld.acquire.gpu / Release", true),
    case(Shape::MpToHost, 0, "relaxed", true),
    case(Shape::MpToHost, 1, "st.release.sys / Acquire", false),
    case(Shape::MpToHost, 2, "fence.acq_rel.sys / Acquire", false),
    case(Shape::MpToHost, 3, "st.release.gpu / Acquire", true),
    case(Shape::Sb, 0, "relaxed", true),
    case(Shape::Sb, 1, "fence.sc.sys / fence(SeqCst)", false),
    case(Shape::Sb, 2, "fence.acq_rel.sys / fence(SeqCst)", true),
    case(Shape::Sb, 3, "fence.sc.gpu / fence(SeqCst)", true),
];

/// Packs two registers into an outcome (the histogram's index).
const fn outcome(r0: usize, r1: usize) -> usize {
    r0 | (r1 << 2)
}

/// How a value read in batch `batch` counts.
fn classify(value: u32, batch: u32) -> usize {
    if value == batch {
        NEW
    } else if value == batch.wrapping_sub(1) {
        OLD
    } else {
        IMPOSSIBLE
    }
}

/// What a case showed.
#[derive(Clone, Debug)]
pub struct HostOutcomes {
    /// The case.
    pub case: HostCase,
    /// Instances run.
    pub instances: u64,
    /// Count of each outcome.
    pub histogram: [u64; OUTCOMES],
}

impl HostOutcomes {
    /// Instances that ended in the weak outcome.
    pub fn weak(&self) -> u64 {
        self.histogram[self.case.shape.weak()]
    }

    /// Whether a forbidden outcome showed.
    pub fn violates_the_model(&self) -> bool {
        !self.case.weak_allowed && self.weak() > 0
    }

    /// Instances in which a register read neither the previous batch's value nor this
    /// one's: no variant allows it.
    pub fn impossible(&self) -> u64 {
        self.histogram
            .iter()
            .enumerate()
            .filter(|&(outcome, _)| outcome & 3 == IMPOSSIBLE || outcome >> 2 == IMPOSSIBLE)
            .map(|(_, &count)| count)
            .sum()
    }

    /// The outcomes that showed, most frequent first, as the table prints them
    /// (`r0=1 r1=0`: `r0` new, `r1` old; `?`: impossible).
    pub fn seen(&self) -> Vec<(String, u64)> {
        let seen = crate::litmus::by_frequency(&self.histogram);
        let show = |register: usize| match register {
            OLD => "0",
            NEW => "1",
            _ => "?",
        };
        seen.into_iter()
            .map(|(outcome, count)| {
                (
                    format!("r0={} r1={}", show(outcome & 3), show(outcome >> 2)),
                    count,
                )
            })
            .collect()
    }
}

/// The mapped memory of a case (layout in the kernel's module docs).
struct Memory<'r> {
    control: MappedBuffer<'r>,
    locations: MappedBuffer<'r>,
    results: MappedBuffer<'r>,
}

impl Memory<'_> {
    fn go(&self) -> &AtomicU32 {
        &self.control.host_words()[0]
    }

    fn pace(&self) -> &AtomicU32 {
        &self.control.host_words()[1]
    }

    fn ready(&self, block: usize) -> &AtomicU32 {
        &self.control.host_words()[(1 + block) * LINE_WORDS]
    }

    /// Whether every block stored `ready == batch` (it is done with the batch before,
    /// and its result registers are written: the acquire pairs with its release).
    fn all_ready(&self, batch: u32) -> bool {
        (0..GRID as usize).all(|block| self.ready(block).load(Ordering::Acquire) == batch)
    }

    /// Location `index` of instance `instance`.
    fn location(&self, index: usize, instance: usize) -> &AtomicU32 {
        let instances = INSTANCES_PER_BATCH as usize;
        &self.locations.host_words()[(index * instances + instance) * LINE_WORDS]
    }

    /// GPU result register `index` of instance `instance`.
    fn result(&self, instance: usize, index: usize) -> u32 {
        self.results.host_words()[instance * REGISTERS + index].load(Ordering::Relaxed)
    }
}

/// What the host carries from batch to batch.
struct HostSide<'m> {
    case: HostCase,
    memory: &'m Memory<'m>,
    /// The host's own registers: two per instance.
    registers: Vec<u32>,
    /// The host's measured time per instance (a moving average), in nanoseconds.
    pace_ns: f64,
    /// GPU cycles per microsecond (the SM clock in MHz).
    clock_mhz: u32,
    histogram: [u64; OUTCOMES],
}

impl HostSide<'_> {
    /// Raises `go` for `batch` with the pace the GPU should expect, and plays the host's
    /// role of every instance.
    fn play(&mut self, batch: u32) {
        let memory = self.memory;
        let cycles = self.pace_ns * f64::from(self.clock_mhz) / 1000.0;
        // At least a cycle, and far below `ABORT` (a slow host is still a pace).
        let pace = cycles.clamp(1.0, 1.0e6) as u32;
        memory.pace().store(pace, Ordering::Relaxed);
        memory.go().store(batch, Ordering::Release);
        let variant = self.case.variant;
        let start = Instant::now();
        match self.case.shape {
            Shape::MpToGpu => {
                let flag = if variant == 0 {
                    Ordering::Relaxed
                } else {
                    Ordering::Release
                };
                for instance in 0..INSTANCES_PER_BATCH as usize {
                    memory.location(0, instance).store(batch, Ordering::Relaxed);
                    memory.location(1, instance).store(batch, flag);
                }
            }
            Shape::MpToHost => {
                let flag = if variant == 0 {
                    Ordering::Relaxed
                } else {
                    Ordering::Acquire
                };
                for instance in 0..INSTANCES_PER_BATCH as usize {
                    let seen_flag = memory.location(1, instance).load(flag);
                    let seen_data = memory.location(0, instance).load(Ordering::Relaxed);
                    self.registers[2 * instance] = seen_flag;
                    self.registers[2 * instance + 1] = seen_data;
                }
            }
            Shape::Sb => {
                for instance in 0..INSTANCES_PER_BATCH as usize {
                    memory.location(0, instance).store(batch, Ordering::Relaxed);
                    if variant != 0 {
                        fence(Ordering::SeqCst);
                    }
                    self.registers[2 * instance] =
                        memory.location(1, instance).load(Ordering::Relaxed);
                }
            }
        }
        let per_instance = start.elapsed().as_nanos() as f64 / INSTANCES_PER_BATCH as f64;
        self.pace_ns = 0.75 * self.pace_ns + 0.25 * per_instance;
    }

    /// Counts the outcome of every instance of `batch` (after every block is ready for
    /// the next one).
    fn count(&mut self, batch: u32) {
        let memory = self.memory;
        for instance in 0..INSTANCES_PER_BATCH as usize {
            let (r0, r1) = match self.case.shape {
                Shape::MpToGpu => (memory.result(instance, 0), memory.result(instance, 1)),
                Shape::MpToHost => (
                    self.registers[2 * instance],
                    self.registers[2 * instance + 1],
                ),
                Shape::Sb => (self.registers[2 * instance], memory.result(instance, 0)),
            };
            self.histogram[outcome(classify(r0, batch), classify(r1, batch))] += 1;
        }
    }
}

/// A failed wait as the caller sees it.
fn wait_error(error: HostWaitError) -> CudaError {
    match error {
        HostWaitError::KernelFailed(error) => error,
        HostWaitError::KernelFinished => CudaError::Measurement(
            "litmus_host: the kernel ended before the host's batches did (a GPU thread gave up waiting for the host?)",
        ),
        _ => CudaError::Measurement(
            "litmus_host: the GPU did not finish a batch within the host's patience",
        ),
    }
}

/// Runs `case` until at least `instances` instances ran, with randomness from `seed`.
///
/// # Errors
///
/// A CUDA call failed, the GPU did not answer within [`PATIENCE`], the kernel ended
/// early, or a GPU thread gave up waiting for the host ([`CudaError::Measurement`]).
pub fn run(
    runtime: &Gpu,
    case: &HostCase,
    instances: u64,
    seed: u32,
) -> Result<HostOutcomes, CudaError> {
    let kernel = runtime.kernel(case.shape.kernel())?;
    // The host waits for every block before each batch: a block that is not resident
    // would never come.
    let max = kernel.max_coresident_blocks(BLOCK)?;
    if GRID > max {
        return Err(CudaError::GridTooLarge {
            requested: GRID,
            max,
        });
    }
    let per_batch = INSTANCES_PER_BATCH as usize;
    let memory = Memory {
        control: runtime.mapped((1 + GRID as usize) * LINE_WORDS)?,
        locations: runtime.mapped(LOCATIONS * per_batch * LINE_WORDS)?,
        results: runtime.mapped(REGISTERS * per_batch)?,
    };
    let failures = runtime.zeros::<u32>(1)?;
    // The counter is zeroed on the default stream, which the kernel's stream (created
    // non-blocking) does not wait for.
    runtime.synchronize()?;
    let stream = runtime.new_stream()?;
    let clock_mhz = runtime.clock_mhz()?.max(1);
    let spread = u32::try_from(SPREAD.as_nanos() * u128::from(clock_mhz) / 1000)
        .unwrap_or(u32::MAX / 4)
        .min(u32::MAX / 4);
    let mut host = HostSide {
        case: *case,
        memory: &memory,
        registers: vec![0; 2 * per_batch],
        pace_ns: FIRST_PACE_NS,
        clock_mhz,
        histogram: [0; OUTCOMES],
    };
    let batches = instances.div_ceil(INSTANCES_PER_BATCH).max(1);
    let mut first = 1_u64;
    while first <= batches {
        let count = BATCHES_PER_LAUNCH.min(batches + 1 - first);
        let (first32, count32) = match (u32::try_from(first), u32::try_from(count)) {
            (Ok(first), Ok(count)) if first.checked_add(count).is_some_and(|end| end < ABORT) => {
                (first, count)
            }
            _ => return Err(CudaError::Measurement("litmus_host: too many batches")),
        };
        let args = KernelArgs::new()
            .arg(case.variant)
            .arg(first32)
            .arg(count32)
            .arg(seed ^ first32.wrapping_mul(0x9e37_79b9))
            .arg(spread)
            .arg(&memory.control)
            .arg(&memory.locations)
            .arg(&memory.results)
            .arg(&failures);
        launch_and_play(runtime, &stream, &mut host, args, first32, count32)?;
        first += count;
    }
    if runtime.download(&failures)? != [0] {
        return Err(CudaError::Measurement(
            "litmus_host: a GPU thread gave up waiting for the host",
        ));
    }
    Ok(HostOutcomes {
        case: *case,
        instances: host.histogram.iter().sum(),
        histogram: host.histogram,
    })
}

/// One launch of `count` batches from `first`: the kernel launched beside the host's
/// role (see [`Kernel::launch_beside`]), which plays on this thread.
///
/// [`Kernel::launch_beside`]: scoped_sync::cuda::Kernel::launch_beside
fn launch_and_play(
    runtime: &Gpu,
    stream: &Stream,
    host: &mut HostSide<'_>,
    args: KernelArgs<'_>,
    first: u32,
    count: u32,
) -> Result<(), CudaError> {
    let memory = host.memory;
    // `ready` words still say how the previous launch ended: clear them, so that the
    // first wait sees this launch's blocks (no kernel runs now).
    for block in 0..GRID as usize {
        memory.ready(block).store(0, Ordering::Relaxed);
    }
    let kernel = runtime.kernel(host.case.shape.kernel())?;
    let config = LaunchConfig::new(GRID, BLOCK).on(stream);
    // SAFETY: the litmus_host kernels take (variant, first, batches, seed, spread: u32;
    // control, locations, results: mapped u32*; failures: device u32*), as `args`
    // holds; the memory outlives the kernel (the stream is synchronized below, and the
    // buffers outlive this call).
    let run = unsafe {
        kernel.launch_beside(config, args, |kernel| {
            // The host's loop times set the GPU's pace: keep this thread on one core
            // while it plays. Pinned only now, after the launching thread was spawned:
            // a thread inherits its creator's affinity, and where launches block that
            // one waits inside the launch call (spinning, by the driver's default)
            // for the whole kernel, which must not be on the host's core.
            let _pin = CorePin::current_core();
            let played = play_batches(host, kernel, first, count);
            if played.is_err() {
                // Every GPU thread leaves at its next look at `go`.
                memory.go().store(ABORT, Ordering::Release);
            }
            played
        })
    };
    // The kernel ends: it finished its batches, saw `ABORT`, or gave up on the host.
    let ended = stream.synchronize();
    // The launch's own error (a refused launch, a fault) explains a failed wait best.
    run.launch?;
    ended?;
    run.host.map_err(wait_error)
}

/// The host's side of one launch: batches `first .. first + count`.
fn play_batches(
    host: &mut HostSide<'_>,
    kernel: &Beside<'_>,
    first: u32,
    count: u32,
) -> Result<(), HostWaitError> {
    let memory = host.memory;
    let wait_for = |batch: u32| {
        kernel
            .wait()
            .timeout(PATIENCE)
            .wait_until(&mut || memory.all_ready(batch))
    };
    wait_for(first)?;
    for batch in first..first + count {
        host.play(batch);
        wait_for(batch + 1)?;
        host.count(batch);
    }
    Ok(())
}
