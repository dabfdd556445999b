//! The sm_90 `mbarrier` instructions on an object in block-shared memory: what
//! [`SharedBarrier`](crate::SharedBarrier) is made of, and the hardware form of a
//! `Barrier<Block>` in shared memory ([`Mbarrier`]).

use core::arch::asm;
use core::marker::PhantomData;

use sync_shared::barrier::HardwareBarrier;
use sync_shared::{Block, Scope};

use crate::primitives::shared::is_shared;

/// Largest expected count of an `mbarrier` (PTX ISA: 2²⁰ − 1).
pub(crate) const MAX_EXPECTED: u32 = (1 << 20) - 1;

/// The 32-bit shared-window address of a generic address that lies in shared memory:
/// the `.shared::cta` forms of the instructions take it directly (generic addresses
/// cost an address-space check).
#[inline(always)]
pub(crate) fn window<T>(generic: *mut T) -> u32 {
    let window: u64;
    // SAFETY: converts an address; touches no memory.
    unsafe {
        asm!(
            "cvta.to.shared.u64 {w}, {g};",
            w = out(reg64) window,
            g = in(reg64) generic as u64,
            options(pure, nomem, nostack),
        )
    };
    window as u32
}

/// `mbarrier.init` of `expected` arrivals per phase.
///
/// # Safety
///
/// `object` is 8-byte aligned block-shared memory no other thread uses meanwhile.
#[inline(always)]
pub(crate) unsafe fn init(object: u32, expected: u32) {
    // SAFETY: per the contract.
    unsafe {
        asm!(
            "mbarrier.init.shared::cta.b64 [{o}], {n};",
            o = in(reg32) object,
            n = in(reg32) expected,
            options(nostack),
        )
    };
}

/// `mbarrier.arrive` of `count` (release at block scope); returns the phase's state
/// before the arrival.
///
/// # Safety
///
/// `object` is an initialized `mbarrier`.
#[inline(always)]
pub(crate) unsafe fn arrive(object: u32, count: u32) -> u64 {
    let state: u64;
    if count == 1 {
        // The form without a count: ptxas emits the arrival with its count in the
        // instruction (`SYNCS.ARRIVE…A1T0`) instead of in a register (`…ART0`),
        // which measured slower (docs/measurements.md, `mbarrier::arrive`).
        // SAFETY: per the contract.
        unsafe {
            asm!(
                "mbarrier.arrive.shared::cta.b64 {s}, [{o}];",
                s = out(reg64) state,
                o = in(reg32) object,
                options(nostack),
            )
        };
        return state;
    }
    // SAFETY: per the contract.
    unsafe {
        asm!(
            "mbarrier.arrive.shared::cta.b64 {s}, [{o}], {c};",
            s = out(reg64) state,
            o = in(reg32) object,
            c = in(reg32) count,
            options(nostack),
        )
    };
    state
}

/// `mbarrier.arrive_drop` of `count`: arrives and lowers later phases' expected count.
///
/// # Safety
///
/// `object` is an initialized `mbarrier`.
#[inline(always)]
pub(crate) unsafe fn arrive_drop(object: u32, count: u32) -> u64 {
    let state: u64;
    // SAFETY: per the contract.
    unsafe {
        asm!(
            "mbarrier.arrive_drop.shared::cta.b64 {s}, [{o}], {c};",
            s = out(reg64) state,
            o = in(reg32) object,
            c = in(reg32) count,
            options(nostack),
        )
    };
    state
}

/// `mbarrier.try_wait` (suspends in hardware for a while) or, without `suspend`,
/// `mbarrier.test_wait`: whether the phase of `state` has completed (acquire at block
/// scope when it has).
///
/// # Safety
///
/// `object` is an initialized `mbarrier`; `state` came from it.
#[inline(always)]
pub(crate) unsafe fn wait(object: u32, state: u64, suspend: bool) -> bool {
    let done: u32;
    // SAFETY: per the contract.
    unsafe {
        if suspend {
            asm!(
                "{{ .reg .pred p; mbarrier.try_wait.shared::cta.b64 p, [{o}], {s}; selp.u32 {d}, 1, 0, p; }}",
                d = out(reg32) done, o = in(reg32) object, s = in(reg64) state,
                options(nostack),
            )
        } else {
            asm!(
                "{{ .reg .pred p; mbarrier.test_wait.shared::cta.b64 p, [{o}], {s}; selp.u32 {d}, 1, 0, p; }}",
                d = out(reg32) done, o = in(reg32) object, s = in(reg64) state,
                options(nostack),
            )
        }
    };
    done != 0
}

