//! The progress line on stderr, so that a run of tens of seconds does not look hung.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Runs shorter than this print no progress at all.
const QUIET_FOR: Duration = Duration::from_secs(1);

/// Reports which measurement is running, on stderr (stdout stays clean for `--json`).
///
/// On a terminal it rewrites one line in place; elsewhere (a CI log) it prints a line
/// per step. Either way it stays silent until the run has lasted [`QUIET_FOR`], unless
/// told from the start that the run will be long.
#[derive(Debug)]
pub struct Progress {
    start: Instant,
    total: usize,
    done: usize,
    eager: bool,
    terminal: bool,
    line_open: bool,
}

impl Progress {
    /// Progress over `total` steps; `long_run` shows it from the first step.
    pub fn new(total: usize, long_run: bool) -> Self {
        Self {
            start: Instant::now(),
            total,
            done: 0,
            eager: long_run,
            terminal: std::io::stderr().is_terminal(),
            line_open: false,
        }
    }

    /// Announces the next step.
    pub fn step(&mut self, label: &str) {
        self.done += 1;
        if !self.eager && self.start.elapsed() < QUIET_FOR {
            return;
        }
        let width = self.total.to_string().len();
        let text = format!("[{:>width$}/{}] measuring {label}", self.done, self.total);
        let mut stderr = std::io::stderr().lock();
        // Progress is a courtesy: a closed stderr must not stop the measurement.
        let _ = if self.terminal {
            self.line_open = true;
            write!(stderr, "\r\x1b[K{text}")
        } else {
            writeln!(stderr, "{text}")
        };
        let _ = stderr.flush();
    }

    /// Clears the in-place line, so the report starts on a clean terminal line.
    pub fn finish(&mut self) {
        if self.line_open {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.line_open = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
