// The CUDA C++ peers of scoped-sync's GPU primitives: __syncthreads, libcu++'s
// cuda::barrier (block scope with and without a completion, device scope), cuda::counting_semaphore and scoped
// cuda::atomic_ref / atomic_thread_fence, cooperative groups' grid sync, a raw
// host<->device spin on mapped memory, and an empty launch + synchronize.
//
// Build: nvcc -O3 -std=c++20 -arch=sm_90 gpu_baselines.cu -o gpu_baselines
//
// Each kernel is shaped like the project's cost kernel it is compared with (the same
// loop, the same accumulator that keeps the loop alive); bundle/compare.sh runs this
// beside `scoped-sync --gpu-only`, alternating, and parses the lines printed here.
// The kernels have C names, so that gpu-placement.py can launch them from the cubin.
#include <atomic>
#include <chrono>
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/latch>
#include <cuda/semaphore>
#include <new>

namespace cg = cooperative_groups;

// A block's cuda::barrier lives in __shared__ memory without a constructor call (thread 0
// runs init() on it), which is how libcu++ documents its use; nvcc warns about it.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace {

void check(cudaError_t status, const char *what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "gpu_baselines: %s: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

// Written only if the accumulator takes this value, which it never does: the loop's
// work must look observable to the compiler.
constexpr unsigned NEVER = 0xDEADBEEF;

using DeviceBarrier = cuda::barrier<cuda::thread_scope_device>;
using DeviceSemaphore = cuda::counting_semaphore<cuda::thread_scope_device>;
using BlockLatch = cuda::latch<cuda::thread_scope_block>;
using DeviceLatch = cuda::latch<cuda::thread_scope_device>;
using BlockSemaphore = cuda::counting_semaphore<cuda::thread_scope_block>;

// Latch rounds on three latches in rotation: `rebuilds` (one thread) rebuilds latch
// i + 1 during round i; its last use was round i - 2, which every thread has left (all
// of them arrived in round i - 1 since), and its next use starts only after this
// thread's count-down in round i.
template <class Latch>
__device__ void latch_rounds(Latch *latches, ptrdiff_t count, bool rebuilds, int iterations,
                             unsigned *sink) {
    unsigned acc = 0;
    for (int i = 0; i < iterations; ++i) {
        acc += threadIdx.x ^ i;
        if (rebuilds) new (&latches[(i + 1) % 3]) Latch(count);
        latches[i % 3].arrive_and_wait();
    }
    if (acc == NEVER) *sink = acc;
}

// The cost kernels' loop around a barrier's arrive_and_wait: the accumulator keeps it
// alive.
template <class Barrier>
__device__ void barrier_rounds(Barrier &barrier, int iterations, unsigned *sink) {
    unsigned acc = 0;
    for (int i = 0; i < iterations; ++i) {
        acc += threadIdx.x ^ i;
        barrier.arrive_and_wait();
    }
    if (acc == NEVER) *sink = acc;
}

// Thread `player` 0 releases `ping` and acquires `pong`, player 32 the other way round.
template <class Semaphore>
__device__ void ping_pong(Semaphore &ping, Semaphore &pong, unsigned player, int round_trips) {
    for (int i = 0; i < round_trips; ++i) {
        if (player == 0) {
            ping.release();
            pong.acquire();
        } else {
            ping.acquire();
            pong.release();
        }
    }
}

template <cuda::thread_scope Scope>
__device__ void atomic_chain(unsigned *word, int iterations, long long *cycles) {
    cuda::atomic_ref<unsigned, Scope> atomic(*word);
    unsigned seen = 0;
    const long long start = clock64();
    // Each add depends on the previous reply: latency, not throughput.
    for (int i = 0; i < iterations; ++i) {
        seen = atomic.fetch_add((seen & 1u) | 1u, cuda::memory_order_acq_rel);
    }
    cycles[0] = clock64() - start;
    word[1] = seen;
}

template <cuda::thread_scope Scope>
__device__ void store_fence(int iterations, long long *cycles, unsigned *word) {
    const long long start = clock64();
    for (int i = 0; i < iterations; ++i) {
        word[0] = i;
        cuda::atomic_thread_fence(cuda::memory_order_seq_cst, Scope);
    }
    cycles[0] = clock64() - start;
}

}  // namespace

