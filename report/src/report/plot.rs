//! `--plot DIR`: the report's records as SVG charts (plotters' SVG backend).
//!
//! - `costs-host.svg`, `costs-cuda.svg`: every operation of the backend with its peers,
//!   one bar each on a log scale (costs span from a fraction of a nanosecond to
//!   milliseconds), ours in blue.
//! - `host-gpu.svg`: the host↔GPU round trips, wake-ups, bus barrier and worker items.
//! - `scaling.svg`: the host workloads measured at several thread counts
//!   (`--scaling`), time per operation against threads, one line per implementation.
//!
//! Every figure is the fastest repetition (`stat` min, in ns). A chart with nothing to
//! show is not written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sample::{Key, Record, Stat, Unit, OURS};

/// Pixels per bar of the bar charts.
const BAR_HEIGHT: u32 = 18;
/// Width of every chart.
const WIDTH: u32 = 1100;

/// One bar: a workload's label, who ran it, and its time.
struct Bar {
    label: String,
    implementation: String,
    ns: f64,
}

/// The fastest ns figure of every (workload, implementation), in record order.
fn fastest(records: &[Record]) -> Vec<(Key, String, f64)> {
    let mut order = Vec::new();
    let mut best: BTreeMap<(Key, String), f64> = BTreeMap::new();
    for record in records {
        if record.stat != Stat::Min || record.unit != Unit::Ns || record.value <= 0.0 {
            continue;
        }
        let id = (record.key(), record.implementation.clone());
        let value = best.entry(id.clone()).or_insert_with(|| {
            order.push(id);
            f64::INFINITY
        });
        *value = value.min(record.value);
    }
    order
        .into_iter()
        .map(|id| {
            let ns = best[&id];
            (id.0, id.1, ns)
        })
        .collect()
}

/// A workload's label on a bar chart.
fn label(key: &Key) -> String {
    // The host backend has one scope (system); the GPU's scope is part of the story.
    let mut label = if key.backend == "host" {
        format!("{} {}", key.primitive, key.op)
    } else {
        format!("{} {} {}", key.scope, key.primitive, key.op)
    };
    if let Some(variant) = &key.variant {
        label += &format!(" ({variant})");
    }
    match (key.grid, key.block) {
        (Some(grid), Some(block)) => label += &format!(", {grid}x{block}"),
        _ if key.threads > 1 => label += &format!(", {} threads", key.threads),
        _ => {}
    }
    label
}

/// The colour of an implementation: ours blue, the usual peers each their own.
fn colour(implementation: &str) -> RGBColor {
    match implementation {
        OURS => RGBColor(31, 119, 180),
        "libstdcxx" | "libcudacxx" | "cooperative_groups" | "cuda_syncthreads" | "cuda_cpp" => {
            RGBColor(44, 160, 44)
        }
        "std_barrier" | "mutex_condvar_semaphore" | "mutex_condvar_latch" => RGBColor(255, 127, 14),
        other => {
            // Any other peer: a stable colour from its name.
            let hash = other
                .bytes()
                .fold(7_u32, |h, b| h.wrapping_mul(31) ^ u32::from(b));
            let palette = [
                RGBColor(214, 39, 40),
                RGBColor(148, 103, 189),
                RGBColor(140, 86, 75),
                RGBColor(227, 119, 194),
                RGBColor(127, 127, 127),
            ];
            palette[hash as usize % palette.len()]
        }
    }
}

/// A plotters failure as text (its error type is generic over the backend).
fn failed(chart: &Path, error: impl std::fmt::Display) -> String {
    format!("cannot draw {}: {error}", chart.display())
}

