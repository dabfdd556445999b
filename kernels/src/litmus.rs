//! Litmus tests of the PTX memory model, written with the project's own scoped atomics
//! and fences, many instances per launch.
//!
//! # Harness
//!
//! A launch is cooperative (`Grid`): `rounds` times, every thread of the grid takes one
//! *role* of one *instance* of the test, runs it on that instance's locations, and
//! writes what it read to the instance's result registers; after a grid barrier the
//! thread of role 0 of each instance folds the registers into an outcome and counts it
//! in `histogram`, then resets the locations for the next round.
//!
//! Which threads meet in an instance changes every round (the idea of randomizing
//! thread-to-role assignment comes from Alglave et al., "GPU concurrency: weak
//! behaviours and programming assumptions", ASPLOS 2015):
//!
//! - [`SAME_BLOCK`]: the roles of an instance are threads of one block, at positions a
//!   random affine permutation of the block picks (block and thread counts are powers of
//!   two, so any odd multiplier permutes).
//! - [`OTHER_BLOCKS`]: each role of an instance is in a different block: blocks are
//!   permuted and grouped `roles` at a time, and within the group each role's threads
//!   are permuted separately.
//!
//! Before its role, a thread spins a random number (up to `jitter`) of stores and loads
//! on a line of its own, so that the roles start at shifting offsets (stress).
//!
//! Outcomes: register `i` (0 to 3, each 0 to 3) is bits `2i..2i+2` of the outcome, so
//! the histogram has 256 slots. Each shape documents its forbidden and allowed outcomes.

use sync_device::ptx_atomics::PtxScope;
use sync_device::{block_size, thread_in_block, Grid};
use sync_shared::{Block, Device, Ordering};

/// The roles of an instance run in one block.
pub const SAME_BLOCK: u32 = 0;
/// Each role of an instance runs in a different block.
pub const OTHER_BLOCKS: u32 = 1;

/// Words between two locations (a 128-byte line each, so no two share a line).
const LINE_WORDS: usize = 32;
/// Locations per instance.
const LOCATIONS: usize = 4;
/// Result registers per instance.
const REGISTERS: usize = 4;

/// What one thread does in one round.
#[derive(Clone, Copy)]
struct Assignment {
    instance: usize,
    role: u32,
}

