//! [`Polled`]: the host's view of an ordinary `System`-scope object that kernels use at
//! the same time (in managed memory, or in mapped memory where the machine has
//! `hostNativeAtomicSupported`).
//!
//! The host flavour's blocking waits spin, then park the thread on a futex; a release
//! by a kernel changes the word but cannot wake a parked host thread, so that wait
//! could last for ever. Through a [`Placed`](super::Placed) owner the host therefore
//! sees this view instead: the non-blocking operations of the object itself, and waits
//! that take a [`HostWait`] (poll, query the kernel's stream, end with an error when
//! the kernel is gone, time out, stop).

use sync_shared::bus::BusWait;
use sync_shared::{ArrivalToken, UsageError};

use super::{HostWait, HostWaitError};
use crate::{Barrier, CountingSemaphore, Latch};

/// See the [`cuda`](super) module docs on placement. Made by dereferencing a [`Placed`](super::Placed)
/// `Latch`, `Barrier` or `CountingSemaphore`.
///
/// ```no_run
/// # use sync_host::cuda::{HostWait, Runtime};
/// # use sync_host::Latch;
/// # fn demo(runtime: &Runtime) -> Result<(), Box<dyn std::error::Error>> {
/// let latch = runtime.place_managed(Latch::new(2))?;
/// let stream = runtime.new_stream()?;
/// // ... launch a kernel that counts `latch` down once, on `stream` ...
/// latch.arrive_and_wait(1, HostWait::on(&stream))?;
/// # Ok(()) }
/// ```
///
/// The waits that would park the thread are not offered:
///
/// ```compile_fail
/// # use sync_host::cuda::Runtime;
/// # use sync_host::Latch;
/// # fn demo(runtime: &Runtime) -> Result<(), Box<dyn std::error::Error>> {
/// let latch = runtime.place_managed(Latch::new(1))?;
/// latch.try_wait_for(std::time::Duration::from_secs(1));
/// # Ok(()) }
/// ```
#[repr(transparent)]
pub struct Polled<T>(T);

impl<T> Polled<T> {
    pub(super) fn from_ref(object: &T) -> &Self {
        // SAFETY: `repr(transparent)` over `T`: same layout, same validity.
        unsafe { &*std::ptr::from_ref(object).cast::<Self>() }
    }
}

impl Polled<Latch> {
    /// As [`Latch::count_down`].
    #[track_caller]
    pub fn count_down(&self, n: u32) {
        self.0.count_down(n)
    }

    /// As [`Latch::try_count_down`].
    pub fn try_count_down(&self, n: u32) -> Result<(), UsageError> {
        self.0.try_count_down(n)
    }

    /// As [`Latch::try_wait`].
    pub fn try_wait(&self) -> bool {
        self.0.try_wait()
    }

    /// Waits with `wait` until the counter reaches zero (acquire).
    pub fn wait(&self, mut wait: HostWait<'_>) -> Result<(), HostWaitError> {
        wait.wait_until(&mut || self.0.try_wait())
    }

    /// Counts down by `n`, then [`wait`](Self::wait)s.
    ///
    /// # Panics
    ///
    /// As [`Latch::count_down`].
    #[track_caller]
    pub fn arrive_and_wait(&self, n: u32, wait: HostWait<'_>) -> Result<(), HostWaitError> {
        self.0.count_down(n);
        self.wait(wait)
    }
}

impl Polled<Barrier> {
    /// As [`Barrier::arrive`].
    #[track_caller]
    pub fn arrive(&self, n: u32) -> ArrivalToken {
        self.0.arrive(n)
    }

    /// As [`Barrier::try_arrive`].
    pub fn try_arrive(&self, n: u32) -> Result<ArrivalToken, UsageError> {
        self.0.try_arrive(n)
    }

    /// As [`Barrier::try_wait`].
    pub fn try_wait(&self, token: &ArrivalToken) -> bool {
        self.0.try_wait(token)
    }

    /// Waits with `wait` until the phase of `token` completes (acquire).
    pub fn wait(&self, token: ArrivalToken, mut wait: HostWait<'_>) -> Result<(), HostWaitError> {
        wait.wait_until(&mut || self.0.try_wait(&token))
    }

    /// As [`Barrier::try_wait_parity`].
    pub fn try_wait_parity(&self, parity: bool) -> bool {
        self.0.try_wait_parity(parity)
    }

    /// Waits with `wait` until the phase of `parity` completes.
    pub fn wait_parity(&self, parity: bool, mut wait: HostWait<'_>) -> Result<(), HostWaitError> {
        wait.wait_until(&mut || self.0.try_wait_parity(parity))
    }

    /// Arrives once and [`wait`](Self::wait)s for the phase.
    pub fn arrive_and_wait(&self, wait: HostWait<'_>) -> Result<(), HostWaitError> {
        let token = self.0.arrive(1);
        self.wait(token, wait)
    }

    /// As [`Barrier::arrive_and_drop`].
    #[track_caller]
    pub fn arrive_and_drop(&self) {
        self.0.arrive_and_drop()
    }
}

impl<const MAX: u32> Polled<CountingSemaphore<MAX>> {
    /// As [`CountingSemaphore::release`].
    #[track_caller]
    pub fn release(&self, n: u32) {
        self.0.release(n)
    }

    /// As [`CountingSemaphore::try_release`].
    pub fn try_release(&self, n: u32) -> Result<(), UsageError> {
        self.0.try_release(n)
    }

    /// As [`CountingSemaphore::try_acquire`].
    pub fn try_acquire(&self) -> bool {
        self.0.try_acquire()
    }

    /// Takes a unit, waiting with `wait` until one is available.
    pub fn acquire(&self, mut wait: HostWait<'_>) -> Result<(), HostWaitError> {
        wait.wait_until(&mut || self.0.try_acquire())
    }

    /// The largest count (`MAX`).
    pub const fn max() -> u32 {
        MAX
    }
}
