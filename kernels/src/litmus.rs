//! Litmus tests of the PTX memory model, written with the project's own scoped atomics
//! and fences, many instances per launch.
//!
//! # Harness
//!
//! A launch is cooperative (`Grid`): `rounds` times, every thread of the grid takes one
//! *role* of one *instance* of the test (or none, when the roles do not divide the
//! threads evenly: it then only stresses memory), runs it on that instance's locations,
//! and writes what it read to the instance's result registers; after a grid barrier the
//! thread of role 0 of each instance runs the shape's [`Shape::finish`] (which copies
//! final memory values into registers, for the shapes whose outcome includes them),
//! folds the registers into an outcome and counts it in `histogram`, then resets the
//! locations and registers for the next round.
//!
//! Which threads meet in an instance changes every round (the idea of randomizing
//! thread-to-role assignment comes from Alglave et al., "GPU concurrency: weak
//! behaviours and programming assumptions", ASPLOS 2015). Block, cluster and thread
//! counts are powers of two, so a random affine map with an odd multiplier permutes
//! them. Placements:
//!
//! - [`SAME_BLOCK`]: the roles of an instance are threads of one block, at positions a
//!   random permutation of the block picks.
//! - [`OTHER_BLOCKS`]: each role of an instance in a different block: blocks are
//!   permuted and grouped `roles` at a time, and within the group each role's threads
//!   are permuted separately.
//! - [`SAME_CLUSTER`]: as `OTHER_BLOCKS` within each thread-block cluster: each role in
//!   a different block of one cluster.
//! - [`OTHER_CLUSTERS`]: each role in a different cluster (clusters permuted and grouped
//!   `roles` at a time; a random block of the cluster, a random thread of the block).
//! - [`SPLIT`]: every role but the last in one block, the last role in another block
//!   (blocks permuted and paired).
//! - [`SPLIT_IN_CLUSTER`]: as `SPLIT`, the other block in the same cluster.
//!
//! The host sizes the buffers for `slots` instances per round, the count the placement
//! yields; it is a kernel parameter and the stride between an instance's locations.
//!
//! # Stress
//!
//! Around its role a thread spins `jitter` store/load pairs in all: a random number
//! before the role (so the roles start at shifting offsets) and the rest after it (so
//! memory stays busy while later roles run; the grid barrier waits for the thread with
//! the longest delay anyway, so this adds little time). [`STRESS_OWN_LINE`]: on a line of the
//! thread's own (timing jitter only). [`STRESS_SHARED_LINES`]: on a random one of
//! [`STRESS_LINES`] lines that every thread of the grid hammers (memory stress on other
//! lines than the test's, after Sorensen and Donaldson, "Exposing errors related to weak
//! memory in GPU applications", PLDI 2016). [`STRESS_MIXED`]: one or the other, by a
//! random bit per round.
//!
//! # Scopes
//!
//! Every shape is generic over the scope `S` of its operations and has a kernel per
//! scope: `litmus_<shape>_cta`, `_cluster`, `_gpu`, `_sys` (`Block`, `Cluster`, `Device`,
//! `System`). A few variants mix in `Block`-scope operations on purpose.
//!
//! # What the model says (PTX ISA, "Memory Consistency Model"; formalized by Lustig,
//! Sahasrabuddhe and Giroux, ASPLOS 2019)
//!
//! - Two operations are *morally strong* relative to each other when each is strong
//!   (relaxed or stronger) and its scope includes the other's thread. Only morally
//!   strong operations synchronize, are totally ordered in coherence, are atomic with
//!   each other, and take part in fence-SC order.
//! - A release pattern (a release operation, or a release/acq_rel/sc fence followed by
//!   a write) *synchronizes with* an acquire pattern (an acquire operation, or a read
//!   followed by an acquire/acq_rel/sc fence) when the pattern's write is *observed* by
//!   its read (reads-from between morally strong operations, possibly through a chain of
//!   atomic read-modify-writes) and the release and acquire themselves are morally
//!   strong. *Causality order* is that, composed with program order on both sides,
//!   transitively (and extended by what a thread observed before it released:
//!   cumulativity), plus fence-SC order.
//! - Axioms used below: *Causality* (if a write precedes a read in causality order,
//!   the read cannot read from a write before that one in coherence order);
//!   *Coherence* (writes ordered by causality are ordered so in coherence); *Fence-SC*
//!   (morally strong `fence.sc` are totally ordered, consistently with causality);
//!   *Atomicity* (no morally strong write lands between an RMW's read and write);
//!   per-location SC for morally strong accesses (no cycle of coherence, reads-from,
//!   from-reads and same-location program order).
//!
//! "Inside `S`" in the tables: every role runs in one instance of `S` (one block for
//! `.cta`, one cluster for `.cluster`, the GPU for `.gpu` and `.sys`); "outside": the
//! roles are in different instances, so the `S`-scope operations are not morally strong
//! and none of the above orders them: the weak outcome is allowed.
//!
//! Outcomes: register `i` (0 to 3, each 0 to 3) is bits `2i..2i+2` of the outcome, so
//! the histogram has 256 slots. Each shape documents its forbidden and allowed outcomes.

use core::marker::PhantomData;

use sync_device::ptx_atomics::PtxScope;
use sync_device::{block_size, cluster_rank, thread_in_block, Grid};
use sync_shared::{Block, Cluster, Device, Ordering, System};

