//! The report's records: one measured figure with its spread, and a row that puts ours
//! beside the peers measured in the same run.
//!
//! The machine-readable shape is [`Record`], one JSON object per line, documented in
//! `docs/report-schema.md` and specified by `docs/report.schema.json` (a test validates
//! `--quick --json` output against that file).

use serde::{Deserialize, Serialize};

/// The `schema` field of every record: bumped when a field changes meaning.
pub const SCHEMA: &str = "scoped-sync-report/1";

/// The `impl` of our own primitives; peers name themselves (`std_barrier`,
/// `libstdcxx`, `libcudacxx`, ...).
pub const OURS: &str = "scoped_sync";

/// What a measurement's figures count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Nanoseconds per operation (per phase, per round trip, per item).
    Ns,
    /// SM clock cycles per operation (`%clock64` on the GPU).
    Cycles,
}

/// Which statistic of the repetitions a record's `value` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// The fastest repetition: the report's headline figure, because noise on a
    /// shared machine only ever adds time.
    Min,
    /// The middle repetition (the upper middle of an even count).
    Median,
    /// The slowest repetition.
    Max,
}

/// The spread of one measurement's repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Fastest.
    pub min: f64,
    /// Middle.
    pub median: f64,
    /// Slowest.
    pub max: f64,
    /// How many repetitions these come from.
    pub repetitions: u32,
}

impl Stats {
    /// The statistics of `values` (one per repetition).
    ///
    /// # Panics
    ///
    /// If `values` is empty: every measurement runs at least once.
    pub fn of(values: &[f64]) -> Self {
        assert!(!values.is_empty(), "a measurement without repetitions");
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Self {
            min: sorted[0],
            median: sorted[sorted.len() / 2],
            max: sorted[sorted.len() - 1],
            repetitions: u32::try_from(sorted.len()).unwrap_or(u32::MAX),
        }
    }

    /// One figure measured once.
    pub fn single(value: f64) -> Self {
        Self::of(&[value])
    }

    /// Every statistic scaled by `factor` (ns to cycles and back).
    pub fn scaled(self, factor: f64) -> Self {
        Self {
            min: self.min * factor,
            median: self.median * factor,
            max: self.max * factor,
            repetitions: self.repetitions,
        }
    }

    fn each(self) -> [(Stat, f64); 3] {
        [
            (Stat::Min, self.min),
            (Stat::Median, self.median),
            (Stat::Max, self.max),
        ]
    }
}

/// One measured operation: what ran (the key fields and `implementation`) and its
/// per-operation times.
///
/// A peer measured beside one of ours carries *our* row's key (`primitive`, `op`,
/// `variant`, `threads`, `launch`) and its own `implementation`: records with the same
/// key and different implementations are the same workload, comparable by ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Which backend ran it: `"host"` or `"cuda"`.
    pub backend: &'static str,
    /// The thread scope of the operation, e.g. `"system"`.
    pub scope: &'static str,
    /// The primitive, an identifier: `"barrier"`, `"semaphore"`, `"atomic"`, ...
    pub primitive: &'static str,
    /// Who implemented what ran: [`OURS`] or a peer's identifier.
    pub implementation: String,
    /// The operation, an identifier: `"arrive_and_wait"`, `"fetch_add_acq_rel"`, ...
    pub op: String,
    /// What distinguishes this workload from others of the same op (placement,
    /// paths, window), an identifier; `None` for the plain one.
    pub variant: Option<String>,
    /// Threads taking part.
    pub threads: u32,
    /// GPU rows: the launch shape `(grid, block)`; `None` on the host.
    pub launch: Option<(u32, u32)>,
    /// Nanoseconds per operation over the repetitions.
    pub ns: Stats,
    /// GPU rows timed with `%clock64`: SM cycles per operation.
    pub cycles: Option<Stats>,
}

impl Sample {
    /// Our measurement of `primitive`/`op` at `scope` of `backend`, `threads` threads.
    pub fn ours(
        backend: &'static str,
        scope: &'static str,
        primitive: &'static str,
        op: impl Into<String>,
        threads: u32,
        ns: Stats,
    ) -> Self {
        Self {
            backend,
            scope,
            primitive,
            implementation: OURS.to_owned(),
            op: op.into(),
            variant: None,
            threads,
            launch: None,
            ns,
            cycles: None,
        }
    }

    /// The same sample with a variant.
    pub fn variant(mut self, variant: impl Into<String>) -> Self {
        self.variant = Some(variant.into());
        self
    }

    /// The same sample with a GPU launch shape.
    pub fn launched(mut self, grid: u32, block: u32) -> Self {
        self.launch = Some((grid, block));
        self
    }

    /// The same sample with cycle counts.
    pub fn with_cycles(mut self, cycles: Stats) -> Self {
        self.cycles = Some(cycles);
        self
    }

    /// A peer's measurement of this sample's workload: same key, `implementation`
    /// named, its own figures.
    pub fn peer(&self, implementation: &str, ns: Stats) -> Self {
        Self {
            implementation: implementation.to_owned(),
            ns,
            cycles: None,
            ..self.clone()
        }
    }

