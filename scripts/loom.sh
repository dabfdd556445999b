#!/usr/bin/env bash
# loom models, one test file per primitive (sync-host/tests/loom_*.rs, sharing
# loom_support/) and per bus object (loom_bus_*.rs, sharing loom_bus_support/: host
# threads and loom threads playing the GPU):
# explores the thread interleavings of the algorithms with loom's atomics and parking,
# and fails on a data race, a broken assertion, a lost wake-up (reported by loom as a
# deadlock) or a bus wait that cannot end.
#
#   bash scripts/loom.sh [extra cargo test args]
#
# LOOM_MAX_PREEMPTIONS (default 2) bounds the preemptions per execution; 3 also finishes
# in well under a minute. The build uses its own target directory (target/loom unless
# CARGO_TARGET_DIR is set), because `--cfg loom` rebuilds every crate: sharing
# target/ would throw away the normal build each time.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"

RUSTFLAGS="--cfg loom" cargo test -p sync-host --test 'loom_*' --release "$@"