/// The roles of an instance run in one block.
pub const SAME_BLOCK: u32 = 0;
/// Each role of an instance runs in a different block.
pub const OTHER_BLOCKS: u32 = 1;
/// Each role in a different block of one thread-block cluster.
pub const SAME_CLUSTER: u32 = 2;
/// Each role in a different cluster.
pub const OTHER_CLUSTERS: u32 = 3;
/// Every role but the last in one block; the last in another block.
pub const SPLIT: u32 = 4;
/// Every role but the last in one block; the last in another block of its cluster.
pub const SPLIT_IN_CLUSTER: u32 = 5;

/// The delay loops spin on the thread's own line.
pub const STRESS_OWN_LINE: u32 = 0;
/// The delay loops hammer lines shared by the whole grid.
pub const STRESS_SHARED_LINES: u32 = 1;
/// One or the other, by a random bit per round.
pub const STRESS_MIXED: u32 = 2;
/// Lines of the shared stress region (the first lines of the `stress` buffer).
pub const STRESS_LINES: u32 = 64;

/// Words between two locations (a 128-byte line each, so no two share a line).
const LINE_WORDS: usize = 32;
/// Locations per instance.
const LOCATIONS: usize = 4;
/// Result registers per instance.
const REGISTERS: usize = 4;

/// What one thread does in one round.
#[derive(Clone, Copy)]
struct Assignment {
    instance: u32,
    role: u32,
}

/// A 32-bit mix (the "lowbias32" finalizer): randomness from `(seed, round, salt)`
/// (also the host-GPU harness's).
pub(crate) fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// A random permutation of `0..n` (`n` a power of two) applied to `i`.
fn permute(i: u32, n: u32, random: u32) -> u32 {
    let multiplier = mix(random) | 1;
    let offset = mix(random ^ 0x9e37_79b9);
    (i.wrapping_mul(multiplier).wrapping_add(offset)) & (n - 1)
}

/// Where the calling thread sits, read once per launch.
struct Geometry {
    blocks: u32,
    threads: u32,
    block: u32,
    thread: u32,
    /// Blocks per cluster (1 without clusters). The launch is one-dimensional, so
    /// cluster `k` is blocks `k × cluster .. (k + 1) × cluster`.
    cluster: u32,
}

impl Geometry {
    fn here(grid: &Grid) -> Self {
        let (rank, cluster) = cluster_rank();
        let block = grid.block_rank();
        debug_assert_eq!(rank, block % cluster, "a one-dimensional cluster launch");
        Self {
            blocks: grid.num_blocks(),
            threads: block_size(),
            block,
            thread: thread_in_block(),
            cluster,
        }
    }
}

/// The thread's role this round, or `None` if it has none (see the module docs). Not
/// inlined, nor are the other parts of the harness that do not depend on the shape:
/// one copy serves every litmus kernel.
#[inline(never)]
fn assignment(at: &Geometry, placement: u32, roles: u32, random: u32) -> Option<Assignment> {
    let c = at.cluster;
    match placement {
        SAME_BLOCK => {
            let per_block = at.threads / roles;
            let slot = permute(at.thread, at.threads, random ^ mix(at.block));
            let (index, role) = (slot / roles, slot % roles);
            (index < per_block).then_some(Assignment {
                instance: at.block * per_block + index,
                role,
            })
        }
        OTHER_BLOCKS => spread(at, at.blocks, 0, at.block, roles, random),
        SAME_CLUSTER => spread(at, c, at.block / c, at.block % c, roles, random),
        OTHER_CLUSTERS => {
            let clusters = at.blocks / c;
            let position = permute(at.block / c, clusters, random);
            let (group, role) = (position / roles, position % roles);
            if group >= clusters / roles {
                return None;
            }
            let block = permute(at.block % c, c, random ^ mix(role + 0x100));
            let slot = permute(at.thread, at.threads, random ^ mix(role + 1));
            Some(Assignment {
                instance: (group * c + block) * at.threads + slot,
                role,
            })
        }
        SPLIT => split(at, at.blocks, 0, at.block, roles, random),
        SPLIT_IN_CLUSTER => split(at, c, at.block / c, at.block % c, roles, random),
        _ => None,
    }
}

/// Each role in a different block of a domain of `size` blocks (the grid, or cluster
/// `domain`), `rank` being this block's place in it: the domain's blocks are permuted
/// and grouped `roles` at a time (left-over blocks sit out), and each block of a group
/// permutes its threads. `(size / roles) × threads` instances per domain.
fn spread(
    at: &Geometry,
    size: u32,
    domain: u32,
    rank: u32,
    roles: u32,
    random: u32,
) -> Option<Assignment> {
    let random = random ^ mix(domain.wrapping_add(0x51ed_270b));
    let groups = size / roles;
    let position = permute(rank, size, random);
    let (group, role) = (position / roles, position % roles);
    if group >= groups {
        return None;
    }
    let slot = permute(at.thread, at.threads, random ^ mix(role + 1));
    Some(Assignment {
        instance: (domain * groups + group) * at.threads + slot,
        role,
    })
}

