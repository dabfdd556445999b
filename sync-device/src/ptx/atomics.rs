//! Scoped atomics and fences in inline PTX: the one table of instruction strings.
//!
//! Rust's `core::sync::atomic` cannot be used on the device: on nvptx64 it drops the
//! ordering of read-modify-write operations and always uses system scope
//! (rust-lang/rust#136480). Every operation here is written out in PTX instead, from
//! one macro per operation shape, instantiated once per scope below; nothing is
//! hand-copied per scope.
//!
//! C++ orderings map to PTX as in the PTX memory model's mapping (the same mapping
//! libcu++ uses): `SeqCst` is `fence.sc` at the scope followed by the acquire form (or
//! the relaxed form for stores); `Acquire`, `Release` and `AcqRel` fences are
//! `fence.acquire`, `fence.release` and `fence.acq_rel` (the one-way fences are PTX ISA
//! 8.6; on sm_90 an acquire fence is an L1 invalidation, far cheaper than the memory
//! barrier of the other two, which makes "relaxed polls, then one acquire fence" the
//! cheap way to wait). Addresses are generic, so objects may sit in shared, global,
//! mapped or managed memory. PTX has no thread scope: `Thread` uses `.cta`, the
//! narrowest scope that exists.

use core::arch::asm;

use sync_shared::scope::{Block, Cluster, Device, Scope, System, Thread};
use sync_shared::Ordering;

/// The text of an acquire fence at scope `$q` (a string literal), for PTX written out
/// whole (`grid_arrival`, `warp_barrier_phase`): `fence.acquire` is sm_90 (PTX ISA
/// 8.6, an L1 invalidation there); before, the two-way fence, as
/// [`PtxScope::fence`] falls back.
#[cfg(target_feature = "sm_90")]
macro_rules! acquire_fence_text {
    ($q:literal) => {
        concat!("fence.acquire.", $q, ";\n")
    };
}
#[cfg(not(target_feature = "sm_90"))]
macro_rules! acquire_fence_text {
    ($q:literal) => {
        concat!("fence.acq_rel.", $q, ";\n")
    };
}
pub(crate) use acquire_fence_text;

/// Atomic operations at one scope, on naturally aligned `u32`/`u64` words.
///
/// # Safety
///
/// Implementors emit a single-copy-atomic PTX operation of the scope, with at least the
/// requested ordering. Callers pass pointers to live, naturally aligned words that
/// every accessing thread reaches with atomic operations at a scope including `Self`.
pub unsafe trait PtxScope: Scope {
    /// PTX scope qualifier (`cta`, `cluster`, `gpu`, `sys`).
    const QUALIFIER: &'static str;

