//! The command line: what to measure (or which stored records to read), how to print
//! it, and what to make of it (charts, a regression gate).

use std::fmt;
use std::path::PathBuf;

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Print the usage and exit.
    Help,
    /// Measure (or read `--from` records), then print, plot and gate.
    Report(Options),
    /// Run the GPU litmus suite, at least this many instances per case.
    Litmus(u64),
    /// Measure the barrier across this many GPUs (0 to N-1) and the handoff across
    /// GPUs 0 and 1.
    MultiGpu(u32),
    /// Measure the barrier across the processes of a group (one GPU each), as one
    /// rank of it (started by `scoped-sync-run`, mpirun, torchrun or srun).
    MultiGpuProcesses,
}

/// Instances per litmus case unless the command line says otherwise.
pub const LITMUS_INSTANCES: u64 = 10_000_000;

/// The most GPUs `--multi-gpu` takes: `MultiGrid`'s limit.
pub const MAX_MULTI_GPUS: u32 = 8;

/// Which sections to measure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sections {
    /// Host, and the GPU sections where there is a GPU.
    #[default]
    All,
    /// The host section only (no CUDA driver is even looked for).
    HostOnly,
    /// The GPU sections only.
    GpuOnly,
}

/// How to run and print the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// One JSON record per line instead of the table.
    pub json: bool,
    /// A short smoke run instead of the full measurement.
    pub quick: bool,
    /// Which sections.
    pub sections: Sections,
    /// The host workloads at every thread count up to twice the cores.
    pub scaling: bool,
    /// The built `baselines/host_baselines.cpp` (libstdc++), run beside ours.
    pub anchor: Option<PathBuf>,
    /// The same program built against libc++, run beside ours too.
    pub anchor_libcxx: Option<PathBuf>,
    /// Instead of measuring, read records: one run per entry, each run one or more
    /// JSON-lines files.
    pub from: Vec<Vec<PathBuf>>,
    /// Write the charts into this folder.
    pub plot: Option<PathBuf>,
    /// Check the ratios against this gate file ...
    pub gate: Option<PathBuf>,
    /// ... under this machine kind (also the kind `--calibrate` writes).
    pub machine: Option<String>,
    /// Write the ratios of the `--from` runs, with their noise bands, into the gate file
    /// (`--gate`) under `--machine`, instead of checking them.
    pub calibrate: bool,
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
Usage: scoped-sync [--json] [--quick] [--host-only | --gpu-only] [--scaling]
                   [--anchor PROGRAM] [--anchor-libcxx PROGRAM] [--plot DIR]
                   [--gate FILE --machine KIND]
       scoped-sync --from FILE[+FILE...] [--from ...] [--json] [--plot DIR]
                   [--gate FILE --machine KIND [--calibrate]]
       scoped-sync --litmus [INSTANCES]
       scoped-sync --multi-gpu [GPUS]
       scoped-sync-run -n GPUS -- scoped-sync --multi-gpu-processes

Measures what each scoped-sync primitive costs on this machine, per thread scope,
beside what programs use today (std::sync::Barrier, Mutex+Condvar semaphore and
latch, crossbeam's WaitGroup, libstdc++'s and libc++'s C++20 primitives with
--anchor and --anchor-libcxx), and the scoped atomic and fence
costs underneath.

Measuring:
  --quick      a smoke run of about a second: fewer iterations, one repetition
  --host-only  the host section only (no CUDA driver is looked for)
  --gpu-only   the GPU sections only (per-scope costs, primitives in the shapes of
               baselines/gpu_baselines.cu, memory-sync domains, host<->GPU handoff);
               an error where no GPU can be opened
  --scaling    barrier, semaphore and latch at 1, 2, 4, ... threads up to the
               hardware threads, and twice that
  --anchor P   run P, the built baselines/host_baselines.cpp
               (g++ -O2 -std=c++20 -pthread), beside each host workload it has,
               alternating with ours; its figures are the 'libstdcxx' rows
  --anchor-libcxx P
               the same program built with clang++ -stdlib=libc++; its figures
               are the 'libcxx' rows

Reading instead of measuring:
  --from F     records written by --json (and anchor records in the same schema);
               one run per --from, its files joined by '+'

