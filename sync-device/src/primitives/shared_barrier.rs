//! [`SharedBarrier`]: a block-scope split arrive/wait barrier on the sm_90 hardware
//! `mbarrier` object in block-shared memory.

use core::arch::asm;
use core::cell::UnsafeCell;
use core::time::Duration;

use sync_shared::{Backend, Block, Scope, StopToken, Stopped};

use crate::backend::gpu::{GlobalTime, Gpu};
use crate::primitives::shared::{is_shared, SharedSlot};
use crate::ptx::mbarrier::{self, window, MAX_EXPECTED};

/// A reusable barrier for threads of one block, with split arrive/wait, arrival tokens
/// and parity waits, on the hardware `mbarrier` (sm_90) in block-shared memory: an
/// arrival is one shared-memory hardware operation, a wait suspends the thread in
/// hardware until the phase completes.
///
/// Every thread arrives and waits on the hardware object itself (combining a warp's
/// arrivals into one, with one lane waiting for the warp, measured several times
/// slower: the hardware takes a block's arrivals in stride, while a warp whose other
/// lanes wait for a suspended lane does not; docs/measurements.md). In
/// [`arrive_and_wait_parity`](Self::arrive_and_wait_parity) the thread keeps the phase
/// parity, so its wait does not depend on the arrival's reply.
///
/// Exists only in shared memory ([`SharedBarrier::init`] takes a
/// [`SharedSlot`]), at block scope. No completion function (the hardware object has
/// none): use [`BlockBarrier::with_completion`](crate::BlockBarrier) for a whole block,
/// or [`Barrier`](crate::Barrier) at `Block` scope.
///
/// `Barrier<Block>` placed in shared memory runs on the same hardware object and is the
/// type to reach for first (a completion function, the same code on the CPU and at
/// every scope). `SharedBarrier` is the raw `mbarrier` handle: prefer it for many
/// barriers side by side (8 bytes each, a pipeline's stage barriers, say), for an
/// object that the kernel's own `mbarrier` or bulk-copy PTX also uses at the same
/// address, and for [`arrive_and_wait_parity`](Self::arrive_and_wait_parity), the
/// cheapest block phase (docs/measurements.md).
///
/// Counterpart: libcu++ `cuda::barrier<thread_scope_block>` in `__shared__` memory,
/// `cuda::ptx::mbarrier_*`.
///
/// ```ignore
/// let slot = scoped_sync::shared!(ARRIVALS: SharedBarrier);
/// // SAFETY: every thread of the block runs this once.
/// let stage = unsafe { SharedBarrier::init(&slot, scoped_sync::block_size()) };
/// let token = stage.arrive(1);
/// // ... independent work overlaps the other threads' arrivals ...
/// stage.wait(token);
/// ```
#[repr(C, align(8))]
#[derive(Debug)]
pub struct SharedBarrier {
    /// The hardware object: opaque, touched only by `mbarrier` instructions.
    object: UnsafeCell<u64>,
}

// SAFETY: the object is only accessed by `mbarrier` instructions, which are atomic.
unsafe impl Sync for SharedBarrier {}

/// What [`SharedBarrier::arrive`] returns and [`SharedBarrier::wait`] takes: the
/// hardware state of the barrier's phase before the arrival.
#[must_use = "a token is needed to wait for the phase to complete"]
#[derive(Debug, PartialEq, Eq)]
pub struct SharedToken(u64);

