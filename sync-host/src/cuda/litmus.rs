//! Runs the litmus kernels (`kernels/src/litmus.rs`): every case of [`CASES`], many
//! instances per cooperative launch, and counts each outcome.
//!
//! `scoped-sync --litmus` prints the table; `tests/gpu_litmus.rs` checks that no
//! forbidden outcome shows.

use cudarc::driver::PushKernelArg;

use super::{CudaError, Runtime};

/// Threads per block of a litmus launch (a power of two, as the harness needs).
const BLOCK: u32 = 256;
/// Rounds per launch (instances per launch = rounds × blocks × threads / roles).
const ROUNDS: u32 = 64;
/// Largest random delay before a role, in store/load pairs on a stress line.
const JITTER: u32 = 64;
/// Locations and result registers per instance, and words per location (as the
/// kernels lay them out).
const LOCATIONS: usize = 4;
const REGISTERS: usize = 4;
const LINE_WORDS: usize = 32;
/// Histogram slots: four registers of two bits.
pub const OUTCOMES: usize = 256;

/// Where the roles of an instance run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// All in one block (the `Block` scope includes every role).
    SameBlock,
    /// Each in a different block.
    OtherBlocks,
}

impl Placement {
    fn code(self) -> u32 {
        match self {
            Placement::SameBlock => 0,
            Placement::OtherBlocks => 1,
        }
    }

    /// How the table names it.
    pub fn name(self) -> &'static str {
        match self {
            Placement::SameBlock => "one block",
            Placement::OtherBlocks => "across blocks",
        }
    }
}

/// One litmus case: a shape's variant at a placement, and what the PTX memory model
/// says of its weak outcome there.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// The shape's kernel.
    pub kernel: &'static str,
    /// The shape, as the table names it.
    pub shape: &'static str,
    /// The variant (see the shape's table in `kernels/src/litmus.rs`).
    pub variant: u32,
    /// What the variant does, for the table.
    pub what: &'static str,
    /// Where its roles run.
    pub placement: Placement,
    /// Roles per instance.
    pub roles: u32,
    /// The weak outcome (registers packed two bits each).
    pub weak: usize,
    /// Whether the model allows the weak outcome here.
    pub weak_allowed: bool,
    /// How the table shows an outcome.
    pub show: fn(usize) -> String,
}

fn show_two(outcome: usize) -> String {
    format!("r0={} r1={}", outcome & 3, (outcome >> 2) & 3)
}

/// Message passing: weak outcome `r0 = 1` (flag seen), `r1 = 0` (data missed).
const MP_WEAK: usize = 1;
/// Store buffering: weak outcome `r0 = 0, r1 = 0`.
const SB_WEAK: usize = 0;

const fn mp(variant: u32, what: &'static str, placement: Placement, allowed: bool) -> Case {
    Case {
        kernel: "litmus_mp",
        shape: "MP",
        variant,
        what,
        placement,
        roles: 2,
        weak: MP_WEAK,
        weak_allowed: allowed,
        show: show_two,
    }
}

const fn sb(variant: u32, what: &'static str, placement: Placement, allowed: bool) -> Case {
    Case {
        kernel: "litmus_sb",
        shape: "SB",
        variant,
        what,
        placement,
        roles: 2,
        weak: SB_WEAK,
        weak_allowed: allowed,
        show: show_two,
    }
}

use Placement::{OtherBlocks, SameBlock};

/// Every case the suite runs.
pub const CASES: &[Case] = &[
    mp(0, "relaxed", SameBlock, true),
    mp(0, "relaxed", OtherBlocks, true),
    mp(1, "release/acquire at Device", SameBlock, false),
    mp(1, "release/acquire at Device", OtherBlocks, false),
    mp(2, "release/acquire at Block", SameBlock, false),
    mp(2, "release/acquire at Block", OtherBlocks, true),
    mp(3, "release at Block, acquire at Device", SameBlock, false),
    mp(3, "release at Block, acquire at Device", OtherBlocks, true),
    mp(4, "fence.acq_rel.gpu both sides", SameBlock, false),
    mp(4, "fence.acq_rel.gpu both sides", OtherBlocks, false),
    sb(0, "relaxed", SameBlock, true),
    sb(0, "relaxed", OtherBlocks, true),
    sb(1, "fence.sc.gpu", SameBlock, false),
    sb(1, "fence.sc.gpu", OtherBlocks, false),
    sb(2, "fence.acq_rel.gpu", SameBlock, true),
    sb(2, "fence.acq_rel.gpu", OtherBlocks, true),
];