    /// Atomic load (`Relaxed`, `Acquire` or `SeqCst`).
    unsafe fn load_u32(ptr: *const u32, order: Ordering) -> u32;
    /// Atomic load of a 64-bit word.
    unsafe fn load_u64(ptr: *const u64, order: Ordering) -> u64;
    /// Atomic store (`Relaxed`, `Release` or `SeqCst`).
    unsafe fn store_u32(ptr: *mut u32, value: u32, order: Ordering);
    /// Atomic store of a 64-bit word.
    unsafe fn store_u64(ptr: *mut u64, value: u64, order: Ordering);
    /// Compare-and-swap; returns the previous value (`== current` on success).
    unsafe fn cas_u32(ptr: *mut u32, current: u32, new: u32, order: Ordering) -> u32;
    /// Compare-and-swap of a 64-bit word.
    unsafe fn cas_u64(ptr: *mut u64, current: u64, new: u64, order: Ordering) -> u64;
    /// Atomic swap.
    unsafe fn swap_u32(ptr: *mut u32, value: u32, order: Ordering) -> u32;
    /// Atomic swap of a 64-bit word.
    unsafe fn swap_u64(ptr: *mut u64, value: u64, order: Ordering) -> u64;
    /// Wrapping add.
    unsafe fn fetch_add_u32(ptr: *mut u32, value: u32, order: Ordering) -> u32;
    /// Wrapping add on a 64-bit word.
    unsafe fn fetch_add_u64(ptr: *mut u64, value: u64, order: Ordering) -> u64;
    /// Wrapping subtract. PTX has no `atom.sub`: this is `atom.add` of the two's
    /// complement, the same instruction with a negated operand.
    #[inline(always)]
    unsafe fn fetch_sub_u32(ptr: *mut u32, value: u32, order: Ordering) -> u32 {
        // SAFETY: forwarded contract.
        unsafe { Self::fetch_add_u32(ptr, value.wrapping_neg(), order) }
    }
    /// Wrapping subtract on a 64-bit word.
    #[inline(always)]
    unsafe fn fetch_sub_u64(ptr: *mut u64, value: u64, order: Ordering) -> u64 {
        // SAFETY: forwarded contract.
        unsafe { Self::fetch_add_u64(ptr, value.wrapping_neg(), order) }
    }
    /// Bitwise and.
    unsafe fn fetch_and_u32(ptr: *mut u32, value: u32, order: Ordering) -> u32;
    /// Bitwise and on a 64-bit word.
    unsafe fn fetch_and_u64(ptr: *mut u64, value: u64, order: Ordering) -> u64;
    /// Bitwise or.
    unsafe fn fetch_or_u32(ptr: *mut u32, value: u32, order: Ordering) -> u32;
    /// Bitwise or on a 64-bit word.
    unsafe fn fetch_or_u64(ptr: *mut u64, value: u64, order: Ordering) -> u64;
    /// Bitwise xor.
    unsafe fn fetch_xor_u32(ptr: *mut u32, value: u32, order: Ordering) -> u32;
    /// Bitwise xor on a 64-bit word.
    unsafe fn fetch_xor_u64(ptr: *mut u64, value: u64, order: Ordering) -> u64;
    /// Unsigned minimum.
    unsafe fn fetch_min_u32(ptr: *mut u32, value: u32, order: Ordering) -> u32;
    /// Unsigned minimum on a 64-bit word.
    unsafe fn fetch_min_u64(ptr: *mut u64, value: u64, order: Ordering) -> u64;
    /// Unsigned maximum.
    unsafe fn fetch_max_u32(ptr: *mut u32, value: u32, order: Ordering) -> u32;
    /// Unsigned maximum on a 64-bit word.
    unsafe fn fetch_max_u64(ptr: *mut u64, value: u64, order: Ordering) -> u64;
    /// Atomic add that returns nothing (`red.add`, a reduction: the thread need not
    /// wait for the reply). `Relaxed` or `Release` only: with no value read back there
    /// is nothing for an acquire to order later accesses after (follow it with a
    /// fence where that is needed).
    unsafe fn red_add_u32(ptr: *mut u32, value: u32, order: Ordering);
    /// Reduction add on a 64-bit word.
    unsafe fn red_add_u64(ptr: *mut u64, value: u64, order: Ordering);
    /// Fence (`SeqCst` → `fence.sc`, `AcqRel` → `fence.acq_rel`, `Acquire` →
    /// `fence.acquire`, `Release` → `fence.release`).
    fn fence(order: Ordering);
}

/// An ordering the operation shape does not have (e.g. a `Release` load): a caller bug.
#[cold]
fn invalid_ordering(operation: &str, order: Ordering) -> ! {
    panic!("{operation}: ordering {order:?} is not valid here")
}

/// `ld` at scope `$q` into register class `$reg`.
macro_rules! load_fn {
    ($name:ident, $ty:ty, $reg:ident, $ptype:literal, $q:literal) => {
        #[inline(always)]
        unsafe fn $name(ptr: *const $ty, order: Ordering) -> $ty {
            let value: $ty;
            // SAFETY: the caller passes a live, aligned word (trait contract).
            unsafe {
                match order {
                    Ordering::Relaxed => asm!(
                        concat!("ld.relaxed.", $q, ".", $ptype, " {v}, [{p}];"),
                        v = out($reg) value, p = in(reg64) ptr, options(nostack)),
                    Ordering::Acquire => asm!(
                        concat!("ld.acquire.", $q, ".", $ptype, " {v}, [{p}];"),
                        v = out($reg) value, p = in(reg64) ptr, options(nostack)),
                    Ordering::SeqCst => asm!(
                        concat!("fence.sc.", $q, ";\n\tld.acquire.", $q, ".", $ptype, " {v}, [{p}];"),
                        v = out($reg) value, p = in(reg64) ptr, options(nostack)),
                    other => invalid_ordering("load", other),
                }
            }
            value
        }
    };
}