    /// The JSON records of this sample: min, median and max in ns, and in cycles
    /// where it has them.
    pub fn records(&self) -> Vec<Record> {
        let in_unit = |unit: Unit, stats: Stats| {
            stats.each().map(|(stat, value)| Record {
                schema: SCHEMA.to_owned(),
                backend: self.backend.to_owned(),
                scope: self.scope.to_owned(),
                primitive: self.primitive.to_owned(),
                implementation: self.implementation.clone(),
                op: self.op.clone(),
                variant: self.variant.clone(),
                threads: self.threads,
                grid: self.launch.map(|(grid, _)| grid),
                block: self.launch.map(|(_, block)| block),
                stat,
                value,
                unit,
                repetitions: stats.repetitions,
            })
        };
        let mut records = in_unit(Unit::Ns, self.ns).to_vec();
        if let Some(cycles) = self.cycles {
            records.extend(in_unit(Unit::Cycles, cycles));
        }
        records
    }
}

/// One line of `--json`: one statistic of one measurement in one unit.
///
/// Field by field in `docs/report-schema.md`. Identifiers (`primitive`, `impl`, `op`,
/// `variant`) match `[a-z][a-z0-9_]*`, so scripts can group by them without parsing
/// prose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `"host"` or `"cuda"`.
    pub backend: String,
    /// `"thread"`, `"block"`, `"cluster"`, `"device"` or `"system"`.
    pub scope: String,
    /// The primitive.
    pub primitive: String,
    /// Who implemented it: `"scoped_sync"` or the peer.
    #[serde(rename = "impl")]
    pub implementation: String,
    /// The operation.
    pub op: String,
    /// The variant, or `null`.
    pub variant: Option<String>,
    /// Threads taking part.
    pub threads: u32,
    /// Blocks in the GPU launch, or `null` on the host.
    pub grid: Option<u32>,
    /// Threads per block, or `null` on the host.
    pub block: Option<u32>,
    /// Which statistic `value` is.
    pub stat: Stat,
    /// The figure, per operation.
    pub value: f64,
    /// What `value` counts.
    pub unit: Unit,
    /// Repetitions the statistic is taken over.
    pub repetitions: u32,
}

/// The fields that say which workload a record measured: records with equal keys are
/// comparable (their implementations differ).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// `backend`.
    pub backend: String,
    /// `scope`.
    pub scope: String,
    /// `primitive`.
    pub primitive: String,
    /// `op`.
    pub op: String,
    /// `variant`.
    pub variant: Option<String>,
    /// `threads`.
    pub threads: u32,
    /// `grid`.
    pub grid: Option<u32>,
    /// `block`.
    pub block: Option<u32>,
}

impl Record {
    /// The workload this record measured.
    pub fn key(&self) -> Key {
        Key {
            backend: self.backend.clone(),
            scope: self.scope.clone(),
            primitive: self.primitive.clone(),
            op: self.op.clone(),
            variant: self.variant.clone(),
            threads: self.threads,
            grid: self.grid,
            block: self.block,
        }
    }
}

impl std::fmt::Display for Key {
    /// `backend/scope/primitive/op[/variant]/threads[/gridxblock]`: the name of a
    /// workload in the gate file and in messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.backend, self.scope, self.primitive, self.op
        )?;
        if let Some(variant) = &self.variant {
            write!(f, "/{variant}")?;
        }
        write!(f, "/{}t", self.threads)?;
        if let (Some(grid), Some(block)) = (self.grid, self.block) {
            write!(f, "/{grid}x{block}")?;
        }
        Ok(())
    }
}

/// One line of the human table: our figure and the peers measured beside it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Our primitive.
    pub ours: Sample,
    /// What people use instead, measured in the same run (same key as `ours`).
    pub peers: Vec<Sample>,
}

impl Row {
    /// A row with no peer.
    pub fn alone(ours: Sample) -> Self {
        Self {
            ours,
            peers: Vec::new(),
        }
    }

    /// A row with one peer.
    pub fn beside(ours: Sample, peer: Sample) -> Self {
        Self {
            ours,
            peers: vec![peer],
        }
    }

    /// Our fastest time over `peer`'s: below 1 means ours is faster.
    pub fn ratio(&self, peer: &Sample) -> f64 {
        self.ours.ns.min / peer.ns.min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_order_statistics() {
        let stats = Stats::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!(
            (stats.min, stats.median, stats.max, stats.repetitions),
            (1.0, 3.0, 10.0, 4)
        );
        let one = Stats::single(5.0);
        assert_eq!((one.min, one.median, one.max), (5.0, 5.0, 5.0));
    }

    #[test]
    fn a_sample_becomes_three_records_per_unit_and_keeps_its_key() {
        let sample = Sample::ours(
            "cuda",
            "device",
            "atomic",
            "fetch_add",
            1,
            Stats::single(2.0),
        )
        .launched(1, 1)
        .with_cycles(Stats::single(4.0));
        let records = sample.records();
        assert_eq!(records.len(), 6);
        assert!(records.iter().all(|r| r.key() == records[0].key()));
        assert_eq!(
            records[0].key().to_string(),
            "cuda/device/atomic/fetch_add/1t/1x1"
        );
        let peer = sample.peer("libcudacxx", Stats::single(3.0));
        assert_eq!(peer.records().len(), 3);
        assert_eq!(peer.records()[0].key(), records[0].key());
        assert_eq!(peer.records()[0].implementation, "libcudacxx");
    }
}
