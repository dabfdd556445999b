#!/usr/bin/env bash
# On a GPU host: builds shared/anchors/gpu_baselines.cu with nvcc and runs it beside
# the scoped-sync report, alternating, in one invocation; prints the per-scope atomic
# chain and fence costs of both (cycles per operation, best of the rounds) and the
# ratio ours / CUDA C++.
#
#   bash compare.sh [ROUNDS]          # inside the bundle made by scripts/gpu-bundle.sh
set -euo pipefail
cd "$(dirname "$0")"
rounds="${1:-2}"
work="$(mktemp -d)"
nvcc -O3 -std=c++20 -arch=sm_90 gpu_baselines.cu -o "$work/gpu_baselines"
for round in $(seq "$rounds"); do
    echo "round $round: anchor" >&2
    "$work/gpu_baselines" > "$work/anchor.$round.txt"
    echo "round $round: scoped-sync" >&2
    ./scoped-sync > "$work/ours.$round.txt" 2>/dev/null
done
cat "$work/anchor.1.txt" "$work/ours.1.txt" > "$work/first-round.txt"
python3 - "$work" "$rounds" <<'PY'
import re, sys
work, rounds = sys.argv[1], int(sys.argv[2])
anchor, ours = {}, {}
def keep(table, key, value):
    table[key] = min(value, table.get(key, float("inf")))
for r in range(1, rounds + 1):
    for line in open(f"{work}/anchor.{r}.txt"):
        m = re.match(r"atomic fetch_add acq_rel chain\s+scope=(\w+)\s*:\s*([\d.]+) cycles", line)
        if m: keep(anchor, ("atomic chain", m[1]), float(m[2]))
        m = re.match(r"fence\s+seq_cst store\+fence\s+scope=(\w+)\s*:\s*([\d.]+) cycles", line)
        if m: keep(anchor, ("store+fence", m[1]), float(m[2]))
    scope = None
    for line in open(f"{work}/ours.{r}.txt"):
        m = re.match(r"== (\w+) scope, cuda backend ==", line)
        if m: scope = m[1]; continue
        if line.startswith("=="): scope = None; continue
        m = re.match(r"(atomic|fence)\s+(\S+)\s+\d+\s+\S+ \(([\d.]+) cyc\)", line)
        if scope and m:
            keep(ours, ("atomic chain" if m[1] == "atomic" else "store+fence", scope), float(m[3]))
print(f"per-scope cost, cycles/op, best of {rounds} round(s) each, alternating")
print(f"{'operation':<14}{'scope':<8}{'CUDA C++':>10}{'ours':>10}{'ratio':>8}")
for key in sorted(anchor):
    if key in ours:
        print(f"{key[0]:<14}{key[1]:<8}{anchor[key]:>10.1f}{ours[key]:>10.1f}{ours[key] / anchor[key]:>8.3f}")
missing = [k for k in anchor if k not in ours]
if missing:
    sys.exit(f"missing from our report: {missing}")
PY
