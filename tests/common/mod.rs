//! Helpers shared by the integration tests (each test file uses a subset).
#![allow(dead_code)]

pub mod bus;
pub mod cpu_side;
pub mod peer;

use std::cell::UnsafeCell;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

/// Aborts the test process if `f` has not returned after `secs` seconds: a hang is a
/// failure, not a stuck CI job.
pub fn hang_guard<R>(name: &str, secs: u64, f: impl FnOnce() -> R) -> R {
    // Under Miri (with isolation) the clock is virtual and advances with the
    // instructions every thread executes, interpreted slowly: give it far longer. So
    // under compute-sanitizer, which slows kernels and launches a hundredfold.
    let secs = if cfg!(miri) || under_compute_sanitizer().is_some() {
        secs * 20
    } else {
        secs
    };
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

/// Prints "skipped: `reason`" straight to stderr, where libtest does not hide it
/// (it captures the `eprintln!` of a passing test), and where `sanitize.sh` looks
/// for it to count the test as not run. The caller returns from the test.
pub fn skip(reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {reason}");
}

/// The GPU, or `None` after printing "skipped: no CUDA driver" ([`skip`]); any other
/// failure to open it fails the test. Under compute-sanitizer it also installs
/// [`sanitizer_panic_note`].
pub fn gpu_runtime() -> Option<harness::Gpu> {
    sanitizer_panic_note();
    match harness::Gpu::open() {
        Ok(runtime) => Some(runtime),
        Err(scoped_sync::cuda::CudaError::NoDriver) => {
            skip("no CUDA driver");
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

/// The variable through which the bundle's `sanitize.sh` tells a test which
/// compute-sanitizer tool it runs under (`memcheck`, `racecheck`, `synccheck`,
/// `initcheck`), so that a test can pick a configuration the tool can judge in
/// reasonable time.
pub const SANITIZER_VARIABLE: &str = "SCOPED_SYNC_SANITIZER";

/// The compute-sanitizer tool this process runs under, as `sanitize.sh` names it in
/// [`SANITIZER_VARIABLE`]; `None` outside the runner.
pub fn sanitizer_tool() -> Option<String> {
    std::env::var(SANITIZER_VARIABLE)
        .ok()
        .filter(|tool| !tool.is_empty())
}

/// Whether this process runs under compute-sanitizer, whoever started it: the
/// variable that shows it, with its value. compute-sanitizer 2025.3 (measured on the
/// GPU host) loads its checker into the program through the dynamic loader, not
/// through `CUDA_INJECTION64_PATH`, and sets `NV_SANITIZER_INJECTION_PORT_BASE` (the
/// port its checker reports to) and `NVTX_INJECTION64_PATH=libsanitizer-collection.so`
/// in the program's environment; `sanitize.sh` also sets [`SANITIZER_VARIABLE`].
pub fn under_compute_sanitizer() -> Option<String> {
    if let Some(tool) = sanitizer_tool() {
        return Some(format!("{SANITIZER_VARIABLE}={tool}"));
    }
    let set = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|value| format!("{name}={value}"))
    };
    set("NV_SANITIZER_INJECTION_PORT_BASE")
        .or_else(|| set("NVTX_INJECTION64_PATH").filter(|text| text.contains("libsanitizer")))
}

/// Under compute-sanitizer, adds a note to every panic that reports a kernel trap
/// (`CudaError::KernelTrapped`, "reports as a trap"): the error's text names a broken
/// precondition or a scope misuse, but under a sanitizer the likelier cause is the
/// tool itself, which ends a kernel in which it found an error (the driver then
/// reports the same `CUDA_ERROR_LAUNCH_FAILED` as a trap) and leaves the context lost
/// for the rest of the process. Installed once; outside a sanitizer it does nothing.
pub fn sanitizer_panic_note() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    let Some(evidence) = under_compute_sanitizer() else {
        return;
    };
    INSTALL.call_once(move || {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            let payload = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("");
            if payload.contains("reports as a trap") || payload.contains("KernelTrapped") {
                eprintln!(
                    "note: this process runs under compute-sanitizer ({evidence}): the \
                     trap reported above may be the sanitizer ending a kernel in \
                     which it reported an error (see its report), not a trap of the \
                     kernel's own; after the first such error the CUDA context is lost \
                     and every later launch of this process fails the same way"
                );
            }
        }));
    });
}

/// Runs the test `test` of this test binary again in a child process with the
/// environment variable `marker` set (the test then takes its child branch), and
/// returns how the child ended and what it wrote to stderr. A child still running
/// after 60 s is killed and fails the calling test: it hung.
pub fn run_in_child(test: &str, marker: &str) -> (std::process::ExitStatus, String) {
    use std::process::{Command, Stdio};
    use std::time::Instant;
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", test, "--nocapture"])
        .env(marker, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the child test process");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().expect("kill the hung child");
            panic!("the child {test} hung");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read the child's stderr");
    (status, stderr)
}
