//! [`WholeBlock`]: arrivals of a whole block at a device- or system-scope object as one
//! atomic operation.

use sync_shared::{Barrier, Completion, Latch};

use crate::backend::gpu::Gpu;
use crate::primitives::block_barrier::sync_block;
#[cfg(not(debug_assertions))]
use crate::protocols::warp_barrier_phase;
use crate::ptx::atomics::PtxScope;
use crate::ptx::geometry::{block_size, is_block_leader};

/// Operations that every thread of a block calls together, done as one arrival of the
/// block's thread count by thread 0 between two hardware block barriers: one atomic per
/// block per phase instead of one per thread (warps arriving on their own are already
/// combined into one atomic per warp).
///
/// The object counts threads as usual (a grid of `b` blocks of `t` threads expects
/// `b × t`), so whole-block and per-thread arrivals can be mixed.
pub trait WholeBlock {
    /// Every thread of the block arrives once and waits for the phase. Collective.
    fn block_arrive_and_wait(&self);
}

impl<S: PtxScope, F: Completion> WholeBlock for Barrier<S, Gpu, F> {
    #[inline]
    fn block_arrive_and_wait(&self) {
        // The release build, at device and system scope without a completion function:
        // the block's first warp, in PTX (`warp_barrier_phase`). The checked build
        // keeps the Rust path below, whose broken preconditions print why.
        #[cfg(not(debug_assertions))]
        if warp_barrier_phase::serves::<S>() {
            if let Some((state, expected)) = self.portable_words() {
                // SAFETY: a served scope; the barrier's own words in the portable form
                // without completion; every thread of the block calls this together
                // (the trait's contract).
                unsafe { warp_barrier_phase::block_phase::<S>(state.as_ptr(), expected.as_ptr()) };
                return;
            }
        }
        sync_block();
        if is_block_leader() {
            let token = self.arrive_alone(block_size());
            self.wait(token);
        }
        sync_block();
    }
}

impl<S: PtxScope> WholeBlock for Latch<S, Gpu> {
    #[inline]
    fn block_arrive_and_wait(&self) {
        sync_block();
        if is_block_leader() {
            self.arrive_and_wait(block_size());
        }
        sync_block();
    }
}