Output:
  --json       one JSON record per line (schema: docs/report-schema.md); a
               measurement gives three records per unit (stat min, median, max)
  --plot DIR   write SVG charts into DIR: costs per backend (log scale), CPU
               scaling curves, host<->GPU round trips and wake-ups
  --gate F     compare each ratio ours/peer with the one stored in gate file F
               for --machine KIND; exit 1 if one is worse than its noise band
  --calibrate  with --gate and three or more --from runs: store the runs'
               median ratios and bands in F for KIND instead of checking

  --multi-gpu  instead of the report, measure MultiGrid::sync per phase across
               GPUS GPUs (2 unless given, at most 8) and a GpuToGpu handoff round
               trip across GPUs 0 and 1, in the lines of
               baselines/multi_gpu_baselines.cu (multi-compare.sh runs both)
  --multi-gpu-processes
               as one rank of a process group (one GPU each, the launcher's
               RANK/WORLD_SIZE/LOCAL_RANK and job secret): MultiGrid::sync per
               phase across the group's processes, its counters shared by
               driver IPC, then in NVSHMEM's symmetric heap where NVSHMEM is
               found (NVSHMEM_HOME), printed by rank 0 in the lines of
               --multi-gpu
  --litmus     instead of the report, run the GPU litmus suite (each case at least
               INSTANCES times, 10000000 unless given) and print, per case, the
               count of each outcome and whether the PTX memory model allows it
  -h, --help   print this help";

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, UsageError> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    let value = |flag: &str, args: &mut dyn Iterator<Item = String>| {
        args.next()
            .filter(|value| !value.starts_with("--"))
            .ok_or_else(|| UsageError(format!("{flag} needs a value")))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--litmus" => return litmus(args),
            "--multi-gpu" => return multi_gpu(args),
            "--multi-gpu-processes" => {
                return match args.next() {
                    None => Ok(Command::MultiGpuProcesses),
                    Some(extra) => Err(UsageError(format!(
                        "--multi-gpu-processes takes no value (the launcher gives the count), not {extra}"
                    ))),
                }
            }
            "--json" => options.json = true,
            "--quick" => options.quick = true,
            "--host-only" => options.sections = sections(options.sections, Sections::HostOnly)?,
            "--gpu-only" => options.sections = sections(options.sections, Sections::GpuOnly)?,
            "--scaling" => options.scaling = true,
            "--calibrate" => options.calibrate = true,
            "--anchor" => options.anchor = Some(value("--anchor", &mut args)?.into()),
            "--anchor-libcxx" => {
                options.anchor_libcxx = Some(value("--anchor-libcxx", &mut args)?.into());
            }
            "--plot" => options.plot = Some(value("--plot", &mut args)?.into()),
            "--gate" => options.gate = Some(value("--gate", &mut args)?.into()),
            "--machine" => options.machine = Some(value("--machine", &mut args)?),
            "--from" => options.from.push(
                value("--from", &mut args)?
                    .split('+')
                    .map(PathBuf::from)
                    .collect(),
            ),
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
    check(&options)?;
    Ok(Command::Report(options))
}

/// At most one of `--host-only` and `--gpu-only`.
fn sections(old: Sections, new: Sections) -> Result<Sections, UsageError> {
    if old == Sections::All || old == new {
        Ok(new)
    } else {
        Err(UsageError(
            "--host-only and --gpu-only exclude each other".to_owned(),
        ))
    }
}

/// Combinations that cannot mean anything.
fn check(options: &Options) -> Result<(), UsageError> {
    let refuse = |why: &str| Err(UsageError(why.to_owned()));
    if options.gate.is_some() != options.machine.is_some() {
        return refuse("--gate and --machine go together");
    }
    if options.calibrate && (options.gate.is_none() || options.from.len() < 3) {
        return refuse("--calibrate needs --gate, --machine and at least three --from runs");
    }
    let measuring = options.quick
        || options.scaling
        || options.anchor.is_some()
        || options.anchor_libcxx.is_some()
        || options.sections != Sections::All;
    if !options.from.is_empty() && measuring {
        return refuse("--from reads stored records; it takes no measuring option");
    }
    if !options.from.is_empty() && !options.json && options.plot.is_none() && options.gate.is_none()
    {
        return refuse("--from needs something to do with the records: --json, --plot or --gate");
    }
    Ok(())
}

/// `--litmus [INSTANCES]`: a positive instance count, [`LITMUS_INSTANCES`] unless given.
fn litmus(rest: impl Iterator<Item = String>) -> Result<Command, UsageError> {
    let wanted = "a positive instance count";
    optional_count(rest, "--litmus", LITMUS_INSTANCES, |n| n > 0, wanted).map(Command::Litmus)
}

/// `--multi-gpu [GPUS]`: a GPU count from 2 to [`MAX_MULTI_GPUS`], 2 unless given.
fn multi_gpu(rest: impl Iterator<Item = String>) -> Result<Command, UsageError> {
    let wanted = format!("a GPU count from 2 to {MAX_MULTI_GPUS}");
    let valid = |n| (2..=MAX_MULTI_GPUS).contains(&n);
    optional_count(rest, "--multi-gpu", 2, valid, &wanted).map(Command::MultiGpu)
}

