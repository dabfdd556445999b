//! [`HostWait`]: how a host thread waits on memory that a kernel writes.
//!
//! Three duties beyond polling:
//!
//! - **Forward progress.** The CUDA execution model guarantees a running kernel
//!   progress only while some host thread keeps calling into CUDA; a host thread that
//!   only spins on mapped memory may wait for ever. The wait queries the kernel's
//!   stream every [`QUERY_PERIOD`] (except while the call that launches the kernel
//!   on another thread is under way, which sees to that itself: see
//!   [`beside`](super::beside)).
//! - **A dead kernel.** The same query reports a kernel that faulted (the error) or
//!   that finished without releasing what the host waits for; either ends the wait
//!   with an error instead of a hang, within one query period.
//! - **Wake-up latency.** It spins first, then yields, then sleeps in short steps with
//!   the thread's timer slack lowered, so that a release after a long wait is seen
//!   within a few microseconds (libcu++'s host waits grow their sleeps and can add
//!   +750 µs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cudarc::driver::sys;
use sync_shared::bus::BusWait;

use super::{CudaError, Stream};
use crate::StopToken;

/// Pure spinning at the start of a wait: a bus round trip is about 2 µs.
const SPIN: Duration = Duration::from_micros(20);
/// Then yielding the processor (a polite spin) until this much of the wait has passed.
const YIELD_UNTIL: Duration = Duration::from_micros(200);
/// Then sleeping this long between polls. With the timer slack at 1 ns the measured
/// wake-up penalty after a 5 ms wait is a few microseconds (see docs/measurements.md).
const SLEEP: Duration = Duration::from_micros(5);
/// Polls before the first reading of the clock.
const FIRST_POLLS: u32 = 512;
/// Polls between readings of the clock during the spin.
const POLLS_PER_CHECK: u32 = 32;
/// Stream queries, at the most this far apart (one costs about 0.1 µs).
pub const QUERY_PERIOD: Duration = Duration::from_micros(10);
/// Timer slack of a sleeping waiter, in nanoseconds (Linux defaults to 50 µs, which
/// alone would break the wake-up target).
#[cfg(target_os = "linux")]
const SLEEP_SLACK_NS: libc::c_ulong = 1;

/// A host-side wait for a bus object: what to watch, and what else may end it.
///
/// ```no_run
/// # use sync_host::cuda::{HostWait, Runtime};
/// # use std::time::Duration;
/// # fn demo(runtime: &Runtime, results: &sync_host::HandoffSemaphore<sync_host::GpuToHost>) -> Result<(), Box<dyn std::error::Error>> {
/// let stream = runtime.new_stream()?;
/// // ... launch the kernel that releases `results` on `stream` ...
/// let unit = results.acquire(HostWait::on(&stream).timeout(Duration::from_secs(1)))?;
/// # let _ = unit; Ok(()) }
/// ```
pub struct HostWait<'a> {
    stream: &'a Stream,
    /// Set while another thread's call that launches the awaited kernel is under way
    /// (see [`beside`](super::beside)): no query until it is clear.
    launching: Option<&'a AtomicBool>,
    limit: Option<Limit>,
    stop: Option<StopToken<'a>>,
}

/// When a [`HostWait`] gives up: a timeout starts counting when the wait first reads
/// the clock, so that a wait that ends within its first polls reads no clock at all.
#[derive(Clone, Copy)]
enum Limit {
    After(Duration),
    At(Instant),
}

/// Why a [`HostWait`] ended without its condition.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostWaitError {
    /// The deadline passed.
    TimedOut,
    /// The stop token was stopped.
    Stopped,
    /// The watched stream reported an error: the kernel faulted (the context is lost).
    KernelFailed(CudaError),
    /// The watched stream went idle and the condition still did not hold: the kernel
    /// finished without the release this wait needs.
    KernelFinished,
}

impl std::fmt::Display for HostWaitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostWaitError::TimedOut => f.write_str("the wait timed out"),
            HostWaitError::Stopped => f.write_str("the wait was interrupted by a stop request"),
            HostWaitError::KernelFailed(error) => {
                write!(f, "the kernel being waited for failed: {error}")
            }
            HostWaitError::KernelFinished => f.write_str(
                "the kernel being waited for finished without the release the wait needs",
            ),
        }
    }
}

impl std::error::Error for HostWaitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HostWaitError::KernelFailed(error) => Some(error),
            _ => None,
        }
    }
}

impl<'a> HostWait<'a> {
    /// Waits while the kernels on `stream` (queued before the wait) may still
    /// release; ends with an error if they fault or finish without releasing.
    ///
    /// An idle stream means a kernel that has ended, so the kernel must be queued
    /// before the wait begins. Where launches block (`CUDA_LAUNCH_BLOCKING=1`) the
    /// kernel cannot be launched on the waiting thread, and a launch call on another
    /// thread queues it at a time this wait cannot know: there, wait through
    /// [`launch_beside`](super::Kernel::launch_beside) instead.
    pub fn on(stream: &'a Stream) -> Self {
        Self {
            stream,
            launching: None,
            limit: None,
            stop: None,
        }
    }

