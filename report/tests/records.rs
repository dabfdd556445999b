//! The report's machine-readable output, end to end through the binary: every record
//! of a `--quick --json` run follows `docs/report.schema.json`; `--plot` draws
//! well-formed SVG from those records; `--gate` stores and checks their ratios; and,
//! where g++ is installed, `--anchor` files libstdc++'s figures beside ours.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

const REPORT: &str = env!("CARGO_BIN_EXE_scoped-sync");

/// The repository root (the report crate's parent).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the report crate sits in the repository")
        .to_owned()
}

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn report(args: &[&str]) -> Output {
    Command::new(REPORT)
        .args(args)
        .output()
        .expect("the report binary runs")
}

/// One quick host-only scaling run, shared by the tests (it takes a few seconds).
fn quick_run() -> &'static str {
    static RUN: OnceLock<String> = OnceLock::new();
    RUN.get_or_init(|| {
        let output = report(&["--quick", "--json", "--host-only", "--scaling"]);
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).expect("UTF-8 JSON")
    })
}

/// Validates every line of `text` against the schema file; returns the parsed records.
fn validate(text: &str, origin: &str) -> Vec<Value> {
    let schema: Value = serde_json::from_str(
        &fs::read_to_string(repository().join("docs/report.schema.json")).expect("schema file"),
    )
    .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    text.lines()
        .enumerate()
        .map(|(number, line)| {
            let record: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{origin}:{}: not JSON ({e}): {line}", number + 1));
            let errors: Vec<String> = validator
                .iter_errors(&record)
                .map(|error| error.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "{origin}:{}: {line}\n{errors:#?}",
                number + 1
            );
            record
        })
        .collect()
}

#[test]
fn every_record_follows_the_schema() {
    let records = validate(quick_run(), "--quick --json");
    assert!(records.len() > 100, "{} records", records.len());
    let ops: BTreeSet<(String, String)> = records
        .iter()
        .map(|r| (r["primitive"].to_string(), r["op"].to_string()))
        .collect();
    for (primitive, op) in [
        ("barrier", "arrive_and_wait"),
        ("semaphore", "ping_pong"),
        ("semaphore", "acquire_release_contended"),
        ("latch", "count_down_wait"),
        ("stop_token", "stop_requested"),
        ("atomic", "fetch_add_acq_rel"),
        ("fence", "fence_seq_cst"),
    ] {
        assert!(
            ops.contains(&(format!("\"{primitive}\""), format!("\"{op}\""))),
            "no {primitive} {op} in the run"
        );
    }
    // Per measurement: exactly one min, median and max, in that order of size.
    let mut stats: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for record in &records {
        let mut measurement = record.clone();
        let object = measurement.as_object_mut().expect("an object");
        let stat = object.remove("stat").expect("stat").to_string();
        let value = object
            .remove("value")
            .expect("value")
            .as_f64()
            .expect("a number");
        let previous = stats
            .entry(measurement.to_string())
            .or_default()
            .insert(stat, value);
        assert!(previous.is_none(), "a statistic twice: {record}");
    }
    for (measurement, by_stat) in &stats {
        let get = |stat: &str| by_stat[&format!("\"{stat}\"")];
        assert_eq!(by_stat.len(), 3, "{measurement}");
        assert!(
            get("min") <= get("median") && get("median") <= get("max"),
            "{measurement}: {by_stat:?}"
        );
    }
}

#[test]
fn stored_records_follow_the_schema() {
    // The measured runs kept in the repository (the README's charts come from them),
    // which include the GPU sections this machine may not be able to run.
    let data = repository().join("docs/data");
    let mut checked = 0;
    for entry in fs::read_dir(&data).expect("docs/data") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            let text = fs::read_to_string(&path).expect("readable");
            validate(&text, &path.display().to_string());
            checked += 1;
        }
    }
    assert!(checked > 0, "no .jsonl runs in {}", data.display());
}

/// The root element and every `<text>` of an SVG file, which must parse as XML.
fn svg_texts(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let document = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not well-formed XML: {e}", path.display()));
    assert_eq!(document.root_element().tag_name().name(), "svg");
    document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
        .filter_map(|node| node.text().map(|text| text.trim().to_owned()))
        .collect()
}

