//! The two renderings of the report: JSON lines for machines, an aligned table for
//! people.

use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;

use super::machine;
use super::measure::Plan;
use super::sample::{Record, Row, Sample};

/// One JSON record per line ([`Record`], documented in `docs/report-schema.md`): every
/// sample of every row, ours first, then its peers.
pub fn write_json(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    let samples = rows
        .iter()
        .flat_map(|row| std::iter::once(&row.ours).chain(&row.peers));
    for sample in samples {
        for record in sample.records() {
            writeln!(out, "{}", record_line(&record))?;
        }
    }
    Ok(())
}

/// One record as one line of JSON.
pub fn record_line(record: &Record) -> String {
    // A record holds strings, integers and finite floats: it always serializes.
    serde_json::to_string(record).expect("a record serializes")
}

/// Reads back the records of one run (`--from`): every line of `files`, which `--json`
/// or another program in the same schema wrote.
pub fn read_records(files: &[PathBuf]) -> Result<Vec<Record>, String> {
    let mut records = Vec::new();
    for file in files {
        let text = fs::read_to_string(file)
            .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record: Record = serde_json::from_str(line).map_err(|error| {
                format!(
                    "{}:{}: not a report record: {error}",
                    file.display(),
                    number + 1
                )
            })?;
            records.push(record);
        }
    }
    Ok(records)
}

/// The human header: what was measured, on what, and how.
pub fn write_header(out: &mut impl Write, plan: Plan, gpu_line: &str) -> io::Result<()> {
    writeln!(out, "scoped-sync: per-scope cost report")?;
    let cpu = machine::cpu_model().unwrap_or_else(|| "unknown CPU".to_owned());
    writeln!(
        out,
        "CPU: {cpu}, {} hardware threads",
        machine::hardware_threads()
    )?;
    writeln!(out, "{gpu_line}")?;
    writeln!(
        out,
        "Method: best (minimum) of {} repetition{}{}.",
        plan.repetitions,
        if plan.repetitions == 1 { "" } else { "s" },
        if plan.divisor == 1 {
            String::new()
        } else {
            format!(
                " divided by {} (--quick: a smoke run, not a measurement)",
                plan.divisor
            )
        },
    )?;
    writeln!(
        out,
        "Barrier and ping-pong times run from the first thread spawn to the last join; \
         ratio = ours / peer (below 1: ours is faster)."
    )
}

/// The table, one section per backend and scope, each of our rows followed by the
/// peers measured beside it.
pub fn write_table(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    const HEADINGS: [&str; 6] = ["primitive", "op", "threads", "impl", "ns/op", "ours/peer"];
    // Right-aligned: the numeric columns.
    const RIGHT: [bool; 6] = [false, false, true, false, true, true];

    let lines: Vec<(&Row, [String; 6])> = rows
        .iter()
        .flat_map(|row| {
            std::iter::once((row, cells(row, &row.ours)))
                .chain(row.peers.iter().map(move |peer| (row, cells(row, peer))))
        })
        .collect();
    let mut widths = HEADINGS.map(str::len);
    for (_, cells) in &lines {
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String; 6]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let width = widths[i];
            text += &if RIGHT[i] {
                format!("{cell:>width$}  ")
            } else {
                format!("{cell:<width$}  ")
            };
        }
        text.trim_end().to_owned()
    };

    let mut section = None;
    for (row, cells) in &lines {
        let this = (row.ours.backend, row.ours.scope);
        if section != Some(this) {
            section = Some(this);
            writeln!(out)?;
            writeln!(out, "== {} scope, {} backend ==", this.1, this.0)?;
            writeln!(out, "{}", line(&HEADINGS.map(str::to_owned)))?;
        }
        writeln!(out, "{}", line(cells))?;
    }
    Ok(())
}

/// One line: our sample (primitive, op and variant, threads or launch shape) or, under
/// it, a peer's (its implementation and the ratio).
fn cells(row: &Row, sample: &Sample) -> [String; 6] {
    let ours = std::ptr::eq(sample, &row.ours);
    let blank = String::new;
    let op = match &sample.variant {
        Some(variant) => format!("{} ({variant})", sample.op),
        None => sample.op.clone(),
    };
    let threads = match sample.launch {
        Some((grid, block)) if grid * block == sample.threads => format!("{grid}x{block}"),
        _ => sample.threads.to_string(),
    };
    let ns = match sample.cycles {
        Some(cycles) => format!("{} ({:.1} cyc)", format_ns(sample.ns.min), cycles.min),
        None => format_ns(sample.ns.min),
    };
    if ours {
        [
            sample.primitive.to_owned(),
            op,
            threads,
            sample.implementation.clone(),
            ns,
            blank(),
        ]
    } else {
        [
            blank(),
            blank(),
            blank(),
            sample.implementation.clone(),
            ns,
            format_ratio(row.ratio(sample)),
        ]
    }
}
/// Plain decimals with two significant digits below 0.1 (0.038, 0.0031): a ratio of
/// 0.003 must not print as 0.00, and one column must not mix `3.8e-2` with `0.22`.
fn format_ratio(ratio: f64) -> String {
    if ratio.is_nan() || ratio <= 0.0 || ratio >= 0.1 {
        return format!("{ratio:.2}");
    }
    // 0.038: 3 decimals; 0.0031: 4; at most 6.
    let decimals = (1.0 - ratio.log10().floor()).clamp(2.0, 6.0) as usize;
    format!("{ratio:.decimals$}")
}

/// Three significant digits or so: sub-nanosecond atomics and 20 µs barriers share
/// one column.
fn format_ns(ns: f64) -> String {
    if ns < 10.0 {
        format!("{ns:.2}")
    } else if ns < 1000.0 {
        format!("{ns:.1}")
    } else {
        format!("{ns:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::format_ratio;

    #[test]
    fn ratios_print_as_plain_decimals_with_two_significant_digits() {
        assert_eq!(format_ratio(1.234), "1.23");
        assert_eq!(format_ratio(0.22), "0.22");
        assert_eq!(format_ratio(0.038), "0.038");
        assert_eq!(format_ratio(0.00312), "0.0031");
        assert_eq!(format_ratio(0.0), "0.00");
        assert!(!format_ratio(1e-9).contains('e'));
    }
}
