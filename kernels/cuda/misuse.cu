// CUDA C++ kernels whose misuse the checked device library traps with the same message
// as a checked Rust kernel (`tests/gpu_device_checks.rs`, the `cpp_` cases).
#include <scoped_sync.cuh>

namespace ss = scoped_sync;

// Thread 0 of every block counts down one `Block`-scope latch in global memory: two
// blocks using a block-scope object (the Rust `check_block_scope_across_blocks`).
extern "C" __global__ void check_block_scope_across_blocks(ss_latch* latch) {
    if (threadIdx.x == 0) ss::latch<ss::thread_scope_block>::from(latch).count_down(1);
}

// Each block counts down its own `Block`-scope latch: legal, never traps.
extern "C" __global__ void check_block_scope_own_objects(ss_latch* latches) {
    if (threadIdx.x == 0) ss::latch<ss::thread_scope_block>::from(latches + blockIdx.x).count_down(1);
}

// `arrive(0)` on a device barrier: a broken precondition, which traps in both builds.
extern "C" __global__ void check_barrier_arrive_zero(ss_barrier* barrier) {
    auto token = ss::barrier<ss::thread_scope_device>::from(barrier).arrive(0);
    (void)token;
}
