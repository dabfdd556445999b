//! Regression gating: the ratios ours / peer of a run, checked against the ratios stored
//! for this kind of machine, each with the noise band measured when it was stored.
//!
//! A ratio is our fastest repetition over the peer's fastest repetition of the same
//! workload (the same [`Key`]), from one run. Ratios, not times: both sides of a ratio
//! were measured alternating in one run, so a slower or busier machine of the same kind
//! moves both and leaves the ratio where it was.
//!
//! `--calibrate` stores, per ratio, the median over three or more runs and its band:
//! [`SPREAD_FACTOR`] times the runs' relative spread `(max - min) / median`, and never
//! less than [`MIN_BAND`]. A ratio whose spread exceeds [`MAX_SPREAD`] is not gated
//! (it is listed under `not_gated` with its spread): a band that wide would let any
//! regression through. A check fails when the median ratio of the runs given exceeds
//! `stored × (1 + band)`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sample::{Key, Record, Stat, Unit, OURS};

/// The `schema` of a gate file.
pub const GATE_SCHEMA: &str = "scoped-sync-gate/1";

/// The band is the runs' relative spread times this: a later run may land anywhere in
/// the spread seen, and past it, without failing. Two was too little: on an H200 host,
/// a second set of three runs put `stop_requested` against libstdc++ 15 % above a ratio
/// whose three calibration runs spread 6 % (docs/measurements.md).
pub const SPREAD_FACTOR: f64 = 3.0;

/// Ratios whose calibration runs spread more than this (relative to the median) are
/// not gated: the GPU memory-sync-domain row, bimodal by nature, spreads 100-fold.
pub const MAX_SPREAD: f64 = 0.5;

/// The narrowest band stored: below it, runs of the same binary on the same machine
/// kind differ by more than three runs of calibration happen to show.
pub const MIN_BAND: f64 = 0.05;

/// A gate file: the stored ratios of every machine kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateFile {
    /// Always [`GATE_SCHEMA`].
    pub schema: String,
    /// Per machine kind (e.g. `h200`, `h100`), its stored ratios.
    pub machines: BTreeMap<String, Machine>,
}

/// One machine kind's stored ratios.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// How many runs the ratios and bands come from.
    pub runs: usize,
    /// One entry per (workload, peer) pair.
    pub ratios: Vec<Entry>,
    /// Pairs measured but too noisy to gate, with their relative spread.
    #[serde(default)]
    pub not_gated: Vec<Noisy>,
}

/// A pair left out of the gate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Noisy {
    /// The workload, as [`Key`] prints it.
    pub workload: String,
    /// The peer's `impl`.
    pub peer: String,
    /// `(max - min) / median` of the calibration runs' ratios.
    pub spread: f64,
}

/// One stored ratio.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The workload, as [`Key`] prints it.
    pub workload: String,
    /// The peer's `impl`.
    pub peer: String,
    /// Median ours / peer over the calibration runs.
    pub ratio: f64,
    /// Allowed relative worsening before the check fails.
    pub band: f64,
}

/// The ratios of one run: for every workload we measured, ours over each peer measured
/// beside it (fastest repetition; in ns where both sides have ns, else in cycles, as
/// the CUDA C++ anchor times its single-thread chains).
pub fn ratios(records: &[Record]) -> BTreeMap<(String, String), f64> {
    let mut fastest: BTreeMap<(Key, &str), BTreeMap<Unit, f64>> = BTreeMap::new();
    for record in records {
        if record.stat == Stat::Min {
            let best = fastest
                .entry((record.key(), record.implementation.as_str()))
                .or_default()
                .entry(record.unit)
                .or_insert(f64::INFINITY);
            *best = best.min(record.value);
        }
    }
    let mut ratios = BTreeMap::new();
    for ((key, peer), theirs) in &fastest {
        let Some(ours) = fastest.get(&(key.clone(), OURS)) else {
            continue;
        };
        if *peer == OURS {
            continue;
        }
        let ratio = [Unit::Ns, Unit::Cycles].into_iter().find_map(|unit| {
            let (ours, theirs) = (ours.get(&unit)?, theirs.get(&unit)?);
            (*theirs > 0.0).then(|| ours / theirs)
        });
        if let Some(ratio) = ratio {
            ratios.insert((key.to_string(), (*peer).to_owned()), ratio);
        }
    }
    ratios
}