/// Horizontal bars on a log scale, one per entry of `bars`, top to bottom.
fn bar_chart(path: &Path, title: &str, bars: &[Bar]) -> Result<(), String> {
    let height = 120 + BAR_HEIGHT * u32::try_from(bars.len()).unwrap_or(u32::MAX / 64);
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(path, e))?;
    let low = bars.iter().map(|bar| bar.ns).fold(f64::INFINITY, f64::min);
    let high = bars.iter().map(|bar| bar.ns).fold(0.0, f64::max);
    // Whole decades around the data, so the axis reads 0.1, 1, 10, ... ns.
    let (low, high) = (
        10_f64.powf(low.log10().floor()),
        10_f64.powf(high.log10().ceil() + 0.3),
    );
    let count = i32::try_from(bars.len()).unwrap_or(i32::MAX);
    // Segment 0 is at the bottom: the labels in reverse, so the first bar is on top.
    let labels: Vec<String> = bars
        .iter()
        .rev()
        .map(|bar| format!("{} · {}", bar.label, bar.implementation))
        .collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(480)
        .build_cartesian_2d((low..high).log_scale(), (0..count).into_segmented())
        .map_err(|e| failed(path, e))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(bars.len())
        .y_label_formatter(&|position| match position {
            SegmentValue::CenterOf(i) => usize::try_from(*i)
                .ok()
                .and_then(|i| labels.get(i))
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        })
        .y_label_style(("sans-serif", 12))
        .x_label_formatter(&|ns| format_ns(*ns))
        .x_desc("ns per operation (best of the repetitions; log scale)")
        .draw()
        .map_err(|e| failed(path, e))?;
    chart
        .draw_series(bars.iter().zip((0..count).rev()).map(|(bar, i)| {
            let mut rectangle = Rectangle::new(
                [
                    (low, SegmentValue::Exact(i)),
                    (bar.ns, SegmentValue::Exact(i + 1)),
                ],
                colour(&bar.implementation).filled(),
            );
            rectangle.set_margin(2, 2, 0, 0);
            rectangle
        }))
        .map_err(|e| failed(path, e))?;
    chart
        .draw_series(bars.iter().zip((0..count).rev()).map(|(bar, i)| {
            Text::new(
                format!(" {}", format_ns(bar.ns)),
                (bar.ns, SegmentValue::CenterOf(i)),
                ("sans-serif", 11).into_font(),
            )
        }))
        .map_err(|e| failed(path, e))?;
    root.present().map_err(|e| failed(path, e))
}

/// Three significant digits with a unit that fits: `0.232 ns`, `15.7 ns`, `3.91 µs`.
fn format_ns(ns: f64) -> String {
    let (value, unit) = if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else if value >= 1.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$} {unit}")
}

/// The host workloads that `--scaling` measures at several thread counts.
fn is_scaling(key: &Key) -> bool {
    key.backend == "host"
        && matches!(
            (key.primitive.as_str(), key.op.as_str()),
            ("barrier", "arrive_and_wait")
                | ("semaphore", "ping_pong")
                | ("semaphore", "acquire_release_contended")
                | ("fair_semaphore", "acquire_release_contended")
                | ("latch", "count_down_wait")
        )
}

/// One panel per scaling workload: ns per operation against threads, log-log.
fn scaling_chart(
    path: &Path,
    curves: &BTreeMap<(String, String), Vec<(u32, f64)>>,
) -> Result<(), String> {
    let workloads: Vec<&String> = {
        let mut names: Vec<&String> = curves.keys().map(|(workload, _)| workload).collect();
        names.dedup();
        names
    };
    let rows = workloads.len().div_ceil(2);
    let height = 60 + 420 * u32::try_from(rows).unwrap_or(1);
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(path, e))?;
    let root = root
        .titled(
            "CPU scaling: ns per operation by thread count (best of the repetitions)",
            ("sans-serif", 20),
        )
        .map_err(|e| failed(path, e))?;
    let panels = root.split_evenly((rows, 2));
    for (workload, panel) in workloads.iter().zip(&panels) {
        let lines: Vec<(&String, &Vec<(u32, f64)>)> = curves
            .iter()
            .filter(|((name, _), _)| name == *workload)
            .map(|((_, implementation), points)| (implementation, points))
            .collect();
        scaling_panel(path, panel, workload, &lines)?;
    }
    root.present().map_err(|e| failed(path, e))
}

