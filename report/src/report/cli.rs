//! The command line: `[--json] [--quick] [--gpu-only]`, `--litmus [INSTANCES]`,
//! `--help`, and nothing else.

use std::fmt;

/// What the command line asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Print the usage and exit.
    Help,
    /// Measure and print the report.
    Report(Options),
    /// Run the GPU litmus suite, at least this many instances per case.
    Litmus(u64),
}

/// Instances per litmus case unless the command line says otherwise.
pub const LITMUS_INSTANCES: u64 = 10_000_000;

/// How to run and print the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// One JSON object per line instead of the table.
    pub json: bool,
    /// A short smoke run instead of the full measurement.
    pub quick: bool,
    /// Skip the host section (the GPU sections only).
    pub gpu_only: bool,
}

/// A command line that this program does not understand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The text of `--help`.
pub const USAGE: &str = "\
Usage: scoped-sync [--json] [--quick] [--gpu-only]
       scoped-sync --litmus [INSTANCES]

Measures what each scoped-sync primitive costs on this machine, per thread scope,
beside what Rust programs use today (std::sync::Barrier, Mutex+Condvar semaphore and
latch), and the scoped atomic and fence costs underneath.

Options:
  --json     print one JSON object per line: backend, scope, primitive, op,
             threads, ns_per_op (peers have primitive \"peer:<name>\")
  --quick    a smoke run of about a second: fewer iterations, one repetition
  --gpu-only the GPU sections only (per-scope costs, primitives beside the
             baselines/gpu_baselines.cu shapes, memory-sync domains)
  --litmus   instead of the report, run the GPU litmus suite (each case at least
             INSTANCES times, 10000000 unless given) and print, per case, the
             count of each outcome and whether the PTX memory model allows it
  -h, --help print this help

Compare with libstdc++ on the same machine: scripts/compare-host.sh";

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, UsageError> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--litmus" => return litmus(args),
            "--json" => options.json = true,
            "--quick" => options.quick = true,
            "--gpu-only" => options.gpu_only = true,
            other if other.starts_with('-') => {
                return Err(UsageError(format!("unknown option '{other}'")));
            }
            other => {
                return Err(UsageError(format!(
                    "unexpected argument '{other}' (this program takes options only)"
                )));
            }
        }
    }
    Ok(Command::Report(options))
}

/// The rest of a `--litmus` command line: an optional instance count.
fn litmus(mut rest: impl Iterator<Item = String>) -> Result<Command, UsageError> {
    let instances = match rest.next() {
        None => LITMUS_INSTANCES,
        Some(count) => match count.parse::<u64>() {
            Ok(count) if count > 0 => count,
            _ => {
                return Err(UsageError(format!(
                    "--litmus takes a positive instance count, not '{count}'"
                )))
            }
        },
    };
    match rest.next() {
        None => Ok(Command::Litmus(instances)),
        Some(extra) => Err(UsageError(format!(
            "unexpected argument '{extra}' after --litmus"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Command, UsageError> {
        parse(args.iter().map(|arg| (*arg).to_owned()))
    }

    #[test]
    fn flags_combine() {
        assert_eq!(
            parse_strs(&["--quick", "--json"]),
            Ok(Command::Report(Options {
                json: true,
                quick: true,
                gpu_only: false,
            }))
        );
        assert_eq!(parse_strs(&[]), Ok(Command::Report(Options::default())));
        assert_eq!(parse_strs(&["--json", "-h"]), Ok(Command::Help));
    }

    #[test]
    fn unknown_input_is_refused() {
        assert!(parse_strs(&["--jsn"]).is_err());
        assert_eq!(
            parse_strs(&["--gpu-only"]),
            Ok(Command::Report(Options {
                gpu_only: true,
                ..Options::default()
            }))
        );
        assert!(parse_strs(&["json"]).is_err());
    }

    #[test]
    fn litmus_takes_an_optional_positive_count() {
        assert_eq!(
            parse_strs(&["--litmus"]),
            Ok(Command::Litmus(LITMUS_INSTANCES))
        );
        assert_eq!(parse_strs(&["--litmus", "5000"]), Ok(Command::Litmus(5000)));
        assert!(parse_strs(&["--litmus", "0"]).is_err());
        assert!(parse_strs(&["--litmus", "many"]).is_err());
        assert!(parse_strs(&["--litmus", "10", "--json"]).is_err());
    }
}