/// Roles `0..roles - 1` in one block and role `roles - 1` in another of a domain of
/// `size` blocks: the domain's blocks are permuted and paired; the first of a pair
/// hosts `threads / (roles - 1)` instances' first roles, the second their last role
/// (its other threads sit out). `(size / 2) × (threads / (roles - 1))` instances per
/// domain.
fn split(
    at: &Geometry,
    size: u32,
    domain: u32,
    rank: u32,
    roles: u32,
    random: u32,
) -> Option<Assignment> {
    let near = roles - 1;
    let per_block = at.threads / near;
    let pairs = size / 2;
    let random = random ^ mix(domain.wrapping_add(0x3c6e_f372));
    let position = permute(rank, size, random);
    let (pair, side) = (position / 2, position % 2);
    if pair >= pairs {
        return None;
    }
    let slot = permute(at.thread, at.threads, random ^ mix(side + 1));
    let (index, role) = if side == 0 {
        (slot / near, slot % near)
    } else {
        (slot, near)
    };
    (index < per_block).then_some(Assignment {
        instance: (domain * pairs + pair) * per_block + index,
        role,
    })
}

/// The locations and registers of one instance. Location `v` of every instance lies
/// in region `v` of the memory, so an instance's locations are a region apart
/// (megabytes): different L2 slices, which gives reordering more room than
/// neighbouring lines would.
struct Instance {
    memory: *mut u32,
    slots: usize,
    instance: usize,
    registers: *mut u32,
}

impl Instance {
    fn location(&self, index: usize) -> *mut u32 {
        // SAFETY (of the callers' accesses): `memory` has `LOCATIONS` regions of a
        // line per instance slot, as the host allocates.
        self.memory
            .wrapping_add((index * self.slots + self.instance) * LINE_WORDS)
    }

    fn set_register(&self, index: usize, value: u32) {
        // SAFETY: `registers` has `REGISTERS` words per instance; in a round only one
        // thread of the instance writes register `index` (the role that owns it, or
        // role 0 in `finish`, after the roles).
        unsafe { Device::store_u32(self.registers.add(index), value, Ordering::Relaxed) };
    }

    /// The value location `index` ended with, for [`Shape::finish`]: after the grid
    /// barrier every role's write precedes this read in causality order, so of writes
    /// that are ordered in coherence it reads the last.
    fn final_value(&self, index: usize) -> u32 {
        // SAFETY: the instance's own location; the roles are done with it.
        unsafe { Device::load_u32(self.location(index), Ordering::Relaxed) }
    }
}

/// A litmus shape: its roles, and what each role does in a variant.
trait Shape {
    const ROLES: u32;
    /// Role `role` of variant `variant` on `instance`.
    fn run(instance: &Instance, role: u32, variant: u32);
    /// After every role ran (past the grid barrier), on the thread of role 0: records
    /// what the outcome needs beyond the roles' reads (final memory values).
    fn finish(_instance: &Instance, _variant: u32) {}
}

/// Spins `rounds` store/load pairs on `word`.
#[inline(never)]
fn stress(word: *mut u32, rounds: u32) {
    for round in 0..rounds {
        // SAFETY: the host passes a stress region of a line per thread (and at least
        // `STRESS_LINES` lines); its words are reached only with atomics.
        unsafe {
            Device::store_u32(word, round, Ordering::Relaxed);
            let _ = Device::load_u32(word, Ordering::Relaxed);
        }
    }
}

/// The launch parameters every litmus kernel takes after its `Grid`.
struct Parameters {
    variant: u32,
    placement: u32,
    rounds: u32,
    seed: u32,
    jitter: u32,
    stress_mode: u32,
    slots: u32,
    memory: *mut u32,
    registers: *mut u32,
    stress: *mut u32,
    histogram: *mut u64,
}

/// Runs `rounds` rounds of shape `Sh` (see the module docs).
///
/// # Safety
///
/// `memory` holds `LOCATIONS` regions of `slots` zeroed lines, `registers` `REGISTERS`
/// zeroed words per slot, `stress` a line per thread of the grid and at least
/// `STRESS_LINES` lines, `histogram` 256 `u64`s; the launch is cooperative (every
/// block co-resident) and one-dimensional, with power-of-two block, thread and
/// cluster counts, and `slots` is the instance count the placement yields there (see
/// `harness::litmus`).
unsafe fn run_shape<Sh: Shape>(mut grid: Grid, p: Parameters) {
    debug_assert!(p.stress_mode <= STRESS_MIXED, "a stress mode");
    let at = Geometry::here(&grid);
    let rank = grid.thread_rank();
    let own_line = p.stress.wrapping_add(rank as usize * LINE_WORDS);
    for round in 0..p.rounds {
        let random = mix(p.seed ^ mix(round));
        let assignment = assignment(&at, p.placement, Sh::ROLES, random)
            .filter(|assignment| assignment.instance < p.slots);
        let this = assignment.map(|assignment| Instance {
            memory: p.memory,
            slots: p.slots as usize,
            instance: assignment.instance as usize,
            registers: p
                .registers
                .wrapping_add(assignment.instance as usize * REGISTERS),
        });
        let shared = match p.stress_mode {
            STRESS_OWN_LINE => false,
            STRESS_SHARED_LINES => true,
            // STRESS_MIXED
            _ => mix(random ^ 0x2545_f491) & 1 != 0,
        };
        let word = if shared {
            let line = mix(random ^ rank ^ 0x7f4a_7c15) % STRESS_LINES;
            p.stress
                .wrapping_add(line as usize * LINE_WORDS + rank as usize % LINE_WORDS)
        } else {
            own_line
        };
        let delay = mix(random ^ rank) % (p.jitter + 1);
        grid.sync();
        stress(word, delay);
        if let (Some(assignment), Some(this)) = (assignment, &this) {
            Sh::run(this, assignment.role, p.variant);
        }
        stress(word, p.jitter - delay);
        grid.sync();
        if let (Some(Assignment { role: 0, .. }), Some(this)) = (assignment, &this) {
            Sh::finish(this, p.variant);
            // SAFETY: forwarded contract; past the barrier, the roles are done.
            unsafe { tally(this, p.histogram) };
        }
    }
}

