//! `scoped-sync-run -n N [--job NAME] [--grace SECONDS] -- PROGRAM [ARGS...]`: starts
//! N copies of PROGRAM as the ranks of one scoped-sync process group, on this machine,
//! and waits for them.
//!
//! Each rank gets `RANK`, `WORLD_SIZE`, `LOCAL_RANK` and `LOCAL_WORLD_SIZE` (as
//! torchrun sets them: rank `i` takes GPU `i`), the job's fresh secret in
//! `SCOPED_SYNC_JOB_SECRET` and its name in `SCOPED_SYNC_JOB_ID`; the program joins
//! with `sync_host::process::Rendezvous::from_env()`. When a rank fails (a non-zero
//! exit or a signal), the others learn it through the group at once; any still running
//! after the grace period (5 s unless given) are killed, as mpirun does. The exit code
//! is the first failed rank's (128 + the signal for a signal), else 0. A `SIGINT` or
//! `SIGTERM` to the launcher (Ctrl-C, a batch system's end of the job) is passed on to
//! every rank, and the grace period runs from then.
//!
//! Counterpart: `torchrun --standalone --nproc-per-node N`, `mpirun -n N`.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitCode, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use sync_host::process::{JobSecret, JOB_VARIABLE, SECRET_VARIABLE};

/// How often the launcher looks at its ranks.
const POLL: Duration = Duration::from_millis(10);

/// The last `SIGINT` or `SIGTERM` the launcher received (0: none), for the ranks.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signal handler: only records the signal (an atomic store is async-signal-safe);
/// the loop passes it on.
extern "C" fn record(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::Relaxed);
}

/// Records `SIGINT` and `SIGTERM` instead of dying of them.
fn catch_termination() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `record` is an `extern "C" fn(c_int)` that only stores to an atomic.
        unsafe {
            libc::signal(
                signal,
                record as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
}

const USAGE: &str =
    "usage: scoped-sync-run -n N [--job NAME] [--grace SECONDS] -- PROGRAM [ARGS...]";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Options {
    ranks: usize,
    job: Option<String>,
    grace: Duration,
    program: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let (mut ranks, mut job, mut grace) = (None, None, Duration::from_secs(5));
    let mut args = args.iter();
    let program = loop {
        let Some(arg) = args.next() else {
            return Err("no program: name it after `--`".into());
        };
        let mut value = |name: &str| {
            args.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "-n" | "--nproc" => {
                let n = value(arg)?;
                ranks = Some(
                    n.parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("-n {n}: a count of processes, 1 or more"))?,
                );
            }
            "--job" => job = Some(value(arg)?),
            "--grace" => {
                let seconds = value(arg)?;
                grace = seconds
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| format!("--grace {seconds}: seconds, 0 or more"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            "--" => break args.cloned().collect::<Vec<_>>(),
            other => return Err(format!("unknown option {other}")),
        }
    };
    if program.is_empty() {
        return Err("no program after `--`".into());
    }
    Ok(Options {
        ranks: ranks.ok_or("-n N: how many processes")?,
        job,
        grace,
        program,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(options) => options,
        Err(problem) => {
            if !problem.is_empty() {
                eprintln!("scoped-sync-run: {problem}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(code) => ExitCode::from(code),
        Err(problem) => {
            eprintln!("scoped-sync-run: {problem}");
            ExitCode::from(1)
        }
    }
}

/// Starts the ranks and waits for them; the exit code.
fn run(options: &Options) -> Result<u8, String> {
    let secret = JobSecret::generate().map_err(|error| format!("no random job secret: {error}"))?;
    let job = options
        .job
        .clone()
        .unwrap_or_else(|| format!("run-{}", std::process::id()));
    catch_termination();
    let mut ranks: Vec<Option<Child>> = Vec::with_capacity(options.ranks);
    for rank in 0..options.ranks {
        let started = Command::new(&options.program[0])
            .args(&options.program[1..])
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", options.ranks.to_string())
            .env("LOCAL_RANK", rank.to_string())
            .env("LOCAL_WORLD_SIZE", options.ranks.to_string())
            .env(SECRET_VARIABLE, secret.to_hex())
            .env(JOB_VARIABLE, &job)
            .spawn();
        match started {
            Ok(child) => ranks.push(Some(child)),
            Err(error) => {
                kill_all(&mut ranks);
                return Err(format!("cannot start {}: {error}", options.program[0]));
            }
        }
    }
    let mut first_failure: Option<(usize, ExitStatus, Instant)> = None;
    let mut ended_at: Option<Instant> = None;
    while ranks.iter().any(Option::is_some) {
        let signal = RECEIVED.swap(0, Ordering::Relaxed);
        if signal != 0 {
            eprintln!("scoped-sync-run: passing signal {signal} on to the ranks");
            for child in ranks.iter().flatten() {
                // SAFETY: a child of ours not yet waited for: its pid is still its own.
                unsafe { libc::kill(child.id() as libc::pid_t, signal) };
            }
            ended_at.get_or_insert_with(Instant::now);
        }
        for (rank, slot) in ranks.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            let Some(status) = child.try_wait().map_err(|error| error.to_string())? else {
                continue;
            };
            *slot = None;
            if !status.success() && first_failure.is_none() {
                eprintln!("scoped-sync-run: rank {rank} failed ({status})");
                first_failure = Some((rank, status, Instant::now()));
            }
        }
        let since = [first_failure.map(|(_, _, at)| at), ended_at]
            .into_iter()
            .flatten()
            .min();
        if let Some(at) = since {
            if at.elapsed() >= options.grace && ranks.iter().any(Option::is_some) {
                eprintln!(
                    "scoped-sync-run: killing the ranks still running {:?} after the failure or signal",
                    options.grace
                );
                kill_all(&mut ranks);
            }
        }
        std::thread::sleep(POLL);
    }
    Ok(first_failure.map_or(0, |(_, status, _)| exit_code(status)))
}

fn kill_all(ranks: &mut [Option<Child>]) {
    for child in ranks.iter_mut().filter_map(Option::take) {
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A shell's exit code for `status`: its code, or 128 + its signal.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1).max(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_command_line_gives_count_job_grace_and_program() {
        assert_eq!(
            parse(&args("-n 4 --job train --grace 0.5 -- ./prog --flag x")).unwrap(),
            Options {
                ranks: 4,
                job: Some("train".into()),
                grace: Duration::from_millis(500),
                program: args("./prog --flag x"),
            }
        );
        assert!(parse(&args("-n 0 -- prog"))
            .unwrap_err()
            .contains("1 or more"));
        assert!(parse(&args("-- prog")).unwrap_err().contains("-n N"));
        assert!(parse(&args("-n 2")).unwrap_err().contains("no program"));
        assert!(parse(&args("-n 2 --")).unwrap_err().contains("no program"));
        assert!(parse(&args("-x -- p"))
            .unwrap_err()
            .contains("unknown option -x"));
    }
}
