//! Warp-level operations: which lanes run together, and exchanging values among them.
//!
//! Used to combine the lanes of a warp that reach the same synchronization object
//! together into one atomic operation (see `Backend::combine`), the way
//! `cooperative_groups::coalesced_threads()` groups converged lanes.

use core::arch::asm;

/// Lanes of a warp.
pub(crate) const WARP_LANES: u32 = 32;

/// The calling thread's lane in its warp (0..32).
#[inline(always)]
pub fn lane() -> u32 {
    let lane: u32;
    // SAFETY: reading a special register touches no memory.
    unsafe { asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(nomem, nostack, pure)) };
    lane
}

/// Lanes numbered below the calling one, as a mask.
#[inline(always)]
pub fn lanes_below() -> u32 {
    let mask: u32;
    // SAFETY: reading a special register touches no memory.
    unsafe {
        asm!("mov.u32 {m}, %lanemask_lt;", m = out(reg32) mask, options(nomem, nostack, pure))
    };
    mask
}

/// The lanes executing this instruction together with the caller.
#[inline(always)]
pub fn active_lanes() -> u32 {
    let mask: u32;
    // SAFETY: `activemask` only reads the warp's execution state.
    unsafe { asm!("activemask.b32 {m};", m = out(reg32) mask, options(nomem, nostack)) };
    mask
}

/// Among `lanes` (which must all execute this call), those whose `key` equals the
/// caller's.
#[inline(always)]
pub fn lanes_with_same(lanes: u32, key: u64) -> u32 {
    // The common case, every lane on one key, costs a shuffle and a vote; `match` is
    // far slower on sm_90 and only needed when keys differ.
    let first = broadcast_u64(lanes, key, lanes.trailing_zeros());
    if all_true(lanes, first == key) {
        return lanes;
    }
    let same: u32;
    // SAFETY: a warp-synchronous exchange among `lanes`; no memory is touched.
    unsafe {
        asm!("match.any.sync.b64 {s}, {k}, {m};", s = out(reg32) same, k = in(reg64) key, m = in(reg32) lanes, options(nomem, nostack))
    };
    same
}

/// Whether every lane of `lanes` (which must all execute this call) passes the same
/// `value`.
#[inline(always)]
pub fn all_equal(lanes: u32, value: u32) -> bool {
    all_true(
        lanes,
        broadcast(lanes, value, lanes.trailing_zeros()) == value,
    )
}

/// Whether `condition` holds in every lane of `lanes` (which must all execute this
/// call).
#[inline(always)]
pub fn all_true(lanes: u32, condition: bool) -> bool {
    let all: u32;
    // SAFETY: a warp-synchronous vote among `lanes`; no memory is touched.
    unsafe {
        asm!(
            "{{ .reg .pred p, q; setp.ne.u32 p, {c}, 0; vote.sync.all.pred q, p, {m}; selp.u32 {a}, 1, 0, q; }}",
            a = out(reg32) all, c = in(reg32) u32::from(condition), m = in(reg32) lanes, options(nomem, nostack)
        )
    };
    all != 0
}

/// `value` as passed by lane `from`, to every lane of `lanes` (which must all execute
/// this call and include `from`).
#[inline(always)]
pub fn broadcast(lanes: u32, value: u32, from: u32) -> u32 {
    let out: u32;
    // SAFETY: a warp-synchronous exchange among `lanes`; no memory is touched.
    unsafe {
        asm!("shfl.sync.idx.b32 {o}, {v}, {f}, 31, {m};", o = out(reg32) out, v = in(reg32) value, f = in(reg32) from, m = in(reg32) lanes, options(nomem, nostack))
    };
    out
}

/// `broadcast` of a 64-bit value.
#[inline(always)]
pub fn broadcast_u64(lanes: u32, value: u64, from: u32) -> u64 {
    let low = broadcast(lanes, value as u32, from);
    let high = broadcast(lanes, (value >> 32) as u32, from);
    (u64::from(high) << 32) | u64::from(low)
}

/// A barrier among `lanes` (which must all execute it) that also orders their memory
/// accesses: what a lane wrote before it is visible to the others after it (PTX ISA,
/// `bar.warp.sync`).
#[inline(always)]
pub fn sync(lanes: u32) {
    // SAFETY: a warp barrier; its memory effect is ordering only.
    unsafe { asm!("bar.warp.sync {m};", m = in(reg32) lanes, options(nostack)) };
}