/// Counts the instance's outcome and resets its registers and locations for the next
/// round.
///
/// # Safety
///
/// `histogram` has 256 counters; the instance's roles are done (past the barrier).
#[inline(never)]
unsafe fn tally(this: &Instance, histogram: *mut u64) {
    let mut outcome = 0;
    for index in 0..REGISTERS {
        // SAFETY: this instance's registers, written before the barrier (or by
        // `finish`, on this thread).
        let value = unsafe { Device::load_u32(this.registers.add(index), Ordering::Relaxed) };
        outcome |= (value & 3) << (2 * index);
        this.set_register(index, 0);
    }
    // SAFETY: 256 counters; `outcome` < 256.
    unsafe { Device::fetch_add_u64(histogram.add(outcome as usize), 1, Ordering::Relaxed) };
    for index in 0..LOCATIONS {
        // SAFETY: this instance's locations; nobody else touches them now.
        unsafe { Device::store_u32(this.location(index), 0, Ordering::Relaxed) };
    }
}

/// Message passing. Role 0: `x = 1; y = 1`; role 1: `r0 = y; r1 = x`. Weak outcome
/// `r0 = 1, r1 = 0` (the flag seen, the data not). Data accesses are relaxed at `S`.
///
/// | variant | role 0 | role 1 | inside `S` | outside `S` |
/// |---|---|---|---|---|
/// | 0 | relaxed stores | relaxed loads | allowed: nothing synchronizes | allowed |
/// | 1 | `st.release.S` of `y` | `ld.acquire.S` of `y` | forbidden: the release synchronizes with the acquire, so `x = 1` precedes `r1`'s read in causality order (Causality) | allowed: not morally strong, no synchronization |
/// | 2 | `st.release.cta` of `y` | `ld.acquire.S` of `y` | forbidden with both roles in one block (the release and the acquire are morally strong there); allowed with them in different blocks, even inside `S`: the release's scope does not include the reader (scope mismatch) | allowed |
/// | 3 | `fence.acq_rel.S` before a relaxed `y = 1` | `fence.acq_rel.S` after a relaxed `r0 = y` | forbidden: fence-to-fence synchronization | allowed |
/// | 4 | `st.release.S` of `y` | relaxed `r0 = y`, then `fence.acquire.S` | forbidden: release operation to acquire fence | allowed |
struct MessagePassing<S>(PhantomData<S>);

impl<S: PtxScope> Shape for MessagePassing<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            if role == 0 {
                S::store_u32(x, 1, Ordering::Relaxed);
                match variant {
                    1 | 4 => S::store_u32(y, 1, Ordering::Release),
                    2 => Block::store_u32(y, 1, Ordering::Release),
                    3 => {
                        S::fence(Ordering::AcqRel);
                        S::store_u32(y, 1, Ordering::Relaxed);
                    }
                    _ => S::store_u32(y, 1, Ordering::Relaxed),
                }
            } else {
                let flag = match variant {
                    1 | 2 => S::load_u32(y, Ordering::Acquire),
                    3 => {
                        let flag = S::load_u32(y, Ordering::Relaxed);
                        S::fence(Ordering::AcqRel);
                        flag
                    }
                    4 => {
                        let flag = S::load_u32(y, Ordering::Relaxed);
                        S::fence(Ordering::Acquire);
                        flag
                    }
                    _ => S::load_u32(y, Ordering::Relaxed),
                };
                let data = S::load_u32(x, Ordering::Relaxed);
                instance.set_register(0, flag);
                instance.set_register(1, data);
            }
        }
    }
}

/// Store buffering. Role 0: `x = 1; r0 = y`; role 1: `y = 1; r1 = x`. Weak outcome
/// `r0 = 0, r1 = 0` (each missed the other's store).
///
/// | variant | between the store and the load | inside `S` | outside `S` |
/// |---|---|---|---|
/// | 0 | nothing (relaxed) | allowed | allowed |
/// | 1 | `fence.sc.S` | forbidden: the two fences are ordered in fence-SC order, so one thread's store precedes the other's load in causality order (Causality) | allowed: the fences are not morally strong, no fence-SC order |
/// | 2 | `fence.acq_rel.S` | allowed: nothing is observed, so nothing synchronizes (an acq_rel fence does not order a store before a later load) | allowed |
struct StoreBuffering<S>(PhantomData<S>);

