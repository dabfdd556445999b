//! The compare-and-swap loop every read-modify-write with a condition uses.

use crate::backend::{Backend, Word};
use crate::primitive::Ordering;
use crate::scope::Scope;

/// Applies `next` to the word's value until a compare-and-swap (with `success`
/// ordering) installs the result, like `AtomicU32::fetch_update`. Returns the value it
/// replaced, or the error `next` returned, in which case this call changed nothing.
#[inline]
pub(crate) fn update<S: Scope, B: Backend<S>, E>(
    word: &Word,
    success: Ordering,
    mut next: impl FnMut(u32) -> Result<u32, E>,
) -> Result<u32, E> {
    let mut current = B::load(word, Ordering::Relaxed);
    loop {
        let new = next(current)?;
        match B::compare_exchange(word, current, new, success, Ordering::Relaxed) {
            Ok(previous) => return Ok(previous),
            Err(actual) => current = actual,
        }
    }
}