/// The lanes of the caller's warp that call this together on the same `object`, with
/// the same `n`, and the lowest of them (the leader). Every lane of the result passes
/// through [`sync`] before it returns, so their earlier accesses are ordered before
/// whatever the leader does next.
#[inline(always)]
pub fn group_on(object: *const (), n: u32) -> (u32, u32) {
    let active = active_lanes();
    let same_object = lanes_with_same(active, object as u64);
    if !all_equal(same_object, n) {
        // Different counts in one group: no combining, each lane alone.
        return (1 << lane(), lane());
    }
    if same_object.count_ones() > 1 {
        sync(same_object);
    }
    (same_object, same_object.trailing_zeros())
}

/// The lanes of the caller's warp that call this together on the same `object` (the
/// group; the lowest is its leader), the sum of their `n` and the sum over the group's
/// lanes below the caller: what one arrival of the group's total stands for, and the
/// share that comes before the caller's. Lanes may pass different `n`. `None` when a
/// sum would not fit in 32 bits (each lane is then alone). Every lane of the group
/// passes through [`sync`] before it returns.
#[inline(always)]
pub fn group_counts(object: *const (), n: u32) -> Option<(u32, u32, u32)> {
    let active = active_lanes();
    if active & active.wrapping_sub(1) == 0 {
        // A lone lane (a block's leader arriving for its block): nothing to group, and
        // the shuffles and votes below would only delay its atomic.
        return Some((active, n, 0));
    }
    if active == u32::MAX {
        // SAFETY: `activemask` found all 32 lanes here.
        if let Some(whole) = unsafe { whole_warp_counts(object, n) } {
            return Some(whole);
        }
    }
    let group = lanes_with_same(active, object as u64);
    let size = group.count_ones();
    let below = group & lanes_below();
    if all_equal(group, n) {
        let total = n.checked_mul(size)?;
        if size > 1 {
            sync(group);
        }
        return Some((group, total, n * below.count_ones()));
    }
    // Different counts: sum them lane by lane (rare: a warp whose lanes arrive with
    // different counts at once). Each term is at most 2²⁶, so no sum overflows.
    if !all_true(group, n <= 1 << 26) {
        return None;
    }
    let (mut total, mut before) = (0_u32, 0_u32);
    let mut rest = group;
    while rest != 0 {
        let from = rest.trailing_zeros();
        let theirs = broadcast(group, n, from);
        total += theirs;
        if below & (1 << from) != 0 {
            before += theirs;
        }
        rest &= rest - 1;
    }
    sync(group);
    Some((group, total, before))
}

/// [`group_counts`] for the common case, all 32 lanes on one `object` with one `n`:
/// `None` if they are not (or if the total would not fit in 32 bits). Its shuffles,
/// votes and warp barrier name the whole warp in the instruction: with a member mask
/// in a register (as [`group_counts`] passes the active lanes) ptxas checks the mask
/// against the converged lanes at each one (`MATCH.ANY`, `REDUX`, a divergence branch;
/// sm_90 SASS), which cost a 1024-thread block's phase of a `Barrier<Block>` with a
/// completion function more than the barrier itself.
///
/// # Safety
///
/// All 32 lanes of the warp run it together (`activemask` said so): its instructions
/// name all of them.
#[inline(always)]
unsafe fn whole_warp_counts(object: *const (), n: u32) -> Option<(u32, u32, u32)> {
    let key = object as u64;
    let together: u32;
    // SAFETY: warp-synchronous exchanges among all 32 lanes, which run this together
    // (the contract); no memory is touched.
    unsafe {
        asm!(
            "{{",
            ".reg .pred same;",
            ".reg .b32 theirs;",
            "shfl.sync.idx.b32 theirs, {low}, 0, 31, -1;",
            "setp.eq.u32 same, theirs, {low};",
            "shfl.sync.idx.b32 theirs, {high}, 0, 31, -1;",
            "setp.eq.and.u32 same, theirs, {high}, same;",
            "shfl.sync.idx.b32 theirs, {n}, 0, 31, -1;",
            "setp.eq.and.u32 same, theirs, {n}, same;",
            "vote.sync.all.pred same, same, -1;",
            "selp.u32 {together}, 1, 0, same;",
            "}}",
            low = in(reg32) key as u32,
            high = in(reg32) (key >> 32) as u32,
            n = in(reg32) n,
            together = out(reg32) together,
            options(nomem, nostack),
        )
    };
    if together == 0 {
        return None;
    }
    let total = n.checked_mul(WARP_LANES)?;
    // SAFETY: a barrier of the whole warp, which runs this together (the contract); it
    // orders the lanes' memory accesses before whatever the leader does next.
    unsafe { asm!("bar.warp.sync -1;", options(nostack)) };
    Some((u32::MAX, total, n * lane()))
}