fn scaling_panel(
    path: &Path,
    panel: &DrawingArea<SVGBackend<'_>, Shift>,
    workload: &str,
    lines: &[(&String, &Vec<(u32, f64)>)],
) -> Result<(), String> {
    let points = lines.iter().flat_map(|(_, points)| points.iter());
    let (mut low, mut high, mut most) = (f64::INFINITY, 0.0_f64, 1_u32);
    for &(threads, ns) in points {
        low = low.min(ns);
        high = high.max(ns);
        most = most.max(threads);
    }
    let mut chart = ChartBuilder::on(panel)
        .caption(workload, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (1.0..f64::from(most) * 1.2).log_scale(),
            (low / 1.5..high * 1.5).log_scale(),
        )
        .map_err(|e| failed(path, e))?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .x_desc("threads")
        .y_desc("ns per operation")
        .x_label_formatter(&|threads| format!("{threads:.0}"))
        .y_label_formatter(&|ns| format_ns(*ns))
        .draw()
        .map_err(|e| failed(path, e))?;
    for (implementation, points) in lines {
        let style = colour(implementation);
        let xy: Vec<(f64, f64)> = points.iter().map(|&(t, ns)| (f64::from(t), ns)).collect();
        chart
            .draw_series(LineSeries::new(xy.clone(), style.stroke_width(2)))
            .map_err(|e| failed(path, e))?
            .label(implementation.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], style.stroke_width(2))
            });
        chart
            .draw_series(
                xy.into_iter()
                    .map(|point| Circle::new(point, 3, style.filled())),
            )
            .map_err(|e| failed(path, e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| failed(path, e))
}

/// Writes every chart the records allow into `dir` (created if missing); returns the
/// files written.
pub fn write_charts(dir: &Path, records: &[Record]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let figures = fastest(records);
    let mut written = Vec::new();

    let mut scaling: BTreeMap<(String, String), Vec<(u32, f64)>> = BTreeMap::new();
    let mut thread_counts: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for (key, implementation, ns) in &figures {
        if is_scaling(key) {
            let workload = format!("{} {}", key.primitive, key.op);
            scaling
                .entry((workload.clone(), implementation.clone()))
                .or_default()
                .push((key.threads, *ns));
            thread_counts.entry(workload).or_default().push(key.threads);
        }
    }
    // A curve needs three thread counts; without --scaling there are at most two.
    let scaled = |workload: &str| {
        thread_counts.get(workload).is_some_and(|counts| {
            let mut counts = counts.clone();
            counts.sort_unstable();
            counts.dedup();
            counts.len() >= 3
        })
    };
    scaling.retain(|(workload, _), _| scaled(workload));
    for points in scaling.values_mut() {
        points.sort_by_key(|&(threads, _)| threads);
    }

    // Each workload's bars together, ours first, workloads in the order they were
    // measured (a peer's records may come from another file of the run).
    let mut grouped: Vec<&(Key, String, f64)> = figures.iter().collect();
    let first_seen = |key: &Key| figures.iter().position(|(k, _, _)| k == key);
    grouped.sort_by_key(|(key, implementation, _)| (first_seen(key), implementation != OURS));
    let bars = |keep: &dyn Fn(&Key) -> bool| -> Vec<Bar> {
        grouped
            .iter()
            .filter(|(key, _, _)| keep(key))
            .map(|(key, implementation, ns)| Bar {
                label: label(key),
                implementation: implementation.clone(),
                ns: *ns,
            })
            .collect()
    };
    let charts: [(&str, &str, Vec<Bar>); 3] = [
        (
            "costs-host.svg",
            "Host: per-operation cost; ours blue, C++ green, Rust std orange",
            // The multi-threaded workloads at two threads; the others are in scaling.svg.
            bars(&|key| key.backend == "host" && (!is_scaling(key) || key.threads <= 2)),
        ),
        (
            "costs-cuda.svg",
            "GPU: per-operation cost by scope; ours blue, CUDA C++ green",
            bars(&|key| key.backend == "cuda" && key.scope != "system"),
        ),
        (
            "host-gpu.svg",
            "Host <-> GPU: round trips, wake-ups, bus barrier, worker items",
            bars(&|key| key.backend == "cuda" && key.scope == "system"),
        ),
    ];
    for (name, title, bars) in charts {
        if !bars.is_empty() {
            let path = dir.join(name);
            bar_chart(&path, title, &bars)?;
            written.push(path);
        }
    }
    if !scaling.is_empty() {
        let path = dir.join("scaling.svg");
        scaling_chart(&path, &scaling)?;
        written.push(path);
    }
    Ok(written)
}
