#!/usr/bin/env bash
# On a GPU host: builds gpu_baselines.cu (baselines/ in the repository) with nvcc and runs it beside
# the scoped-sync report, alternating, in one invocation; files both sides' figures as
# report records (docs/report-schema.md: the anchor's lines become records with our
# workload keys and impl cuda_cpp / libcudacxx / cooperative_groups), prints ours beside
# CUDA C++ (best of the rounds) with the ratio ours / CUDA C++, and keeps the records.
#
#   bash compare.sh [ROUNDS [RECORDS_DIR]]   # inside the bundle of scripts/gpu-bundle.sh
#
# RECORDS_DIR (default: a temporary folder) receives ours.R.jsonl and anchor.R.jsonl per
# round R, which gate.sh and `scoped-sync --from` read. COMPARE_PLACEMENT=0 skips the
# same-address table.
set -euo pipefail
cd "$(dirname "$0")"
rounds="${1:-2}"
work="$(mktemp -d)"
records="${2:-$work}"
mkdir -p "$records"
nvcc -O3 -std=c++20 -arch=sm_90 gpu_baselines.cu -o "$work/gpu_baselines"
for round in $(seq "$rounds"); do
    echo "round $round: anchor" >&2
    "$work/gpu_baselines" > "$work/anchor.$round.txt"
    echo "round $round: scoped-sync" >&2
    ./scoped-sync --gpu-only --json > "$records/ours.$round.jsonl" 2>/dev/null
done
python3 - "$work" "$records" "$rounds" <<'PY'
import json, re, sys
work, records, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

# Anchor line -> the workload key of ours it is measured beside, and who implemented it.
# (anchor label, impl, [(scope, primitive, op, variant, issue target or None)])
PRIMITIVES = {
    "__syncthreads": ("cuda_syncthreads", [("block", "block_barrier", "sync", None, 1.1)]),
    "cuda::barrier<block>": ("libcudacxx", [
        ("block", "shared_barrier", "arrive_and_wait", None, 0.8),
        ("block", "shared_barrier", "arrive_and_wait_parity", None, None),
        ("block", "barrier", "arrive_and_wait", "shared_memory", 1.0),
    ]),
    "cuda::barrier<block> completion": ("libcudacxx", [
        ("block", "barrier", "arrive_and_wait", "shared_memory_completion", 1.0),
    ]),
    "cg::grid.sync()": ("cooperative_groups", [("device", "grid", "sync", None, 0.9)]),
    "cg::grid.sync() 16/SM": ("cooperative_groups", [("device", "grid", "sync", "sixteen_blocks_per_sm", 0.8)]),
    "cuda::barrier<device> leader": ("libcudacxx", [("device", "barrier", "block_arrive_and_wait", None, 1.0)]),
    "cuda::barrier<device> all-threads": ("libcudacxx", [("device", "barrier", "arrive_and_wait", None, 1.0)]),
    "cuda::latch<block>": ("libcudacxx", [("block", "latch", "arrive_and_wait", "shared_memory", 1.0)]),
    "cuda::latch<device> all-threads": ("libcudacxx", [("device", "latch", "arrive_and_wait", None, 1.0)]),
}

def record(scope, primitive, impl, op, variant, grid, block, value, unit):
    # The anchor prints one best-of figure per shape: min = median = max.
    return [{"schema": "scoped-sync-report/1", "backend": "cuda", "scope": scope,
             "primitive": primitive, "impl": impl, "op": op, "variant": variant,
             "threads": grid * block, "grid": grid, "block": block, "stat": stat,
             "value": value, "unit": unit, "repetitions": 1}
            for stat in ("min", "median", "max")]

