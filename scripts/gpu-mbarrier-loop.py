#!/usr/bin/env python3
"""What a generic `Barrier<Block>` pays per phase over the bare `mbarrier` loop.

On a GPU host, inside the bundle of scripts/gpu-bundle.sh (needs nvcc and cupy):

    python3 mbarrier-loop.py

Times, at 132 blocks of 128 and of 1024 threads, ns per phase (best of 5 rounds, the
kernels alternating, 20 000 phases per launch):

- the anchor, libcu++ `cuda::barrier<thread_scope_block>` (`baseline_block_barrier` of
  gpu_baselines.cu, built here with nvcc);
- the project's `cost_shared_barrier` (`SharedBarrier`) and
  `cost_generic_block_barrier` (`Barrier<Block>` in shared memory), from kernels.ptx;
- hand-written PTX loops, each the bare loop plus one thing the generic barrier does:
  the marker load that tells a converted barrier, the address-space test, the
  arrival count in a register, a call in the loop that ptxas cannot see into (the
  out-of-line cold path). docs/measurements.md reads the differences.
"""
import os
import subprocess
import sys
import tempfile

import cupy as cp

ITERATIONS = 20_000
ROUNDS = 5
BLOCKS = 132

# The loop every variant shares: thread 0 makes the mbarrier (and writes the marker,
# bit 31 set, in the word before it, as a converted Barrier has it), then per phase
# BEFORE, the arrival, and the wait.
LOOP = """
.shared .align 16 .b8 {name}_object[16];
.visible .entry {name}(.param .u32 iterations, .param .u64 sink)
{{
  .reg .pred %p<8>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  ld.param.u32 %r1, [iterations];
  mov.u32 %r2, {name}_object;
  add.u32 %r3, %r2, 8;
  cvta.shared.u64 %rd1, {name}_object;
  mov.u32 %r6, %tid.x;
  mov.u32 %r7, %ntid.x;
  setp.ne.u32 %p1, %r6, 0;
  @%p1 bra made;
  mbarrier.init.shared::cta.b64 [%r3], %r7;
  st.shared.u32 [%r2+4], 0x80000000;
  st.shared.u32 [%r2+12], 1;
made:
  bar.sync 0;
  ld.volatile.shared.u32 %r5, [%r2+12];
  mov.u32 %r4, 0;
phase:
  {before}
  {arrive}
wait:
  mbarrier.try_wait.shared::cta.b64 %p2, [%r3], %rd2;
  @!%p2 bra wait;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p3, %r4, %r1;
  @%p3 bra phase;
  ret;
cold:
  {cold}
  bra.uni back;
}}
"""

MARKER = "ld.acquire.cta.u32 %r8, [%rd1+4]; setp.ge.s32 %p4, %r8, 0; @%p4 bra cold; back:"
ARRIVE = "mbarrier.arrive.shared::cta.b64 %rd2, [%r3];"
# A function with a spin loop, as the out-of-line conversion and portable path have.
SPIN = """
.func spin(.param .b64 address)
{
  .reg .b64 %a; .reg .b32 %v; .reg .pred %z;
  ld.param.b64 %a, [address];
again:
  ld.volatile.u32 %v, [%a+4];
  setp.eq.u32 %z, %v, 0;
  @%z bra again;
  ret;
}
"""
# Called through a pointer, so that ptxas cannot see into it (as it cannot see into
# the generic barrier's large out-of-line paths): the loop then gets the YIELD and
# the convergence barrier (BSSY/BSYNC) that sm_90 SASS of the generic loop shows.
CALL_SPIN = (
    "{ .param .b64 a; st.param.b64 [a], %rd1; .reg .b64 %f; mov.u64 %f, spin; "
    "spin_type: .callprototype _ (.param .b64 _); call %f, (a), spin_type; }"
)

VARIANTS = [
    # (name, what it adds, before the arrival, the arrival, the cold path)
    ("loop_bare", "the bare loop", "bra.uni back; back:", ARRIVE, "trap;"),
    ("loop_marker", "+ the marker load", MARKER, ARRIVE, "trap;"),
    (
        "loop_marker_isspacep",
        "+ the marker load and isspacep",
        "isspacep.shared %p5, %rd1; @!%p5 bra cold; " + MARKER,
        ARRIVE,
        "trap;",
    ),
    (
        "loop_marker_count_register",
        "+ the marker load, count in a register",
        MARKER,
        "mbarrier.arrive.shared::cta.b64 %rd2, [%r3], %r5;",
        "trap;",
    ),
    ("loop_marker_opaque_call", "+ the marker load, an opaque call", MARKER, ARRIVE, CALL_SPIN),
]


def build(work):
    anchor = os.path.join(work, "anchor.cubin")
    subprocess.run(
        ["nvcc", "-cubin", "-O3", "-std=c++20", "-arch=sm_90", "gpu_baselines.cu", "-o", anchor],
        check=True,
    )
    source = [".version 8.0", ".target sm_90", ".address_size 64", SPIN]
    for name, _, before, arrive, cold in VARIANTS:
        source.append(LOOP.format(name=name, before=before, arrive=arrive, cold=cold))
    variants = os.path.join(work, "variants.ptx")
    with open(variants, "w") as out:
        out.write("\n".join(source))
    return anchor, variants


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    os.chdir(here)
    with tempfile.TemporaryDirectory() as work:
        anchor, variants = build(work)
        modules = {
            "anchor": cp.RawModule(path=anchor),
            "ours": cp.RawModule(path=os.path.join(here, "kernels.ptx")),
            "variants": cp.RawModule(path=variants),
        }
        kernels = [
            ("anchor", "baseline_block_barrier", "libcu++ cuda::barrier<block>"),
            ("ours", "cost_shared_barrier", "SharedBarrier"),
            ("ours", "cost_generic_block_barrier", "Barrier<Block>"),
        ] + [("variants", name, what) for name, what, *_ in VARIANTS]
        sink = cp.zeros(1, dtype=cp.uint32)
        for threads in (128, 1024):
            best = {}
            for _ in range(ROUNDS):
                for module, name, what in kernels:
                    function = modules[module].get_function(name)
                    args = (cp.int32(ITERATIONS), sink)
                    function((BLOCKS,), (threads,), args)
                    start, end = cp.cuda.Event(), cp.cuda.Event()
                    start.record()
                    function((BLOCKS,), (threads,), args)
                    end.record()
                    end.synchronize()
                    ns = cp.cuda.get_elapsed_time(start, end) * 1e6 / ITERATIONS
                    best[what] = min(best.get(what, float("inf")), ns)
            anchor_ns = best[kernels[0][2]]
            print(f"{BLOCKS}x{threads}: ns per phase, best of {ROUNDS} (ratio to the anchor)")
            for what, ns in best.items():
                print(f"  {what:44} {ns:8.1f}  ({ns / anchor_ns:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
