#!/usr/bin/env python3
"""Ours beside the CUDA C++ anchor with the memory under test at the same addresses.

A single-thread atomic chain, a store + fence, and a two-block semaphore hand-off cost
up to 1.6x more when their word's L2 slice is on the far side of the chip from the SM
that runs them (H100/H200 split the L2 in two). Each program allocating its own word
therefore compares placements, not code. Here both kernels run on the same words, at
ADDRESSES offsets spread over pages and cache lines, alternating anchor and ours at each
address; the table gives each side's median and range, and the median of the per-address
ratios (ours / anchor).

    python3 gpu-placement.py ANCHOR_CUBIN OUR_PTX        # needs cupy (bundle/compare.sh)

ANCHOR_CUBIN is baselines/gpu_baselines.cu built with `nvcc -cubin`: its kernels
are launched unchanged, by their C names.
"""
import statistics
import sys

import cupy as cp
import numpy as np

ADDRESSES = 16
CHAIN_ITERATIONS = 4000
PING_PONG_ITERATIONS = 10000
SCOPES = ("system", "device", "block")


def anchor_chain(scope):
    return f"baseline_atomic_chain_{scope}"


def anchor_fence(scope):
    return f"baseline_fence_{scope}"


ANCHOR_PING_PONG = "baseline_semaphore_ping_pong"
ANCHOR_INIT_SEMAPHORES = "baseline_semaphore_init"


def offsets():
    """Word offsets: one per 16 KiB step, at a different cache line in each."""
    return [step * 4096 + (step * 37 % 32) * 32 for step in range(ADDRESSES)]


def gpu_ms(launch, repetitions=3):
    launch()
    cp.cuda.Device().synchronize()
    best = float("inf")
    for _ in range(repetitions):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, end))
    return best


def cycles_per_op(kernel, args, cycles, iterations):
    best = float("inf")
    for _ in range(3):
        kernel((1,), (1,), args)
        cp.cuda.Device().synchronize()
        best = min(best, int(cycles.get()[0]) / iterations)
    return best


def main():
    anchor = cp.RawModule(path=sys.argv[1])
    ours = cp.RawModule(path=sys.argv[2])
    memory = cp.zeros(1 << 22, dtype=cp.uint32)
    cycles = cp.zeros(1, dtype=cp.uint64)
    results = {}  # row -> list of (anchor, ours)

    def record(row, pair):
        results.setdefault(row, []).append(pair)

    iterations = np.uint32(CHAIN_ITERATIONS)
    for offset in offsets():
        words = memory[offset : offset + 16]
        for scope in SCOPES:
            for row, anchor_name, our_name, args in [
                (f"atomic chain {scope} (cycles)", anchor_chain(scope),
                 f"cost_atomic_chain_{scope}", (words, iterations, cycles)),
                (f"store+fence {scope} (cycles)", anchor_fence(scope),
                 f"cost_fence_{scope}", (iterations, cycles, words)),
            ]:
                words.fill(0)
                a = cycles_per_op(anchor.get_function(anchor_name), args, cycles, CHAIN_ITERATIONS)
                words.fill(0)
                o = cycles_per_op(ours.get_function(our_name), args, cycles, CHAIN_ITERATIONS)
                record(row, (a, o))

        rounds = np.uint32(PING_PONG_ITERATIONS)
        init = anchor.get_function(ANCHOR_INIT_SEMAPHORES)
        anchor_ping_pong = anchor.get_function(ANCHOR_PING_PONG)
        our_ping_pong = ours.get_function("cost_semaphore_ping_pong")

        def run_anchor():
            init((1,), (1,), (words,))
            anchor_ping_pong((2,), (32,), (words, rounds))

        def run_ours():
            words.fill(0)  # two semaphores at 0
            our_ping_pong((2,), (32,), (words, rounds))

        a = gpu_ms(run_anchor) * 1e6 / PING_PONG_ITERATIONS
        o = gpu_ms(run_ours) * 1e6 / PING_PONG_ITERATIONS
        record("semaphore ping-pong (ns)", (a, o))

    print(f"same addresses, {ADDRESSES} of them; anchor and ours alternate at each")
    print(f"{'operation':<30}{'anchor median':>14}{'range':>17}{'ours median':>13}"
          f"{'range':>17}{'ratio median':>14}{'ours faster':>12}")
    for row, pairs in results.items():
        anchor_values = [a for a, _ in pairs]
        our_values = [o for _, o in pairs]
        ratios = [o / a for a, o in pairs]
        faster = sum(1 for r in ratios if r < 1)
        print(f"{row:<30}{statistics.median(anchor_values):>14.1f}"
              f"{min(anchor_values):>8.1f}-{max(anchor_values):<8.1f}"
              f"{statistics.median(our_values):>13.1f}"
              f"{min(our_values):>8.1f}-{max(our_values):<8.1f}"
              f"{statistics.median(ratios):>14.3f}{faster:>7}/{len(pairs)}")


if __name__ == "__main__":
    main()
