//! Runs the litmus kernels (`kernels/src/litmus.rs`): every case of [`CASES`] (a shape's
//! variant, at a scope, with its roles placed one way), many instances per launch, and
//! counts each outcome.
//!
//! `scoped-sync --litmus` prints the table; `tests/gpu_litmus.rs` checks that no
//! forbidden outcome shows. What the PTX memory model says of each weak outcome, and
//! why, is in the shapes' tables in `kernels/src/litmus.rs`; [`CASES`] carries the
//! verdicts.

use std::sync::LazyLock;

use scoped_sync::cuda::{CudaError, Dim3, Kernel, KernelArgs, LaunchConfig};

use crate::Gpu;

/// Threads per block of a litmus launch (a power of two, as the harness needs).
const BLOCK: u32 = 256;
/// Blocks per thread-block cluster in the launches of cluster cases (a power of two, at
/// least the most roles of a shape, at most the portable cluster size 8).
const CLUSTER: u32 = 4;
/// Rounds per launch (instances per launch = rounds × the placement's instances per
/// round).
const ROUNDS: u32 = 64;
/// Store/load pairs each thread spins per round around its role (see the kernels'
/// "Stress").
const JITTER: u32 = 64;
/// Locations and result registers per instance, words per location, and lines of the
/// shared stress region (as the kernels lay them out).
const LOCATIONS: usize = 4;
const REGISTERS: usize = 4;
const LINE_WORDS: usize = 32;
const STRESS_LINES: usize = 64;
/// Histogram slots: four registers of two bits.
pub const OUTCOMES: usize = 256;

/// The scope of a case's operations: which kernel of the shape runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `Block` (`.cta`).
    Cta,
    /// `Cluster` (`.cluster`); its cases run in thread-block clusters of four
    /// blocks.
    Cluster,
    /// `Device` (`.gpu`).
    Gpu,
    /// `System` (`.sys`).
    Sys,
}

impl Scope {
    /// The PTX qualifier, as kernel names and the table spell it.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Cta => "cta",
            Scope::Cluster => "cluster",
            Scope::Gpu => "gpu",
            Scope::Sys => "sys",
        }
    }
}

/// Where the roles of an instance run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// All in one block.
    SameBlock,
    /// Each in a different block.
    OtherBlocks,
    /// Each in a different block of one cluster.
    SameCluster,
    /// Each in a different cluster.
    OtherClusters,
    /// All but the last in one block, the last in another block.
    Split,
    /// All but the last in one block, the last in another block of the same cluster.
    SplitInCluster,
}

impl Placement {
    /// The kernels' code for it (`kernels/src/litmus.rs`).
    fn code(self) -> u32 {
        match self {
            Placement::SameBlock => 0,
            Placement::OtherBlocks => 1,
            Placement::SameCluster => 2,
            Placement::OtherClusters => 3,
            Placement::Split => 4,
            Placement::SplitInCluster => 5,
        }
    }

    /// Whether it needs a launch in clusters.
    fn needs_clusters(self) -> bool {
        matches!(
            self,
            Placement::SameCluster | Placement::OtherClusters | Placement::SplitInCluster
        )
    }

    /// How the table names it.
    pub fn name(self) -> &'static str {
        match self {
            Placement::SameBlock => "one block",
            Placement::OtherBlocks => "across blocks",
            Placement::SameCluster => "one cluster",
            Placement::OtherClusters => "across clusters",
            Placement::Split => "last role apart",
            Placement::SplitInCluster => "last apart, 1 cluster",
        }
    }
}

/// What the threads do around their roles (the kernels' "Stress").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stress {
    /// Delay loops on a line of each thread's own: timing jitter only.
    OwnLine,
    /// Delay loops on lines every thread of the grid hammers.
    SharedLines,
    /// One or the other, by a random bit per round.
    #[default]
    Mixed,
}

impl Stress {
    fn code(self) -> u32 {
        match self {
            Stress::OwnLine => 0,
            Stress::SharedLines => 1,
            Stress::Mixed => 2,
        }
    }
}

