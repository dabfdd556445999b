// The CUDA C++ peers of scoped-sync's multi-GPU barrier (`MultiGrid`) and of a handoff
// across GPUs, on GPUs 0 and 1 of the machine (peer access enabled both ways):
//  - a two-level barrier: per GPU a local counter (one release add per block), then
//    the GPU's last block stores the epoch into the peer's inbox (after one system
//    fence) and polls its own, then releases its blocks through a local flag;
//  - one system-scope counter in GPU 0's memory that every block of both GPUs adds to
//    and polls;
//  - cooperative groups' grid sync on GPU 0 alone, the same shape (the one-GPU floor);
//  - a raw ping-pong between one thread on each GPU, each polling a word in its own
//    memory that the other writes (release stores; and relaxed ones, which order
//    nothing, to show what the system-scope release costs);
//  - MultiGrid's own design in CUDA C++ (a counter per GPU that every block of every
//    GPU adds to after one release fence), to tell the design from the Rust code;
//  - what one thread pays per fence (each kind, system and device scope).
//
// Build: nvcc -O3 -std=c++20 -arch=sm_90 multi_gpu_baselines.cu -o multi_gpu_baselines
// Run on a machine with at least two GPUs; with fewer it prints "skipped: ..." and
// exits 0. Times come from %globaltimer inside the kernels (thread 0 of block 0 on GPU
// 0, from its first phase to its last), best of a few launches.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cuda/atomic>

namespace cg = cooperative_groups;

namespace {

void check(cudaError_t status, const char *what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "multi_gpu_baselines: %s: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

// Words that different blocks or GPUs hit sit 128 bytes apart (one L2 line each).
constexpr int LINE = 32;

__device__ unsigned long long now_ns() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

using DeviceRef = cuda::atomic_ref<unsigned, cuda::thread_scope_device>;
using SystemRef = cuda::atomic_ref<unsigned, cuda::thread_scope_system>;

// Per GPU: `local` (device memory of this GPU): [0] the block-arrival counter,
// [LINE] the release flag. `inbox`: this GPU's inbox (its own memory), written by the
// peer; `peer_inbox`: the peer's inbox (peer memory). All zero at launch.
__global__ void two_level_barrier(unsigned *local, unsigned *inbox, unsigned *peer_inbox,
                                  int iterations, unsigned long long *elapsed) {
    DeviceRef arrivals(local[0]);
    DeviceRef release(local[LINE]);
    SystemRef mine(*inbox);
    SystemRef theirs(*peer_inbox);
    const unsigned blocks = gridDim.x;
    unsigned long long start = 0;
    for (unsigned epoch = 1; epoch <= unsigned(iterations); ++epoch) {
        if (epoch == 2 && blockIdx.x == 0 && threadIdx.x == 0) start = now_ns();
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned before = arrivals.fetch_add(1, cuda::memory_order_release);
            if (before + 1 == epoch * blocks) {
                cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_system);
                theirs.store(epoch, cuda::memory_order_relaxed);
                while (int(mine.load(cuda::memory_order_relaxed) - epoch) < 0) {
                }
                cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_system);
                release.store(epoch, cuda::memory_order_release);
            } else {
                while (int(release.load(cuda::memory_order_relaxed) - epoch) < 0) {
                }
                cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
            }
        }
        __syncthreads();
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *elapsed = now_ns() - start;
}

// Every block of both GPUs adds its arrival to one counter in GPU 0's memory and polls
// it (system scope).
__global__ void one_system_counter(unsigned *counter, unsigned total_blocks, int iterations,
                                   unsigned long long *elapsed) {
    SystemRef arrivals(*counter);
    unsigned long long start = 0;
    for (unsigned epoch = 1; epoch <= unsigned(iterations); ++epoch) {
        if (epoch == 2 && blockIdx.x == 0 && threadIdx.x == 0) start = now_ns();
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned target = epoch * total_blocks;
            unsigned before = arrivals.fetch_add(1, cuda::memory_order_release);
            if (before + 1 != target) {
                while (int(arrivals.load(cuda::memory_order_relaxed) - target) < 0) {
                }
            }
            cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system);
        }
        __syncthreads();
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *elapsed = now_ns() - start;
}

// Per GPU a counter in its own memory (`own`; `peer` is the other GPU's). Every block's
// thread 0: one system-scope release fence, a relaxed add to both counters, relaxed
// polls of its own until every block of both GPUs arrived, one acquire fence.
__global__ void counter_per_gpu(unsigned long long *own, unsigned long long *peer,
                                unsigned total_blocks, int iterations, unsigned long long *elapsed) {
    unsigned long long start = 0;
    for (unsigned long long epoch = 1; epoch <= (unsigned long long)iterations; ++epoch) {
        if (epoch == 2 && blockIdx.x == 0 && threadIdx.x == 0) start = now_ns();
        __syncthreads();
        if (threadIdx.x == 0) {
            const unsigned long long target = epoch * total_blocks;
            asm volatile("fence.release.sys;" ::: "memory");
            asm volatile("red.relaxed.sys.global.add.u64 [%0], 1;" ::"l"(peer) : "memory");
            asm volatile("red.relaxed.sys.global.add.u64 [%0], 1;" ::"l"(own) : "memory");
            unsigned long long seen;
            do {
                asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(seen) : "l"(own) : "memory");
            } while (seen < target);
            asm volatile("fence.acquire.sys;" ::: "memory");
        }
        __syncthreads();
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *elapsed = now_ns() - start;
}

