//! Memory-synchronization domains (CUDA Programming Guide 4.14): how much a kernel's
//! device-scope fences slow down while another kernel streams writes to mapped host
//! memory, with the writer in the fence kernel's domain versus the remote domain.
//!
//! A `fence.sc.gpu` must order every write its domain has in flight, cumulatively, so
//! in one domain it also waits for the writer's slow PCIe stores; with the writer
//! launched in the remote domain it need not. The row's "ours" is the remote-domain
//! configuration, its "peer" the shared default domain: the ratio is the speed-up the
//! domain gives the fences.

use harness::Gpu;
use scoped_sync::cuda::{CudaError, KernelArgs, LaunchConfig, MemSyncDomain};

use super::measure::Plan;
use super::progress::Progress;
use super::sample::{Row, Sample, Stats};

/// Fences per measurement (the writer must outlast them, interference included).
const FENCES: u32 = 2_000;
/// Words of mapped host memory the writer streams over.
const MAPPED_WORDS: u32 = 1 << 16;
/// Passes of the writer over them: long enough to cover the fence kernel.
const WRITER_ROUNDS: u32 = 20_000;
/// Threads per writer block.
const WRITER_BLOCK: u32 = 256;

/// Progress steps [`measure`] takes.
pub fn steps() -> usize {
    1
}

/// Fence cost (cycles) beside the writer, writer in `domain`: best of the repetitions.
fn fence_cycles_beside_writer(
    runtime: &Gpu,
    domain: MemSyncDomain,
    repetitions: u32,
) -> Result<f64, CudaError> {
    let fence = runtime.kernel("cost_fence_device")?;
    let writer = runtime.kernel("stream_writes")?;
    let mapped = runtime.mapped(MAPPED_WORDS as usize)?;
    let words = runtime.zeros::<u32>(2)?;
    let cycles = runtime.zeros::<u64>(1)?;
    let writer_stream = runtime.new_stream()?;
    let fence_stream = runtime.new_stream()?;
    let writer_blocks = (runtime.sm_count()? / 2).max(1);
    let mut best = u64::MAX;
    for _ in 0..repetitions.max(1) {
        let writer_args = KernelArgs::new()
            .arg(&mapped)
            .arg(MAPPED_WORDS)
            .arg(WRITER_ROUNDS);
        let fence_args = KernelArgs::new().arg(FENCES).arg(&cycles).arg(&words);
        let writer_config = LaunchConfig::new(writer_blocks, WRITER_BLOCK)
            .on(&writer_stream)
            .domain(domain);
        let fence_config = LaunchConfig::new(1, 1).on(&fence_stream);
        // SAFETY: stream_writes takes (u32 pointer, u32, u32) and cost_fence_device
        // (u32, u64 pointer, u32 pointer); every buffer outlives both kernels (the
        // streams are synchronized below, before they drop).
        unsafe {
            writer.launch(writer_config, writer_args)?;
            fence.launch(fence_config, fence_args)?;
        }
        fence_stream.synchronize()?;
        // The figure only means something if the writer was still streaming when the
        // fences ended (it was launched first, so it also ran when they began).
        let overlapped = writer_stream.is_busy()?;
        writer_stream.synchronize()?;
        if !overlapped {
            eprintln!("scoped-sync: domain benchmark: the writer ended before the fences; repetition dropped");
            continue;
        }
        best = best.min(runtime.download(&cycles)?[0]);
    }
    if best == u64::MAX {
        return Err(CudaError::Measurement(
            "the writer never overlapped the fence kernel",
        ));
    }
    Ok(best as f64 / f64::from(FENCES))
}

/// The domain row: remote-domain writer (ours) beside default-domain writer (peer).
pub fn measure(runtime: &Gpu, plan: Plan, progress: &mut Progress) -> Result<Vec<Row>, CudaError> {
    progress.step("cuda device fence beside a mapped-memory writer, by domain");
    let clock_ghz = f64::from(runtime.clock_mhz()?) / 1000.0;
    let repetitions = plan.repetitions.max(1);
    // Alternate the two configurations.
    let (mut shared, mut remote) = (Vec::new(), Vec::new());
    for _ in 0..repetitions {
        shared.push(fence_cycles_beside_writer(
            runtime,
            MemSyncDomain::Default,
            1,
        )?);
        remote.push(fence_cycles_beside_writer(
            runtime,
            MemSyncDomain::Remote,
            1,
        )?);
    }
    let (shared, remote) = (Stats::of(&shared), Stats::of(&remote));
    // Ours: the writer in the remote domain; beside it the same workload with the
    // writer left in the fence kernel's (default) domain.
    let ours = Sample::ours(
        "cuda",
        "device",
        "fence",
        "fence_seq_cst_beside_mapped_writer",
        1,
        remote.scaled(1.0 / clock_ghz),
    )
    .launched(1, 1)
    .with_cycles(remote);
    let mut same_domain = ours.peer("writer_in_same_domain", shared.scaled(1.0 / clock_ghz));
    same_domain.cycles = Some(shared);
    Ok(vec![Row::beside(ours, same_domain)])
}
