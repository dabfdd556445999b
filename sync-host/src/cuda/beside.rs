//! [`launch_beside`]: a kernel and the host's side of its work, at the same time, also
//! where launches block.
//!
//! A kernel that the host feeds while it runs (a persistent worker, a ping-pong, a
//! latch or barrier with host participants) needs a host thread working beside it.
//! Launching it and then playing the host's side on the same thread works only while a
//! launch returns as soon as the kernel is queued. Under `CUDA_LAUNCH_BLOCKING=1` (with
//! `CUDA_DEVICE_MAX_CONNECTIONS=1`, the check of forward progress that the CUDA
//! execution model suggests) a launch returns when its kernel ends, which never comes:
//! the kernel waits for the host, and the host waits in the launch. So
//! [`launch_beside`] launches from a helper thread and plays the host's side on the
//! calling thread, which keeps what its caller set up for it (a
//! [`CorePin`](super::CorePin), say).
//!
//! The host's side waits through the [`Beside`] it is handed, not through a bare
//! [`HostWait::on`] the stream. A bare wait takes an idle stream for a kernel that has
//! ended, but the helper thread may not have queued the kernel yet; and while a launch
//! call blocks, the host's side has no need to query the stream (that call sees to the
//! kernel's progress) and no reason to (an idle stream could only mean a kernel not yet
//! queued). A [`Beside`]'s waits therefore start querying the stream when the launch
//! call has returned: the kernel is queued then, or, where launches block, has ended,
//! and the query reports how (finished, or the fault). So, waiting through a
//! [`Beside`], the host's side makes no CUDA call while the launch call is under way,
//! and nothing it does can queue behind a launch that blocks.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{CudaError, HostWait, Stream};

/// The kernel that [`launch_beside`] launches, as the host's side sees it: waits for
/// what it releases, and whether it may still run.
#[derive(Clone, Copy)]
pub struct Beside<'a> {
    stream: &'a Stream,
    /// True until the helper thread's launch call has returned (release; read with
    /// acquire).
    launching: &'a AtomicBool,
}

impl<'a> Beside<'a> {
    /// A wait for what the kernel releases, as [`HostWait::on`] its stream, except that
    /// it queries the stream only once the launch call has returned (see the [module
    /// docs](self)).
    pub fn wait(&self) -> HostWait<'a> {
        HostWait::on(self.stream).beside_launch(self.launching)
    }

    /// Whether the kernel may still run: its launch call is under way, or (a query)
    /// its stream has work. A loop that waits for the kernel without
    /// [`wait`](Self::wait) calls this now and then: the query is the host's part in
    /// the kernel's forward progress.
    pub fn is_running(&self) -> Result<bool, CudaError> {
        if self.launching.load(Ordering::Acquire) {
            return Ok(true);
        }
        self.stream.is_busy()
    }

    /// The stream the kernel runs on.
    pub fn stream(&self) -> &'a Stream {
        self.stream
    }
}

/// What [`launch_beside`] ran: what the host's side returned, and how the launch call
/// ended.
#[derive(Debug)]
#[must_use]
pub struct Outcome<R> {
    /// What the host's side returned.
    pub host: R,
    /// How the launch call ended. Where launches block (`CUDA_LAUNCH_BLOCKING=1`) the
    /// call returned when the kernel ended, so it may also carry the kernel's fault,
    /// which the host's waits report as well
    /// ([`HostWaitError::KernelFailed`](super::HostWaitError::KernelFailed)).
    pub launch: Result<(), CudaError>,
}

/// Runs `launch` on a helper thread and `host` on the calling thread at the same time;
/// returns when both have returned.
///
/// `launch` queues on `stream` the kernel that `host` feeds. `host` waits for the
/// kernel through the [`Beside`] it gets (its [`wait`](Beside::wait)s, or
/// [`is_running`](Beside::is_running) in a loop of its own), and must let the kernel
/// end on every path, failures included (a persistent kernel's stop request, say): the
/// helper thread is joined before this returns, and where launches block it waits in
/// the launch call until the kernel ends. If the launch fails, `host`'s waits end with
/// [`HostWaitError::KernelFinished`](super::HostWaitError::KernelFinished) (no kernel
/// will release), and [`Outcome::launch`] has the error.
///
/// Waiting for the kernel to end is left to the caller ([`Stream::synchronize`]), who
/// may still want the stream's results.
///
/// The helper thread inherits the calling thread's CPU affinity. Where launches block
/// it waits inside the launch call for the whole kernel (spinning, by the driver's
/// default), so a host's side that must keep a core to itself pins it inside `host`
/// ([`CorePin`](super::CorePin)); a pin taken before only shares that core with the
/// waiting launch, which slows the host's side there but cannot stop it.
///
/// # Panics
///
/// Resumes a panic of `host`, or else of `launch`, once both threads are done.
///
/// # Examples
///
/// ```no_run
/// # use sync_host::cuda::beside::launch_beside;
/// # use sync_host::cuda::{KernelParams, LaunchOptions, Module, Runtime};
/// # fn demo(runtime: &Runtime, module: &Module, results: &sync_host::HandoffSemaphore<sync_host::GpuToHost>, params: KernelParams) -> Result<(), Box<dyn std::error::Error>> {
/// let stream = runtime.new_stream()?;
/// let run = launch_beside(
///     &stream,
///     || {
///         let kernel = module.kernel("bus_release_stress")?;
///         // SAFETY: `params` match the kernel and outlive it.
///         unsafe { kernel.launch_ex(&stream, 1, 1, LaunchOptions::default(), params) }
///     },
///     |kernel| results.acquire(kernel.wait()),
/// );
/// stream.synchronize()?;
/// run.launch?;
/// let unit = run.host?;
/// # let _ = unit; Ok(()) }
/// ```
pub fn launch_beside<R>(
    stream: &Stream,
    launch: impl FnOnce() -> Result<(), CudaError> + Send,
    host: impl FnOnce(&Beside<'_>) -> R,
) -> Outcome<R> {
    let launching = AtomicBool::new(true);
    let kernel = Beside {
        stream,
        launching: &launching,
    };
    std::thread::scope(|scope| {
        let launcher = scope.spawn(|| {
            let _returned = Returned(&launching);
            launch()
        });
        let host = host(&kernel);
        let launch = launcher
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Outcome { host, launch }
    })
}

/// Clears the launch flag when the launch call has returned, or unwound (a flag left
/// set would keep the host's waits from ever querying the stream).
struct Returned<'a>(&'a AtomicBool);

impl Drop for Returned<'_> {
    fn drop(&mut self) {
        // Release: a wait that reads `false` queries the stream after the launch
        // call, which queued the kernel (or saw it end).
        self.0.store(false, Ordering::Release);
    }
}
