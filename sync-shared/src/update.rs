//! The compare-and-swap loop every read-modify-write with a condition uses.

use crate::backend::{Backend, Combined, Word};
use crate::primitive::Ordering;
use crate::scope::Scope;

/// Applies `next` to the word's value until a compare-and-swap (with `success`
/// ordering) installs the result, like `AtomicU32::fetch_update`. Returns the value it
/// replaced, or the error `next` returned, in which case this call changed nothing.
#[inline]
pub(crate) fn update<S: Scope, B: Backend<S>, E>(
    word: &Word,
    success: Ordering,
    next: impl FnMut(u32) -> Result<u32, E>,
) -> Result<u32, E> {
    update_from::<S, B, E>(word, B::load(word, Ordering::Relaxed), success, next)
}

/// [`update`] starting from `current`, a value of the word the caller just loaded (the
/// first compare-and-swap needs no load of its own).
#[inline]
pub(crate) fn update_from<S: Scope, B: Backend<S>, E>(
    word: &Word,
    mut current: u32,
    success: Ordering,
    mut next: impl FnMut(u32) -> Result<u32, E>,
) -> Result<u32, E> {
    loop {
        let new = next(current)?;
        match B::compare_exchange(word, current, new, success, Ordering::Relaxed) {
            Ok(previous) => return Ok(previous),
            Err(actual) => current = actual,
        }
    }
}

/// The leader's update failed: every member retries alone.
const GROUP_FAILED: u64 = u64::MAX;

/// Runs `apply(n)` — a read-modify-write that takes `n` from a count in `word` and
/// returns the value it replaced — for the calling thread, combined with the threads
/// the backend groups with it (see [`Backend::combine`]): the group's leader applies
/// the group's total once, and each member gets the value it would have replaced had
/// the members run one after another (the leader's value minus the `n` of the members
/// before it). So a warp's arrivals cost one atomic, not 32.
///
/// If the combined update fails (the total exceeds what the count allows), every
/// member runs `apply(n)` alone, so an error reaches exactly the threads whose own
/// update breaks the precondition.
#[inline]
pub(crate) fn combined_take<S: Scope, B: Backend<S>, E>(
    word: &Word,
    n: u32,
    apply: impl Fn(u32) -> Result<u32, E>,
) -> Result<u32, E> {
    combined::<S, B, E>(word, n, apply, |previous, before| previous - before)
}

/// [`combined_take`] for a count that grows by `unit` per arrival: each member gets the
/// leader's value plus `unit` times the `n` of the members before it.
#[inline]
pub(crate) fn combined_add<S: Scope, B: Backend<S>, E>(
    word: &Word,
    n: u32,
    unit: u32,
    apply: impl Fn(u32) -> Result<u32, E>,
) -> Result<u32, E> {
    combined_add_in::<S, B, E>(B::combine(word, n), n, unit, apply)
}

/// [`combined_add`] for a `group` the caller formed with [`Backend::combine`] on
/// `word` and `n` (to treat a thread alone differently).
#[inline(always)]
pub(crate) fn combined_add_in<S: Scope, B: Backend<S>, E>(
    group: Combined,
    n: u32,
    unit: u32,
    apply: impl Fn(u32) -> Result<u32, E>,
) -> Result<u32, E> {
    combined_in::<S, B, E>(group, n, apply, |previous, before| {
        previous.wrapping_add(before.wrapping_mul(unit))
    })
}

/// The grouping both directions share: `member(previous, before)` is the value a member
/// whose group-mates before it took `before` would have replaced.
#[inline(always)]
fn combined<S: Scope, B: Backend<S>, E>(
    word: &Word,
    n: u32,
    apply: impl Fn(u32) -> Result<u32, E>,
    member: impl Fn(u32, u32) -> u32,
) -> Result<u32, E> {
    combined_in::<S, B, E>(B::combine(word, n), n, apply, member)
}

/// [`combined`] for a group already formed.
#[inline(always)]
fn combined_in<S: Scope, B: Backend<S>, E>(
    group: Combined,
    n: u32,
    apply: impl Fn(u32) -> Result<u32, E>,
    member: impl Fn(u32, u32) -> u32,
) -> Result<u32, E> {
    if group.is_alone() {
        return apply(n);
    }
    let led = if group.before == 0 {
        apply(group.total).map_or(GROUP_FAILED, u64::from)
    } else {
        0
    };
    match B::broadcast(&group, led) {
        GROUP_FAILED => apply(n),
        previous => Ok(member(previous as u32, group.before)),
    }
}