/// [`wait`] on the phase with parity `parity` (`.parity` forms).
///
/// # Safety
///
/// `object` is an initialized `mbarrier`.
#[inline(always)]
pub(crate) unsafe fn wait_parity(object: u32, parity: bool, suspend: bool) -> bool {
    let done: u32;
    let parity = u32::from(parity);
    // SAFETY: per the contract.
    unsafe {
        if suspend {
            asm!(
                "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{o}], {q}; selp.u32 {d}, 1, 0, p; }}",
                d = out(reg32) done, o = in(reg32) object, q = in(reg32) parity,
                options(nostack),
            )
        } else {
            asm!(
                "{{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [{o}], {q}; selp.u32 {d}, 1, 0, p; }}",
                d = out(reg32) done, o = in(reg32) object, q = in(reg32) parity,
                options(nostack),
            )
        }
    };
    done != 0
}

/// The `mbarrier` as the hardware form of a `Barrier` at scope `S`: available for
/// `Block` scope in block-shared memory.
#[derive(Clone, Copy, Debug)]
pub struct Mbarrier<S>(PhantomData<S>);

// SAFETY: available only for block scope in shared memory, where every method is the
// `mbarrier` instruction of the same meaning (arrive releases and a completed wait
// acquires at block scope; phases start at parity 0).
unsafe impl<S: Scope> HardwareBarrier for Mbarrier<S> {
    // Zero at the other scopes, where it is never available: a barrier there is
    // portable for good, and knows it at compile time.
    const MAX_EXPECTED: u32 = if S::LEVEL == Block::LEVEL {
        MAX_EXPECTED
    } else {
        0
    };
    /// Measured on sm_90 (Hopper): the first `mbarrier` instruction on zero bytes (a
    /// probe kernel: an arrive, then a test or try wait) ends the kernel with
    /// "unspecified launch failure". `tests/gpu_device_checks.rs` ("not placed") checks
    /// in the release build, on every run of the GPU suite, that such a kernel still
    /// ends.
    const FAULTS_ON_UNPLACED: bool = true;

    #[inline(always)]
    fn available(object: *const u64) -> bool {
        S::LEVEL == Block::LEVEL && is_shared(object)
    }

    #[inline(always)]
    unsafe fn init(object: *mut u64, expected: u32) {
        // SAFETY: forwarded.
        unsafe { init(window(object), expected) }
    }

    #[inline(always)]
    unsafe fn arrive(object: *mut u64, n: u32, drop: bool) -> u64 {
        // SAFETY: forwarded.
        unsafe {
            if drop {
                arrive_drop(window(object), n)
            } else {
                arrive(window(object), n)
            }
        }
    }

    #[inline(always)]
    fn pending(token: u64) -> u32 {
        let count: u32;
        // SAFETY: decodes a state value in registers; touches no memory.
        unsafe {
            asm!(
                "mbarrier.pending_count.b64 {c}, {s};",
                c = out(reg32) count,
                s = in(reg64) token,
                options(pure, nomem, nostack),
            )
        };
        count
    }

    #[inline(always)]
    fn placed(token: u64) -> bool {
        // The state's upper word holds the phase's pending count as 2^20 minus it
        // (bits 43-62, what `mbarrier.pending_count` decodes: sm_90 SASS shifts the
        // upper word right by 11, masks 20 bits and subtracts from 0x100000), so it is
        // never zero while the phase expects an arrival, which it always does; zero
        // bytes give a zero state. That placed barriers pass is what every
        // conformance test of the hardware form checks. (`arrive_and_wait`'s loop
        // leaves the test to the hardware: `FAULTS_ON_UNPLACED`.)
        (token >> 32) as u32 != 0
    }

    #[inline(always)]
    unsafe fn wait(object: *mut u64, token: u64, suspend: bool) -> bool {
        // SAFETY: forwarded.
        unsafe { wait(window(object), token, suspend) }
    }

    #[inline(always)]
    unsafe fn wait_parity(object: *mut u64, parity: bool, suspend: bool) -> bool {
        // SAFETY: forwarded.
        unsafe { wait_parity(window(object), parity, suspend) }
    }
}