/// `st` at scope `$q`.
macro_rules! store_fn {
    ($name:ident, $ty:ty, $reg:ident, $ptype:literal, $q:literal) => {
        #[inline(always)]
        unsafe fn $name(ptr: *mut $ty, value: $ty, order: Ordering) {
            // SAFETY: the caller passes a live, aligned word (trait contract).
            unsafe {
                match order {
                    Ordering::Relaxed => asm!(
                        concat!("st.relaxed.", $q, ".", $ptype, " [{p}], {v};"),
                        v = in($reg) value, p = in(reg64) ptr, options(nostack)),
                    Ordering::Release => asm!(
                        concat!("st.release.", $q, ".", $ptype, " [{p}], {v};"),
                        v = in($reg) value, p = in(reg64) ptr, options(nostack)),
                    Ordering::SeqCst => asm!(
                        concat!("fence.sc.", $q, ";\n\tst.relaxed.", $q, ".", $ptype, " [{p}], {v};"),
                        v = in($reg) value, p = in(reg64) ptr, options(nostack)),
                    other => invalid_ordering("store", other),
                }
            }
        }
    };
}

/// `atom.<sem>.<scope>.<op>` with one operand.
macro_rules! rmw_fn {
    ($name:ident, $ty:ty, $reg:ident, $op:literal, $q:literal) => {
        #[inline(always)]
        unsafe fn $name(ptr: *mut $ty, value: $ty, order: Ordering) -> $ty {
            let previous: $ty;
            // SAFETY: the caller passes a live, aligned word (trait contract).
            unsafe {
                match order {
                    Ordering::Relaxed => asm!(
                        concat!("atom.relaxed.", $q, ".", $op, " {r}, [{p}], {v};"),
                        r = out($reg) previous, p = in(reg64) ptr, v = in($reg) value, options(nostack)),
                    Ordering::Acquire => asm!(
                        concat!("atom.acquire.", $q, ".", $op, " {r}, [{p}], {v};"),
                        r = out($reg) previous, p = in(reg64) ptr, v = in($reg) value, options(nostack)),
                    Ordering::Release => asm!(
                        concat!("atom.release.", $q, ".", $op, " {r}, [{p}], {v};"),
                        r = out($reg) previous, p = in(reg64) ptr, v = in($reg) value, options(nostack)),
                    Ordering::AcqRel => asm!(
                        concat!("atom.acq_rel.", $q, ".", $op, " {r}, [{p}], {v};"),
                        r = out($reg) previous, p = in(reg64) ptr, v = in($reg) value, options(nostack)),
                    Ordering::SeqCst => asm!(
                        concat!("fence.sc.", $q, ";\n\tatom.acquire.", $q, ".", $op, " {r}, [{p}], {v};"),
                        r = out($reg) previous, p = in(reg64) ptr, v = in($reg) value, options(nostack)),
                    other => invalid_ordering($op, other),
                }
            }
            previous
        }
    };
}

/// `atom.<sem>.<scope>.cas`.
macro_rules! cas_fn {
    ($name:ident, $ty:ty, $reg:ident, $ptype:literal, $q:literal) => {
        #[inline(always)]
        unsafe fn $name(ptr: *mut $ty, current: $ty, new: $ty, order: Ordering) -> $ty {
            let previous: $ty;
            // SAFETY: the caller passes a live, aligned word (trait contract).
            unsafe {
                match order {
                    Ordering::Relaxed => asm!(
                        concat!("atom.relaxed.", $q, ".cas.", $ptype, " {r}, [{p}], {c}, {n};"),
                        r = out($reg) previous, p = in(reg64) ptr, c = in($reg) current, n = in($reg) new, options(nostack)),
                    Ordering::Acquire => asm!(
                        concat!("atom.acquire.", $q, ".cas.", $ptype, " {r}, [{p}], {c}, {n};"),
                        r = out($reg) previous, p = in(reg64) ptr, c = in($reg) current, n = in($reg) new, options(nostack)),
                    Ordering::Release => asm!(
                        concat!("atom.release.", $q, ".cas.", $ptype, " {r}, [{p}], {c}, {n};"),
                        r = out($reg) previous, p = in(reg64) ptr, c = in($reg) current, n = in($reg) new, options(nostack)),
                    Ordering::AcqRel => asm!(
                        concat!("atom.acq_rel.", $q, ".cas.", $ptype, " {r}, [{p}], {c}, {n};"),
                        r = out($reg) previous, p = in(reg64) ptr, c = in($reg) current, n = in($reg) new, options(nostack)),
                    Ordering::SeqCst => asm!(
                        concat!("fence.sc.", $q, ";\n\tatom.acquire.", $q, ".cas.", $ptype, " {r}, [{p}], {c}, {n};"),
                        r = out($reg) previous, p = in(reg64) ptr, c = in($reg) current, n = in($reg) new, options(nostack)),
                    other => invalid_ordering("cas", other),
                }
            }
            previous
        }
    };
}

