//! `scoped-sync`: prints a per-scope cost report of this machine.
//!
//! `cargo run --release` for the table, `-- --json` for one JSON object per line,
//! `-- --quick` for a smoke run, `-- --help` for the rest. See [`report`].

mod report;

use std::io::{self, Write};
use std::process::ExitCode;

use report::anchor::{self, Anchor};
use report::cli::{self, Command, Options, Sections};
use report::host::Threads;
use report::measure::Plan;
use report::multi_gpu;
use report::progress::Progress;
use report::sample::{Record, Row};
use report::{bus, domains, gate, gpu, gpu_primitives, host, litmus, litmus_host, machine};
use report::{output, plot, stop_wake};

/// Exit status of a command line we do not understand (the getopt convention).
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    match cli::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Command::Litmus(instances)) => run_litmus(instances),
        Ok(Command::MultiGpu(gpus)) => match multi_gpu::run(&mut io::stdout().lock(), gpus) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("scoped-sync: {error}");
                ExitCode::FAILURE
            }
        },
        Ok(Command::MultiGpuProcesses) => match multi_gpu::run_as_rank(&mut io::stdout().lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("scoped-sync: {error}");
                ExitCode::FAILURE
            }
        },
        Ok(Command::Report(options)) => match run(&options) {
            Ok(code) => code,
            Err(error) => {
                eprintln!("scoped-sync: {error}");
                ExitCode::FAILURE
            }
        },
        Err(error) => {
            eprintln!("scoped-sync: {error}\nTry 'scoped-sync --help'.");
            ExitCode::from(USAGE_ERROR)
        }
    }
}

