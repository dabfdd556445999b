//! `scoped-sync`: prints a per-scope cost report of this machine.
//!
//! `cargo run --release` for the table, `-- --json` for one JSON object per line,
//! `-- --quick` for a smoke run, `-- --help` for the rest. See [`report`].

mod report;

use std::io::{self, Write};
use std::process::ExitCode;

use report::cli::{self, Command, Options};
use report::measure::Plan;
use report::progress::Progress;
use report::{bus, domains, gpu, gpu_primitives, host, litmus, litmus_host, output};

/// Exit status of a command line we do not understand (the getopt convention).
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    match cli::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Command::Litmus(instances)) => run_litmus(instances),
        Ok(Command::Report(options)) => match run(options) {
            Ok(()) => ExitCode::SUCCESS,
            // A closed pipe (`| head`) is the reader's choice, not a failure.
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("scoped-sync: cannot write the report: {error}");
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

fn run(options: Options) -> io::Result<()> {
    let plan = if options.quick {
        Plan::QUICK
    } else {
        Plan::FULL
    };
    let mut out = io::stdout().lock();
    let (gpu_line, runtime) = gpu::open();
    if options.json {
        // Stdout carries JSON only; the GPU notice goes where people look.
        eprintln!("{gpu_line}");
    } else {
        // The header first, so a reader knows what is coming while it is measured.
        output::write_header(&mut out, plan, &gpu_line)?;
        out.flush()?;
    }

    let gpu_steps = if runtime.is_some() {
        gpu::steps() + gpu_primitives::steps() + domains::steps() + bus::steps()
    } else {
        0
    };
    let host_steps = if options.gpu_only { 0 } else { host::steps() };
    let mut progress = Progress::new(host_steps + gpu_steps, !options.quick);
    let mut rows = if options.gpu_only {
        Vec::new()
    } else {
        host::measure(plan, &mut progress)
    };
    if let Some(runtime) = &runtime {
        let gpu_rows = gpu::measure(runtime, plan, &mut progress).and_then(|mut gpu_rows| {
            gpu_rows.extend(gpu_primitives::measure(runtime, plan, &mut progress)?);
            gpu_rows.extend(domains::measure(runtime, plan, &mut progress)?);
            Ok(gpu_rows)
        });
        let gpu_rows = gpu_rows
            .map_err(|error| error.to_string())
            .and_then(|mut gpu_rows| {
                gpu_rows.extend(
                    bus::measure(runtime, plan, &mut progress)
                        .map_err(|error| error.to_string())?,
                );
                Ok(gpu_rows)
            });
        match gpu_rows {
            Ok(gpu_rows) => rows.extend(gpu_rows),
            Err(error) => eprintln!("scoped-sync: the GPU section failed: {error}"),
        }
    }
    progress.finish();

    if options.json {
        output::write_json(&mut out, &rows)?;
    } else {
        output::write_table(&mut out, &rows)?;
    }
    out.flush()
}