/// The number after `flag` (`default` without one), which `valid` must accept, and
/// nothing after it; `wanted` names what the flag takes in the error.
fn optional_count<T: std::str::FromStr + Copy>(
    mut rest: impl Iterator<Item = String>,
    flag: &str,
    default: T,
    valid: impl Fn(T) -> bool,
    wanted: &str,
) -> Result<T, UsageError> {
    let count = match rest.next() {
        None => default,
        Some(text) => match text.parse::<T>() {
            Ok(count) if valid(count) => count,
            _ => return Err(UsageError(format!("{flag} takes {wanted}, not '{text}'"))),
        },
    };
    match rest.next() {
        None => Ok(count),
        Some(extra) => Err(UsageError(format!(
            "unexpected argument '{extra}' after {flag}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Command, UsageError> {
        parse(args.iter().map(|arg| (*arg).to_owned()))
    }

    fn options(args: &[&str]) -> Options {
        match parse_strs(args) {
            Ok(Command::Report(options)) => options,
            other => panic!("{args:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn flags_combine() {
        let quick_json = options(&["--quick", "--json"]);
        assert!(quick_json.json && quick_json.quick);
        assert_eq!(options(&[]), Options::default());
        assert_eq!(parse_strs(&["--json", "-h"]), Ok(Command::Help));
        let scaling = options(&["--host-only", "--scaling", "--anchor", "a.out"]);
        assert_eq!(scaling.sections, Sections::HostOnly);
        assert_eq!(scaling.anchor, Some(PathBuf::from("a.out")));
    }

    #[test]
    fn unknown_input_is_refused() {
        assert!(parse_strs(&["--jsn"]).is_err());
        assert_eq!(options(&["--gpu-only"]).sections, Sections::GpuOnly);
        assert!(parse_strs(&["json"]).is_err());
        assert!(parse_strs(&["--host-only", "--gpu-only"]).is_err());
        assert!(parse_strs(&["--anchor"]).is_err());
        let both = options(&["--anchor", "a", "--anchor-libcxx", "b"]);
        assert_eq!(both.anchor, Some(PathBuf::from("a")));
        assert_eq!(both.anchor_libcxx, Some(PathBuf::from("b")));
        assert!(parse_strs(&["--anchor-libcxx"]).is_err());
        assert!(parse_strs(&["--from", "a", "--json", "--anchor-libcxx", "b"]).is_err());
        assert!(parse_strs(&["--plot", "--json"]).is_err());
    }

    #[test]
    fn runs_are_read_as_given_and_checked() {
        let from = options(&["--from", "a.jsonl+b.jsonl", "--from", "c.jsonl", "--json"]).from;
        assert_eq!(
            from,
            [
                vec![PathBuf::from("a.jsonl"), PathBuf::from("b.jsonl")],
                vec![PathBuf::from("c.jsonl")]
            ]
        );
        assert!(parse_strs(&["--from", "a", "--quick"]).is_err());
        assert!(parse_strs(&["--from", "a"]).is_err(), "nothing to do");
        assert!(parse_strs(&["--gate", "g.json"]).is_err());
        let three = ["--from", "a", "--from", "b", "--from", "c"];
        assert!(parse_strs(&[&three[..], &["--gate", "g", "--machine", "m"]].concat()).is_ok());
        assert!(parse_strs(
            &[
                &three[..4],
                &["--gate", "g", "--machine", "m", "--calibrate"]
            ]
            .concat()
        )
        .is_err());
        assert!(parse_strs(
            &[
                &three[..],
                &["--gate", "g", "--machine", "m", "--calibrate"]
            ]
            .concat()
        )
        .is_ok());
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

    #[test]
    fn multi_gpu_takes_an_optional_gpu_count() {
        assert_eq!(parse_strs(&["--multi-gpu"]), Ok(Command::MultiGpu(2)));
        assert_eq!(parse_strs(&["--multi-gpu", "4"]), Ok(Command::MultiGpu(4)));
        assert_eq!(parse_strs(&["--multi-gpu", "8"]), Ok(Command::MultiGpu(8)));
        assert_eq!(
            parse_strs(&["--multi-gpu-processes"]),
            Ok(Command::MultiGpuProcesses)
        );
        assert!(parse_strs(&["--multi-gpu-processes", "2"]).is_err());
        for bad in ["1", "9", "four", "--json"] {
            assert!(parse_strs(&["--multi-gpu", bad]).is_err(), "{bad}");
        }
        assert!(parse_strs(&["--multi-gpu", "4", "--json"]).is_err());
    }
}
