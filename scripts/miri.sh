#!/usr/bin/env bash
# Miri on a host test subset: checks the unsafe code (the stop-callback intrusive list,
# the barrier's completion cell, futex parking) for undefined behaviour under Stacked
# Borrows, and the concurrent tests for data races (Miri's race detector and weak
# memory emulation).
#
#   bash scripts/miri.sh
#   MIRIFLAGS=-Zmiri-tree-borrows bash scripts/miri.sh    # the other aliasing model
#
# What runs:
#   - sync-shared: unit tests and doc examples (every primitive's examples);
#   - sync-host: unit tests and doc tests; scoped-sync: the crate-level doc example;
#   - tests/{stop_token,barrier,latch}.rs whole, except their longest loops and the
#     tests that spawn a child process (Miri cannot); tests/stop_callback_panic.rs but
#     its child-process test; the short functional tests
#     of tests/{semaphore,fair_semaphore}.rs (their stress loops take minutes under
#     Miri and trip the tests' hang guards). Two of the fair semaphore's timed-out-waiter
#     tests (head_waiter_times_out_before_a_later_one,
#     later_waiter_timing_out_grants_nothing_to_the_head) are left out too: with nightly
#     2026-05-19 they run past their hang guard's 600 virtual seconds under Miri, at
#     commit 14644f1 as well (7 minutes each); natively they pass (100 runs in a row),
#     and the loom model fair_semaphore_two_acquirers_and_releaser covers the queue.
#   - tests/bus.rs whole (the bus objects with CPU threads playing the GPU; their
#     payloads are plain memory, so the race detector checks the publish protocol):
#     nothing skipped, because under Miri its many-to-many handoff moves 1000 units
#     instead of 40 000 (all nine tests: about 40 s);
#   - tests/bus_pes.rs whole (the same objects across NVSHMEM PEs, copies in arrays:
#     200 units under Miri).
# A test file that does not exist is skipped; a filter that matches nothing runs nothing.
#
# Installs the nightly `miri` and `rust-src` components when missing (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."

toolchain="${MIRI_TOOLCHAIN:-nightly}"

installed="$(rustup component list --toolchain "$toolchain" --installed 2>/dev/null || true)"
missing=()
for component in miri rust-src; do
    grep -q "^$component" <<<"$installed" || missing+=("$component")
done
if ((${#missing[@]})); then
    rustup component add "${missing[@]}" --toolchain "$toolchain"
fi
cargo +"$toolchain" miri setup >/dev/null

# Miri's isolation stays on: its virtual clock serves Instant::now and timed waits.
export MIRIFLAGS="${MIRIFLAGS:-}"

miri_test() {
    printf '\n==> cargo +%s miri test %s\n' "$toolchain" "$*"
    cargo +"$toolchain" miri test --locked "$@"
}

# An integration test file of the root package, with libtest filters / --skip.
integration() {
    local name=$1
    shift
    if [[ -f "tests/$name.rs" ]]; then
        # One test at a time: Miri's virtual clock advances with every thread's
        # work, so concurrent tests would eat each other's timeouts.
        miri_test -p scoped-sync --test "$name" -- --test-threads=1 "$@"
    else
        printf '\n==> tests/%s.rs does not exist: skipped\n' "$name"
    fi
}

miri_test -p sync-shared --lib
miri_test -p sync-shared --doc
miri_test -p sync-host
miri_test -p scoped-sync --doc

integration stop_token --skip concurrent_drops --skip many_callbacks --skip publishes
integration stop_callback_panic --skip two_panicking_callbacks_abort_the_process
integration barrier --skip many_phases --skip panicking_completion
integration latch --skip writes_before_count_down --skip count_downs_
integration semaphore libcxx_ acquire_blocks_until_release acquire_stoppable \
    release_n_lets_exactly_n_waiters_through timed_hang timed_acquire_with_huge_timeout \
    timed_acquires_succeed semaphores_in_statics max_values debug_output
integration fair_semaphore libcxx_ acquire_release_try_acquire acquire_blocks_until_release \
    acquire_stoppable fifo_order one_release_serves_the_whole_queue \
    release_n_lets_exactly_n_waiters_through try_acquire_does_not_jump_the_queue \
    stopped_waiter_conserves_the_count timed_out_waiter_conserves_the_count \
    mutual_exclusion_survives timed_acquires_succeed \
    timed_hang release_with_queued_waiters max_values semaphores_in_statics
integration bus
integration bus_pes

printf '\nscripts/miri.sh: all Miri runs passed\n'
