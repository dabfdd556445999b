//! [`launch_beside`](super::Kernel::launch_beside): a kernel and the host's side of its
//! work, at the same time, also where launches block.
//!
//! A kernel that the host feeds while it runs (a persistent worker, a ping-pong, a
//! latch or barrier with host participants) needs a host thread working beside it.
//! Launching it and then playing the host's side on the same thread works only while a
//! launch returns as soon as the kernel is queued. Under `CUDA_LAUNCH_BLOCKING=1` (with
//! `CUDA_DEVICE_MAX_CONNECTIONS=1`, the check of forward progress that the CUDA
//! execution model suggests) a launch returns when its kernel ends, which never comes:
//! the kernel waits for the host, and the host waits in the launch. So
//! [`launch_beside`](super::Kernel::launch_beside) launches from a helper thread and
//! plays the host's side on the calling thread, which keeps what its caller set up for
//! it (a [`CorePin`](super::CorePin), say).
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

/// The kernel that [`launch_beside`](super::Kernel::launch_beside) launches, as the
/// host's side sees it: waits for what it releases, and whether it may still run.
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

/// What [`launch_beside`](super::Kernel::launch_beside) ran: what the host's side
/// returned, and how the launch call ended.
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

/// Runs `launch` (which queues the kernel on `stream`) on a helper thread and `host` on
/// the calling thread at the same time; returns when both have returned.
pub(super) fn run_beside<R>(
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
