//! Helpers shared by the integration tests (each test file uses a subset).
#![allow(dead_code)]

use std::cell::UnsafeCell;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

/// Aborts the test process if `f` has not returned after `secs` seconds: a hang is a
/// failure, not a stuck CI job.
pub fn hang_guard<R>(name: &str, secs: u64, f: impl FnOnce() -> R) -> R {
    // Under Miri (with isolation) the clock is virtual and advances with the
    // instructions every thread executes, interpreted slowly: give it far longer.
    let secs = if cfg!(miri) { secs * 20 } else { secs };
    let (done, wait) = mpsc::channel::<()>();
    let name = name.to_owned();
    let guard = thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(Duration::from_secs(secs)) {
            eprintln!("{name}: still running after {secs} s; treating it as a hang");
            std::process::abort();
        }
    });
    let result = f();
    drop(done);
    guard.join().expect("hang guard thread");
    result
}

/// The GPU, or `None` after printing "skipped: no CUDA driver" (straight to stderr:
/// libtest would hide a `println!` of a passing test); any other failure to open it
/// fails the test.
pub fn gpu_runtime() -> Option<harness::Gpu> {
    use std::io::Write;
    match harness::Gpu::open() {
        Ok(runtime) => Some(runtime),
        Err(scoped_sync::cuda::CudaError::NoDriver) => {
            let _ = writeln!(std::io::stderr(), "skipped: no CUDA driver");
            None
        }
        Err(other) => panic!("cannot open the GPU: {other}"),
    }
}

/// Spins (yielding) until `condition` holds.
pub fn spin_until(mut condition: impl FnMut() -> bool) {
    while !condition() {
        thread::yield_now();
    }
}

/// A non-atomic value guarded by the semaphore under test.
pub struct Unsync<T>(UnsafeCell<T>);

// SAFETY: the tests only access the cell while holding the semaphore used as a lock (or
// after a release/acquire pair); that exclusion is exactly what they check.
unsafe impl<T: Send> Sync for Unsync<T> {}

impl<T: Copy> Unsync<T> {
    pub const fn new(value: T) -> Self {
        Self(UnsafeCell::new(value))
    }
    pub fn get(&self) -> T {
        // SAFETY: see the `Sync` impl.
        unsafe { *self.0.get() }
    }
    pub fn set(&self, value: T) {
        // SAFETY: see the `Sync` impl.
        unsafe { *self.0.get() = value }
    }
}

/// Instances per litmus case: a million, or what `SCOPED_SYNC_LITMUS_INSTANCES` says
/// (the bundle's `sanitize.sh` asks for fewer, as a sanitizer slows kernels a
/// hundredfold).
pub fn litmus_instances() -> u64 {
    std::env::var("SCOPED_SYNC_LITMUS_INSTANCES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1_000_000)
}
