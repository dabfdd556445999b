// One object, two paths: the header's inline fast paths (the grid barrier's phase, a
// block barrier in its hardware form) beside the device library's calls of the same
// operation on the same object. `tests/gpu_cuda_cpp.rs` checks that every thread sees
// every other's writes after each phase, whichever path each side took.
#include <scoped_sync.cuh>

namespace ss = scoped_sync;

// Even blocks take the inline grid phase, odd blocks the library's `ss_grid_sync`;
// each phase every thread checks the write of the thread one block on.
extern "C" __global__ void cpp_mixed_grid_sync(ss_grid grid, unsigned int* data, unsigned int phases,
                                               unsigned int* misses) {
    auto& inline_grid = ss::grid::from(grid);
    const unsigned int total = gridDim.x * blockDim.x;
    const unsigned int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int neighbour = (thread + blockDim.x) % total;
    volatile unsigned int* words = data;
    const bool inline_path = blockIdx.x % 2 == 0;
    auto phase = [&] {
        if (inline_path) {
            inline_grid.sync();
        } else {
            ss_grid_sync(&grid);
        }
    };
    for (unsigned int p = 1; p <= phases; ++p) {
        words[thread] = p;
        phase();
        if (words[neighbour] != p) atomicAdd(misses, 1u);
        phase();
    }
}

// Even warps take the inline hardware path, odd warps the library's
// `ss_barrier_block_arrive_and_wait`, on one block barrier in shared memory.
extern "C" __global__ void cpp_mixed_block_barrier(unsigned int phases, unsigned int* misses) {
    __shared__ ss_barrier storage;
    __shared__ unsigned int words[1024];
    auto& barrier = ss::barrier<ss::thread_scope_block>::from(&storage);
    if (threadIdx.x == 0) init(&barrier, blockDim.x);
    __syncthreads();
    const bool inline_path = (threadIdx.x / 32) % 2 == 0;
    auto phase = [&] {
        if (inline_path) {
            barrier.arrive_and_wait();
        } else {
            ss_barrier_block_arrive_and_wait(&storage);
        }
    };
    volatile unsigned int* shared_words = words;
    for (unsigned int p = 1; p <= phases; ++p) {
        shared_words[threadIdx.x] = p;
        phase();
        if (shared_words[(threadIdx.x + 32) % blockDim.x] != p) atomicAdd(misses, 1u);
        phase();
    }
}

// Four paths on one device barrier, by block: the inline warp phase, the library's
// `arrive_and_wait`, the inline whole-block phase, the library's `block_arrive_and_wait`.
// Each phase every thread checks the write of the thread one block on.
extern "C" __global__ void cpp_mixed_device_barrier(ss_barrier* storage, unsigned int* data,
                                                    unsigned int phases, unsigned int* misses) {
    auto& barrier = ss::barrier<ss::thread_scope_device>::from(storage);
    const unsigned int total = gridDim.x * blockDim.x;
    const unsigned int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int neighbour = (thread + blockDim.x) % total;
    volatile unsigned int* words = data;
    auto phase = [&] {
        switch (blockIdx.x % 4) {
            case 0: barrier.arrive_and_wait(); break;
            case 1: ss_barrier_device_arrive_and_wait(storage); break;
            case 2: barrier.block_arrive_and_wait(); break;
            default: ss_barrier_device_block_arrive_and_wait(storage); break;
        }
    };
    for (unsigned int p = 1; p <= phases; ++p) {
        words[thread] = p;
        phase();
        if (words[neighbour] != p) atomicAdd(misses, 1u);
        phase();
    }
}