/// `red.<sem>.<scope>.add`: no destination register.
macro_rules! red_fn {
    ($name:ident, $ty:ty, $reg:ident, $ptype:literal, $q:literal) => {
        #[inline(always)]
        unsafe fn $name(ptr: *mut $ty, value: $ty, order: Ordering) {
            // SAFETY: the caller passes a live, aligned word (trait contract).
            unsafe {
                match order {
                    Ordering::Relaxed => asm!(
                        concat!("red.relaxed.", $q, ".add.", $ptype, " [{p}], {v};"),
                        v = in($reg) value, p = in(reg64) ptr, options(nostack)),
                    Ordering::Release => asm!(
                        concat!("red.release.", $q, ".add.", $ptype, " [{p}], {v};"),
                        v = in($reg) value, p = in(reg64) ptr, options(nostack)),
                    other => invalid_ordering("red.add", other),
                }
            }
        }
    };
}

/// The whole table for one scope.
macro_rules! ptx_scope {
    ($scope:ty, $q:literal) => {
        // SAFETY: every method below is one PTX atomic (plus `fence.sc` for SeqCst) at
        // scope `$q` with at least the requested ordering, on a generic address.
        unsafe impl PtxScope for $scope {
            const QUALIFIER: &'static str = $q;
            load_fn!(load_u32, u32, reg32, "u32", $q);
            load_fn!(load_u64, u64, reg64, "u64", $q);
            store_fn!(store_u32, u32, reg32, "u32", $q);
            store_fn!(store_u64, u64, reg64, "u64", $q);
            cas_fn!(cas_u32, u32, reg32, "b32", $q);
            cas_fn!(cas_u64, u64, reg64, "b64", $q);
            rmw_fn!(swap_u32, u32, reg32, "exch.b32", $q);
            rmw_fn!(swap_u64, u64, reg64, "exch.b64", $q);
            rmw_fn!(fetch_add_u32, u32, reg32, "add.u32", $q);
            rmw_fn!(fetch_add_u64, u64, reg64, "add.u64", $q);
            rmw_fn!(fetch_and_u32, u32, reg32, "and.b32", $q);
            rmw_fn!(fetch_and_u64, u64, reg64, "and.b64", $q);
            rmw_fn!(fetch_or_u32, u32, reg32, "or.b32", $q);
            rmw_fn!(fetch_or_u64, u64, reg64, "or.b64", $q);
            rmw_fn!(fetch_xor_u32, u32, reg32, "xor.b32", $q);
            rmw_fn!(fetch_xor_u64, u64, reg64, "xor.b64", $q);
            rmw_fn!(fetch_min_u32, u32, reg32, "min.u32", $q);
            rmw_fn!(fetch_min_u64, u64, reg64, "min.u64", $q);
            rmw_fn!(fetch_max_u32, u32, reg32, "max.u32", $q);
            rmw_fn!(fetch_max_u64, u64, reg64, "max.u64", $q);
            red_fn!(red_add_u32, u32, reg32, "u32", $q);
            red_fn!(red_add_u64, u64, reg64, "u64", $q);

            #[inline(always)]
            fn fence(order: Ordering) {
                // SAFETY: a fence touches no operand memory.
                unsafe {
                    match order {
                        Ordering::SeqCst => asm!(concat!("fence.sc.", $q, ";"), options(nostack)),
                        Ordering::AcqRel => {
                            asm!(concat!("fence.acq_rel.", $q, ";"), options(nostack))
                        }
                        // The one-way fences are sm_90 (PTX ISA 8.6); before, the
                        // two-way fence, which orders at least as much.
                        #[cfg(target_feature = "sm_90")]
                        Ordering::Acquire => {
                            asm!(concat!("fence.acquire.", $q, ";"), options(nostack))
                        }
                        #[cfg(target_feature = "sm_90")]
                        Ordering::Release => {
                            asm!(concat!("fence.release.", $q, ";"), options(nostack))
                        }
                        #[cfg(not(target_feature = "sm_90"))]
                        Ordering::Acquire | Ordering::Release => {
                            asm!(concat!("fence.acq_rel.", $q, ";"), options(nostack))
                        }
                        // `Relaxed` (the enum is non-exhaustive): no fence.
                        _ => {}
                    }
                }
            }
        }
    };
}

ptx_scope!(Thread, "cta");
ptx_scope!(Block, "cta");
// The `.cluster` scope qualifier is sm_90.
#[cfg(target_feature = "sm_90")]
ptx_scope!(Cluster, "cluster");
ptx_scope!(Device, "gpu");
ptx_scope!(System, "sys");
