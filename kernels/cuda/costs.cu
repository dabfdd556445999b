// The cost kernels of `kernels/src/primitive_costs.rs` in CUDA C++ through the device
// library (same names, parameters and loop), and the libcu++ / cooperative-groups
// anchors they are compared with in the same run (`benches/cuda_cpp.rs`).
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <scoped_sync.cuh>

namespace ss = scoped_sync;
namespace cg = cooperative_groups;

namespace {

// Never equal to the accumulator (the anchor's sink condition).
constexpr unsigned int NEVER = 123456789u;

// `iterations` times `acc += thread ^ i` then one `phase`; `acc` goes to `sink` only if
// it equals NEVER, which keeps it alive.
template <class Phase>
__device__ __forceinline__ void phases(unsigned int iterations, unsigned int* sink, Phase phase) {
    unsigned int acc = 0;
    for (unsigned int i = 0; i < iterations; ++i) {
        acc += threadIdx.x ^ i;
        phase();
    }
    if (acc == NEVER) *static_cast<volatile unsigned int*>(sink) = acc;
}

}  // namespace

// `iterations` grid barriers (`Grid::sync` through the library).
extern "C" __global__ void cost_grid_sync(ss_grid grid, unsigned int iterations, unsigned int* out) {
    auto& barrier = ss::grid::from(grid);
    phases(iterations, out, [&] { barrier.sync(); });
}

// `iterations` phases of a device-scope barrier in global memory, every thread arriving.
extern "C" __global__ void cost_device_barrier_all(ss_barrier* storage, unsigned int iterations,
                                                   unsigned int* out) {
    auto& barrier = ss::barrier<ss::thread_scope_device>::from(storage);
    phases(iterations, out, [&] { barrier.arrive_and_wait(); });
}

// As `cost_device_barrier_all`, one arrival per block (`WholeBlock`).
extern "C" __global__ void cost_device_barrier_block(ss_barrier* storage, unsigned int iterations,
                                                     unsigned int* out) {
    auto& barrier = ss::barrier<ss::thread_scope_device>::from(storage);
    phases(iterations, out, [&] { barrier.block_arrive_and_wait(); });
}

// `iterations` phases of a block-scope barrier in shared memory (the hardware `mbarrier`
// from its first arrival).
extern "C" __global__ void cost_generic_block_barrier(unsigned int iterations, unsigned int* out) {
    __shared__ ss_barrier storage;
    auto& barrier = ss::barrier<ss::thread_scope_block>::from(&storage);
    if (threadIdx.x == 0) init(&barrier, blockDim.x);
    __syncthreads();
    phases(iterations, out, [&] { barrier.arrive_and_wait(); });
}

// Anchor: `cg::this_grid().sync()`, cooperative launch.
extern "C" __global__ void anchor_cg_grid_sync(unsigned int iterations, unsigned int* out) {
    cg::grid_group grid = cg::this_grid();
    phases(iterations, out, [&] { grid.sync(); });
}

// Anchor: libcu++ `cuda::barrier<thread_scope_block>` in shared memory.
extern "C" __global__ void anchor_libcu_block_barrier(unsigned int iterations, unsigned int* out) {
    using block_barrier = cuda::barrier<cuda::thread_scope_block>;
    __shared__ alignas(block_barrier) unsigned char storage[sizeof(block_barrier)];
    auto* barrier = reinterpret_cast<block_barrier*>(storage);
    if (threadIdx.x == 0) init(barrier, blockDim.x);
    __syncthreads();
    phases(iterations, out, [&] { barrier->arrive_and_wait(); });
}

using device_barrier = cuda::barrier<cuda::thread_scope_device>;

// Anchor setup: a libcu++ device barrier expecting `expected` arrivals, in `storage`
// (one thread).
extern "C" __global__ void anchor_libcu_device_barrier_init(device_barrier* storage,
                                                           unsigned int expected) {
    new (storage) device_barrier(expected);
}

// Anchor: libcu++ `cuda::barrier<thread_scope_device>` in global memory, every thread
// arriving.
extern "C" __global__ void anchor_libcu_device_barrier_all(device_barrier* barrier,
                                                          unsigned int iterations,
                                                          unsigned int* out) {
    phases(iterations, out, [&] { barrier->arrive_and_wait(); });
}

// The size of a libcu++ device barrier, for the host's allocation.
extern "C" __global__ void anchor_libcu_device_barrier_size(unsigned int* size) {
    *size = sizeof(device_barrier);
}