#[test]
fn plot_writes_well_formed_charts_of_the_records() {
    let dir = scratch("plot");
    let run = dir.join("run.jsonl");
    fs::write(&run, quick_run()).expect("write the run");
    let charts = dir.join("charts");
    let output = report(&[
        "--from",
        run.to_str().expect("UTF-8 path"),
        "--plot",
        charts.to_str().expect("UTF-8 path"),
    ]);
    assert!(output.status.success(), "{output:?}");

    let costs = svg_texts(&charts.join("costs-host.svg"));
    for label in [
        "barrier arrive_and_wait · scoped_sync",
        "barrier arrive_and_wait · std_barrier",
        "atomic fetch_add_acq_rel · scoped_sync",
    ] {
        assert!(
            costs.iter().any(|text| text == label),
            "no bar labelled '{label}'"
        );
    }
    // A host-only run has no GPU charts.
    assert!(!charts.join("costs-cuda.svg").exists());
    assert!(!charts.join("host-gpu.svg").exists());
    // --scaling measured 1, 2, 4, ... threads: curves, where the machine has 2+ threads.
    let hardware = std::thread::available_parallelism().map_or(1, usize::from);
    if hardware >= 2 {
        let scaling = svg_texts(&charts.join("scaling.svg"));
        for title in [
            "barrier arrive_and_wait",
            "semaphore acquire_release_contended",
        ] {
            assert!(
                scaling.iter().any(|text| text == title),
                "no panel '{title}'"
            );
        }
        assert!(
            scaling.iter().any(|text| text == "std_barrier"),
            "no legend"
        );
    }
}

#[test]
fn the_gate_stores_ratios_and_fails_on_a_worse_one() {
    let dir = scratch("gate");
    let run = dir.join("run.jsonl");
    fs::write(&run, quick_run()).expect("write the run");
    let run = run.to_str().expect("UTF-8 path");
    let gate = dir.join("gate.json");
    let gate = gate.to_str().expect("UTF-8 path");

    let stored = report(&[
        "--from",
        run,
        "--from",
        run,
        "--from",
        run,
        "--gate",
        gate,
        "--machine",
        "test",
        "--calibrate",
    ]);
    assert!(stored.status.success(), "{stored:?}");
    let same = report(&["--from", run, "--gate", gate, "--machine", "test"]);
    assert!(same.status.success(), "{same:?}");

    // Our barrier at twice its time: its ratio against std_barrier doubles, past any
    // band the identical calibration runs allow.
    let slower: String = quick_run()
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).expect("JSON");
            if record["impl"] == "scoped_sync" && record["primitive"] == "barrier" {
                let value = record["value"].as_f64().expect("number");
                record["value"] = Value::from(value * 2.0);
            }
            record.to_string() + "\n"
        })
        .collect();
    let worse = dir.join("worse.jsonl");
    fs::write(&worse, slower).expect("write");
    let failed = report(&[
        "--from",
        worse.to_str().expect("UTF-8 path"),
        "--gate",
        gate,
        "--machine",
        "test",
    ]);
    assert_eq!(failed.status.code(), Some(1), "{failed:?}");
    let table = String::from_utf8_lossy(&failed.stdout);
    assert!(
        table.contains("host/system/barrier/arrive_and_wait/2t")
            && table.contains("FAILED: worse than the band"),
        "{table}"
    );
    // An unknown machine kind is an error, not a pass.
    let unknown = report(&["--from", run, "--gate", gate, "--machine", "other"]);
    assert!(!unknown.status.success());
}

#[test]
fn the_anchor_runs_beside_ours() {
    let dir = scratch("anchor");
    let program = dir.join("host_baselines");
    let built = Command::new("g++")
        .args(["-O2", "-std=c++20", "-pthread"])
        .arg(repository().join("baselines/host_baselines.cpp"))
        .arg("-o")
        .arg(&program)
        .output();
    match built {
        Err(_) => {
            eprintln!("skipped: no g++ to build baselines/host_baselines.cpp");
            return;
        }
        Ok(output) => assert!(output.status.success(), "g++ failed: {output:?}"),
    }
    // The same program stands in for the libc++ build: what is tested here is that
    // each anchor's figures come out under its own name.
    let program = program.to_str().expect("UTF-8 path");
    let output = report(&[
        "--quick",
        "--json",
        "--host-only",
        "--anchor",
        program,
        "--anchor-libcxx",
        program,
    ]);
    assert!(output.status.success(), "{output:?}");
    let records = validate(&String::from_utf8_lossy(&output.stdout), "--anchor run");
    for implementation in ["libstdcxx", "libcxx"] {
        let anchored: BTreeSet<String> = records
            .iter()
            .filter(|r| r["impl"] == implementation)
            .map(|r| format!("{} {} {}", r["primitive"], r["op"], r["threads"]))
            .collect();
        for expected in [
            "\"barrier\" \"arrive_and_wait\" 2",
            "\"barrier\" \"arrive_and_wait\" 4",
            "\"semaphore\" \"ping_pong\" 2",
            "\"semaphore\" \"acquire_release_uncontended\" 1",
            "\"latch\" \"count_down_wait\" 1",
            "\"stop_token\" \"stop_requested\" 1",
            "\"stop_callback\" \"register_drop\" 1",
        ] {
            assert!(
                anchored.contains(expected),
                "no {implementation} record for {expected}: {anchored:?}"
            );
        }
    }
    // Something that is not the anchor is refused before any measuring, under either
    // option.
    for option in ["--anchor", "--anchor-libcxx"] {
        let refused = report(&["--quick", "--host-only", option, "/bin/false"]);
        assert!(!refused.status.success(), "{option} /bin/false was taken");
    }
}