extern "C" {

__global__ void baseline_syncthreads(int iterations, unsigned *sink) {
    unsigned acc = 0;
    for (int i = 0; i < iterations; ++i) {
        acc += threadIdx.x ^ i;
        __syncthreads();
    }
    if (acc == NEVER) *sink = acc;
}

__global__ void baseline_block_barrier(int iterations, unsigned *sink) {
    __shared__ cuda::barrier<cuda::thread_scope_block> barrier;
    if (threadIdx.x == 0) init(&barrier, blockDim.x);
    __syncthreads();
    barrier_rounds(barrier, iterations, sink);
}

// The completion of baseline_block_barrier_completion, as scoped-sync's cost kernel has
// it: one thread per phase adds one to the sink word.
struct CountPhases {
    unsigned *sink;
    __device__ void operator()() noexcept {
        volatile unsigned *word = sink;
        *word = *word + 1;
    }
};

// libcu++ keeps a barrier with a completion function in its portable form (atomics on
// the object), even in __shared__ memory: only barrier<block> without one becomes the
// hardware mbarrier.
__global__ void baseline_block_barrier_completion(int iterations, unsigned *sink) {
    __shared__ cuda::barrier<cuda::thread_scope_block, CountPhases> barrier;
    if (threadIdx.x == 0) init(&barrier, blockDim.x, CountPhases{sink});
    __syncthreads();
    barrier_rounds(barrier, iterations, sink);
}

__global__ void baseline_grid_sync(int iterations, unsigned *sink) {
    cg::grid_group grid = cg::this_grid();
    unsigned acc = 0;
    for (int i = 0; i < iterations; ++i) {
        acc += threadIdx.x ^ i;
        grid.sync();
    }
    if (acc == NEVER) *sink = acc;
}

__global__ void baseline_device_barrier_init(DeviceBarrier *barrier, int expected) {
    new (barrier) DeviceBarrier(expected);
}

// One arrival per block: the block meets first, then its thread 0 arrives and waits.
__global__ void baseline_device_barrier_leader(DeviceBarrier *barrier, int iterations,
                                               unsigned *sink) {
    unsigned acc = 0;
    for (int i = 0; i < iterations; ++i) {
        acc += threadIdx.x ^ i;
        __syncthreads();
        if (threadIdx.x == 0) barrier->arrive_and_wait();
        __syncthreads();
    }
    if (acc == NEVER) *sink = acc;
}

__global__ void baseline_device_barrier_all(DeviceBarrier *barrier, int iterations,
                                            unsigned *sink) {
    unsigned acc = 0;
    for (int i = 0; i < iterations; ++i) {
        acc += threadIdx.x ^ i;
        barrier->arrive_and_wait();
    }
    if (acc == NEVER) *sink = acc;
}

// Block latches in __shared__ memory, built in place by thread 0 (no constructor runs
// for __shared__ objects).
__global__ void baseline_latch_block(int iterations, unsigned *sink) {
    __shared__ alignas(BlockLatch) unsigned char storage[3 * sizeof(BlockLatch)];
    BlockLatch *latches = reinterpret_cast<BlockLatch *>(storage);
    if (threadIdx.x == 0) {
        for (int k = 0; k < 3; ++k) new (&latches[k]) BlockLatch(blockDim.x);
    }
    __syncthreads();
    latch_rounds(latches, blockDim.x, threadIdx.x == 0, iterations, sink);
}

__global__ void baseline_latch_device_init(DeviceLatch *latches, int count) {
    for (int k = 0; k < 3; ++k) new (&latches[k]) DeviceLatch(count);
}

// Every thread of the grid counts each round's latch down and waits.
__global__ void baseline_latch_device(DeviceLatch *latches, int iterations, unsigned *sink) {
    const bool first = blockIdx.x == 0 && threadIdx.x == 0;
    latch_rounds(latches, gridDim.x * blockDim.x, first, iterations, sink);
}

// Thread 0 and thread 32 of one block, through two block semaphores in __shared__.
__global__ void baseline_semaphore_ping_pong_block(int round_trips) {
    __shared__ alignas(BlockSemaphore) unsigned char storage[2 * sizeof(BlockSemaphore)];
    BlockSemaphore *semaphores = reinterpret_cast<BlockSemaphore *>(storage);
    if (threadIdx.x == 0) {
        new (&semaphores[0]) BlockSemaphore(0);
        new (&semaphores[1]) BlockSemaphore(0);
    }
    __syncthreads();
    if (threadIdx.x == 0 || threadIdx.x == 32) {
        ping_pong(semaphores[0], semaphores[1], threadIdx.x, round_trips);
    }
}

__global__ void baseline_semaphore_init(DeviceSemaphore *semaphores) {
    new (&semaphores[0]) DeviceSemaphore(0);
    new (&semaphores[1]) DeviceSemaphore(0);
}

// Thread 0 of block 0 and of block 1 hand a unit back and forth.
__global__ void baseline_semaphore_ping_pong(DeviceSemaphore *semaphores, int round_trips) {
    if (threadIdx.x != 0) return;
    ping_pong(semaphores[0], semaphores[1], blockIdx.x == 0 ? 0 : 32, round_trips);
}

__global__ void baseline_atomic_chain_block(unsigned *word, int iterations, long long *cycles) {
    atomic_chain<cuda::thread_scope_block>(word, iterations, cycles);
}
__global__ void baseline_atomic_chain_device(unsigned *word, int iterations, long long *cycles) {
    atomic_chain<cuda::thread_scope_device>(word, iterations, cycles);
}
__global__ void baseline_atomic_chain_system(unsigned *word, int iterations, long long *cycles) {
    atomic_chain<cuda::thread_scope_system>(word, iterations, cycles);
}

__global__ void baseline_fence_block(int iterations, long long *cycles, unsigned *word) {
    store_fence<cuda::thread_scope_block>(iterations, cycles, word);
}
__global__ void baseline_fence_device(int iterations, long long *cycles, unsigned *word) {
    store_fence<cuda::thread_scope_device>(iterations, cycles, word);
}
__global__ void baseline_fence_system(int iterations, long long *cycles, unsigned *word) {
    store_fence<cuda::thread_scope_system>(iterations, cycles, word);
}

// Every thread of the grid adds to one word: throughput under contention.
__global__ void baseline_atomic_contended(unsigned *word, int iterations) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> atomic(*word);
    for (int i = 0; i < iterations; ++i) atomic.fetch_add(1, cuda::memory_order_relaxed);
}

