#!/usr/bin/env bash
# On a GPU host with two GPUs or more: builds multi_gpu_baselines.cu (baselines/ in the
# repository) with nvcc and runs it beside `scoped-sync --multi-gpu`, alternating, in
# one invocation, the barriers on GPUS GPUs (2 unless given), in one process and in one
# process per GPU (scoped-sync-run); prints each of our figures
# beside the CUDA C++ ones of the same shape (best of the rounds) with the ratios ours /
# CUDA C++ and the issue's targets for that many GPUs.
# Where NCCL >= 2.28 is installed (NCCL_HOME, else the `nvidia-nccl` wheel of this
# python3, as PyTorch installs it), nccl_barriers.cu joins the rounds: NCCL's
# device-API barrier in the same shapes, in one process and in one process per GPU;
# without it, a line says why it is left out.
# Where NVSHMEM 3 is installed (NVSHMEM_HOME, else the `nvidia-nvshmem` wheel of this
# python3), nvshmem_barriers.cu joins them too, one process per GPU: NVSHMEM's device
# barriers composed with grid.sync, beside our barrier in NVSHMEM's heap, reached by
# direct pointers and by NVSHMEM's signal operations (the report finds NVSHMEM through
# NVSHMEM_HOME, which this script sets).
#
#   bash multi-compare.sh [ROUNDS] [GPUS]    # inside the bundle of scripts/gpu-bundle.sh
set -euo pipefail
cd "$(dirname "$0")"
rounds="${1:-2}"
gpus="${2:-2}"
work="$(mktemp -d)"
nvcc -O3 -std=c++20 -arch=sm_90 multi_gpu_baselines.cu -o "$work/multi_gpu_baselines"
nccl="${NCCL_HOME:-$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)}"
if [[ -n "$nccl" && -f "$nccl/include/nccl_device.h" ]]; then
    lib="$(dirname "$(ls "$nccl"/lib/libnccl.so* | head -1)")"
    nvcc -O3 -std=c++20 -arch=sm_90 -I"$nccl/include" nccl_barriers.cu -L"$lib" -l:libnccl.so.2 \
        -Xlinker -rpath="$lib" -o "$work/nccl_barriers" \
        || echo "NCCL device API: left out (nccl_barriers.cu did not build against $nccl)"
else
    echo "NCCL device API: left out (no nccl_device.h under '${nccl:-no NCCL found}'; NCCL >= 2.28 has it)"
fi
nvshmem="${NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem as n; print(list(n.__path__)[0])' 2>/dev/null || true)}"
if [[ -n "$nvshmem" && -f "$nvshmem/include/nvshmem.h" ]]; then
    export NVSHMEM_HOME="$nvshmem"
    nvcc -O3 -std=c++17 -arch=sm_90 -rdc=true -I"$nvshmem/include" nvshmem_barriers.cu \
        -L"$nvshmem/lib" -l:libnvshmem_host.so.3 -lnvshmem_device -Xlinker -rpath="$nvshmem/lib" \
        -o "$work/nvshmem_barriers" \
        || echo "NVSHMEM: left out (nvshmem_barriers.cu did not build against $nvshmem)"
else
    echo "NVSHMEM: left out (no nvshmem.h under '${nvshmem:-no NVSHMEM found}')"
fi
for round in $(seq "$rounds"); do
    echo "round $round: CUDA C++" >&2
    "$work/multi_gpu_baselines" "$gpus" >> "$work/lines.txt"
    if [[ -x "$work/nccl_barriers" ]]; then
        echo "round $round: NCCL" >&2
        "$work/nccl_barriers" "$gpus" >> "$work/lines.txt"
        echo "round $round: NCCL, one process per GPU" >&2
        ./scoped-sync-run -n "$gpus" -- "$work/nccl_barriers" --processes "$work/nccl-id-$round" >> "$work/lines.txt"
    fi
    if [[ -x "$work/nvshmem_barriers" ]]; then
        echo "round $round: NVSHMEM, one process per GPU" >&2
        ./scoped-sync-run -n "$gpus" -- "$work/nvshmem_barriers" "$work/nvshmem-id-$round" >> "$work/lines.txt"
    fi
    echo "round $round: scoped-sync" >&2
    ./scoped-sync --multi-gpu "$gpus" >> "$work/lines.txt"
    echo "round $round: scoped-sync, one process per GPU" >&2
    ./scoped-sync-run -n "$gpus" -- ./scoped-sync --multi-gpu-processes >> "$work/lines.txt"
done
python3 - "$work/lines.txt" "$gpus" <<'PY'
import re, sys
best, fences, nccl_version = {}, {}, None
gpus = int(sys.argv[2])
print(f"barriers on {gpus} GPUs (0 to {gpus - 1}); round trips and fences on GPUs 0 and 1")
for line in open(sys.argv[1]):
    f = re.match(r"fence\s+(\S+)\s+:\s*([\d.]+) ns", line)
    if f:
        fences[f.group(1)] = min(fences.get(f.group(1), float("inf")), float(f.group(2)))
    if line.startswith("skipped"):
        print(line.strip())
        continue
    if line.startswith("nccl   version"):
        nccl_version = line.split()[-1]
    if line.startswith("nvshmem"):
        print(line.strip())
    m = re.match(r"multi\s+(.*?)\s+grid=(\d+) x\s*(\d+) :\s*([\d.]+) ns/", line)
    if m:
        key = (m.group(1), int(m.group(2)), int(m.group(3)))
        best[key] = min(best.get(key, float("inf")), float(m.group(4)))