/// A litmus shape, as the host reads its outcomes: register `i` of an instance is
/// bits `2i..2i + 2` of the outcome (see [`register`]).
#[derive(Debug)]
pub struct Shape {
    /// How the table names it.
    pub name: &'static str,
    /// Its kernels are `litmus_<kernel>_<scope>`.
    kernel: &'static str,
    /// Roles per instance.
    pub roles: u32,
    /// The test, in one line.
    pub test: &'static str,
    /// Whether an outcome is the weak one (the one the model forbids where it forbids
    /// anything).
    pub weak: fn(usize) -> bool,
    /// Whether an outcome can happen at all, allowed or forbidden (anything else is a
    /// harness bug).
    pub possible: fn(usize) -> bool,
    /// How the table shows an outcome.
    pub show: fn(usize) -> String,
}

/// Register `index` (0 to 3) of an outcome.
pub fn register(outcome: usize, index: usize) -> usize {
    (outcome >> (2 * index)) & 3
}

/// Whether registers `0..count` are 0 or 1 and the rest 0.
fn bits(outcome: usize, count: usize) -> bool {
    (0..4).all(|index| register(outcome, index) <= usize::from(index < count))
}

fn show_registers(outcome: usize, count: usize) -> String {
    (0..count)
        .map(|index| format!("r{index}={}", register(outcome, index)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn two_registers(outcome: usize) -> bool {
    bits(outcome, 2)
}

fn show_two(outcome: usize) -> String {
    show_registers(outcome, 2)
}

fn three_registers(outcome: usize) -> bool {
    bits(outcome, 3)
}

fn show_three(outcome: usize) -> String {
    show_registers(outcome, 3)
}

/// `r0` a read (0 or 1), `r1` a final value (1 or 2: every instance writes both).
fn read_and_final(outcome: usize) -> bool {
    register(outcome, 0) <= 1 && matches!(register(outcome, 1), 1 | 2) && outcome >> 4 == 0
}

/// Message passing: `x=1; y=1 ‖ r0=y; r1=x`.
pub static MP: Shape = Shape {
    name: "MP",
    kernel: "mp",
    roles: 2,
    test: "x=1; y=1 || r0=y; r1=x",
    weak: |outcome| outcome == 0b01,
    possible: two_registers,
    show: show_two,
};

/// Store buffering: `x=1; r0=y ‖ y=1; r1=x`.
pub static SB: Shape = Shape {
    name: "SB",
    kernel: "sb",
    roles: 2,
    test: "x=1; r0=y || y=1; r1=x",
    weak: |outcome| outcome == 0,
    possible: two_registers,
    show: show_two,
};

/// Load buffering: `r0=x; y=1 ‖ r1=y; x=1`.
pub static LB: Shape = Shape {
    name: "LB",
    kernel: "lb",
    roles: 2,
    test: "r0=x; y=1 || r1=y; x=1",
    weak: |outcome| outcome == 0b0101,
    possible: two_registers,
    show: show_two,
};

/// Independent reads of independent writes.
pub static IRIW: Shape = Shape {
    name: "IRIW",
    kernel: "iriw",
    roles: 4,
    test: "x=1 || y=1 || r0=x; r1=y || r2=y; r3=x",
    weak: |outcome| outcome == 0b0001_0001,
    possible: |outcome| bits(outcome, 4),
    show: |outcome| show_registers(outcome, 4),
};

/// 2+2W: outcome the final `x` and `y`.
pub static TWO_PLUS_TWO_W: Shape = Shape {
    name: "2+2W",
    kernel: "2p2w",
    roles: 2,
    test: "x=1; y=2 || y=1; x=2",
    weak: |outcome| outcome == 0b0101,
    possible: |outcome| {
        matches!(register(outcome, 0), 1 | 2)
            && matches!(register(outcome, 1), 1 | 2)
            && outcome >> 4 == 0
    },
    show: |outcome| format!("x={} y={}", register(outcome, 0), register(outcome, 1)),
};

/// Write-to-read causality.
pub static WRC: Shape = Shape {
    name: "WRC",
    kernel: "wrc",
    roles: 3,
    test: "x=1 || r0=x; y=1 || r1=y; r2=x",
    weak: |outcome| outcome == 0b00_0101,
    possible: three_registers,
    show: show_three,
};

/// ISA2: a message passed on through two synchronizations.
pub static ISA2: Shape = Shape {
    name: "ISA2",
    kernel: "isa2",
    roles: 3,
    test: "x=1; y=1 || r0=y; z=1 || r1=z; r2=x",
    weak: |outcome| outcome == 0b00_0101,
    possible: three_registers,
    show: show_three,
};

/// Coherence of read-read.
pub static CORR: Shape = Shape {
    name: "CoRR",
    kernel: "corr",
    roles: 2,
    test: "x=1 || r0=x; r1=x",
    weak: |outcome| outcome == 0b01,
    possible: two_registers,
    show: show_two,
};

/// Atomicity of two `fetch_add(x, 1)`: register 0 the final `x`, registers 1 and 2 the
/// values the two roles got back.
pub static RMW: Shape = Shape {
    name: "RMW",
    kernel: "rmw",
    roles: 2,
    test: "r0=x++ || r1=x++",
    weak: |outcome| register(outcome, 0) == 1,
    possible: |outcome| {
        let (x, first, second) = (
            register(outcome, 0),
            register(outcome, 1),
            register(outcome, 2),
        );
        // Each add writes what it read plus one, so x = 2 needs one to have read the
        // other's 1; x = 1 is a lost update.
        let fine = x == 2 && first + second == 1;
        let lost = x == 1 && first + second <= 1;
        (fine || lost) && outcome >> 6 == 0
    },
    show: |outcome| {
        format!(
            "x={} r0={} r1={}",
            register(outcome, 0),
            register(outcome, 1),
            register(outcome, 2)
        )
    },
};

/// Message passing through a reduction and an acquire fence.
pub static MP_RED: Shape = Shape {
    name: "MP+red",
    kernel: "mpred",
    roles: 2,
    test: "x=1; red.add(y,1) || r0=y; fence.acquire; r1=x",
    weak: |outcome| outcome == 0b01,
    possible: two_registers,
    show: show_two,
};

/// S: register 1 the final `x`.
pub static SHAPE_S: Shape = Shape {
    name: "S",
    kernel: "s",
    roles: 2,
    test: "x=2; y=1 || r0=y; x=1",
    weak: |outcome| register(outcome, 0) == 1 && register(outcome, 1) == 2,
    possible: read_and_final,
    show: |outcome| format!("r0={} x={}", register(outcome, 0), register(outcome, 1)),
};

/// R: register 1 the final `y`.
pub static SHAPE_R: Shape = Shape {
    name: "R",
    kernel: "r",
    roles: 2,
    test: "x=1; y=1 || y=2; r0=x",
    weak: |outcome| register(outcome, 0) == 0 && register(outcome, 1) == 2,
    possible: read_and_final,
    show: |outcome| format!("r0={} y={}", register(outcome, 0), register(outcome, 1)),
};

/// One litmus case: a shape's variant at a scope and placement, and what the PTX
/// memory model says of its weak outcome there.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// The shape.
    pub shape: &'static Shape,
    /// The variant (see the shape's table in `kernels/src/litmus.rs`).
    pub variant: u32,
    /// What the variant does, for the table.
    pub what: &'static str,
    /// The scope of its operations.
    pub scope: Scope,
    /// Where its roles run.
    pub placement: Placement,
    /// Whether the model allows the weak outcome here.
    pub weak_allowed: bool,
}

impl Case {
    /// The kernel that runs it.
    pub fn kernel(&self) -> String {
        format!("litmus_{}_{}", self.shape.kernel, self.scope.name())
    }

    /// Whether it runs in thread-block clusters.
    fn clustered(&self) -> bool {
        self.scope == Scope::Cluster || self.placement.needs_clusters()
    }

    /// One line naming the case, for messages.
    pub fn label(&self) -> String {
        format!(
            "{} variant {} ({}) at .{}, {}",
            self.shape.name,
            self.variant,
            self.what,
            self.scope.name(),
            self.placement.name()
        )
    }
}

/// Where a variant runs and what the model says there.
enum Verdict {
    /// Allowed at every scope and placement of [`STANDARD`]: nothing in the model
    /// forbids it.
    Allowed,
    /// Run at every scope and placement of [`STANDARD`]: forbidden where every role is
    /// inside one instance of the scope, allowed where not (the operations are not
    /// morally strong).
    ForbiddenInsideScope,
    /// Run only at these (scope, placement, weak outcome allowed).
    Only(&'static [(Scope, Placement, bool)]),
}

/// The scopes and placements most variants run at, and whether the roles are inside
/// one instance of the scope there.
const STANDARD: [(Scope, Placement, bool); 6] = [
    (Scope::Cta, Placement::SameBlock, true),
    (Scope::Cta, Placement::OtherBlocks, false),
    (Scope::Cluster, Placement::SameCluster, true),
    (Scope::Cluster, Placement::OtherClusters, false),
    (Scope::Gpu, Placement::OtherBlocks, true),
    (Scope::Sys, Placement::OtherBlocks, true),
];

/// Where a variant that mixes one `Block`-scope operation into `S`-scope ones runs:
/// with the roles in one block, where every operation is morally strong (forbidden),
/// and in different blocks inside `S`, where the `Block`-scope one is not (allowed).
const MISMATCH: &[(Scope, Placement, bool)] = &[
    (Scope::Cluster, Placement::SameBlock, false),
    (Scope::Cluster, Placement::SameCluster, true),
    (Scope::Gpu, Placement::SameBlock, false),
    (Scope::Gpu, Placement::OtherBlocks, true),
    (Scope::Sys, Placement::SameBlock, false),
    (Scope::Sys, Placement::OtherBlocks, true),
];

/// ISA2 with hop one at `Block`: forbidden with roles 0 and 1 in one block (hop one
/// morally strong) and role 2 elsewhere inside `S`; allowed with roles 0 and 1 apart.
const ISA2_MIXED: &[(Scope, Placement, bool)] = &[
    (Scope::Cluster, Placement::SplitInCluster, false),
    (Scope::Cluster, Placement::SameCluster, true),
    (Scope::Gpu, Placement::Split, false),
    (Scope::Gpu, Placement::OtherBlocks, true),
    (Scope::Sys, Placement::Split, false),
    (Scope::Sys, Placement::OtherBlocks, true),
];

/// A shape's variant, as the suite runs it.
struct Variant {
    shape: &'static Shape,
    number: u32,
    what: &'static str,
    verdict: Verdict,
}

const fn variant(
    shape: &'static Shape,
    number: u32,
    what: &'static str,
    verdict: Verdict,
) -> Variant {
    Variant {
        shape,
        number,
        what,
        verdict,
    }
}

use Verdict::{Allowed, ForbiddenInsideScope, Only};

/// Every variant the suite runs (numbers as in the shapes' tables in
/// `kernels/src/litmus.rs`, which give the reasons).
const VARIANTS: &[Variant] = &[
    variant(&MP, 0, "relaxed", Allowed),
    variant(&MP, 1, "release/acquire", ForbiddenInsideScope),
    variant(&MP, 2, "release .cta, acquire .S", Only(MISMATCH)),
    variant(&MP, 3, "fence.acq_rel both sides", ForbiddenInsideScope),
    variant(&MP, 4, "release, fence.acquire", ForbiddenInsideScope),
    variant(&SB, 0, "relaxed", Allowed),
    variant(&SB, 1, "fence.sc between", ForbiddenInsideScope),
    variant(&SB, 2, "fence.acq_rel between", Allowed),
    variant(&LB, 0, "relaxed", Allowed),
    variant(
        &LB,
        1,
        "acquire loads, release stores",
        ForbiddenInsideScope,
    ),
    variant(&LB, 2, "fence.acq_rel between", ForbiddenInsideScope),
    variant(&IRIW, 0, "relaxed", Allowed),
    variant(&IRIW, 1, "release stores, acquire loads", Allowed),
    variant(&IRIW, 2, "fence.acq_rel between reads", Allowed),
    variant(&IRIW, 3, "fence.sc between reads", ForbiddenInsideScope),
    variant(&TWO_PLUS_TWO_W, 0, "relaxed", Allowed),
    variant(&TWO_PLUS_TWO_W, 1, "fence.acq_rel between", Allowed),
    variant(&TWO_PLUS_TWO_W, 2, "fence.sc between", ForbiddenInsideScope),
    variant(&WRC, 0, "relaxed", Allowed),
    variant(&WRC, 1, "release/acquire of y", ForbiddenInsideScope),
    variant(&WRC, 2, "fence.acq_rel", ForbiddenInsideScope),
    variant(&ISA2, 0, "both hops release/acquire", ForbiddenInsideScope),
    variant(
        &ISA2,
        0,
        "both hops release/acquire",
        Only(&[(Scope::Cta, Placement::Split, true)]),
    ),
    variant(&ISA2, 1, "hop 1 at .cta, hop 2 at .S", Only(ISA2_MIXED)),
    variant(&ISA2, 2, "relaxed", Allowed),
    variant(&CORR, 0, "relaxed", ForbiddenInsideScope),
    variant(&CORR, 1, "second load .cta", Only(MISMATCH)),
    variant(&RMW, 0, "atom.add both", ForbiddenInsideScope),
    variant(&RMW, 1, "role 0's atom.add .cta", Only(MISMATCH)),
    variant(&MP_RED, 0, "red.relaxed", Allowed),
    variant(&MP_RED, 1, "red.release", ForbiddenInsideScope),
    variant(
        &MP_RED,
        2,
        "fence.release; red.relaxed",
        ForbiddenInsideScope,
    ),
    variant(&SHAPE_S, 0, "relaxed", Allowed),
    variant(&SHAPE_S, 1, "release/acquire", ForbiddenInsideScope),
    variant(
        &SHAPE_S,
        2,
        "fence.acq_rel both sides",
        ForbiddenInsideScope,
    ),
    variant(&SHAPE_R, 0, "relaxed", Allowed),
    variant(&SHAPE_R, 1, "fence.acq_rel between", Allowed),
    variant(&SHAPE_R, 2, "fence.sc between", ForbiddenInsideScope),
];

/// Every case the suite runs: each variant at each of its scopes and placements.
pub static CASES: LazyLock<Vec<Case>> = LazyLock::new(|| {
    let mut cases = Vec::new();
    for variant in VARIANTS {
        let mut add = |scope, placement, weak_allowed| {
            cases.push(Case {
                shape: variant.shape,
                variant: variant.number,
                what: variant.what,
                scope,
                placement,
                weak_allowed,
            })
        };
        match variant.verdict {
            Allowed => STANDARD
                .iter()
                .for_each(|&(scope, placement, _)| add(scope, placement, true)),
            ForbiddenInsideScope => STANDARD
                .iter()
                .for_each(|&(scope, placement, inside)| add(scope, placement, !inside)),
            Only(runs) => runs
                .iter()
                .for_each(|&(scope, placement, allowed)| add(scope, placement, allowed)),
        }
    }
    cases
});

/// What a case showed.
#[derive(Clone, Debug)]
pub struct Outcomes {
    /// The case.
    pub case: Case,
    /// Instances run.
    pub instances: u64,
    /// Count of each outcome.
    pub histogram: Vec<u64>,
    /// Whether the launches were cooperative. Cluster launches fall back to
    /// non-cooperative ones (sized so that every cluster fits at once) where the
    /// driver refuses a cooperative launch in clusters.
    pub cooperative: bool,
}

impl Outcomes {
    fn count(&self, which: impl Fn(usize) -> bool) -> u64 {
        self.histogram
            .iter()
            .enumerate()
            .filter(|&(outcome, _)| which(outcome))
            .map(|(_, &count)| count)
            .sum()
    }

    /// Instances that ended in the weak outcome.
    pub fn weak(&self) -> u64 {
        self.count(self.case.shape.weak)
    }

    /// Instances that ended in an outcome the shape cannot produce (a harness bug).
    pub fn impossible(&self) -> u64 {
        let possible = self.case.shape.possible;
        self.count(|outcome| !possible(outcome))
    }

    /// Whether a forbidden outcome showed.
    pub fn violates_the_model(&self) -> bool {
        !self.case.weak_allowed && self.weak() > 0
    }

    /// The outcomes that showed, most frequent first, as the table prints them.
    pub fn seen(&self) -> Vec<(String, u64)> {
        by_frequency(&self.histogram)
            .into_iter()
            .map(|(outcome, count)| ((self.case.shape.show)(outcome), count))
            .collect()
    }
}

/// The grid of a case's launches.
struct Geometry {
    /// Blocks, a power of two.
    blocks: u32,
    /// Blocks per cluster, in a cluster launch.
    cluster: Option<u32>,
}

/// The largest power of two not above `n` (at least 1).
fn power_of_two_floor(n: u32) -> u32 {
    1 << (31 - n.max(1).leading_zeros())
}

impl Geometry {
    /// The largest power-of-two grid that fits co-resident with at most a block per
    /// SM (clusters of [`CLUSTER`] blocks, a power-of-two number of them, for cluster
    /// cases).
    fn for_case(runtime: &Gpu, kernel: &Kernel, case: &Case) -> Result<Self, CudaError> {
        let sms = runtime.sm_count()?;
        if case.clustered() {
            let fits = kernel
                .max_coresident_clusters(BLOCK, CLUSTER)?
                .min(sms / CLUSTER);
            if fits == 0 {
                return Err(CudaError::Measurement(
                    "no thread-block cluster of the litmus harness fits on this GPU",
                ));
            }
            Ok(Self {
                blocks: power_of_two_floor(fits) * CLUSTER,
                cluster: Some(CLUSTER),
            })
        } else {
            let fits = kernel.max_coresident_blocks(BLOCK)?.min(sms);
            Ok(Self {
                blocks: power_of_two_floor(fits),
                cluster: None,
            })
        }
    }

    /// Instances per round: the count the kernels' placement yields for `roles`
    /// (`kernels/src/litmus.rs`, `assignment`); 0 where the grid is too small for the
    /// placement (fewer blocks, or clusters, than roles).
    fn instances_per_round(&self, placement: Placement, roles: u32) -> u32 {
        let (blocks, threads) = (self.blocks, BLOCK);
        let cluster = self.cluster.unwrap_or(1);
        let clusters = blocks / cluster;
        match placement {
            Placement::SameBlock => blocks * (threads / roles),
            Placement::OtherBlocks => (blocks / roles) * threads,
            Placement::SameCluster => clusters * (cluster / roles) * threads,
            Placement::OtherClusters => (clusters / roles) * cluster * threads,
            Placement::Split => (blocks / 2) * (threads / (roles - 1)),
            Placement::SplitInCluster => clusters * (cluster / 2) * (threads / (roles - 1)),
        }
    }
}

/// Runs `case` until at least `instances` instances ran, launches seeded from `seed`,
/// with the default [`Stress`].
pub fn run(runtime: &Gpu, case: &Case, instances: u64, seed: u32) -> Result<Outcomes, CudaError> {
    run_with(runtime, case, instances, seed, Stress::default())
}

/// [`run`] with a chosen [`Stress`].
pub fn run_with(
    runtime: &Gpu,
    case: &Case,
    instances: u64,
    seed: u32,
    stress: Stress,
) -> Result<Outcomes, CudaError> {
    let kernel = runtime.kernel(&case.kernel())?;
    let geometry = Geometry::for_case(runtime, &kernel, case)?;
    let per_round = geometry.instances_per_round(case.placement, case.shape.roles);
    // Fewer blocks (or clusters) than roles would leave roles unplayed: no instance.
    if per_round == 0 {
        return Err(CudaError::Measurement(
            "the litmus harness needs at least as many co-resident blocks (or clusters) as the placement has roles apart",
        ));
    }
    let slots = per_round as usize;
    let threads = (geometry.blocks * BLOCK) as usize;
    let memory = runtime.zeros::<u32>(slots * LOCATIONS * LINE_WORDS)?;
    let registers = runtime.zeros::<u32>(slots * REGISTERS)?;
    let stress_lines = runtime.zeros::<u32>(threads.max(STRESS_LINES) * LINE_WORDS)?;
    let histogram = runtime.zeros::<u64>(OUTCOMES)?;
    let args = |launch_seed: u32| {
        KernelArgs::new()
            .grid_barrier()
            .arg(case.variant)
            .arg(case.placement.code())
            .arg(ROUNDS)
            .arg(launch_seed)
            .arg(JITTER)
            .arg(stress.code())
            .arg(per_round)
            .arg(&memory)
            .arg(&registers)
            .arg(&stress_lines)
            .arg(&histogram)
    };
    let per_launch = u64::from(per_round) * u64::from(ROUNDS);
    let launches = instances.div_ceil(per_launch).max(1);
    let mut cooperative = true;
    for launch in 0..launches {
        let launch_seed = seed ^ (launch as u32).wrapping_mul(0x9e37_79b9);
        let config = |cooperative| LaunchConfig {
            cluster: geometry.cluster.map(Dim3::x),
            cooperative,
            ..LaunchConfig::new(geometry.blocks, BLOCK)
        };
        // SAFETY: the litmus kernels take a `Grid`, then (variant, placement, rounds,
        // seed, jitter, stress mode, slots: u32; memory, registers, stress: u32*;
        // histogram: u64*), sized as the kernel needs for `per_round` instance slots
        // and `blocks × BLOCK` threads (powers of two, clusters of `CLUSTER`), all on
        // this one stream (the runtime's).
        let launched = unsafe { kernel.launch(config(cooperative), args(launch_seed)) };
        match launched {
            // Cooperative launches in clusters are a newer driver path; where the
            // driver refuses one, run without the guarantee: the grid is sized so that
            // every cluster fits at once (`max_coresident_clusters`).
            Err(CudaError::Driver { .. }) if launch == 0 && geometry.cluster.is_some() => {
                cooperative = false;
                // SAFETY: as above.
                unsafe { kernel.launch(config(cooperative), args(launch_seed)) }?;
            }
            other => other?,
        }
    }
    let histogram = runtime.download(&histogram)?;
    let counted: u64 = histogram.iter().sum();
    if counted != launches * per_launch {
        return Err(CudaError::Measurement(
            "the litmus kernel counted another number of instances than the host sized it for",
        ));
    }
    Ok(Outcomes {
        case: *case,
        instances: counted,
        histogram,
        cooperative,
    })
}

/// The outcomes of `histogram` that showed, with their counts, most frequent first.
pub(super) fn by_frequency(histogram: &[u64]) -> Vec<(usize, u64)> {
    let mut seen: Vec<(usize, u64)> = histogram
        .iter()
        .enumerate()
        .filter(|&(_, &count)| count > 0)
        .map(|(outcome, &count)| (outcome, count))
        .collect();
    seen.sort_by_key(|&(_, count)| std::cmp::Reverse(count));
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_covers_twelve_shapes_each_case_once() {
        let mut shapes: Vec<&str> = CASES.iter().map(|case| case.shape.name).collect();
        shapes.dedup();
        assert!(shapes.len() >= 12, "{shapes:?}");
        let mut keys: Vec<_> = CASES
            .iter()
            .map(|case| {
                (
                    case.shape.name,
                    case.variant,
                    case.scope.name(),
                    case.placement.name(),
                )
            })
            .collect();
        keys.sort_unstable();
        let all = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), all, "a case listed twice");
    }

    #[test]
    fn every_weak_outcome_is_a_possible_one() {
        for case in CASES.iter() {
            let shape = case.shape;
            assert!(
                (0..OUTCOMES).any(|outcome| (shape.weak)(outcome) && (shape.possible)(outcome)),
                "{}",
                shape.name
            );
            // The outcome with every register 0 but the shape's needs is possible
            // somewhere: the registers decode as the table shows them.
            assert!(!(shape.show)(0).is_empty());
        }
    }

    #[test]
    fn every_case_has_instances_on_a_hopper_sized_grid() {
        // 128 blocks, or 32 clusters of 4: what the runner picks on an H100 or H200.
        for case in CASES.iter() {
            let geometry = Geometry {
                blocks: 128,
                cluster: case.clustered().then_some(CLUSTER),
            };
            let per_round = geometry.instances_per_round(case.placement, case.shape.roles);
            assert!(per_round >= 8192, "{}: {per_round}", case.label());
        }
    }

    #[test]
    fn too_small_a_grid_yields_no_instance_rather_than_a_wrong_one() {
        let geometry = Geometry {
            blocks: 2,
            cluster: None,
        };
        assert_eq!(geometry.instances_per_round(Placement::OtherBlocks, 3), 0);
        assert_eq!(
            geometry.instances_per_round(Placement::OtherBlocks, 2),
            BLOCK
        );
        let clusters = Geometry {
            blocks: 8,
            cluster: Some(4),
        };
        assert_eq!(clusters.instances_per_round(Placement::OtherClusters, 3), 0);
        assert_eq!(
            clusters.instances_per_round(Placement::SameCluster, 3),
            2 * BLOCK
        );
    }

    #[test]
    fn every_case_has_its_kernel_in_the_ptx() {
        let Ok(ptx) = crate::KERNELS.ptx(scoped_sync::cuda::KernelBuild::Release) else {
            println!("skipped: no PTX in this build");
            return;
        };
        for case in CASES.iter() {
            let entry = format!(".entry {}(", case.kernel());
            assert!(ptx.contains(&entry), "{}: no {entry}", case.label());
        }
    }
}