impl<S: PtxScope> Shape for StoreBuffering<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (mine, theirs) = if role == 0 {
            (instance.location(0), instance.location(1))
        } else {
            (instance.location(1), instance.location(0))
        };
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            S::store_u32(mine, 1, Ordering::Relaxed);
            match variant {
                1 => S::fence(Ordering::SeqCst),
                2 => S::fence(Ordering::AcqRel),
                _ => {}
            }
            let seen = S::load_u32(theirs, Ordering::Relaxed);
            instance.set_register(role as usize, seen);
        }
    }
}

/// Load buffering. Role 0: `r0 = x; y = 1`; role 1: `r1 = y; x = 1`. Weak outcome
/// `r0 = 1, r1 = 1` (each read the store the other made after its own read).
///
/// | variant | role `i` | inside `S` | outside `S` |
/// |---|---|---|---|
/// | 0 | relaxed load, relaxed store | allowed: no synchronization, and no dependency for No-Thin-Air to forbid | allowed |
/// | 1 | `ld.acquire.S`, `st.release.S` | forbidden: each release synchronizes with the other's acquire, a causality cycle (Causality) | allowed |
/// | 2 | relaxed load, `fence.acq_rel.S`, relaxed store | forbidden: each fence synchronizes with the other, a causality cycle | allowed |
struct LoadBuffering<S>(PhantomData<S>);

impl<S: PtxScope> Shape for LoadBuffering<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (read, write) = if role == 0 {
            (instance.location(0), instance.location(1))
        } else {
            (instance.location(1), instance.location(0))
        };
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            let seen = match variant {
                1 => {
                    let seen = S::load_u32(read, Ordering::Acquire);
                    S::store_u32(write, 1, Ordering::Release);
                    seen
                }
                2 => {
                    let seen = S::load_u32(read, Ordering::Relaxed);
                    S::fence(Ordering::AcqRel);
                    S::store_u32(write, 1, Ordering::Relaxed);
                    seen
                }
                _ => {
                    let seen = S::load_u32(read, Ordering::Relaxed);
                    S::store_u32(write, 1, Ordering::Relaxed);
                    seen
                }
            };
            instance.set_register(role as usize, seen);
        }
    }
}

/// Independent reads of independent writes. Role 0: `x = 1`; role 1: `y = 1`; role 2:
/// `r0 = x; r1 = y`; role 3: `r2 = y; r3 = x`. Weak outcome `r0 = 1, r1 = 0, r2 = 1,
/// r3 = 0` (the readers saw the two writes in opposite orders).
///
/// | variant | writers | between a reader's loads | inside `S` | outside `S` |
/// |---|---|---|---|---|
/// | 0 | relaxed | nothing (relaxed) | allowed | allowed |
/// | 1 | `st.release.S` | nothing (`ld.acquire.S`) | allowed: release/acquire orders each reader after the write it saw, not the two writes with each other | allowed |
/// | 2 | relaxed | `fence.acq_rel.S` | allowed: nothing synchronizes (no write follows a fence) | allowed |
/// | 3 | relaxed | `fence.sc.S` | forbidden: the readers' fences are ordered in fence-SC order, so the first reader's observed write precedes the second reader's read of it in causality order (Causality) | allowed: no fence-SC order |
struct Iriw<S>(PhantomData<S>);

impl<S: PtxScope> Shape for Iriw<S> {
    const ROLES: u32 = 4;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        let store = if variant == 1 {
            Ordering::Release
        } else {
            Ordering::Relaxed
        };
        let load = if variant == 1 {
            Ordering::Acquire
        } else {
            Ordering::Relaxed
        };
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            match role {
                0 => S::store_u32(x, 1, store),
                1 => S::store_u32(y, 1, store),
                _ => {
                    let (first, second, register) = if role == 2 { (x, y, 0) } else { (y, x, 2) };
                    let a = S::load_u32(first, load);
                    match variant {
                        2 => S::fence(Ordering::AcqRel),
                        3 => S::fence(Ordering::SeqCst),
                        _ => {}
                    }
                    let b = S::load_u32(second, load);
                    instance.set_register(register, a);
                    instance.set_register(register + 1, b);
                }
            }
        }
    }
}

/// 2+2W. Role 0: `x = 1; y = 2`; role 1: `y = 1; x = 2`; after both, `r0` = final `x`,
/// `r1` = final `y` ([`Shape::finish`]). Weak outcome `x = 1, y = 1` (each thread's
/// first write came last in coherence).
///
/// | variant | between a role's stores | inside `S` | outside `S` |
/// |---|---|---|---|
/// | 0 | nothing (relaxed) | allowed | allowed |
/// | 1 | `fence.acq_rel.S` | allowed: no read observes a write, so nothing synchronizes | allowed |
/// | 2 | `fence.sc.S` | forbidden: the fences are ordered in fence-SC order, so one role's first store precedes the other role's second store (same location) in causality order and so in coherence order (Coherence) | allowed: no fence-SC order |
struct TwoPlusTwoWrites<S>(PhantomData<S>);

impl<S: PtxScope> Shape for TwoPlusTwoWrites<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (first, second) = if role == 0 {
            (instance.location(0), instance.location(1))
        } else {
            (instance.location(1), instance.location(0))
        };
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            S::store_u32(first, 1, Ordering::Relaxed);
            match variant {
                1 => S::fence(Ordering::AcqRel),
                2 => S::fence(Ordering::SeqCst),
                _ => {}
            }
            S::store_u32(second, 2, Ordering::Relaxed);
        }
    }

    fn finish(instance: &Instance, _variant: u32) {
        instance.set_register(0, instance.final_value(0));
        instance.set_register(1, instance.final_value(1));
    }
}

