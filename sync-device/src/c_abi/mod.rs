//! The device library's C ABI: `extern "C"` device functions over the `#[repr(C)]`
//! objects, for CUDA C++ kernels (the header `include/scoped_sync.cuh` declares them
//! and wraps them in C++ types).
//!
//! Built only with the `c-abi` feature, into the device library that
//! `sync_build::DeviceLibrary` compiles: a Rust kernel crate never carries these
//! symbols. Every function is a thin call into the same code a Rust kernel runs, so a
//! C++ kernel and a Rust kernel (or a host thread) keep one protocol on one object.
//!
//! The ABI's rules, which the header follows:
//! - Objects are passed by pointer; the header's storage types have the Rust types'
//!   size and alignment (`sync_shared::layout`, asserted on both sides).
//! - Results that can fail come back as a status word ([`SS_OK`] and the codes beside
//!   it); waits that can time out take nanoseconds as `u64` ([`FOREVER`]: no limit).
//! - A broken precondition traps, as in a Rust kernel (with its message in the checked
//!   build); the `try_` forms return [`SS_USAGE_ERROR`] instead.
//! - Values with a destructor (arrival tokens, endpoints, stop callbacks) live in
//!   storage the caller provides, of the size the header declares.

mod barrier;
mod bus;
mod grid;
mod latch;
mod semaphore;
mod stop;

use core::time::Duration;

/// Status: the operation succeeded.
pub const SS_OK: u32 = 0;
/// Status: the wait's time ran out.
pub const SS_TIMED_OUT: u32 = 1;
/// Status: stop was requested on the wait's stop source.
pub const SS_STOPPED: u32 = 2;
/// Status: a `try_` form found its precondition broken (nothing was done).
pub const SS_USAGE_ERROR: u32 = 3;
/// Status: the barrier is broken (a `MultiGrid` that some GPU or party aborted).
pub const SS_BROKEN: u32 = 4;
/// Status: an exclusive endpoint is claimed already.
pub const SS_CLAIMED: u32 = 5;

/// A timeout argument meaning "no limit".
pub const FOREVER: u64 = u64::MAX;

/// `nanoseconds` as a [`Duration`], `None` for [`FOREVER`].
fn timeout(nanoseconds: u64) -> Option<Duration> {
    (nanoseconds != FOREVER).then(|| Duration::from_nanos(nanoseconds))
}

/// A `try_` form's status.
fn usage<T>(result: Result<T, sync_shared::UsageError>) -> u32 {
    match result {
        Ok(_) => SS_OK,
        Err(_) => SS_USAGE_ERROR,
    }
}

/// Status words of the error types a C++ caller sees.
struct Status(u32);

impl From<sync_shared::Stopped> for Status {
    fn from(_: sync_shared::Stopped) -> Self {
        Status(SS_STOPPED)
    }
}

impl From<sync_shared::bus::WaitError> for Status {
    fn from(error: sync_shared::bus::WaitError) -> Self {
        Status(match error {
            sync_shared::bus::WaitError::TimedOut => SS_TIMED_OUT,
            sync_shared::bus::WaitError::Stopped => SS_STOPPED,
        })
    }
}

/// The status of a stoppable or bus wait.
fn wait_status<E: Into<Status>>(result: Result<(), E>) -> u32 {
    match result {
        Ok(()) => SS_OK,
        Err(error) => error.into().0,
    }
}

/// Writes `value` into caller storage of `Storage`'s size and alignment.
///
/// # Safety
///
/// `storage` is valid for writes of `Storage` and holds no live value.
unsafe fn write_into<Storage, T>(storage: *mut Storage, value: T) {
    const {
        assert!(
            core::mem::size_of::<T>() <= core::mem::size_of::<Storage>()
                && core::mem::align_of::<T>() <= core::mem::align_of::<Storage>(),
            "the value does not fit the header's storage type"
        )
    };
    // SAFETY: fits (checked above); valid for writes (the caller's promise).
    unsafe { storage.cast::<T>().write(value) };
}

/// Every type the C ABI writes into the header's storage has that storage's layout, at
/// every scope and direction (the crate root asserts the default aliases).
mod layouts {
    use sync_shared::layout::*;
    use sync_shared::{assert_layout, Block, Device, System, SEMAPHORE_MAX};

    use crate::{Barrier, BinarySemaphore, CountingSemaphore, FairSemaphore, Latch, StopSource};

    macro_rules! at_scope {
        ($($scope:ty),*) => {
            $(
                assert_layout!(Barrier<$scope>, BARRIER);
                assert_layout!(Latch<$scope>, LATCH);
                assert_layout!(CountingSemaphore<SEMAPHORE_MAX, $scope>, COUNTING_SEMAPHORE);
                assert_layout!(BinarySemaphore<$scope>, COUNTING_SEMAPHORE);
                assert_layout!(FairSemaphore<SEMAPHORE_MAX, $scope>, FAIR_SEMAPHORE);
                assert_layout!(StopSource<$scope>, STOP_SOURCE);
            )*
        };
    }
    at_scope!(Block, Device, System);
    #[cfg(target_feature = "sm_90")]
    at_scope!(sync_shared::Cluster);

    assert_layout!(
        crate::HandoffSemaphore<sync_shared::bus::HostToGpu>,
        HANDOFF_SEMAPHORE
    );
    assert_layout!(
        crate::HandoffSemaphore<sync_shared::bus::GpuToGpu>,
        HANDOFF_SEMAPHORE
    );
}