// One thread: `iterations` fences of one kind, each after a relaxed store to `word`.
__global__ void fence_loop(unsigned *word, int kind, int iterations, unsigned long long *elapsed) {
    unsigned long long start = now_ns();
    for (int i = 0; i < iterations; ++i) {
        asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(word), "r"(i) : "memory");
        switch (kind) {
        case 0: asm volatile("fence.sc.sys;" ::: "memory"); break;
        case 1: asm volatile("fence.acq_rel.sys;" ::: "memory"); break;
        case 2: asm volatile("fence.release.sys;" ::: "memory"); break;
        case 3: asm volatile("fence.acquire.sys;" ::: "memory"); break;
        default: asm volatile("fence.acq_rel.gpu;" ::: "memory"); break;
        }
    }
    *elapsed = now_ns() - start;
}

__global__ void grid_sync_one_gpu(int iterations, unsigned long long *elapsed) {
    cg::grid_group grid = cg::this_grid();
    unsigned long long start = 0;
    for (int i = 1; i <= iterations; ++i) {
        if (i == 2 && blockIdx.x == 0 && threadIdx.x == 0) start = now_ns();
        grid.sync();
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *elapsed = now_ns() - start;
}

// One thread per GPU: GPU 0 stores i into `to_peer` (GPU 1's memory) and waits for i in
// `from_peer` (its own); GPU 1 answers the same way.
__global__ void ping_pong(unsigned *from_peer, unsigned *to_peer, bool first, int rounds,
                          bool ordered, unsigned long long *elapsed) {
    SystemRef in(*from_peer);
    SystemRef out(*to_peer);
    const auto store_order = ordered ? cuda::memory_order_release : cuda::memory_order_relaxed;
    const auto load_order = ordered ? cuda::memory_order_acquire : cuda::memory_order_relaxed;
    unsigned long long start = now_ns();
    for (unsigned i = 1; i <= unsigned(rounds); ++i) {
        if (first) out.store(i, store_order);
        while (in.load(load_order) != i) {
        }
        if (!first) out.store(i, store_order);
    }
    if (first) *elapsed = now_ns() - start;
}

// Device memory on each GPU: a zeroed buffer of `words` words.
unsigned *zeroed(int gpu, size_t words) {
    check(cudaSetDevice(gpu), "set device");
    unsigned *p = nullptr;
    check(cudaMalloc(&p, words * sizeof(unsigned)), "cudaMalloc");
    check(cudaMemset(p, 0, words * sizeof(unsigned)), "cudaMemset");
    return p;
}

unsigned long long read_elapsed(int gpu, unsigned long long *elapsed) {
    check(cudaSetDevice(gpu), "set device");
    unsigned long long ns = 0;
    check(cudaMemcpy(&ns, elapsed, sizeof ns, cudaMemcpyDeviceToHost), "read the time");
    return ns;
}

void synchronize_both() {
    for (int gpu = 0; gpu < 2; ++gpu) {
        check(cudaSetDevice(gpu), "set device");
        check(cudaDeviceSynchronize(), "synchronize");
    }
}

constexpr int ROUNDS = 3;

} // namespace