// The GPU's half of a spin ping-pong on one word of mapped host memory.
__global__ void baseline_mapped_ping_pong(int *flag, int round_trips) {
    cuda::atomic_ref<int, cuda::thread_scope_system> word(*flag);
    for (int i = 0; i < round_trips; ++i) {
        while (word.load(cuda::memory_order_acquire) != 2 * i + 1) {
        }
        word.store(2 * i + 2, cuda::memory_order_release);
    }
}

__global__ void baseline_empty() {}

}  // extern "C"

namespace {

// GPU milliseconds of the best of `repetitions` runs of `launch`, after one warm-up.
template <class Launch>
float best_ms(Launch launch, int repetitions = 3) {
    cudaEvent_t start, end;
    check(cudaEventCreate(&start), "create an event");
    check(cudaEventCreate(&end), "create an event");
    launch();
    check(cudaDeviceSynchronize(), "warm-up");
    float best = 1e30f;
    for (int r = 0; r < repetitions; ++r) {
        check(cudaEventRecord(start), "record");
        launch();
        check(cudaEventRecord(end), "record");
        check(cudaEventSynchronize(end), "wait for the run");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, end), "time the run");
        best = ms < best ? ms : best;
    }
    check(cudaGetLastError(), "launch");
    cudaEventDestroy(start);
    cudaEventDestroy(end);
    return best;
}

double ns_each(float ms, int count) { return ms * 1e6 / count; }

// Cycles per operation of a one-thread kernel that writes its cycle count.
template <class Kernel, class... Args>
double cycles_each(Kernel kernel, long long *cycles, int iterations, Args... args) {
    kernel<<<1, 1>>>(args...);
    check(cudaDeviceSynchronize(), "run a chain");
    long long host = 0;
    check(cudaMemcpy(&host, cycles, sizeof host, cudaMemcpyDeviceToHost), "read the cycles");
    return static_cast<double>(host) / iterations;
}

}  // namespace

