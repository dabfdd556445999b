//! The host (CPU) flavour of scoped-sync: the [`Host`] backend and the primitives at
//! [`System`] scope.
//!
//! Waits spin briefly, then park on a futex (Linux; a Mutex+Condvar table elsewhere).
//! Releasing, counting down or arriving makes no system call when nobody is parked.
//!
//! The aliases keep the scope as a defaulted parameter so that the scope shows in the
//! type, but only [`System`] has methods: a narrower scope does not compile.
//!
//! ```compile_fail
//! let barrier = sync_host::Barrier::<sync_shared::Block>::new(2); // no Backend<Block> for Host
//! ```
//!
//! A bus object's operations belong to one side: the host releases into a `HostToGpu`
//! semaphore and cannot acquire from it (only GPU threads may; the build fails when the
//! call is instantiated):
//!
//! ```compile_fail,E0080
//! let work = sync_host::HandoffSemaphore::<sync_host::HostToGpu>::new(1);
//! let _ = work.try_acquire();
//! ```

mod bus_side;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(all(target_os = "linux", not(loom)))]
mod futex;
mod host;
#[cfg(any(not(target_os = "linux"), loom))]
mod parking;
#[cfg(target_os = "linux")]
pub mod process;

pub use host::Host;
pub use sync_shared::bus::{
    BusArrivalToken, BusWait, Consumer, GpuToGpu, GpuToHost, HostToGpu, Producer, BUS_COUNT_MAX,
};
pub use sync_shared::{
    error, scope, ArrivalToken, Block, Cluster, Completion, Device, NoCompletion, Scope, Stopped,
    System, Thread, UsageError, UsageErrorKind, WaiterSlot, SEMAPHORE_MAX,
};

/// [`sync_shared::Barrier`] on CPU threads.
pub type Barrier<S = System, F = NoCompletion> = sync_shared::Barrier<S, Host, F>;
/// [`sync_shared::Latch`] on CPU threads.
pub type Latch<S = System> = sync_shared::Latch<S, Host>;
/// [`sync_shared::CountingSemaphore`] on CPU threads.
pub type CountingSemaphore<const MAX: u32 = SEMAPHORE_MAX, S = System> =
    sync_shared::CountingSemaphore<S, Host, MAX>;
/// [`sync_shared::BinarySemaphore`] on CPU threads.
pub type BinarySemaphore<S = System> = sync_shared::BinarySemaphore<S, Host>;
/// [`sync_shared::FairSemaphore`] on CPU threads.
pub type FairSemaphore<const MAX: u32 = SEMAPHORE_MAX, S = System> =
    sync_shared::FairSemaphore<S, Host, MAX>;
/// [`sync_shared::StopSource`] on CPU threads.
pub type StopSource<S = System> = sync_shared::StopSource<S, Host>;
/// [`sync_shared::StopToken`] on CPU threads.
pub type StopToken<'a, S = System> = sync_shared::StopToken<'a, S, Host>;
/// [`sync_shared::StopCallback`] on CPU threads.
pub type StopCallback<'a, F, S = System> = sync_shared::StopCallback<'a, F, S, Host>;