impl SharedBarrier {
    /// Initializes the barrier in `slot` for `expected` arrivals per phase (thread 0 of
    /// the block runs `mbarrier.init`, then a block barrier publishes it) and returns
    /// it. Collective: every thread of the block calls it.
    ///
    /// # Panics
    ///
    /// If `expected` is 0 or above [`max`](Self::max) (a trap on the device).
    ///
    /// # Safety
    ///
    /// Every thread of the block calls this, once per slot.
    pub unsafe fn init(slot: &SharedSlot<SharedBarrier>, expected: u32) -> &'static Self {
        if expected == 0 || expected > MAX_EXPECTED {
            panic!("SharedBarrier::init: expected must be in 1..=SharedBarrier::max()");
        }
        // SAFETY: forwarded; the closure leaves an initialized hardware object.
        unsafe { slot.init_block_with(|object| mbarrier::init(window(object), expected)) }
    }

    /// The largest expected count: 2²⁰ − 1.
    pub const fn max() -> u32 {
        MAX_EXPECTED
    }

    /// The object's address in the shared window: the `.shared::cta` forms of the
    /// instructions take it directly (generic addresses cost an address-space check).
    fn address(&self) -> u32 {
        window(self.object.get())
    }

    /// Arrives `n` times in the current phase (release at block scope); returns the
    /// token to wait on.
    ///
    /// # Panics
    ///
    /// If `n` is 0 or above [`max`](Self::max) (a trap on the device). More arrivals
    /// than the phase still expects is undefined behaviour of the hardware object, which
    /// cannot report it: count arrivals as the barrier was initialized.
    #[inline]
    pub fn arrive(&self, n: u32) -> SharedToken {
        if n == 0 || n > MAX_EXPECTED {
            panic!("SharedBarrier::arrive: n must be in 1..=max()");
        }
        SharedToken(self.arrive_hardware(n))
    }

    /// One `mbarrier.arrive` of `count`.
    #[inline(always)]
    fn arrive_hardware(&self, count: u32) -> u64 {
        // SAFETY: an arrival on the initialized hardware object.
        unsafe { mbarrier::arrive(self.address(), count) }
    }

    /// Blocks until the phase of `token` completes (acquire at block scope: everything
    /// written before the phase's arrivals is visible afterwards).
    #[inline]
    pub fn wait(&self, token: SharedToken) {
        while !self.try_wait_suspended(&token) {}
    }

    /// `mbarrier.try_wait`: suspends the thread in hardware until the phase completes
    /// or a system-dependent time limit passes; `true` once the phase completed.
    #[inline(always)]
    fn try_wait_suspended(&self, token: &SharedToken) -> bool {
        // SAFETY: waits on the initialized hardware object with its own token.
        unsafe { mbarrier::wait(self.address(), token.0, true) }
    }

    /// Whether the phase of `token` has completed; never blocks (acquire when `true`).
    #[inline]
    pub fn try_wait(&self, token: &SharedToken) -> bool {
        // SAFETY: tests the initialized hardware object with its own token.
        unsafe { mbarrier::wait(self.address(), token.0, false) }
    }

    /// Waits for the phase of `token` at most `timeout` (`%globaltimer`); `true` if it
    /// completed.
    pub fn try_wait_for(&self, token: &SharedToken, timeout: Duration) -> bool {
        let now = <Gpu as Backend<Block>>::now();
        self.try_wait_until(token, <Gpu as Backend<Block>>::after(now, timeout))
    }

    /// Waits for the phase of `token` until `deadline`; `true` if it completed.
    pub fn try_wait_until(&self, token: &SharedToken, deadline: GlobalTime) -> bool {
        loop {
            if self.try_wait_suspended(token) {
                return true;
            }
            if <Gpu as Backend<Block>>::now() >= deadline {
                return self.try_wait(token);
            }
        }
    }

    /// Waits for the phase of `token`, or until `stop` is requested.
    pub fn wait_stoppable<S: Scope>(
        &self,
        token: SharedToken,
        stop: StopToken<'_, S, Gpu>,
    ) -> Result<(), Stopped>
    where
        Gpu: Backend<S>,
    {
        loop {
            if self.try_wait_suspended(&token) {
                return Ok(());
            }
            if stop.stop_requested() {
                return if self.try_wait(&token) {
                    Ok(())
                } else {
                    Err(Stopped)
                };
            }
        }
    }

    /// Blocks until the phase with parity `parity` completes (phases alternate parity,
    /// the first is `false`): for threads that count phases instead of keeping tokens.
    #[inline]
    pub fn wait_parity(&self, parity: bool) {
        while !self.parity_wait_step(parity, true) {}
    }

    /// Whether the phase with parity `parity` has completed; never blocks.
    #[inline]
    pub fn try_wait_parity(&self, parity: bool) -> bool {
        self.parity_wait_step(parity, false)
    }

    #[inline(always)]
    fn parity_wait_step(&self, parity: bool, suspend: bool) -> bool {
        // SAFETY: waits on (or tests) the initialized hardware object.
        unsafe { mbarrier::wait_parity(self.address(), parity, suspend) }
    }

    /// Arrives once and waits for the phase.
    #[inline]
    pub fn arrive_and_wait(&self) {
        let token = SharedToken(self.arrive_hardware(1));
        self.wait(token);
    }

    /// Arrives once in the current phase, whose parity the caller keeps (phases
    /// alternate parity, the first is `false`), and waits for it. The wait starts
    /// without the arrival's reply: faster than
    /// [`arrive_and_wait`](Self::arrive_and_wait) in small blocks, a little slower in
    /// blocks of 1024 threads (docs/measurements.md). A wrong parity returns at once (the other parity's phase is the one
    /// before, complete): keep one per thread, flipped after each phase.
    ///
    /// ```ignore
    /// let mut parity = false;
    /// for _ in 0..steps {
    ///     // ... this thread's part of the step ...
    ///     barrier.arrive_and_wait_parity(parity);
    ///     parity = !parity;
    /// }
    /// ```
    #[inline]
    pub fn arrive_and_wait_parity(&self, parity: bool) {
        // SAFETY: an arrival on the initialized hardware object; the reply is not used.
        unsafe {
            asm!(
                "mbarrier.arrive.shared::cta.b64 _, [{o}];",
                o = in(reg32) self.address(),
                options(nostack),
            )
        };
        self.wait_parity(parity);
    }

    /// Arrives once in the current phase and lowers the expected count of every later
    /// phase by one (`mbarrier.arrive_drop`). As with [`arrive`](Self::arrive), the
    /// phase must still expect the arrival.
    pub fn arrive_and_drop(&self) {
        // SAFETY: an arrival on the initialized hardware object.
        unsafe { mbarrier::arrive_drop(self.address(), 1) };
    }

    /// Whether this barrier lies in block-shared memory (always, when made by
    /// [`init`](Self::init)).
    pub fn is_in_shared_memory(&self) -> bool {
        is_shared(self.object.get())
    }
}