/// A 32-bit mix (the "lowbias32" finalizer): randomness from `(seed, round, salt)`.
fn mix(mut x: u32) -> u32 {
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

fn assignment(grid: &Grid, placement: u32, roles: u32, random: u32) -> Assignment {
    let threads = block_size();
    let (block, thread) = (grid.block_rank(), thread_in_block());
    if placement != OTHER_BLOCKS {
        debug_assert_eq!(placement, SAME_BLOCK);
        let slot = permute(thread, threads, random);
        let per_block = threads / roles;
        Assignment {
            instance: (block * per_block + slot / roles) as usize,
            role: slot % roles,
        }
    } else {
        let position = permute(block, grid.num_blocks(), random);
        let role = position % roles;
        let group = position / roles;
        let slot = permute(thread, threads, random ^ mix(role + 1));
        Assignment {
            instance: (group * threads + slot) as usize,
            role,
        }
    }
}

/// The locations and registers of one instance. Location `v` of every instance lies
/// in region `v` of the memory, so an instance's locations are a region apart
/// (megabytes): different L2 slices, which gives reordering more room than
/// neighbouring lines would.
struct Instance {
    memory: *mut u32,
    instances: usize,
    instance: usize,
    registers: *mut u32,
}

impl Instance {
    fn location(&self, index: usize) -> *mut u32 {
        // SAFETY (of the callers' accesses): `memory` has `LOCATIONS` regions of a
        // line per instance, as the host allocates.
        self.memory
            .wrapping_add((index * self.instances + self.instance) * LINE_WORDS)
    }

    fn set_register(&self, index: usize, value: u32) {
        // SAFETY: `registers` has `REGISTERS` words per instance; only this instance's
        // thread of the role that owns register `index` writes it in a round.
        unsafe { Device::store_u32(self.registers.add(index), value, Ordering::Relaxed) };
    }
}

/// A litmus shape: its roles, and what each role does in a variant.
trait Shape {
    const ROLES: u32;
    /// Role `role` of variant `variant` on `instance`.
    fn run(instance: &Instance, role: u32, variant: u32);
}

/// Spins `rounds` store/load pairs on the thread's own stress line.
fn jitter(line: *mut u32, rounds: u32) {
    for round in 0..rounds {
        // SAFETY: the host passes a stress line per thread.
        unsafe {
            Device::store_u32(line, round, Ordering::Relaxed);
            let _ = Device::load_u32(line, Ordering::Relaxed);
        }
    }
}

/// Runs `rounds` rounds of shape `S` (see the module docs).
///
/// # Safety
///
/// `memory` holds `LOCATIONS` regions of a zeroed line per instance, `registers` `REGISTERS` words
/// per instance, `stress` a line per thread, `histogram` 256 `u64`s; the launch is
/// cooperative with power-of-two block and thread counts, the block count a multiple
/// of `S::ROLES`.
#[allow(clippy::too_many_arguments)]
unsafe fn run_shape<S: Shape>(
    mut grid: Grid,
    variant: u32,
    placement: u32,
    rounds: u32,
    seed: u32,
    jitter_max: u32,
    memory: *mut u32,
    registers: *mut u32,
    stress: *mut u32,
    histogram: *mut u64,
) {
    let stress_line = stress.wrapping_add(grid.thread_rank() as usize * LINE_WORDS);
    for round in 0..rounds {
        let random = mix(seed ^ mix(round));
        let Assignment { instance, role } = assignment(&grid, placement, S::ROLES, random);
        let this = Instance {
            memory,
            instances: (grid.size() / S::ROLES) as usize,
            instance,
            registers: registers.wrapping_add(instance * REGISTERS),
        };
        let delay = mix(random ^ grid.thread_rank()) % (jitter_max + 1);
        grid.sync();
        jitter(stress_line, delay);
        S::run(&this, role, variant);
        grid.sync();
        if role == 0 {
            let mut outcome = 0;
            for index in 0..REGISTERS {
                // SAFETY: this instance's registers, written before the barrier.
                let value =
                    unsafe { Device::load_u32(this.registers.add(index), Ordering::Relaxed) };
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
    }
}

/// Message passing. Role 0: `x = 1; y = 1`; role 1: `r0 = y; r1 = x`. The weak
/// outcome is `r0 = 1, r1 = 0` (outcome 1: the flag seen, the data not).
///
/// | variant | role 0 | role 1 | weak outcome |
/// |---|---|---|---|
/// | 0 | relaxed stores (`.gpu`) | relaxed loads (`.gpu`) | allowed |
/// | 1 | release store of `y` at `Device` | acquire load of `y` at `Device` | forbidden |
/// | 2 | release at `Block` | acquire at `Block` | forbidden in one block; allowed across blocks (the scopes do not include the other thread) |
/// | 3 | release at `Block` | acquire at `Device` | forbidden in one block; allowed across blocks |
/// | 4 | relaxed, `fence.acq_rel.gpu` between | `fence.acq_rel.gpu` between relaxed loads | forbidden |
struct MessagePassing;

impl Shape for MessagePassing {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            if role == 0 {
                Device::store_u32(x, 1, Ordering::Relaxed);
                match variant {
                    1 => Device::store_u32(y, 1, Ordering::Release),
                    2 | 3 => Block::store_u32(y, 1, Ordering::Release),
                    4 => {
                        Device::fence(Ordering::AcqRel);
                        Device::store_u32(y, 1, Ordering::Relaxed);
                    }
                    _ => Device::store_u32(y, 1, Ordering::Relaxed),
                }
            } else {
                let flag = match variant {
                    1 | 3 => Device::load_u32(y, Ordering::Acquire),
                    2 => Block::load_u32(y, Ordering::Acquire),
                    4 => {
                        let flag = Device::load_u32(y, Ordering::Relaxed);
                        Device::fence(Ordering::AcqRel);
                        flag
                    }
                    _ => Device::load_u32(y, Ordering::Relaxed),
                };
                let data = Device::load_u32(x, Ordering::Relaxed);
                instance.set_register(0, flag);
                instance.set_register(1, data);
            }
        }
    }
}

/// Store buffering. Role 0: `x = 1; r0 = y`; role 1: `y = 1; r1 = x`. The weak outcome
/// is `r0 = 0, r1 = 0` (outcome 0: each missed the other's store).
///
/// | variant | between the store and the load | weak outcome |
/// |---|---|---|
/// | 0 | nothing (relaxed `.gpu`) | allowed |
/// | 1 | `fence.sc.gpu` | forbidden |
/// | 2 | `fence.acq_rel.gpu` | allowed (an acq_rel fence does not order a store before a later load) |
struct StoreBuffering;

impl Shape for StoreBuffering {
    const ROLES: u32 = 2;

    fn run(instance: &Instance, role: u32, variant: u32) {
        let (mine, theirs) = if role == 0 {
            (instance.location(0), instance.location(1))
        } else {
            (instance.location(1), instance.location(0))
        };
        // SAFETY: the instance's own locations, reached only with atomics.
        unsafe {
            Device::store_u32(mine, 1, Ordering::Relaxed);
            match variant {
                1 => Device::fence(Ordering::SeqCst),
                2 => Device::fence(Ordering::AcqRel),
                _ => {}
            }
            let seen = Device::load_u32(theirs, Ordering::Relaxed);
            instance.set_register(role as usize, seen);
        }
    }
}

/// Declares the kernel of a shape: `(grid, variant, placement, rounds, seed, jitter,
/// memory, registers, stress, histogram)`.
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
            memory: *mut u32,
            registers: *mut u32,
            stress: *mut u32,
            histogram: *mut u64,
        ) {
            // SAFETY: forwarded contract.
            unsafe {
                run_shape::<$shape>(
                    grid, variant, placement, rounds, seed, jitter, memory, registers, stress,
                    histogram,
                )
            }
        }
    };
}

litmus_kernel!(litmus_mp, MessagePassing);
litmus_kernel!(litmus_sb, StoreBuffering);
