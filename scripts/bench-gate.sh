#!/usr/bin/env bash
# Regression gate for the host section: measures it three times beside Rust std and
# libstdc++ (scripts/compare-host.sh's run) and checks every ratio ours / peer against
# the ones stored in benches/ratios.json for machine KIND; exit 1 when a ratio is worse
# than its noise band (how bands are measured: docs/measurements.md). With
# --calibrate, stores the three runs' ratios and bands for KIND instead.
#
#   scripts/bench-gate.sh KIND [--calibrate]
#
# A benchmark, not a test: scripts/test.sh does not run it (CI machines are shared and
# their figures move with their neighbours). On a GPU host, the bundle's gate.sh also
# gates the GPU rows.
set -euo pipefail
kind="${1:?usage: scripts/bench-gate.sh KIND [--calibrate]}"
shift
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
records="$repo/target/bench-gate"
mkdir -p "$records"
from=()
for run in 1 2 3; do
    echo "run $run/3" >&2
    bash "$repo/scripts/compare-host.sh" --json > "$records/host.$run.jsonl"
    from+=(--from "$records/host.$run.jsonl")
done
"$repo/target/release/scoped-sync" "${from[@]}" --gate "$repo/benches/ratios.json" --machine "$kind" "$@"