    /// Queries the stream only while `launching` is clear: it is set while another
    /// thread's call that launches the awaited kernel is under way.
    pub(super) fn beside_launch(mut self, launching: &'a AtomicBool) -> Self {
        self.launching = Some(launching);
        self
    }

    /// Whether a launch call of the awaited kernel is under way on another thread.
    fn launch_under_way(&self) -> bool {
        // Acquire: pairs with the launching thread's release after the call, so that
        // the next query comes after it.
        self.launching
            .is_some_and(|launching| launching.load(Ordering::Acquire))
    }

    /// Ends the wait with [`HostWaitError::TimedOut`] after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.limit = Some(Limit::After(timeout));
        self
    }

    /// Ends the wait with [`HostWaitError::TimedOut`] at `deadline`.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.limit = Some(Limit::At(deadline));
        self
    }

    /// Ends the wait with [`HostWaitError::Stopped`] when `token` is stopped.
    pub fn stop(mut self, token: StopToken<'a>) -> Self {
        self.stop = Some(token);
        self
    }

    fn interrupted(&self, now: Instant, deadline: Option<Instant>) -> Option<HostWaitError> {
        if self.stop.is_some_and(|token| token.stop_requested()) {
            return Some(HostWaitError::Stopped);
        }
        match deadline {
            Some(deadline) if now >= deadline => Some(HostWaitError::TimedOut),
            _ => None,
        }
    }
}

impl BusWait for HostWait<'_> {
    type Error = HostWaitError;

    // Inlined, so that the first polls call `ready` directly (see `FIRST_POLLS`).
    #[inline]
    fn wait_until(&mut self, ready: &mut dyn FnMut() -> bool) -> Result<(), HostWaitError> {
        // A hand-off usually lands within the first microseconds: poll before anything
        // else, with no clock reading (which can cost more than a poll in a VM).
        for _ in 0..FIRST_POLLS {
            if ready() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        self.wait_longer(ready)
    }
}

impl HostWait<'_> {
    /// The wait after the first polls: clock, stream queries, limits, backoff.
    #[cold]
    #[inline(never)]
    fn wait_longer(&mut self, ready: &mut dyn FnMut() -> bool) -> Result<(), HostWaitError> {
        let start = Instant::now();
        let deadline = self.limit.map(|limit| match limit {
            Limit::After(timeout) => start + timeout,
            Limit::At(deadline) => deadline,
        });
        let mut bound = false;
        let mut next_query = start + QUERY_PERIOD;
        let mut slack = None;
        let result = 'wait: loop {
            // Polls between clock readings: a clock reading can cost more than a poll
            // (a virtual machine's clock may trap), and a late reading only delays a
            // deadline or a query by a microsecond or two.
            for _ in 0..POLLS_PER_CHECK {
                if ready() {
                    break 'wait Ok(());
                }
                std::hint::spin_loop();
            }
            let now = Instant::now();
            if let Some(error) = self.interrupted(now, deadline) {
                break Err(error);
            }
            // While a launch call of the kernel is under way on another thread, the
            // kernel is not queued yet or (where launches block) runs inside that
            // call, which sees to its progress: no query, which could only mistake a
            // kernel not yet queued for one that has finished.
            if now >= next_query && !self.launch_under_way() {
                next_query = now + QUERY_PERIOD;
                // Binding the context costs more than a short wait: only when needed.
                if !bound {
                    if let Err(error) = self.stream.bind() {
                        break Err(HostWaitError::KernelFailed(error));
                    }
                    bound = true;
                }
                match self.stream.query_bound() {
                    Ok(true) => {}
                    // The kernel may have released just before it ended.
                    Ok(false) if ready() => break Ok(()),
                    Ok(false) => break Err(HostWaitError::KernelFinished),
                    Err(error) => break Err(HostWaitError::KernelFailed(error)),
                }
            }
            let waited = now - start;
            if waited < SPIN {
                continue;
            } else if waited < YIELD_UNTIL {
                std::thread::yield_now();
            } else {
                slack.get_or_insert_with(LowSlack::new);
                std::thread::sleep(SLEEP);
            }
        };
        drop(slack);
        result
    }
}

/// Lowers the calling thread's timer slack while it lives (Linux), restoring it after.
struct LowSlack {
    #[cfg(target_os = "linux")]
    previous: libc::c_int,
}

impl LowSlack {
    fn new() -> Self {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: PR_GET/SET_TIMERSLACK read and set a per-thread number only.
            let previous = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
            // SAFETY: as above.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, SLEEP_SLACK_NS) };
            Self { previous }
        }
        #[cfg(not(target_os = "linux"))]
        Self {}
    }
}

impl Drop for LowSlack {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if self.previous > 0 {
            // SAFETY: as in `new`; restores the value read there.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, self.previous as libc::c_ulong) };
        }
    }
}

impl Stream {
    /// `cuStreamQuery` with this stream's context already bound: `Ok(true)` while work
    /// runs.
    pub(crate) fn query_bound(&self) -> Result<bool, CudaError> {
        // SAFETY: queries a live stream of the bound context.
        match unsafe { sys::cuStreamQuery(self.raw()) } {
            sys::CUresult::CUDA_SUCCESS => Ok(false),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(true),
            other => other
                .result()
                .map(|()| false)
                .map_err(CudaError::driver("query the stream of the awaited kernel")),
        }
    }
}
