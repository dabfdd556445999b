//! The atomics [`MultiGrid`](crate::MultiGrid) issues on every phase, on words it knows
//! are in global memory (device memory of this GPU or of a peer), in the `.global`
//! state space.
//!
//! Why not the generic forms of `ptx_atomics`: a generic address may be in shared
//! memory, which has no 64-bit atomic add, so for a generic 64-bit add ptxas emits the
//! atomic with a shared-window test and a compare-and-swap fallback, and the thread
//! waits for the reply of every add before it goes on. Over NVLink that is a round trip
//! per add; in the `.global` space the add is a posted reduction (`REDG`), and a
//! `MultiGrid` phase measured far slower with the generic forms than with these
//! (docs/measurements.md, `global_atomics`).

use core::arch::asm;

/// `atom.release.gpu.global.add.u64`: adds `value`, returns the previous value.
///
/// # Safety
///
/// `ptr` is a live, 8-byte aligned word in global memory that every thread touching it
/// reaches with atomics of at least device scope.
#[inline(always)]
pub(crate) unsafe fn fetch_add_release_gpu(ptr: *mut u64, value: u64) -> u64 {
    let previous: u64;
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "atom.release.gpu.global.add.u64 {r}, [{p}], {v};",
            r = out(reg64) previous,
            p = in(reg64) ptr,
            v = in(reg64) value,
            options(nostack),
        )
    };
    previous
}

/// `red.relaxed.sys.global.add.u64`: adds `value` without waiting for a reply.
///
/// # Safety
///
/// `ptr` is a live, 8-byte aligned word in global memory that every thread touching it
/// reaches with system-scope atomics.
#[inline(always)]
pub(crate) unsafe fn red_add_relaxed_sys(ptr: *mut u64, value: u64) {
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "red.relaxed.sys.global.add.u64 [{p}], {v};",
            p = in(reg64) ptr,
            v = in(reg64) value,
            options(nostack),
        )
    };
}

/// `ld.relaxed.sys.global.u64`.
///
/// # Safety
///
/// As [`red_add_relaxed_sys`].
#[inline(always)]
pub(crate) unsafe fn load_relaxed_sys(ptr: *const u64) -> u64 {
    let value: u64;
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "ld.relaxed.sys.global.u64 {v}, [{p}];",
            v = out(reg64) value,
            p = in(reg64) ptr,
            options(nostack),
        )
    };
    value
}