/// What a case showed.
#[derive(Clone, Debug)]
pub struct Outcomes {
    /// The case.
    pub case: Case,
    /// Instances run.
    pub instances: u64,
    /// Count of each outcome.
    pub histogram: Vec<u64>,
}

impl Outcomes {
    /// Instances that ended in the weak outcome.
    pub fn weak(&self) -> u64 {
        self.histogram[self.case.weak]
    }

    /// Whether a forbidden outcome showed.
    pub fn violates_the_model(&self) -> bool {
        !self.case.weak_allowed && self.weak() > 0
    }

    /// The outcomes that showed, most frequent first, as the table prints them.
    pub fn seen(&self) -> Vec<(String, u64)> {
        let mut seen: Vec<(usize, u64)> = self
            .histogram
            .iter()
            .enumerate()
            .filter(|&(_, &count)| count > 0)
            .map(|(outcome, &count)| (outcome, count))
            .collect();
        seen.sort_by_key(|&(_, count)| std::cmp::Reverse(count));
        seen.into_iter()
            .map(|(outcome, count)| ((self.case.show)(outcome), count))
            .collect()
    }
}

/// Blocks of a litmus launch: the largest power of two that fits co-resident and is a
/// multiple of the roles.
fn blocks(runtime: &Runtime, kernel: &super::Kernel<'_>) -> Result<u32, CudaError> {
    let fits = kernel
        .max_coresident_blocks(BLOCK)?
        .min(runtime.sm_count()?);
    Ok(1 << (31 - fits.max(1).leading_zeros()))
}

/// Runs `case` until at least `instances` instances ran, launches seeded from `seed`.
pub fn run(
    runtime: &Runtime,
    case: &Case,
    instances: u64,
    seed: u32,
) -> Result<Outcomes, CudaError> {
    let kernel = runtime.kernel(case.kernel)?;
    let grid = blocks(runtime, &kernel)?;
    // Fewer blocks than roles would leave roles unplayed and index instances past the
    // buffers sized below.
    if grid < case.roles {
        return Err(CudaError::Measurement(
            "the litmus harness needs at least as many co-resident blocks as roles",
        ));
    }
    let per_round = u64::from(grid * BLOCK / case.roles);
    let instance_slots = per_round as usize;
    let memory = runtime.zeros::<u32>(instance_slots * LOCATIONS * LINE_WORDS)?;
    let registers = runtime.zeros::<u32>(instance_slots * REGISTERS)?;
    let stress = runtime.zeros::<u32>((grid * BLOCK) as usize * LINE_WORDS)?;
    let histogram = runtime.zeros::<u64>(OUTCOMES)?;
    let (variant, placement, rounds, jitter) =
        (case.variant, case.placement.code(), ROUNDS, JITTER);
    let launches = instances.div_ceil(per_round * u64::from(ROUNDS)).max(1);
    for launch in 0..launches {
        let launch_seed = seed ^ (launch as u32).wrapping_mul(0x9e37_79b9);
        // SAFETY: the litmus kernels take a `Grid`, then (variant, placement, rounds,
        // seed, jitter: u32; memory, registers, stress: u32*; histogram: u64*), sized
        // as the kernel needs for `grid` blocks of `BLOCK` threads (powers of two).
        unsafe {
            kernel.launch_grid(grid, BLOCK, |args| {
                args.arg(&variant)
                    .arg(&placement)
                    .arg(&rounds)
                    .arg(&launch_seed)
                    .arg(&jitter)
                    .arg(&memory)
                    .arg(&registers)
                    .arg(&stress)
                    .arg(&histogram);
            })
        }?;
    }
    let histogram = runtime.download(&histogram)?;
    Ok(Outcomes {
        case: *case,
        instances: histogram.iter().sum(),
        histogram,
    })
}
