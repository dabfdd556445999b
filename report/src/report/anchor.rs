//! The C++ anchors on the host: `baselines/host_baselines.cpp` built by the user
//! against libstdc++ (`--anchor PATH`) and, where clang has libc++, against libc++
//! (`--anchor-libcxx PATH`), each run by the report once per measurement so that it
//! alternates with ours in one run.

use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The `impl` of the records of the program built against libstdc++.
pub const LIBSTDCXX: &str = "libstdcxx";
/// The `impl` of the records of the program built against libc++.
pub const LIBCXX: &str = "libcxx";

/// One anchor run may take this long before it is killed and reported as stalled: the
/// issue that asked for this measured a libstdc++ barrier that did not finish a round
/// in 140 s at 8 threads.
const TIME_LIMIT: Duration = Duration::from_secs(60);

/// Why the anchor gave no figure.
#[derive(Debug)]
pub enum AnchorError {
    /// It could not be started.
    Start(std::io::Error),
    /// It ran past [`TIME_LIMIT`] and was killed.
    Stalled(Duration),
    /// It exited unsuccessfully or printed something other than a number.
    Failed(String),
}

impl fmt::Display for AnchorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Start(error) => write!(f, "the anchor did not start: {error}"),
            Self::Stalled(limit) => write!(
                f,
                "the anchor did not finish within {} s and was killed",
                limit.as_secs()
            ),
            Self::Failed(why) => write!(f, "the anchor failed: {why}"),
        }
    }
}

/// A built `host_baselines` program.
#[derive(Clone, Debug)]
pub struct Anchor {
    path: PathBuf,
    implementation: &'static str,
}

impl Anchor {
    /// The program at `path` (checked when it first runs), whose records are
    /// `implementation`'s ([`LIBSTDCXX`] or [`LIBCXX`]).
    pub fn new(path: impl Into<PathBuf>, implementation: &'static str) -> Self {
        Self {
            path: path.into(),
            implementation,
        }
    }

    /// The `impl` of its records.
    pub fn implementation(&self) -> &'static str {
        self.implementation
    }

    /// Runs `workload` on `threads` threads for `iterations`; nanoseconds per op.
    pub fn run(&self, workload: &str, threads: u32, iterations: u64) -> Result<f64, AnchorError> {
        let mut child = Command::new(&self.path)
            .args([workload, &threads.to_string(), &iterations.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(AnchorError::Start)?;
        let start = Instant::now();
        let status = loop {
            match child.try_wait().map_err(AnchorError::Start)? {
                Some(status) => break status,
                None if start.elapsed() > TIME_LIMIT => {
                    // It may have exited between the check and the kill; either way it
                    // gave no figure in time.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(AnchorError::Stalled(TIME_LIMIT));
                }
                // Polled, not waited on: a blocking wait could not be timed out. The
                // poll runs beside the anchor's threads, so it sleeps long enough to
                // cost them nothing measurable.
                None => thread::sleep(Duration::from_millis(5)),
            }
        };
        let (mut out, mut err) = (String::new(), String::new());
        if let Some(mut stdout) = child.stdout.take() {
            let _ = stdout.read_to_string(&mut out);
        }
        if let Some(mut stderr) = child.stderr.take() {
            let _ = stderr.read_to_string(&mut err);
        }
        if !status.success() {
            return Err(AnchorError::Failed(format!(
                "{workload} {threads} {iterations}: {status}: {}",
                err.trim()
            )));
        }
        out.trim()
            .parse::<f64>()
            .ok()
            .filter(|ns| ns.is_finite() && *ns > 0.0)
            .ok_or_else(|| {
                AnchorError::Failed(format!(
                    "{workload} {threads} {iterations} printed '{}'",
                    out.trim()
                ))
            })
    }
}