/// The median of `values` (the upper middle of an even count).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Per (workload, peer), the ratio of each run that has it.
fn per_pair(runs: &[Vec<Record>]) -> BTreeMap<(String, String), Vec<f64>> {
    let mut pairs: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for run in runs {
        for (pair, ratio) in ratios(run) {
            pairs.entry(pair).or_default().push(ratio);
        }
    }
    pairs
}

/// Stored ratios of `runs` (three or more): every pair that all runs measured.
pub fn calibrate(runs: &[Vec<Record>]) -> Machine {
    let mut machine = Machine {
        runs: runs.len(),
        ..Machine::default()
    };
    for ((workload, peer), mut ratios) in per_pair(runs) {
        if ratios.len() != runs.len() {
            continue;
        }
        let mid = median(&mut ratios);
        let spread = (ratios[ratios.len() - 1] - ratios[0]) / mid;
        if spread > MAX_SPREAD {
            machine.not_gated.push(Noisy {
                workload,
                peer,
                spread,
            });
        } else {
            machine.ratios.push(Entry {
                workload,
                peer,
                ratio: mid,
                band: (SPREAD_FACTOR * spread).max(MIN_BAND),
            });
        }
    }
    machine
}

/// The outcome of a check: one line per stored ratio, and whether all held.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// A table for people.
    pub text: String,
    /// No ratio worsened past its band and none went missing.
    pub passed: bool,
}

/// Checks `runs` against the stored `machine`: the median of the runs' ratios per pair
/// against `stored × (1 + band)`. A stored pair the runs did not measure fails too: a
/// row that silently disappears is a regression of what is measured.
pub fn check(machine: &Machine, runs: &[Vec<Record>]) -> Verdict {
    let measured = per_pair(runs);
    let mut text = String::new();
    let mut passed = true;
    let _ = writeln!(
        text,
        "{:<64} {:<36} {:>8} {:>6} {:>8}  verdict",
        "workload", "peer", "stored", "band", "now"
    );
    for entry in &machine.ratios {
        let pair = (entry.workload.clone(), entry.peer.clone());
        let limit = entry.ratio * (1.0 + entry.band);
        let (now, verdict) = match measured.get(&pair) {
            None => {
                passed = false;
                ("-".to_owned(), "FAILED: not measured")
            }
            Some(ratios) => {
                let now = median(&mut ratios.clone());
                let verdict = if now > limit {
                    passed = false;
                    "FAILED: worse than the band"
                } else if now < entry.ratio / (1.0 + entry.band) {
                    "ok (better than the band: recalibrate)"
                } else {
                    "ok"
                };
                (format!("{now:.3}"), verdict)
            }
        };
        let _ = writeln!(
            text,
            "{:<64} {:<36} {:>8.3} {:>5.0}% {:>8}  {verdict}",
            entry.workload,
            entry.peer,
            entry.ratio,
            entry.band * 100.0,
            now
        );
    }
    Verdict { text, passed }
}