/// Write-to-read causality. Role 0: `x = 1`; role 1: `r0 = x; y = 1`; role 2: `r1 = y;
/// r2 = x`. Weak outcome `r0 = 1, r1 = 1, r2 = 0` (role 2 saw role 1's flag but not
/// the write role 1 had seen).
///
/// | variant | role 1 | role 2 | inside `S` | outside `S` |
/// |---|---|---|---|---|
/// | 0 | relaxed | relaxed | allowed | allowed |
/// | 1 | relaxed load, `st.release.S` of `y` | `ld.acquire.S` of `y`, relaxed load | forbidden: cumulativity: `x = 1`, observed by role 1 before its release, precedes role 2's read of `x` in causality order (Causality) | allowed |
/// | 2 | relaxed load, `fence.acq_rel.S`, relaxed store | relaxed load, `fence.acq_rel.S`, relaxed load | forbidden: the same through fence-to-fence synchronization | allowed |
struct WriteToReadCausality<S>(PhantomData<S>);

impl<S: PtxScope> Shape for WriteToReadCausality<S> {
    const ROLES: u32 = 3;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            match role {
                0 => S::store_u32(x, 1, Ordering::Relaxed),
                1 => {
                    let seen = S::load_u32(x, Ordering::Relaxed);
                    match variant {
                        1 => S::store_u32(y, 1, Ordering::Release),
                        2 => {
                            S::fence(Ordering::AcqRel);
                            S::store_u32(y, 1, Ordering::Relaxed);
                        }
                        _ => S::store_u32(y, 1, Ordering::Relaxed),
                    }
                    instance.set_register(0, seen);
                }
                _ => {
                    let flag = match variant {
                        1 => S::load_u32(y, Ordering::Acquire),
                        2 => {
                            let flag = S::load_u32(y, Ordering::Relaxed);
                            S::fence(Ordering::AcqRel);
                            flag
                        }
                        _ => S::load_u32(y, Ordering::Relaxed),
                    };
                    let data = S::load_u32(x, Ordering::Relaxed);
                    instance.set_register(1, flag);
                    instance.set_register(2, data);
                }
            }
        }
    }
}

/// ISA2, a message passed on through a chain of two synchronizations. Role 0: `x = 1;
/// y = 1`; role 1: `r0 = y; z = 1`; role 2: `r1 = z; r2 = x`. Weak outcome `r0 = 1,
/// r1 = 1, r2 = 0`. Hop one (`y`, roles 0 → 1) and hop two (`z`, roles 1 → 2) are
/// release stores and acquire loads, at the scopes below; `x` is relaxed at `S`.
///
/// | variant | hop one | hop two | weak outcome |
/// |---|---|---|---|
/// | 0 | at `S` | at `S` | forbidden inside `S`: causality order is transitive, so `x = 1` precedes role 2's read of `x` (Causality); allowed outside `S` (and with roles 0 and 1 in one block, role 2 in another, at `S` = `Block`: hop two is not morally strong) |
/// | 1 | at `Block` | at `S` | forbidden with roles 0 and 1 in one block and role 2 inside `S` ([`SPLIT`], [`SPLIT_IN_CLUSTER`]): each hop is morally strong at its own scope, and the chain composes; allowed with roles 0 and 1 in different blocks: hop one is not morally strong |
/// | 2 | relaxed | relaxed | allowed everywhere |
struct Isa2<S>(PhantomData<S>);

impl<S: PtxScope> Shape for Isa2<S> {
    const ROLES: u32 = 3;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (x, y, z) = (
            instance.location(0),
            instance.location(1),
            instance.location(2),
        );
        let (release, acquire) = if variant == 2 {
            (Ordering::Relaxed, Ordering::Relaxed)
        } else {
            (Ordering::Release, Ordering::Acquire)
        };
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            match role {
                0 => {
                    S::store_u32(x, 1, Ordering::Relaxed);
                    if variant == 1 {
                        Block::store_u32(y, 1, release);
                    } else {
                        S::store_u32(y, 1, release);
                    }
                }
                1 => {
                    let seen = if variant == 1 {
                        Block::load_u32(y, acquire)
                    } else {
                        S::load_u32(y, acquire)
                    };
                    S::store_u32(z, 1, release);
                    instance.set_register(0, seen);
                }
                _ => {
                    let flag = S::load_u32(z, acquire);
                    let data = S::load_u32(x, Ordering::Relaxed);
                    instance.set_register(1, flag);
                    instance.set_register(2, data);
                }
            }
        }
    }
}

/// Coherence of read-read. Role 0: `x = 1`; role 1: `r0 = x; r1 = x`. Weak outcome
/// `r0 = 1, r1 = 0` (a later read of the same location saw an older value).
///
/// | variant | role 1's loads | weak outcome |
/// |---|---|---|
/// | 0 | both relaxed at `S` | forbidden inside `S`: per-location SC of morally strong accesses (reads-from, program order, from-reads would form a cycle); allowed outside `S` |
/// | 1 | relaxed at `S`, then relaxed at `Block` | forbidden in one block; allowed across blocks: the second load is not morally strong with the store |
struct CoherenceReadRead<S>(PhantomData<S>);

