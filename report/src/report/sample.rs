//! The report's records: one measured figure, and a row that puts ours beside its peer.

/// One measured figure: the fields of a `--json` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Which backend ran it: `"host"` or `"cuda"`.
    pub backend: &'static str,
    /// The thread scope of the operation, e.g. `"system"`.
    pub scope: &'static str,
    /// `"barrier"`, `"latch"`, `"semaphore"`, `"stop_token"`, `"stop_callback"`,
    /// `"atomic"`, `"fence"`, or `"peer:<name>"` for a peer.
    pub primitive: String,
    /// The operation, e.g. `"arrive_and_wait"` or `"fetch_add_acq_rel"`.
    pub op: String,
    /// Threads taking part.
    pub threads: u32,
    /// Best time per operation (per phase, per round trip), in nanoseconds.
    pub ns_per_op: f64,
    /// GPU rows: the launch shape `(grid, block)`; `None` on the host.
    pub launch: Option<(u32, u32)>,
    /// GPU rows timed with `%clock64`: SM cycles per operation (shown in the table;
    /// the JSON carries `ns_per_op` only).
    pub cycles_per_op: Option<f64>,
}

/// One line of the human table: our figure and, where one exists, the same workload
/// on the peer (a `Sample` whose primitive is `peer:<name>`).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Our primitive.
    pub ours: Sample,
    /// What people use instead, measured in the same run.
    pub peer: Option<Sample>,
}

impl Row {
    /// Our time over the peer's: below 1 means ours is faster.
    pub fn ratio(&self) -> Option<f64> {
        self.peer
            .as_ref()
            .map(|peer| self.ours.ns_per_op / peer.ns_per_op)
    }
}
