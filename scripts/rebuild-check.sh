#!/usr/bin/env bash
# A no-op rebuild compiles nothing: of two release builds in a row of the report and of
# the user-kernels example (each with kernel crates that sync-build compiles in a nested
# nightly build), the second runs no build script and compiles no crate. A
# `rerun-if-changed` on a path that does not exist (a kernel crate without `build.rs`)
# would rerun the nested builds every time.
set -euo pipefail
cd "$(dirname "$0")/.."
for package in scoped-sync-report user-kernels-example; do
    cargo build --release --locked -p "$package" > /dev/null 2>&1
    second="$(cargo build --release --locked -v -p "$package" 2>&1)"
    if grep -E '^ *(Compiling|Running) ' <<<"$second"; then
        echo "rebuild-check: the second build of $package did the work above" >&2
        exit 1
    fi
    echo "rebuild-check: $package: a no-op rebuild compiled nothing ($(grep -c 'Fresh ' <<<"$second") fresh units)"
done