impl<S: PtxScope> Shape for CoherenceReadRead<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let x = instance.location(0);
        // SAFETY: the instance's own location, reached only with atomics.
        unsafe {
            if role == 0 {
                S::store_u32(x, 1, Ordering::Relaxed);
            } else {
                let first = S::load_u32(x, Ordering::Relaxed);
                let second = if variant == 1 {
                    Block::load_u32(x, Ordering::Relaxed)
                } else {
                    S::load_u32(x, Ordering::Relaxed)
                };
                instance.set_register(0, first);
                instance.set_register(1, second);
            }
        }
    }
}

/// Atomicity of read-modify-writes. Roles 0 and 1 each `fetch_add(x, 1)` (relaxed);
/// `r1`, `r2`: the values they got back; `r0`: the final `x` ([`Shape::finish`]).
/// Weak outcome `r0 = 1` (an update lost).
///
/// | variant | role 0's add | role 1's add | weak outcome |
/// |---|---|---|---|
/// | 0 | `atom.relaxed.S` | `atom.relaxed.S` | forbidden inside `S`: morally strong read-modify-writes are atomic (Atomicity); allowed outside `S` |
/// | 1 | `atom.relaxed.cta` | `atom.relaxed.S` | forbidden in one block; allowed across blocks: the two are not morally strong (the PTX ISA's own atomicity litmus test 2) |
struct RmwAtomicity<S>(PhantomData<S>);

impl<S: PtxScope> Shape for RmwAtomicity<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let x = instance.location(0);
        // SAFETY: the instance's own location, reached only with atomics.
        let before = unsafe {
            if role == 0 && variant == 1 {
                Block::fetch_add_u32(x, 1, Ordering::Relaxed)
            } else {
                S::fetch_add_u32(x, 1, Ordering::Relaxed)
            }
        };
        instance.set_register(1 + role as usize, before);
    }

    fn finish(instance: &Instance, _variant: u32) {
        instance.set_register(0, instance.final_value(0));
    }
}

/// Message passing through a reduction (`red`, an atomic add that returns nothing)
/// and an acquire fence: the pattern of the grid barrier's arrival and poll. Role 0:
/// `x = 1; red.add(y, 1)`; role 1: `r0 = y` (relaxed), `fence.acquire.S`, `r1 = x`.
/// Weak outcome `r0 = 1, r1 = 0`.
///
/// | variant | role 0's reduction | inside `S` | outside `S` |
/// |---|---|---|---|
/// | 0 | `red.relaxed.S` | allowed: no release, nothing synchronizes | allowed |
/// | 1 | `red.release.S` | forbidden: the release reduction synchronizes with the acquire fence through the relaxed read that observed it (Causality) | allowed |
/// | 2 | `fence.release.S`, then `red.relaxed.S` | forbidden: release fence to acquire fence | allowed |
struct MessagePassingReduction<S>(PhantomData<S>);

impl<S: PtxScope> Shape for MessagePassingReduction<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            if role == 0 {
                S::store_u32(x, 1, Ordering::Relaxed);
                match variant {
                    1 => S::red_add_u32(y, 1, Ordering::Release),
                    2 => {
                        S::fence(Ordering::Release);
                        S::red_add_u32(y, 1, Ordering::Relaxed);
                    }
                    _ => S::red_add_u32(y, 1, Ordering::Relaxed),
                }
            } else {
                let flag = S::load_u32(y, Ordering::Relaxed);
                S::fence(Ordering::Acquire);
                let data = S::load_u32(x, Ordering::Relaxed);
                instance.set_register(0, flag);
                instance.set_register(1, data);
            }
        }
    }
}

/// S. Role 0: `x = 2; y = 1`; role 1: `r0 = y; x = 1`; `r1` = final `x`
/// ([`Shape::finish`]). Weak outcome `r0 = 1, x = 2` (role 1 saw the flag, yet its
/// write of `x` came before role 0's in coherence).
///
/// | variant | role 0 | role 1 | inside `S` | outside `S` |
/// |---|---|---|---|---|
/// | 0 | relaxed | relaxed | allowed | allowed |
/// | 1 | `st.release.S` of `y` | `ld.acquire.S` of `y` | forbidden: `x = 2` precedes `x = 1` in causality order, so in coherence order (Coherence) | allowed |
/// | 2 | `fence.acq_rel.S` between | `fence.acq_rel.S` between | forbidden: the same through fence-to-fence synchronization | allowed |
struct ShapeS<S>(PhantomData<S>);

impl<S: PtxScope> Shape for ShapeS<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            if role == 0 {
                S::store_u32(x, 2, Ordering::Relaxed);
                match variant {
                    1 => S::store_u32(y, 1, Ordering::Release),
                    2 => {
                        S::fence(Ordering::AcqRel);
                        S::store_u32(y, 1, Ordering::Relaxed);
                    }
                    _ => S::store_u32(y, 1, Ordering::Relaxed),
                }
            } else {
                let flag = match variant {
                    1 => S::load_u32(y, Ordering::Acquire),
                    2 => {
                        let flag = S::load_u32(y, Ordering::Relaxed);
                        S::fence(Ordering::AcqRel);
                        flag
                    }
                    _ => S::load_u32(y, Ordering::Relaxed),
                };
                S::store_u32(x, 1, Ordering::Relaxed);
                instance.set_register(0, flag);
            }
        }
    }

    fn finish(instance: &Instance, _variant: u32) {
        instance.set_register(1, instance.final_value(0));
    }
}