targets = {}
for r in range(1, rounds + 1):
    out = []
    for line in open(f"{work}/anchor.{r}.txt"):
        m = re.match(r"atomic fetch_add acq_rel chain\s+scope=(\w+)\s*:\s*([\d.]+) cycles", line)
        if m:
            out += record(m[1], "atomic", "cuda_cpp", "fetch_add_acq_rel_chain", None, 1, 1, float(m[2]), "cycles")
        m = re.match(r"fence\s+seq_cst store\+fence\s+scope=(\w+)\s*:\s*([\d.]+) cycles", line)
        if m:
            out += record(m[1], "fence", "cuda_cpp", "store_fence_seq_cst", None, 1, 1, float(m[2]), "cycles")
        m = re.match(r"(?:block|grid)\s+(.+?)\s+grid=(\d+) x\s*(\d+) :\s*([\d.]+) ns", line)
        if m and m[1] in PRIMITIVES:
            impl, ours = PRIMITIVES[m[1]]
            for scope, primitive, op, variant, target in ours:
                out += record(scope, primitive, impl, op, variant, int(m[2]), int(m[3]), float(m[4]), "ns")
                targets[(scope, primitive, op, variant, int(m[3]))] = target
        m = re.match(r"sem\s+counting_semaphore<(\w+)> ping-pong.*:\s*([\d.]+) ns", line)
        if m and m[1] == "device":
            out += record("device", "semaphore", "libcudacxx", "ping_pong", "two_blocks", 2, 32, float(m[2]), "ns")
            targets[("device", "semaphore", "ping_pong", "two_blocks", 32)] = 0.75
        elif m:
            out += record("block", "semaphore", "libcudacxx", "ping_pong", "two_warps", 1, 64, float(m[2]), "ns")
            targets[("block", "semaphore", "ping_pong", "two_warps", 64)] = 1.0
        m = re.match(r"host<->device mapped-memory ping-pong.*:\s*([\d.]+) ns", line)
        if m:
            out += record("system", "handoff_channel", "cuda_cpp_raw_spin", "round_trip", "endpoints", 1, 1, float(m[1]), "ns")
        m = re.match(r"launch empty kernel \+ cudaStreamSynchronize:\s*([\d.]+) ns", line)
        if m:
            out += record("system", "handoff_channel", "cuda_cpp_launch_and_sync", "round_trip", "endpoints", 1, 1, float(m[1]), "ns")
    with open(f"{records}/anchor.{r}.jsonl", "w") as f:
        f.writelines(json.dumps(x, separators=(",", ":")) + "\n" for x in out)

# Best (min) per workload and impl over the rounds, ns where both sides have it.
best = {}
for r in range(1, rounds + 1):
    for name in (f"ours.{r}.jsonl", f"anchor.{r}.jsonl"):
        for line in open(f"{records}/{name}"):
            x = json.loads(line)
            if x["stat"] != "min":
                continue
            key = (x["scope"], x["primitive"], x["op"], x["variant"], x["grid"], x["block"], x["unit"])
            side = "ours" if x["impl"] == "scoped_sync" else x["impl"]
            best[(key, side)] = min(x["value"], best.get((key, side), float("inf")))

def label(key):
    scope, primitive, op, variant, grid, block, unit = key
    return f"{scope} {primitive} {op}" + (f" ({variant})" if variant else "") + f" {grid}x{block}"

print(f"ours beside CUDA C++, best of {rounds} round(s) each, alternating")
print(f"{'workload':<58}{'unit':>7}{'CUDA C++':>11}  {'anchor impl':<26}{'ours':>10}{'ratio':>8}  target")
failed = []
for (key, side), theirs in sorted(best.items(), key=lambda kv: str(kv[0])):
    if side == "ours":
        continue
    if (key, "ours") not in best:
        failed.append(f"missing from our report: {label(key)}")
        continue
    ours = best[(key, "ours")]
    ratio = ours / theirs
    target = targets.get(key[:4] + (key[5],))
    verdict = "" if target is None else (f"<= {target}: " + ("met" if ratio <= target else "NOT MET"))
    print(f"{label(key):<58}{key[6]:>7}{theirs:>11.1f}  {side:<26}{ours:>10.1f}{ratio:>8.3f}  {verdict}")
print("atomic and fence rows: each program on its own word, so they compare L2 placements as")
print("much as code; see the same-address table")
if failed:
    sys.exit("; ".join(failed))
PY

# The same comparison with both sides on the same words (see placement.py): the
# single-address rows above depend on where each program's allocation landed.
if [[ "${COMPARE_PLACEMENT:-1}" == 0 ]]; then
    :
elif python3 -c "import cupy" 2>/dev/null; then
    nvcc -cubin -O3 -std=c++20 -arch=sm_90 gpu_baselines.cu -o "$work/anchor.cubin"
    echo
    python3 placement.py "$work/anchor.cubin" kernels.ptx
else
    echo "compare: no cupy; the same-address table is skipped" >&2
fi
