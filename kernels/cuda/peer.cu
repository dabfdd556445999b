// Two GPUs, one in C++ and one in Rust: the kernels of `kernels/src/peer.rs` that share
// a `MultiGrid` and a `System`-scope barrier in peer memory, with the same names,
// parameters and checks, so that `tests/gpu_cuda_cpp.rs` launches this one on one GPU
// and the Rust one on the other.
#include <scoped_sync.cuh>

namespace ss = scoped_sync;

namespace {
// How long a phase waits before it counts as a failure (10 s).
constexpr unsigned long long PATIENCE_NS = 10ull * 1000 * 1000 * 1000;
}  // namespace

// `phases` phases of a `System`-scope barrier in peer memory whose `members` threads
// are this launch's (from `first`) and the other GPU's: each writes `phase` to its slot
// of buffer `phase % 2`, arrives, waits, and checks the slot of the thread half the
// members away (on the other GPU).
extern "C" __global__ void peer_barrier_phases(ss_barrier* storage, unsigned int* slots,
                                               unsigned int members, unsigned int first,
                                               unsigned int phases, unsigned int* failures) {
    auto& barrier = ss::barrier<ss::thread_scope_system>::from(storage);
    const unsigned int me = first + blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int partner = (me + members / 2) % members;
    volatile unsigned int* words = slots;
    for (unsigned int phase = 1; phase <= phases; ++phase) {
        const unsigned int buffer = phase % 2 * members;
        words[buffer + me] = phase;
        auto token = barrier.arrive();
        if (!barrier.try_wait_for(token, PATIENCE_NS)) {
            atomicAdd(failures, 1u);
            return;
        }
        if (words[buffer + partner] != phase) atomicAdd(failures, 1u);
    }
}

// `phases` phases of the launch's `MultiGrid`, each waited for at most `timeout_ms`
// (odd phases split into `arrive` and `wait_for`): every thread writes `phase` to its
// slot of buffer `phase % 2`, then reads the slot of the thread with its index on the
// next GPU; stale reads count in `failures`, a phase that fails in `timeouts`.
extern "C" __global__ void multi_grid_phases(ss::multi_grid gpus, unsigned int* slots,
                                             unsigned int phases, unsigned int timeout_ms,
                                             unsigned int* failures, unsigned int* timeouts) {
    const unsigned int threads = gridDim.x * blockDim.x;
    const unsigned int me = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int all = threads * gpus.ranks();
    const unsigned int mine = gpus.rank() * threads + me;
    const unsigned int theirs = (gpus.rank() + 1) % gpus.ranks() * threads + me;
    const unsigned long long timeout = timeout_ms * 1000000ull;
    unsigned int stale = 0;
    for (unsigned int phase = 1; phase <= phases; ++phase) {
        const unsigned int buffer = phase % 2 * all;
        // Plain accesses: only the barrier's fences make the other GPU's write visible.
        slots[buffer + mine] = phase;
        ss::status passed;
        if (phase % 2 == 0) {
            passed = gpus.sync_for(timeout);
        } else {
            const unsigned long long arrival = gpus.arrive();
            stale += slots[buffer + mine] != phase;
            passed = gpus.wait_for(arrival, timeout);
        }
        if (passed != ss::status::ok) {
            atomicAdd(timeouts, 1u);
            break;
        }
        stale += slots[buffer + theirs] != phase;
    }
    if (stale != 0) atomicAdd(failures, stale);
}