/// R. Role 0: `x = 1; y = 1`; role 1: `y = 2; r0 = x`; `r1` = final `y`
/// ([`Shape::finish`]). Weak outcome `r0 = 0, y = 2` (role 1's store of `y` came last,
/// yet its load missed `x = 1`, which role 0 made before its own store of `y`).
///
/// | variant | between each role's two accesses | inside `S` | outside `S` |
/// |---|---|---|---|
/// | 0 | nothing (relaxed) | allowed | allowed |
/// | 1 | `fence.acq_rel.S` | allowed: no read observes a write of the other role before a fence, so nothing synchronizes | allowed |
/// | 2 | `fence.sc.S` | forbidden: whichever fence comes first in fence-SC order, either `x = 1` precedes `r0`'s read (Causality) or `y = 2` precedes `y = 1` in coherence (Coherence) | allowed: no fence-SC order |
struct ShapeR<S>(PhantomData<S>);

impl<S: PtxScope> Shape for ShapeR<S> {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        let fence = || match variant {
            1 => S::fence(Ordering::AcqRel),
            2 => S::fence(Ordering::SeqCst),
            _ => {}
        };
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            if role == 0 {
                S::store_u32(x, 1, Ordering::Relaxed);
                fence();
                S::store_u32(y, 1, Ordering::Relaxed);
            } else {
                S::store_u32(y, 2, Ordering::Relaxed);
                fence();
                let seen = S::load_u32(x, Ordering::Relaxed);
                instance.set_register(0, seen);
            }
        }
    }

    fn finish(instance: &Instance, _variant: u32) {
        instance.set_register(1, instance.final_value(1));
    }
}

/// Declares the kernel of a shape at one scope: `(grid, variant, placement, rounds,
/// seed, jitter, stress_mode, slots, memory, registers, stress, histogram)`.
macro_rules! litmus_kernel {
    ($name:ident, $shape:ty) => {
        /// A litmus kernel (see the module docs and the shape's table).
        ///
        /// # Safety
        ///
        /// As `run_shape`.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "gpu-kernel" fn $name(
            grid: Grid,
            variant: u32,
            placement: u32,
            rounds: u32,
            seed: u32,
            jitter: u32,
            stress_mode: u32,
            slots: u32,
            memory: *mut u32,
            registers: *mut u32,
            stress: *mut u32,
            histogram: *mut u64,
        ) {
            let parameters = Parameters {
                variant,
                placement,
                rounds,
                seed,
                jitter,
                stress_mode,
                slots,
                memory,
                registers,
                stress,
                histogram,
            };
            // SAFETY: forwarded contract.
            unsafe { run_shape::<$shape>(grid, parameters) }
        }
    };
}

/// The four kernels of a shape: at `.cta`, `.cluster`, `.gpu` and `.sys`.
macro_rules! litmus_kernels {
    ($shape:ident: $cta:ident, $cluster:ident, $gpu:ident, $sys:ident) => {
        litmus_kernel!($cta, $shape<Block>);
        litmus_kernel!($cluster, $shape<Cluster>);
        litmus_kernel!($gpu, $shape<Device>);
        litmus_kernel!($sys, $shape<System>);
    };
}

litmus_kernels!(MessagePassing: litmus_mp_cta, litmus_mp_cluster, litmus_mp_gpu, litmus_mp_sys);
litmus_kernels!(StoreBuffering: litmus_sb_cta, litmus_sb_cluster, litmus_sb_gpu, litmus_sb_sys);
litmus_kernels!(LoadBuffering: litmus_lb_cta, litmus_lb_cluster, litmus_lb_gpu, litmus_lb_sys);
litmus_kernels!(Iriw: litmus_iriw_cta, litmus_iriw_cluster, litmus_iriw_gpu, litmus_iriw_sys);
litmus_kernels!(
    TwoPlusTwoWrites: litmus_2p2w_cta,
    litmus_2p2w_cluster,
    litmus_2p2w_gpu,
    litmus_2p2w_sys
);
litmus_kernels!(
    WriteToReadCausality: litmus_wrc_cta,
    litmus_wrc_cluster,
    litmus_wrc_gpu,
    litmus_wrc_sys
);
litmus_kernels!(Isa2: litmus_isa2_cta, litmus_isa2_cluster, litmus_isa2_gpu, litmus_isa2_sys);
litmus_kernels!(
    CoherenceReadRead: litmus_corr_cta,
    litmus_corr_cluster,
    litmus_corr_gpu,
    litmus_corr_sys
);
litmus_kernels!(RmwAtomicity: litmus_rmw_cta, litmus_rmw_cluster, litmus_rmw_gpu, litmus_rmw_sys);
litmus_kernels!(
    MessagePassingReduction: litmus_mpred_cta,
    litmus_mpred_cluster,
    litmus_mpred_gpu,
    litmus_mpred_sys
);
litmus_kernels!(ShapeS: litmus_s_cta, litmus_s_cluster, litmus_s_gpu, litmus_s_sys);
litmus_kernels!(ShapeR: litmus_r_cta, litmus_r_cluster, litmus_r_gpu, litmus_r_sys);
