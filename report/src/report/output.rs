//! The two renderings of the report: JSON lines for machines, an aligned table for
//! people.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::machine;
use super::measure::Plan;
use super::sample::{Row, Sample};

/// One JSON object per line, ours then its peer, with exactly the fields of
/// [`Sample`]. Written by hand: six flat fields do not need serde.
pub fn write_json(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    let samples = rows
        .iter()
        .flat_map(|row| std::iter::once(&row.ours).chain(row.peer.as_ref()));
    for sample in samples {
        writeln!(out, "{}", json_line(sample))?;
    }
    Ok(())
}

fn json_line(sample: &Sample) -> String {
    let launch = match sample.launch {
        Some((grid, block)) => format!(",\"grid\":{grid},\"block\":{block}"),
        None => String::new(),
    };
    format!(
        "{{\"backend\":{},\"scope\":{},\"primitive\":{},\"op\":{},\"threads\":{},\"ns_per_op\":{}{launch}}}",
        json_string(sample.backend),
        json_string(sample.scope),
        json_string(&sample.primitive),
        json_string(&sample.op),
        sample.threads,
        json_number(sample.ns_per_op),
    )
}

/// A JSON string literal. The report's strings are plain ASCII names, but escaping
/// costs nothing and keeps the output valid whatever a later backend names things.
fn json_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(quoted, "\\u{:04x}", u32::from(c));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// A plain JSON number with three decimals (picoseconds are below any clock's
/// resolution). JSON has no NaN or infinity; they cannot come out of a measurement,
/// but would be written as `null` rather than as invalid JSON.
fn json_number(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.3}")
    } else {
        "null".to_owned()
    }
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
        "Method: best (minimum) of {} repetition{}; iteration counts of \
         baselines/host_baselines.cpp{}.",
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

/// The table, one section per backend and scope, each row beside its peer.
pub fn write_table(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    const HEADINGS: [&str; 7] = [
        "primitive",
        "op",
        "threads",
        "ns/op",
        "peer",
        "peer ns/op",
        "ours/peer",
    ];
    // Right-aligned: the numeric columns.
    const RIGHT: [bool; 7] = [false, false, true, true, false, true, true];

    let cells: Vec<[String; 7]> = rows.iter().map(cells).collect();
    let mut widths = HEADINGS.map(str::len);
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let line = |cells: &[String; 7]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let width = widths[i];
            let _ = if RIGHT[i] {
                write!(text, "{cell:>width$}  ")
            } else {
                write!(text, "{cell:<width$}  ")
            };
        }
        text.trim_end().to_owned()
    };

    let mut section = None;
    for (row, cells) in rows.iter().zip(&cells) {
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

fn cells(row: &Row) -> [String; 7] {
    let none = || "-".to_owned();
    let peer = row.peer.as_ref();
    [
        row.ours.primitive.clone(),
        row.ours.op.clone(),
        row.ours.threads.to_string(),
        match row.ours.cycles_per_op {
            Some(cycles) => format!("{} ({cycles:.1} cyc)", format_ns(row.ours.ns_per_op)),
            None => format_ns(row.ours.ns_per_op),
        },
        peer.map_or_else(none, |peer| {
            peer.primitive
                .strip_prefix("peer:")
                .unwrap_or(&peer.primitive)
                .to_owned()
        }),
        peer.map_or_else(none, |peer| format_ns(peer.ns_per_op)),
        row.ratio().map_or_else(none, format_ratio),
    ]
}

/// Two significant digits: a ratio of 0.003 must not print as 0.00.
fn format_ratio(ratio: f64) -> String {
    if ratio >= 0.1 {
        format!("{ratio:.2}")
    } else {
        format!("{ratio:.1e}")
    }
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
