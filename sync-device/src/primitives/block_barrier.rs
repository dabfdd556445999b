//! [`BlockBarrier`]: the barrier of a whole block, on the hardware's `barrier.sync`.

use core::arch::asm;

use sync_shared::{Completion, NoCompletion};

use crate::ptx::geometry::thread_in_block;

/// `barrier.sync 0`: waits until every thread of the block has arrived, and orders
/// their memory accesses (`__syncthreads()`).
#[inline(always)]
pub fn sync_block() {
    // SAFETY: a block barrier; its memory effect is ordering only.
    unsafe { asm!("barrier.sync 0;", options(nostack)) };
}

/// `barrier.red.or`: a block barrier, as [`sync_block`], that also tells every thread
/// whether `predicate` holds in any thread of the block (`__syncthreads_or`).
/// Collective: every thread of the block calls it.
#[inline(always)]
pub fn sync_block_any(predicate: bool) -> bool {
    let any: u32;
    // SAFETY: a block barrier with a reduction over register values; its memory effect
    // is ordering only.
    unsafe {
        asm!(
            "{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; barrier.red.or.pred q, 0, p; selp.u32 {a}, 1, 0, q; }}",
            v = in(reg32) u32::from(predicate),
            a = out(reg32) any,
            options(nostack),
        )
    };
    any != 0
}

/// A barrier that every thread of the block takes part in, on the hardware block
/// barrier (`barrier.sync`, what `__syncthreads()` compiles to): no memory, and no
/// atomic operations.
///
/// Each thread holds its own `BlockBarrier` value (the expected count is, by
/// construction, the block's thread count). With a completion function, thread 0 of the
/// block runs its own copy once per phase, between two hardware barriers, so it runs
/// after every thread arrived and before any leaves.
///
/// Split arrive/wait is not possible on `barrier.sync`; see
/// [`SharedBarrier`](crate::SharedBarrier) for that.
///
/// Counterpart: `__syncthreads()`, `cooperative_groups::this_thread_block().sync()`,
/// libcu++ `cuda::barrier<thread_scope_block>` initialized with `blockDim`.
///
/// ```ignore
/// let mut barrier = BlockBarrier::with_completion(|| { /* once per phase */ });
/// for _ in 0..phases {
///     // ... write this thread's part ...
///     barrier.arrive_and_wait();
/// }
/// ```
#[derive(Debug, Default)]
pub struct BlockBarrier<F: Completion = NoCompletion> {
    completion: F,
}

impl BlockBarrier {
    /// A barrier of the whole block.
    pub const fn new() -> Self {
        Self {
            completion: NoCompletion,
        }
    }
}

impl<F: Completion> BlockBarrier<F> {
    /// A barrier of the whole block whose completion runs in thread 0 of the block.
    pub const fn with_completion(completion: F) -> Self {
        Self { completion }
    }

    /// Arrives and waits for every thread of the block; the completion (if any) runs
    /// once, after every arrival and before any thread continues. Collective: every
    /// thread of the block must call it (a missing thread hangs the block, as with
    /// `__syncthreads()`).
    ///
    /// Everything a thread wrote before the call is visible to every thread of the block
    /// (and to the completion) after it.
    #[inline(always)]
    pub fn arrive_and_wait(&mut self) {
        sync_block();
        if !F::IS_NONE {
            if thread_in_block() == 0 {
                self.completion.on_phase_complete();
            }
            sync_block();
        }
    }
}