/// `--litmus`: the GPU cases, then the host↔GPU ones; fails if there is no GPU or a
/// forbidden outcome showed.
fn run_litmus(instances: u64) -> ExitCode {
    let (gpu_line, runtime) = gpu::open();
    println!("{gpu_line}");
    let Some(runtime) = runtime else {
        eprintln!("scoped-sync: the litmus suite needs a GPU");
        return ExitCode::FAILURE;
    };
    let mut out = io::stdout().lock();
    let holds = litmus::run(&runtime, instances, &mut out).and_then(|gpu_holds| {
        writeln!(out)?;
        let host_holds = litmus_host::run(&runtime, instances, &mut out)?;
        Ok(gpu_holds && host_holds)
    });
    match holds {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("scoped-sync: a forbidden outcome showed (VIOLATED rows)");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("scoped-sync: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The report: measure (or read `--from` runs), print, then plot and gate.
fn run(options: &Options) -> Result<ExitCode, String> {
    let runs = if options.from.is_empty() {
        let mut anchors = Vec::new();
        for (flag, path, implementation) in [
            ("--anchor", &options.anchor, anchor::LIBSTDCXX),
            ("--anchor-libcxx", &options.anchor_libcxx, anchor::LIBCXX),
        ] {
            let Some(path) = path else { continue };
            let anchor = Anchor::new(path, implementation);
            // Refuse a program that is not the anchor before minutes of measuring.
            anchor
                .run("stop_requested", 1, 1)
                .map_err(|error| format!("{flag}: {error}"))?;
            anchors.push(anchor);
        }
        match measure(options, &anchors) {
            Ok(records) => vec![records],
            // A closed pipe (`| head`) is the reader's choice, not a failure.
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                return Ok(ExitCode::SUCCESS)
            }
            Err(error) if error.kind() == io::ErrorKind::Other => return Err(error.to_string()),
            Err(error) => return Err(format!("cannot write the report: {error}")),
        }
    } else {
        let runs = options
            .from
            .iter()
            .map(|files| output::read_records(files))
            .collect::<Result<Vec<_>, _>>()?;
        if options.json {
            let mut out = io::stdout().lock();
            for record in runs.iter().flatten() {
                writeln!(out, "{}", output::record_line(record)).map_err(|e| e.to_string())?;
            }
        }
        runs
    };
    if let Some(dir) = &options.plot {
        let all: Vec<Record> = runs.iter().flatten().cloned().collect();
        for chart in plot::write_charts(dir, &all)? {
            eprintln!("scoped-sync: wrote {}", chart.display());
        }
    }
    match (&options.gate, &options.machine) {
        (Some(path), Some(kind)) => run_gate(path, kind, options.calibrate, &runs),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// `--gate`: check the runs against the stored ratios of `kind`, or (`--calibrate`)
/// store them.
fn run_gate(
    path: &std::path::Path,
    kind: &str,
    calibrate: bool,
    runs: &[Vec<Record>],
) -> Result<ExitCode, String> {
    let mut file = gate::load(path)?;
    if calibrate {
        let machine = gate::calibrate(runs);
        eprintln!(
            "scoped-sync: stored {} ratios from {} runs for '{kind}' in {}",
            machine.ratios.len(),
            machine.runs,
            path.display()
        );
        for noisy in &machine.not_gated {
            eprintln!(
                "scoped-sync: not gated (runs spread {:.0} %): {} vs {}",
                noisy.spread * 100.0,
                noisy.workload,
                noisy.peer
            );
        }
        file.machines.insert(kind.to_owned(), machine);
        gate::store(path, &file)?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(machine) = file.machines.get(kind) else {
        let known: Vec<&String> = file.machines.keys().collect();
        return Err(format!(
            "{} has no ratios for machine kind '{kind}' (it has {known:?}); store them with --calibrate",
            path.display()
        ));
    };
    let verdict = gate::check(machine, runs);
    print!("{}", verdict.text);
    if verdict.passed {
        println!("gate: every ratio within its band ({kind})");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("gate: FAILED ({kind})");
        Ok(ExitCode::FAILURE)
    }
}

/// Measures the sections the options ask for, prints them, and returns their records.
fn measure(options: &Options, anchors: &[Anchor]) -> io::Result<Vec<Record>> {
    let plan = if options.quick {
        Plan::QUICK
    } else {
        Plan::FULL
    };
    let mut out = io::stdout().lock();
    let (gpu_line, runtime) = match options.sections {
        Sections::HostOnly => ("GPU: not looked for (--host-only)".to_owned(), None),
        _ => gpu::open(),
    };
    if options.sections == Sections::GpuOnly && runtime.is_none() {
        // Nothing would be measured: an error, not an empty report.
        return Err(io::Error::other(format!(
            "--gpu-only, but there is no GPU to measure: {gpu_line}"
        )));
    }
    if options.json {
        // Stdout carries JSON only; the GPU notice goes where people look.
        eprintln!("{gpu_line}");
    } else {
        // The header first, so a reader knows what is coming while it is measured.
        output::write_header(&mut out, plan, &gpu_line)?;
        out.flush()?;
    }

    let threads = if options.scaling {
        Threads::Scaling(u32::try_from(machine::hardware_threads()).unwrap_or(u32::MAX))
    } else {
        Threads::Usual
    };
    let host_wanted = options.sections != Sections::GpuOnly;
    let gpu_steps = if runtime.is_some() {
        gpu::steps() + gpu_primitives::steps() + domains::steps() + bus::steps()
    } else {
        0
    };
    let host_steps = if host_wanted {
        host::steps(threads) + stop_wake::steps()
    } else {
        0
    };
    let mut progress = Progress::new(host_steps + gpu_steps, !options.quick);
    let mut rows = if host_wanted {
        let mut rows = host::measure(plan, threads, anchors, &mut progress);
        rows.extend(stop_wake::measure(plan, &mut progress));
        rows
    } else {
        Vec::new()
    };
    if let Some(runtime) = &runtime {
        match measure_gpu(runtime, plan, &mut progress) {
            Ok(gpu_rows) => rows.extend(gpu_rows),
            Err(error) => eprintln!("scoped-sync: the GPU section failed: {error}"),
        }
    }
    progress.finish();
    if runtime.is_none() && options.sections != Sections::HostOnly {
        eprintln!("scoped-sync: the GPU sections were skipped ({gpu_line})");
    }

    if options.json {
        output::write_json(&mut out, &rows)?;
    } else {
        output::write_table(&mut out, &rows)?;
    }
    out.flush()?;
    Ok(rows
        .iter()
        .flat_map(|row| std::iter::once(&row.ours).chain(&row.peers))
        .flat_map(|sample| sample.records())
        .collect())
}

/// The GPU sections, in report order.
fn measure_gpu(
    runtime: &harness::Gpu,
    plan: Plan,
    progress: &mut Progress,
) -> Result<Vec<Row>, String> {
    let mut rows = gpu::measure(runtime, plan, progress).map_err(|e| e.to_string())?;
    rows.extend(gpu_primitives::measure(runtime, plan, progress).map_err(|e| e.to_string())?);
    rows.extend(domains::measure(runtime, plan, progress).map_err(|e| e.to_string())?);
    rows.extend(bus::measure(runtime, plan, progress).map_err(|e| e.to_string())?);
    Ok(rows)
}