/// Reads a gate file; a missing file is an empty one (the first calibration makes it).
pub fn load(path: &Path) -> Result<GateFile, String> {
    match fs::read_to_string(path) {
        Ok(text) => {
            let file: GateFile = serde_json::from_str(&text)
                .map_err(|error| format!("{}: not a gate file: {error}", path.display()))?;
            if file.schema != GATE_SCHEMA {
                return Err(format!(
                    "{}: schema '{}', this program reads '{GATE_SCHEMA}'",
                    path.display(),
                    file.schema
                ));
            }
            Ok(file)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(GateFile {
            schema: GATE_SCHEMA.to_owned(),
            machines: BTreeMap::new(),
        }),
        Err(error) => Err(format!("cannot read {}: {error}", path.display())),
    }
}

/// Writes a gate file, pretty-printed so that a diff shows which ratio moved.
pub fn store(path: &Path, file: &GateFile) -> Result<(), String> {
    let text = serde_json::to_string_pretty(file).expect("a gate file serializes");
    fs::write(path, text + "\n")
        .map_err(|error| format!("cannot write {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::{Sample, Stats};

    /// One run: ours and a peer on one workload, at the given times.
    fn run(ours: f64, peer: f64) -> Vec<Record> {
        let sample = Sample::ours(
            "host",
            "system",
            "barrier",
            "arrive_and_wait",
            2,
            Stats::single(ours),
        );
        let mut records = sample.records();
        records.extend(sample.peer("libstdcxx", Stats::single(peer)).records());
        records
    }

    #[test]
    fn a_ratio_is_ours_over_the_peer_of_the_same_workload() {
        let ratios = ratios(&run(50.0, 100.0));
        assert_eq!(
            ratios.into_iter().collect::<Vec<_>>(),
            [(
                (
                    "host/system/barrier/arrive_and_wait/2t".to_owned(),
                    "libstdcxx".to_owned()
                ),
                0.5
            )]
        );
    }

    #[test]
    fn calibration_stores_the_median_and_a_band_from_the_spread() {
        let machine = calibrate(&[run(50.0, 100.0), run(60.0, 100.0), run(55.0, 100.0)]);
        assert_eq!(machine.runs, 3);
        let entry = &machine.ratios[0];
        assert!((entry.ratio - 0.55).abs() < 1e-12);
        // Spread (0.6 - 0.5) / 0.55, times the factor.
        assert!((entry.band - SPREAD_FACTOR * 0.1 / 0.55).abs() < 1e-12);
        let noisy = calibrate(&[run(10.0, 100.0), run(60.0, 100.0), run(55.0, 100.0)]);
        assert!(noisy.ratios.is_empty());
        assert_eq!(noisy.not_gated.len(), 1);
        let tight = calibrate(&[run(50.0, 100.0), run(50.0, 100.0), run(50.0, 100.0)]);
        assert_eq!(tight.ratios[0].band, MIN_BAND);
    }

    #[test]
    fn cycles_count_where_one_side_has_no_ns() {
        let ours = Sample::ours("cuda", "block", "atomic", "chain", 1, Stats::single(100.0))
            .launched(1, 1)
            .with_cycles(Stats::single(200.0));
        let mut anchor = ours.peer("cuda_cpp", Stats::single(1.0)).records();
        anchor.retain(|record| record.unit == Unit::Cycles);
        assert!(anchor.is_empty(), "a peer has no cycles unless given");
        let mut anchor = ours.peer("cuda_cpp", Stats::single(0.0));
        anchor.cycles = Some(Stats::single(400.0));
        let mut records: Vec<Record> = anchor
            .records()
            .into_iter()
            .filter(|record| record.unit == Unit::Cycles)
            .collect();
        records.extend(ours.records());
        assert_eq!(ratios(&records).into_values().collect::<Vec<_>>(), [0.5]);
    }

    #[test]
    fn a_check_fails_past_the_band_and_on_a_missing_row() {
        let machine = calibrate(&[run(50.0, 100.0), run(50.0, 100.0), run(50.0, 100.0)]);
        assert!(check(&machine, &[run(52.0, 100.0)]).passed);
        let worse = check(&machine, &[run(53.0, 100.0)]);
        assert!(!worse.passed, "{}", worse.text);
        assert!(worse.text.contains("FAILED: worse than the band"));
        assert!(check(&machine, &[run(30.0, 100.0)])
            .text
            .contains("recalibrate"));
        let missing = check(&machine, &[Vec::new()]);
        assert!(!missing.passed && missing.text.contains("not measured"));
    }
}
