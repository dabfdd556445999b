//! Things that must not compile, checked with trybuild against the `.stderr` snapshots
//! in `tests/ui/` (regenerate with `TRYBUILD=overwrite cargo test --test compile_fail`
//! and review the diff).
//!
//! - Host primitives at a scope narrower than `System` (`Block`, `Device`): the host
//!   backend implements `Backend<System>` only.
//! - Const-evaluated preconditions: an expected count above `Barrier::max()` in a
//!   `static`, a semaphore `MAX` above `SEMAPHORE_MAX`.
//! - A `StopToken` outliving its in-place `StopSource`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
