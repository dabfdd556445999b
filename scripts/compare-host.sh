#!/usr/bin/env bash
# Puts scoped-sync's host figures beside libstdc++'s C++20 primitives (and Rust std's)
# on this machine, in one run.
#
# Builds baselines/host_baselines.cpp (g++ -O2 -std=c++20 -pthread, and against libc++
# with scripts/libcxx.sh; a libc++ that cannot be had is skipped with the reason) and the
# report, then runs `scoped-sync --host-only --anchor host_baselines --anchor-libcxx
# host_baselines_libcxx`: for every workload the anchors have, ours, the Rust peers,
# libstdc++ and libc++ alternate within each repetition, and the table gives each one's
# best time and the ratio ours / peer (below 1: ours is faster). Other options go to the
# report, e.g.
#
#   scripts/compare-host.sh                     # the usual shapes
#   scripts/compare-host.sh --scaling           # 1, 2, 4, ... threads, to twice the cores
#   scripts/compare-host.sh --quick             # a smoke run (rough figures)
#   scripts/compare-host.sh --json > run.jsonl  # records (docs/report-schema.md)
#   scripts/compare-host.sh --scaling --plot charts/
set -euo pipefail

case "${1:-}" in -h | --help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
mkdir -p "$repo/target"
echo "building the anchors and the report..." >&2
g++ -O2 -std=c++20 -pthread "$repo/baselines/host_baselines.cpp" -o "$repo/target/host_baselines"
libcxx=()
if bash "$repo/scripts/libcxx.sh" "$repo/target/host_baselines_libcxx" 2> "$repo/target/libcxx.log"; then
    libcxx=(--anchor-libcxx "$repo/target/host_baselines_libcxx")
else
    echo "libc++ anchor: skipped: scripts/libcxx.sh failed ($(tail -1 "$repo/target/libcxx.log"))" >&2
fi
(cd "$repo" && cargo build --release --locked --quiet -p scoped-sync-report)
exec "$repo/target/release/scoped-sync" --host-only --anchor "$repo/target/host_baselines" "${libcxx[@]}" "$@"
