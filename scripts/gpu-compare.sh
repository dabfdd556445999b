#!/usr/bin/env bash
# On a GPU host: builds gpu_baselines.cu (baselines/ in the repository) with nvcc and runs it beside
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
    ./scoped-sync --gpu-only > "$work/ours.$round.txt" 2>/dev/null
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
print(f"per-scope cost, cycles/op, best of {rounds} round(s) each, alternating; each program on")
print("its own word, so this compares L2 placements as much as code: see the same-address table")
print(f"{'operation':<14}{'scope':<8}{'CUDA C++':>10}{'ours':>10}{'ratio':>8}")
for key in sorted(anchor):
    if key in ours:
        print(f"{key[0]:<14}{key[1]:<8}{anchor[key]:>10.1f}{ours[key]:>10.1f}{ours[key] / anchor[key]:>8.3f}")
missing = [k for k in anchor if k not in ours]
if missing:
    sys.exit(f"missing from our report: {missing}")

# Primitives: ns per barrier phase / round trip, best of the rounds on both sides.
# (anchor label, our op, issue target for ours / anchor or None)
PAIRS = [
    ("__syncthreads 128", "BlockBarrier (bar.sync) 132x128", 1.1),
    ("__syncthreads 1024", "BlockBarrier (bar.sync) 132x1024", 1.1),
    ("cuda::barrier<block> 128", "SharedBarrier (mbarrier) 132x128", None),
    ("cuda::barrier<block> 1024", "SharedBarrier (mbarrier) 132x1024", 0.8),
    ("cuda::barrier<block> 128", "SharedBarrier arrive_and_wait_parity 132x128", None),
    ("cuda::barrier<block> 1024", "SharedBarrier arrive_and_wait_parity 132x1024", None),
    ("cuda::barrier<block> 128", "Barrier<Block> in shared 132x128", None),
    ("cuda::barrier<block> 1024", "Barrier<Block> in shared 132x1024", None),
    ("cg::grid.sync() 128", "Grid::sync 132x128", 0.9),
    ("cg::grid.sync() 1024", "Grid::sync 132x1024", 0.9),
    ("cuda::barrier<device> leader 128", "Barrier<Device> block_arrive_and_wait 132x128", None),
    ("cuda::barrier<device> leader 1024", "Barrier<Device> block_arrive_and_wait 132x1024", None),
    ("cuda::barrier<device> all-threads 128", "Barrier<Device> arrive_and_wait 132x128", None),
    ("counting_semaphore<device> ping-pong", "ping-pong 2 blocks 2x32", 0.75),
]
anchor_ns, ours_ns = {}, {}
for r in range(1, rounds + 1):
    for line in open(f"{work}/anchor.{r}.txt"):
        m = re.match(r"(?:block|grid)\s+(\S+(?: leader| all-threads)?)\s+grid=\d+ x\s*(\d+) :\s*([\d.]+) ns", line)
        if m: keep(anchor_ns, f"{m[1]} {m[2]}", float(m[3]))
        m = re.match(r"sem\s+(\S+ ping-pong)\s.*:\s*([\d.]+) ns", line)
        if m: keep(anchor_ns, m[1], float(m[2]))
    for line in open(f"{work}/ours.{r}.txt"):
        m = re.match(r"(?:barrier|semaphore)\s+(.+? \d+x\d+)\s+\d+\s+([\d.]+)(?:\s|$)", line)
        if m: keep(ours_ns, m[1], float(m[2]))
print()
print(f"primitives, ns per phase (round trip for the semaphore), best of {rounds} round(s)")
print(f"{'CUDA C++ anchor':<40}{'ns':>9}  {'ours':<48}{'ns':>9}{'ratio':>8}  target")
failed = []
for label, op, target in PAIRS:
    if label not in anchor_ns or op not in ours_ns:
        failed.append(f"missing: {label if label not in anchor_ns else op}")
        continue
    ratio = ours_ns[op] / anchor_ns[label]
    verdict = "" if target is None else (f"<= {target}: " + ("met" if ratio <= target else "NOT MET"))
    print(f"{label:<40}{anchor_ns[label]:>9.1f}  {op:<48}{ours_ns[op]:>9.1f}{ratio:>8.3f}  {verdict}")
if failed:
    sys.exit("; ".join(failed))
PY

# The same comparison with both sides on the same words (see placement.py): the
# single-address rows above depend on where each program's allocation landed.
if python3 -c "import cupy" 2>/dev/null; then
    nvcc -cubin -O3 -std=c++20 -arch=sm_90 gpu_baselines.cu -o "$work/anchor.cubin"
    echo
    python3 placement.py "$work/anchor.cubin" kernels.ptx
else
    echo "compare: no cupy; the same-address table is skipped" >&2
fi