int main() {
    cudaDeviceProp device;
    check(cudaGetDeviceProperties(&device, 0), "read the device");
    const int sms = device.multiProcessorCount;
    std::printf("device: %s, SMs %d\n", device.name, sms);

    unsigned *sink;
    DeviceBarrier *barrier;
    check(cudaMalloc(&sink, 64), "allocate");
    check(cudaMalloc(&barrier, sizeof(DeviceBarrier)), "allocate");

    const int block_iterations = 20000;
    for (int threads : {128, 1024}) {
        float ms = best_ms([&] { baseline_syncthreads<<<sms, threads>>>(block_iterations, sink); });
        std::printf("block  %-24s grid=%d x %4d : %8.1f ns/barrier\n", "__syncthreads", sms,
                    threads, ns_each(ms, block_iterations));
        ms = best_ms([&] { baseline_block_barrier<<<sms, threads>>>(block_iterations, sink); });
        std::printf("block  %-24s grid=%d x %4d : %8.1f ns/barrier\n", "cuda::barrier<block>", sms,
                    threads, ns_each(ms, block_iterations));
        ms = best_ms([&] { baseline_block_barrier_completion<<<sms, threads>>>(block_iterations, sink); });
        std::printf("block  %-24s grid=%d x %4d : %8.1f ns/barrier\n", "cuda::barrier<block> completion",
                    sms, threads, ns_each(ms, block_iterations));
    }

    int grid_iterations = 5000;
    for (int threads : {128, 1024}) {
        int per_sm = 0;
        check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, baseline_grid_sync, threads, 0),
              "occupancy");
        float ms = best_ms([&] {
            void *args[] = {&grid_iterations, &sink};
            check(cudaLaunchCooperativeKernel((void *)baseline_grid_sync, sms, threads, args, 0, 0),
                  "cooperative launch");
        });
        std::printf("grid   %-24s grid=%d x %4d : %8.1f ns/barrier (max co-resident blocks/SM %d)\n",
                    "cg::grid.sync()", sms, threads, ns_each(ms, grid_iterations), per_sm);
        ms = best_ms([&] {
            baseline_device_barrier_init<<<1, 1>>>(barrier, sms);
            baseline_device_barrier_leader<<<sms, threads>>>(barrier, grid_iterations, sink);
        });
        std::printf("grid   %s grid=%d x %4d : %8.1f ns/barrier\n", "cuda::barrier<device> leader", sms,
                    threads, ns_each(ms, grid_iterations));
    }
    {
        // The largest co-resident grid of 128-thread blocks (16 per SM on sm_90), as the
        // project's crowded grid workload launches it.
        const int threads = 128, per_sm_wanted = 16;
        int per_sm = 0;
        check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, baseline_grid_sync, threads, 0),
              "occupancy");
        if (per_sm >= per_sm_wanted) {
            const float ms = best_ms([&] {
                void *args[] = {&grid_iterations, &sink};
                check(cudaLaunchCooperativeKernel((void *)baseline_grid_sync, per_sm_wanted * sms, threads,
                                                  args, 0, 0),
                      "cooperative launch");
            });
            std::printf("grid   %s grid=%d x %4d : %8.1f ns/barrier\n", "cg::grid.sync() 16/SM",
                        per_sm_wanted * sms, threads, ns_each(ms, grid_iterations));
        } else {
            std::printf("grid   cg::grid.sync() 16/SM: skipped, %d blocks/SM fit\n", per_sm);
        }
    }
    {
        const int threads = 128, iterations = 200;
        const float ms = best_ms([&] {
            baseline_device_barrier_init<<<1, 1>>>(barrier, sms * threads);
            baseline_device_barrier_all<<<sms, threads>>>(barrier, iterations, sink);
        });
        std::printf("grid   %s grid=%d x %4d : %8.1f ns/barrier\n", "cuda::barrier<device> all-threads",
                    sms, threads, ns_each(ms, iterations));
    }
    for (int threads : {128, 1024}) {
        const float ms = best_ms([&] { baseline_latch_block<<<sms, threads>>>(block_iterations, sink); });
        std::printf("block  %-24s grid=%d x %4d : %8.1f ns/latch\n", "cuda::latch<block>", sms, threads,
                    ns_each(ms, block_iterations));
    }
    {
        const int threads = 128, iterations = 200;
        DeviceLatch *latches;
        check(cudaMalloc(&latches, 3 * sizeof(DeviceLatch)), "allocate");
        const float ms = best_ms([&] {
            baseline_latch_device_init<<<1, 1>>>(latches, sms * threads);
            baseline_latch_device<<<sms, threads>>>(latches, iterations, sink);
        });
        std::printf("grid   %s grid=%d x %4d : %8.1f ns/latch\n", "cuda::latch<device> all-threads", sms,
                    threads, ns_each(ms, iterations));
        cudaFree(latches);
    }
    {
        const int round_trips = 20000;
        const float ms = best_ms([&] { baseline_semaphore_ping_pong_block<<<1, 64>>>(round_trips); });
        std::printf("sem    counting_semaphore<block> ping-pong thread0<->thread32 : %8.1f ns/round trip\n",
                    ns_each(ms, round_trips));
    }
    {
        DeviceSemaphore *semaphores;
        check(cudaMalloc(&semaphores, 2 * sizeof(DeviceSemaphore)), "allocate");
        const int round_trips = 20000;
        const float ms = best_ms([&] {
            baseline_semaphore_init<<<1, 1>>>(semaphores);
            baseline_semaphore_ping_pong<<<2, 32>>>(semaphores, round_trips);
        });
        std::printf("sem    counting_semaphore<device> ping-pong block0<->block1 : %8.1f ns/round trip\n",
                    ns_each(ms, round_trips));
        cudaFree(semaphores);
    }
    {
        unsigned *word;
        long long *cycles;
        check(cudaMalloc(&word, 64), "allocate");
        check(cudaMalloc(&cycles, 64), "allocate");
        check(cudaMemset(word, 0, 64), "zero");
        const int n = 10000;
        // The first chain warms the word's line up; only the second counts.
        cycles_each(baseline_atomic_chain_block, cycles, n, word, n, cycles);
        const struct {
            const char *scope;
            void (*chain)(unsigned *, int, long long *);
            void (*fence)(int, long long *, unsigned *);
        } scopes[] = {
            {"block ", baseline_atomic_chain_block, baseline_fence_block},
            {"device", baseline_atomic_chain_device, baseline_fence_device},
            {"system", baseline_atomic_chain_system, baseline_fence_system},
        };
        for (const auto &s : scopes) {
            std::printf("atomic fetch_add acq_rel chain  scope=%s : %6.1f cycles/op\n", s.scope,
                        cycles_each(s.chain, cycles, n, word, n, cycles));
        }
        for (const auto &s : scopes) {
            std::printf("fence  seq_cst store+fence      scope=%s : %6.1f cycles/op\n", s.scope,
                        cycles_each(s.fence, cycles, n, n, cycles, word));
        }
        const int threads = 1024, iterations = 100;
        const float ms = best_ms([&] { baseline_atomic_contended<<<sms, threads>>>(word, iterations); });
        std::printf("atomic contended relaxed fetch_add, all %d threads, one word, scope=device: %.2f Gop/s\n",
                    sms * threads, static_cast<double>(sms) * threads * iterations / (ms * 1e6));
        cudaFree(word);
        cudaFree(cycles);
    }
    {
        int *host_flag, *device_flag;
        check(cudaHostAlloc(&host_flag, 64, cudaHostAllocMapped), "allocate mapped memory");
        check(cudaHostGetDevicePointer(&device_flag, host_flag, 0), "map it");
        cudaStream_t stream;
        check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "create a stream");
        const int round_trips = 20000;
        for (int run = 0; run < 2; ++run) {
            *host_flag = 0;
            baseline_mapped_ping_pong<<<1, 1, 0, stream>>>(device_flag, round_trips);
            std::atomic_ref<int> flag(*host_flag);
            const auto start = std::chrono::steady_clock::now();
            for (int i = 0; i < round_trips; ++i) {
                flag.store(2 * i + 1, std::memory_order_release);
                while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
                }
            }
            const std::chrono::duration<double, std::nano> elapsed =
                std::chrono::steady_clock::now() - start;
            check(cudaStreamSynchronize(stream), "finish the ping-pong");
            std::printf("host<->device mapped-memory ping-pong (spin both sides): %8.1f ns/round trip\n",
                        elapsed.count() / round_trips);
        }
        cudaStreamDestroy(stream);
        cudaFreeHost(host_flag);
    }
    {
        const int launches = 2000;
        baseline_empty<<<1, 1>>>();
        check(cudaDeviceSynchronize(), "warm-up launch");
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; ++i) {
            baseline_empty<<<1, 1>>>();
            check(cudaStreamSynchronize(0), "synchronize");
        }
        const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
        std::printf("launch empty kernel + cudaStreamSynchronize: %8.1f ns/round trip\n",
                    elapsed.count() / launches);
    }
    check(cudaDeviceSynchronize(), "finish");
    std::printf("done\n");
}