int main() {
    int gpus = 0;
    check(cudaGetDeviceCount(&gpus), "count GPUs");
    if (gpus < 2) {
        std::printf("skipped: fewer than two GPUs\n");
        return 0;
    }
    for (int gpu = 0; gpu < 2; ++gpu) {
        int peer = 1 - gpu, can = 0;
        check(cudaDeviceCanAccessPeer(&can, gpu, peer), "peer access query");
        if (!can) {
            std::printf("skipped: GPU %d cannot reach GPU %d's memory\n", gpu, peer);
            return 0;
        }
        check(cudaSetDevice(gpu), "set device");
        check(cudaDeviceEnablePeerAccess(peer, 0), "enable peer access");
    }
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
    const int iterations = 20000;
    unsigned long long *elapsed[2] = {nullptr, nullptr};
    for (int gpu = 0; gpu < 2; ++gpu) {
        check(cudaSetDevice(gpu), "set device");
        check(cudaMalloc(&elapsed[gpu], sizeof(unsigned long long)), "cudaMalloc");
    }

    for (int threads : {128, 1024}) {
        // Two-level barrier.
        double best = 1e30;
        for (int round = 0; round < ROUNDS; ++round) {
            unsigned *local[2] = {zeroed(0, 2 * LINE), zeroed(1, 2 * LINE)};
            unsigned *inbox[2] = {zeroed(0, LINE), zeroed(1, LINE)};
            synchronize_both();
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                unsigned *peer_inbox = inbox[1 - gpu];
                int iters = iterations;
                void *args[] = {&local[gpu], &inbox[gpu], &peer_inbox, &iters, &elapsed[gpu]};
                check(cudaLaunchCooperativeKernel((void *)two_level_barrier, sms, threads, args, 0, 0),
                      "cooperative launch");
            }
            synchronize_both();
            double ns = double(read_elapsed(0, elapsed[0])) / (iterations - 1);
            if (ns < best) best = ns;
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                check(cudaFree(local[gpu]), "free");
                check(cudaFree(inbox[gpu]), "free");
            }
        }
        std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/barrier\n", "two-level (inbox per GPU)", sms,
                    threads, best);

        // One system counter in GPU 0's memory.
        best = 1e30;
        for (int round = 0; round < ROUNDS; ++round) {
            unsigned *counter = zeroed(0, LINE);
            synchronize_both();
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                unsigned total = 2 * unsigned(sms);
                int iters = iterations;
                void *args[] = {&counter, &total, &iters, &elapsed[gpu]};
                check(cudaLaunchCooperativeKernel((void *)one_system_counter, sms, threads, args, 0, 0),
                      "cooperative launch");
            }
            synchronize_both();
            double ns = double(read_elapsed(0, elapsed[0])) / (iterations - 1);
            if (ns < best) best = ns;
            check(cudaSetDevice(0), "set device");
            check(cudaFree(counter), "free");
        }
        std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/barrier\n", "one system counter on GPU 0", sms,
                    threads, best);

        // MultiGrid's design in CUDA C++.
        best = 1e30;
        for (int round = 0; round < ROUNDS; ++round) {
            unsigned long long *counter[2];
            for (int gpu = 0; gpu < 2; ++gpu) {
                counter[gpu] = reinterpret_cast<unsigned long long *>(zeroed(gpu, LINE));
            }
            synchronize_both();
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                unsigned total = 2 * unsigned(sms);
                int iters = iterations;
                void *args[] = {&counter[gpu], &counter[1 - gpu], &total, &iters, &elapsed[gpu]};
                check(cudaLaunchCooperativeKernel((void *)counter_per_gpu, sms, threads, args, 0, 0),
                      "cooperative launch");
            }
            synchronize_both();
            double ns = double(read_elapsed(0, elapsed[0])) / (iterations - 1);
            if (ns < best) best = ns;
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                check(cudaFree(counter[gpu]), "free");
            }
        }
        std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/barrier\n", "counter per GPU (CUDA C++)", sms,
                    threads, best);

        // Grid sync on GPU 0 alone.
        best = 1e30;
        for (int round = 0; round < ROUNDS; ++round) {
            check(cudaSetDevice(0), "set device");
            int iters = iterations;
            void *args[] = {&iters, &elapsed[0]};
            check(cudaLaunchCooperativeKernel((void *)grid_sync_one_gpu, sms, threads, args, 0, 0),
                  "cooperative launch");
            check(cudaDeviceSynchronize(), "synchronize");
            double ns = double(read_elapsed(0, elapsed[0])) / (iterations - 1);
            if (ns < best) best = ns;
        }
        std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/barrier\n", "cg::grid.sync() on one GPU", sms,
                    threads, best);
    }

    // Raw ping-pong: word[g] lives on GPU g and is written by the other GPU.
    const int rounds = 20000;
    for (bool ordered : {true, false}) {
        double best = 1e30;
        for (int round = 0; round < ROUNDS; ++round) {
            unsigned *word[2] = {zeroed(0, LINE), zeroed(1, LINE)};
            synchronize_both();
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                ping_pong<<<1, 1>>>(word[gpu], word[1 - gpu], gpu == 0, rounds, ordered, elapsed[gpu]);
                check(cudaGetLastError(), "launch");
            }
            synchronize_both();
            double ns = double(read_elapsed(0, elapsed[0])) / rounds;
            if (ns < best) best = ns;
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                check(cudaFree(word[gpu]), "free");
            }
        }
        std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/round trip\n",
                    ordered ? "raw ping-pong GPU 0 <-> 1" : "raw ping-pong, relaxed (unordered)", 1, 1, best);
    }

    // One thread's fences on GPU 0, each after a store to GPU 1's memory.
    const char *kinds[] = {"fence.sc.sys", "fence.acq_rel.sys", "fence.release.sys", "fence.acquire.sys",
                           "fence.acq_rel.gpu"};
    unsigned *remote = zeroed(1, LINE);
    for (int kind = 0; kind < 5; ++kind) {
        check(cudaSetDevice(0), "set device");
        fence_loop<<<1, 1>>>(remote, kind, iterations, elapsed[0]);
        check(cudaGetLastError(), "launch");
        synchronize_both();
        std::printf("fence  %-32s : %8.1f ns\n", kinds[kind], double(read_elapsed(0, elapsed[0])) / iterations);
    }
    return 0;
}