/// [`sync_shared::bus::HandoffSemaphore`] on CPU threads: units handed across the bus.
pub type HandoffSemaphore<D> = sync_shared::bus::HandoffSemaphore<D, Host>;
/// [`sync_shared::bus::HandoffChannel`] on CPU threads: a handoff semaphore each way.
///
/// # Examples
///
/// The host sends units of work to a kernel `echo(channel)` that acquires each and
/// releases one back; each host wait also watches the kernel's stream, so a kernel that
/// dies ends it with an error:
///
/// ```no_run
/// use std::time::Duration;
/// use sync_host::cuda::{HostWait, KernelArgs, LaunchConfig, Runtime};
/// use sync_host::HandoffChannel;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let module = runtime.load_file("my-kernels.ptx")?;
/// let stream = runtime.new_stream()?;
/// let channel = runtime.place_mapped(HandoffChannel::new(0, 0))?;
/// let args = KernelArgs::new().arg(&channel);
/// // SAFETY: `echo` takes the channel's address; `channel` outlives the kernel.
/// unsafe { module.kernel("echo")?.launch(LaunchConfig::new(1, 1).on(&stream), args) }?;
/// let (mut to_gpu, mut from_gpu) = (channel.producer().unwrap(), channel.consumer().unwrap());
/// for _ in 0..100 {
///     to_gpu.release(1);
///     from_gpu.acquire(HostWait::on(&stream).timeout(Duration::from_secs(1)))?;
/// }
/// # Ok(())
/// # }
/// ```
pub type HandoffChannel = sync_shared::bus::HandoffChannel<Host>;
/// [`sync_shared::bus::BusLatch`] on CPU threads.
///
/// # Examples
///
/// The host waits until the 64 threads of `ready(latch)` have each counted down once:
///
/// ```no_run
/// use std::time::Duration;
/// use sync_host::cuda::{HostWait, KernelArgs, LaunchConfig, Runtime};
/// use sync_host::BusLatch;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let module = runtime.load_file("my-kernels.ptx")?;
/// let stream = runtime.new_stream()?;
/// let latch = runtime.place_mapped(BusLatch::new(64))?;
/// let args = KernelArgs::new().arg(&latch);
/// // SAFETY: `ready` takes the latch's address; `latch` outlives the kernel.
/// unsafe { module.kernel("ready")?.launch(LaunchConfig::new(1, 64).on(&stream), args) }?;
/// latch.wait(HostWait::on(&stream).timeout(Duration::from_secs(1)))?;
/// assert_eq!(latch.counted(), 64);
/// # Ok(())
/// # }
/// ```
pub type BusLatch = sync_shared::bus::BusLatch<Host>;
/// [`sync_shared::bus::BusBarrier`] on CPU threads.
///
/// # Examples
///
/// One host thread and one GPU thread (`lockstep(barrier)`) pass 1000 phases together:
///
/// ```no_run
/// use std::time::Duration;
/// use sync_host::cuda::{HostWait, KernelArgs, LaunchConfig, Runtime};
/// use sync_host::BusBarrier;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let module = runtime.load_file("my-kernels.ptx")?;
/// let stream = runtime.new_stream()?;
/// let barrier = runtime.place_mapped(BusBarrier::new(1, 1))?;
/// let args = KernelArgs::new().arg(&barrier);
/// // SAFETY: `lockstep` takes the barrier's address; `barrier` outlives the kernel.
/// unsafe { module.kernel("lockstep")?.launch(LaunchConfig::new(1, 1).on(&stream), args) }?;
/// for _ in 0..1000 {
///     barrier.arrive_and_wait(HostWait::on(&stream).timeout(Duration::from_secs(1)))?;
/// }
/// # Ok(())
/// # }
/// ```
pub type BusBarrier = sync_shared::bus::BusBarrier<Host>;
/// [`sync_shared::bus::BusStopSource`] on CPU threads.
///
/// # Examples
///
/// A persistent kernel `serve(stop)` runs until the host asks it to stop:
///
/// ```no_run
/// use std::time::Duration;
/// use sync_host::cuda::{HostWait, KernelArgs, LaunchConfig, Runtime};
/// use sync_host::BusStopSource;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::open(0)?;
/// let module = runtime.load_file("my-kernels.ptx")?;
/// let stream = runtime.new_stream()?;
/// let stop = runtime.place_mapped(BusStopSource::new())?;
/// let args = KernelArgs::new().arg(&stop);
/// // SAFETY: `serve` takes the stop source's address; `stop` outlives the kernel.
/// unsafe { module.kernel("serve")?.launch(LaunchConfig::new(132, 128).on(&stream), args) }?;
/// std::thread::sleep(Duration::from_millis(10));
/// assert!(stop.request_stop());
/// stream.synchronize()?; // the kernel saw the request and returned
/// assert!(stop.requested_by_host());
/// # Ok(())
/// # }
/// ```
pub type BusStopSource = sync_shared::bus::BusStopSource<Host>;

/// A registered [`StopCallback`] on the heap: the closest thing to constructing a C++
/// `std::stop_callback`. Dropping the box deregisters it.
pub fn stop_callback<'a, F: FnOnce() + Send>(
    token: StopToken<'a>,
    callback: F,
) -> std::pin::Pin<Box<StopCallback<'a, F>>> {
    let boxed = Box::pin(StopCallback::new(token, callback));
    boxed.as_ref().register();
    boxed
}

#[cfg(not(loom))]
mod layout_checks {
    use super::*;
    use sync_shared::{assert_layout, layout};

    assert_layout!(Barrier, layout::BARRIER);
    assert_layout!(Latch, layout::LATCH);
    assert_layout!(CountingSemaphore, layout::COUNTING_SEMAPHORE);
    assert_layout!(BinarySemaphore, layout::COUNTING_SEMAPHORE);
    #[cfg(target_pointer_width = "64")]
    assert_layout!(FairSemaphore, layout::FAIR_SEMAPHORE);
    #[cfg(target_pointer_width = "64")]
    assert_layout!(StopSource, layout::STOP_SOURCE);
    assert_layout!(HandoffSemaphore<GpuToHost>, layout::HANDOFF_SEMAPHORE);
    assert_layout!(HandoffChannel, layout::HANDOFF_CHANNEL);
    assert_layout!(BusLatch, layout::BUS_LATCH);
    assert_layout!(BusBarrier, layout::BUS_BARRIER);
    assert_layout!(BusStopSource, layout::BUS_STOP_SOURCE);
}