for key, ns in sorted(best.items()):
    print(f"{key[0]:<36} {key[1]:>4} x {key[2]:<5} {ns:>9.1f} ns")
for kind, ns in fences.items():
    print(f"one thread's {kind:<23} {ns:>9.1f} ns")
if nccl_version:
    print(f"NCCL {nccl_version} (NCCL LSA barrier per block orders same-index blocks only: not a grid barrier)")
print()
# (ours, theirs, target) per shape; the ratio is ours / theirs. The targets are the
# multi-GPU issue's: two GPUs against the two-level barrier, one-GPU cg and the design
# in CUDA C++; four against the two-level barrier and NCCL's compositions.
ours = "scoped-sync MultiGrid::sync"
design = "MultiGrid's design (CUDA C++)"
two = gpus == 2
shmem = "scoped-sync MultiGrid, NVSHMEM heap"
shmem_block = "grid.sync + NVSHMEM barrier_all_block + grid.sync"
signals = "scoped-sync MultiGrid, NVSHMEM signals"
pairs = [("scoped-sync MultiGrid, processes", ours, 1.1),
         (shmem, ours, 1.1),
         (shmem, "scoped-sync MultiGrid, processes", None),
         (shmem, shmem_block, 0.8),
         (shmem, "grid.sync + NVSHMEM sync_all_block + grid.sync", None),
         (shmem, "grid.sync + nvshmem_barrier_all + grid.sync", None),
         # Crossing by NVSHMEM's signal operations (what reaches other machines), beside
         # the direct pointers on the same GPUs.
         (signals, shmem, None),
         (signals, shmem_block, None),
         (signals, ours, None),
         ("scoped-sync MultiGrid, processes", shmem_block, 0.8),
         ("scoped-sync MultiGrid, processes", "NCCL LSA per block + grid.sync, processes", None),
         ("scoped-sync MultiGrid, processes", "grid.sync + NCCL LSA + grid.sync, processes", None),
         (shmem, "NCCL LSA per block + grid.sync, processes", None),
         ("scoped-sync MultiGrid, processes", "NCCL LSA per block + grid.sync", None),
         ("scoped-sync MultiGrid, processes", "grid.sync + NCCL LSA + grid.sync", None),
         (ours, "two-level (inbox per GPU)", 0.6),
         (ours, design, 1.0 if two else None),
         (ours, "design with MultiGrid's waits", None),
         (ours, "counter per GPU, fence per block", None),
         (ours, "one system counter on GPU 0", None),
         (ours, "cg::grid.sync() on one GPU", 2.2 if two else None),
         (ours, "NCCL LSA per block + grid.sync", None if two else 0.75),
         (ours, "grid.sync + NCCL LSA + grid.sync", None if two else 0.75),
         (ours, "NCCL LSA barrier per block", None),
         # What each of the Rust kernel's ways of waiting costs the design in CUDA C++.
         ("design, first warp polls", design, None),
         ("design, clock every 32 polls", design, None),
         ("design, block vote", design, None),
         ("design with MultiGrid's waits", design, None)]
for (label, grid, block), ns in sorted(best.items()):
    for mine, theirs, target in pairs:
        if label == mine and (theirs, grid, block) in best:
            ratio = ns / best[(theirs, grid, block)]
            verdict = "" if target is None else f"  (target <= {target}: {'met' if ratio <= target else 'NOT met'})"
            print(f"{mine} / {theirs} at {grid} x {block}: {ratio:.3f}{verdict}")
raw = best.get(("raw ping-pong GPU 0 <-> 1", 1, 1))
clocked = best.get(("raw ping-pong, clock every 32 polls", 1, 1))
for label in ("scoped-sync GpuToGpu ping-pong", "scoped-sync GpuToGpu, sleeping"):
    if raw and (label, 1, 1) in best:
        ratio = best[(label, 1, 1)] / raw
        print(f"{label} / raw ping-pong: {ratio:.3f}  (target <= 1.05: {'met' if ratio <= 1.05 else 'NOT met'})")
    if clocked and (label, 1, 1) in best:
        print(f"{label} / raw ping-pong with clock reads: {best[(label, 1, 1)] / clocked:.3f}")
# The round trip across processes: by driver IPC (one machine) and by NVSHMEM's signals
# (what reaches other machines), beside the one-process round trip and the raw one.
for label in ("scoped-sync GpuToGpu, processes", "scoped-sync GpuToGpu, NVSHMEM signals"):
    for theirs in ("scoped-sync GpuToGpu ping-pong", "raw ping-pong GPU 0 <-> 1", "scoped-sync GpuToGpu, processes"):
        if label != theirs and (label, 1, 1) in best and (theirs, 1, 1) in best:
            print(f"{label} / {theirs}: {best[(label, 1, 1)] / best[(theirs, 1, 1)]:.3f}")
PY
