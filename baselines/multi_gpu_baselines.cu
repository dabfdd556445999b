// The CUDA C++ peers of scoped-sync's multi-GPU barrier (`MultiGrid`) on GPUs 0..N-1
// of the machine (N from the command line, 2 unless given; peer access enabled between
// every pair), and of a handoff across GPUs 0 and 1:
//  - a two-level barrier: per GPU a local counter (one release add per block), then
//    the GPU's last block stores the epoch into its inbox line on every peer (after one
//    system fence) and polls its own inbox's lines, then releases its blocks through a
//    local flag;
//  - one system-scope counter in GPU 0's memory that every block of every GPU adds to
//    and polls;
//  - cooperative groups' grid sync on GPU 0 alone, the same shape (the one-GPU floor);
//  - a raw ping-pong between one thread on each GPU, each polling a word in its own
//    memory that the other writes (release stores; relaxed ones, which order nothing,
//    to show what the system-scope release costs; and release stores with a clock read
//    every 32 polls, what a wait with a deadline adds);
//  - a counter per GPU that every block of every GPU adds to after its own system
//    release fence (MultiGrid's first design), and the same without the fence (orders
//    nothing: what the fences cost);
//  - MultiGrid's design in CUDA C++ (each GPU gathers its blocks at device scope; the
//    block completing the gather fences once at system scope and adds the GPU's block
//    count to every GPU's counter, which every block polls), to tell the design from
//    the Rust code; and the same design with each of the Rust kernel's ways of waiting
//    added (the block's first warp polls on lane 0's reads, the clock read every 32
//    polls that a deadline needs, the block-wide vote that carries a failure), to tell
//    which of them costs;
//  - what one thread pays per fence (each kind, system and device scope).
//
// Build: nvcc -O3 -std=c++20 -arch=sm_90 multi_gpu_baselines.cu -o multi_gpu_baselines
// Run: ./multi_gpu_baselines [GPUS]. With fewer GPUs than asked (or fewer than two) it
// prints "skipped: ..." and exits 0. Times come from %globaltimer inside the kernels
// (thread 0 of block 0 on GPU 0, from its second phase or round trip to its last: the
// first also waits for the other GPUs' kernels to start), best of a few launches.
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

// Words that different blocks or GPUs hit sit 128 bytes apart (one L2 line each): a
// line of 64-bit words, and of 32-bit ones.
constexpr int LINE = 16;
constexpr int LINE32 = 32;

__device__ unsigned long long now_ns() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

using DeviceRef = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;
using SystemRef = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

// Every GPU's zeroed buffer of BUFFER_LINES lines (device memory; the peers' reached
// through peer access), passed by value to every barrier kernel.
constexpr int MAX_GPUS = 8;
struct Buffers {
    unsigned long long *gpu[MAX_GPUS];
    int ranks;
};
// Lines 0-2: counter, release flag, gather word; from line 3, one inbox line per sender.
constexpr int INBOX_LINE = 3;
constexpr int BUFFER_LINES = INBOX_LINE + MAX_GPUS;

// Every barrier kernel has one signature: `all` holds every GPU's buffer, `rank` is this
// GPU's index; thread 0 of block 0 on GPU 0 writes the time of phases 2 to `iterations`.
using BarrierKernel = void (*)(Buffers all, int rank, int iterations, unsigned long long *elapsed);

// Times phases 2..iterations from thread 0 of block 0.
struct PhaseClock {
    unsigned long long start = 0;
    __device__ void tick(unsigned long long phase) {
        if (phase == 2 && blockIdx.x == 0 && threadIdx.x == 0) start = now_ns();
    }
    __device__ void stop(unsigned long long *elapsed) const {
        if (blockIdx.x == 0 && threadIdx.x == 0) *elapsed = now_ns() - start;
    }
};

// Two-level: per GPU a local counter (line 0, one release add per block) and a release
// flag (line 1); the GPU's last block fences at system scope, stores the epoch into its
// inbox line on every peer, polls its own inbox's lines, fences again and releases its
// blocks through the flag.
__global__ void two_level_barrier(Buffers all, int rank, int iterations, unsigned long long *elapsed) {
    unsigned long long *mine = all.gpu[rank];
    DeviceRef arrivals(mine[0]);
    DeviceRef release(mine[LINE]);
    const unsigned long long blocks = gridDim.x;
    PhaseClock clock;
    for (unsigned long long epoch = 1; epoch <= (unsigned long long)iterations; ++epoch) {
        clock.tick(epoch);
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned long long before = arrivals.fetch_add(1, cuda::memory_order_release);
            if (before + 1 == epoch * blocks) {
                cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_system);
                for (int peer = 0; peer < all.ranks; ++peer) {
                    if (peer != rank) {
                        SystemRef(all.gpu[peer][(INBOX_LINE + rank) * LINE]).store(epoch, cuda::memory_order_relaxed);
                    }
                }
                for (int peer = 0; peer < all.ranks; ++peer) {
                    if (peer != rank) {
                        SystemRef inbox(mine[(INBOX_LINE + peer) * LINE]);
                        while (inbox.load(cuda::memory_order_relaxed) < epoch) {
                        }
                    }
                }
                cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_system);
                release.store(epoch, cuda::memory_order_release);
            } else {
                while (release.load(cuda::memory_order_relaxed) < epoch) {
                }
                cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
            }
        }
        __syncthreads();
    }
    clock.stop(elapsed);
}

// One system-scope counter in GPU 0's memory that every block of every GPU adds to
// (release) and polls.
__global__ void one_system_counter(Buffers all, int, int iterations, unsigned long long *elapsed) {
    SystemRef arrivals(*all.gpu[0]);
    const unsigned long long total_blocks = (unsigned long long)all.ranks * gridDim.x;
    PhaseClock clock;
    for (unsigned long long epoch = 1; epoch <= (unsigned long long)iterations; ++epoch) {
        clock.tick(epoch);
        __syncthreads();
        if (threadIdx.x == 0) {
            const unsigned long long target = epoch * total_blocks;
            if (arrivals.fetch_add(1, cuda::memory_order_release) + 1 != target) {
                while (arrivals.load(cuda::memory_order_relaxed) < target) {
                }
            }
            cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system);
        }
        __syncthreads();
    }
    clock.stop(elapsed);
}

__device__ unsigned long long load_counter(const unsigned long long *counter) {
    unsigned long long seen;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(seen) : "l"(counter) : "memory");
    return seen;
}

// Thread 0's wait in the counter designs: relaxed polls of this GPU's counter until it
// reaches `target`, then one system-scope acquire fence.
__device__ void await_counter(const unsigned long long *counter, unsigned long long target) {
    while (load_counter(counter) < target) {
    }
    asm volatile("fence.acquire.sys;" ::: "memory");
}

// `amount` added to every GPU's counter (line 0): relaxed system-scope reductions.
__device__ void add_to_every_counter(const Buffers &all, unsigned long long amount) {
    for (int gpu = 0; gpu < all.ranks; ++gpu) {
        asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(all.gpu[gpu]), "l"(amount) : "memory");
    }
}

// Per GPU a counter in its own memory (line 0). Every block's thread 0: one
// system-scope release fence, a relaxed add to every GPU's counter, relaxed polls of its
// own until every block of every GPU arrived, one acquire fence. (MultiGrid's first
// design: 132 blocks fencing at system scope at once cost far more than one.)
// `Fence` false drops the release fence: a barrier that orders nothing, to show what the
// fences cost.
template <bool Fence>
__global__ void counter_per_gpu(Buffers all, int rank, int iterations, unsigned long long *elapsed) {
    const unsigned long long total_blocks = (unsigned long long)all.ranks * gridDim.x;
    PhaseClock clock;
    for (unsigned long long epoch = 1; epoch <= (unsigned long long)iterations; ++epoch) {
        clock.tick(epoch);
        __syncthreads();
        if (threadIdx.x == 0) {
            if (Fence) asm volatile("fence.release.sys;" ::: "memory");
            add_to_every_counter(all, 1);
            await_counter(all.gpu[rank], epoch * total_blocks);
        }
        __syncthreads();
    }
    clock.stop(elapsed);
}

// How the design's blocks wait, as the Rust kernel does or not (bit flags).
enum Wait : int {
    THREAD_0_POLLS = 0,
    // The block's first warp polls, every lane on lane 0's read (one shuffle per poll).
    FIRST_WARP_POLLS = 1,
    // %globaltimer read every 32 polls, as a wait with a deadline does.
    CLOCK_EVERY_32 = 2,
    // The block meets again with __syncthreads_or (a failure carried to every thread).
    VOTE = 4,
};

// Thread 0's arrival in the design: a device-scope release add to the gather word (line
// 2); the block completing the GPU's count takes a device-scope acquire fence and one
// system-scope release fence, then adds the GPU's block count to every GPU's counter.
__device__ void gather_arrival(const Buffers &all, int rank, unsigned long long epoch) {
    unsigned long long *gather = all.gpu[rank] + 2 * LINE;
    const unsigned long long blocks = gridDim.x;
    unsigned long long before;
    asm volatile("atom.release.gpu.global.add.u64 %0, [%1], 1;" : "=l"(before) : "l"(gather) : "memory");
    if (before + 1 == epoch * blocks) {
        asm volatile("fence.acquire.gpu;" ::: "memory");
        asm volatile("fence.release.sys;" ::: "memory");
        add_to_every_counter(all, blocks);
    }
}

// MultiGrid's design: each block arrives through `gather_arrival`, then polls its own
// GPU's counter (line 0) and takes an acquire fence; `Waits` adds the Rust kernel's ways
// of waiting (see `Wait`).
template <int Waits>
__global__ void gather_then_counter(Buffers all, int rank, int iterations, unsigned long long *elapsed) {
    const unsigned long long *counter = all.gpu[rank];
    PhaseClock clock;
    // The vote's result is kept live by adding it to the time (0 unless the clock sum
    // is exactly 1): a vote that ended the kernel could leave the other blocks waiting.
    unsigned long long clock_sink = 0, voted = 0;
    for (unsigned long long epoch = 1; epoch <= (unsigned long long)iterations; ++epoch) {
        clock.tick(epoch);
        __syncthreads();
        if (threadIdx.x == 0) gather_arrival(all, rank, epoch);
        const unsigned long long target = epoch * all.ranks * gridDim.x;
        const bool polls = (Waits & FIRST_WARP_POLLS) ? threadIdx.x < 32 : threadIdx.x == 0;
        if (polls) {
            for (unsigned count = 1;; ++count) {
                unsigned long long seen = load_counter(counter);
                if (Waits & FIRST_WARP_POLLS) seen = __shfl_sync(0xffffffffu, seen, 0);
                if (seen >= target) break;
                if ((Waits & CLOCK_EVERY_32) && count % 32 == 0) clock_sink += now_ns();
            }
            asm volatile("fence.acquire.sys;" ::: "memory");
        }
        if (Waits & VOTE) {
            voted += __syncthreads_or(clock_sink == 1);
        } else {
            __syncthreads();
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *elapsed = now_ns() - clock.start + voted;
}

// Cooperative groups' grid sync on one GPU: the one-GPU floor of the same shape.
__global__ void grid_sync_one_gpu(Buffers, int, int iterations, unsigned long long *elapsed) {
    cg::grid_group grid = cg::this_grid();
    PhaseClock clock;
    for (unsigned long long phase = 1; phase <= (unsigned long long)iterations; ++phase) {
        clock.tick(phase);
        grid.sync();
    }
    clock.stop(elapsed);
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

// One thread per GPU: GPU 0 stores i into `to_peer` (GPU 1's memory) and waits for i in
// `from_peer` (its own); GPU 1 answers the same way. With `clock_every` > 0 the poll
// loop also reads %globaltimer every that many polls, as a wait with a deadline does.
__global__ void ping_pong(unsigned *from_peer, unsigned *to_peer, bool first, int rounds,
                          bool ordered, int clock_every, unsigned long long *elapsed) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_system> in(*from_peer);
    cuda::atomic_ref<unsigned, cuda::thread_scope_system> out(*to_peer);
    const auto store_order = ordered ? cuda::memory_order_release : cuda::memory_order_relaxed;
    const auto load_order = ordered ? cuda::memory_order_acquire : cuda::memory_order_relaxed;
    unsigned long long start = now_ns(), clock_sink = 0;
    for (unsigned i = 1; i <= unsigned(rounds); ++i) {
        // From round 2: the first round also waits for the other GPU's kernel to start.
        if (i == 2) start = now_ns();
        if (first) out.store(i, store_order);
        for (int polls = 1; in.load(load_order) != i; ++polls) {
            if (clock_every > 0 && polls % clock_every == 0) clock_sink += now_ns();
        }
        if (!first) out.store(i, store_order);
    }
    if (first) *elapsed = now_ns() - start + (clock_sink == 1);
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

void synchronize(int gpus) {
    for (int gpu = 0; gpu < gpus; ++gpu) {
        check(cudaSetDevice(gpu), "set device");
        check(cudaDeviceSynchronize(), "synchronize");
    }
}

constexpr int ROUNDS = 3;

// `kernel` on GPUs 0..gpus-1 (cooperative launches of `sms` blocks of `threads`), each
// with a fresh zeroed buffer: the best of ROUNDS launches, in nanoseconds per phase.
double best_barrier(BarrierKernel kernel, int gpus, int sms, int threads, int iterations,
                    unsigned long long *const elapsed[]) {
    double best = 1e30;
    for (int round = 0; round < ROUNDS; ++round) {
        Buffers all{};
        all.ranks = gpus;
        for (int gpu = 0; gpu < gpus; ++gpu) {
            all.gpu[gpu] = reinterpret_cast<unsigned long long *>(zeroed(gpu, BUFFER_LINES * LINE32));
        }
        synchronize(gpus);
        for (int gpu = 0; gpu < gpus; ++gpu) {
            check(cudaSetDevice(gpu), "set device");
            int rank = gpu, iters = iterations;
            unsigned long long *out = elapsed[gpu];
            void *args[] = {&all, &rank, &iters, &out};
            check(cudaLaunchCooperativeKernel((void *)kernel, sms, threads, args, 0, 0), "cooperative launch");
        }
        synchronize(gpus);
        double ns = double(read_elapsed(0, elapsed[0])) / (iterations - 1);
        if (ns < best) best = ns;
        for (int gpu = 0; gpu < gpus; ++gpu) {
            check(cudaSetDevice(gpu), "set device");
            check(cudaFree(all.gpu[gpu]), "free");
        }
    }
    return best;
}

} // namespace

int main(int argc, char **argv) {
    const int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
    if (ranks < 2 || ranks > MAX_GPUS) {
        std::fprintf(stderr, "usage: multi_gpu_baselines [GPUS], GPUS from 2 to %d\n", MAX_GPUS);
        return 2;
    }
    int gpus = 0;
    check(cudaGetDeviceCount(&gpus), "count GPUs");
    if (gpus < ranks) {
        std::printf("skipped: fewer than %d GPUs (%d here)\n", ranks, gpus);
        return 0;
    }
    for (int gpu = 0; gpu < ranks; ++gpu) {
        for (int peer = 0; peer < ranks; ++peer) {
            if (peer == gpu) continue;
            int can = 0;
            check(cudaDeviceCanAccessPeer(&can, gpu, peer), "peer access query");
            if (!can) {
                std::printf("skipped: GPU %d cannot reach GPU %d's memory\n", gpu, peer);
                return 0;
            }
            check(cudaSetDevice(gpu), "set device");
            check(cudaDeviceEnablePeerAccess(peer, 0), "enable peer access");
        }
    }
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
    const int iterations = 20000;
    unsigned long long *elapsed[MAX_GPUS] = {};
    for (int gpu = 0; gpu < ranks; ++gpu) {
        check(cudaSetDevice(gpu), "set device");
        check(cudaMalloc(&elapsed[gpu], sizeof(unsigned long long)), "cudaMalloc");
    }

    struct Barrier {
        const char *label;
        BarrierKernel kernel;
        int gpus;
    };
    const Barrier barriers[] = {
        {"two-level (inbox per GPU)", two_level_barrier, ranks},
        {"one system counter on GPU 0", one_system_counter, ranks},
        {"counter per GPU, fence per block", counter_per_gpu<true>, ranks},
        {"counter per GPU, no fence (unordered)", counter_per_gpu<false>, ranks},
        {"MultiGrid's design (CUDA C++)", gather_then_counter<THREAD_0_POLLS>, ranks},
        {"design, first warp polls", gather_then_counter<FIRST_WARP_POLLS>, ranks},
        {"design, clock every 32 polls", gather_then_counter<CLOCK_EVERY_32>, ranks},
        {"design, block vote", gather_then_counter<VOTE>, ranks},
        {"design with MultiGrid's waits", gather_then_counter<FIRST_WARP_POLLS | CLOCK_EVERY_32 | VOTE>, ranks},
        {"cg::grid.sync() on one GPU", grid_sync_one_gpu, 1},
    };
    std::printf("gpus   %d\n", ranks);
    for (int threads : {128, 1024}) {
        for (const Barrier &barrier : barriers) {
            std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/barrier\n", barrier.label, sms, threads,
                        best_barrier(barrier.kernel, barrier.gpus, sms, threads, iterations, elapsed));
        }
    }

    // Raw ping-pong: word[g] lives on GPU g and is written by the other GPU.
    const int rounds = 20000;
    struct PingPong {
        const char *label;
        bool ordered;
        int clock_every;
    };
    const PingPong ping_pongs[] = {
        {"raw ping-pong GPU 0 <-> 1", true, 0},
        {"raw ping-pong, relaxed (unordered)", false, 0},
        {"raw ping-pong, clock every 32 polls", true, 32},
    };
    for (const PingPong &shape : ping_pongs) {
        double best = 1e30;
        for (int round = 0; round < ROUNDS; ++round) {
            unsigned *word[2] = {zeroed(0, LINE32), zeroed(1, LINE32)};
            synchronize(2);
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                ping_pong<<<1, 1>>>(word[gpu], word[1 - gpu], gpu == 0, rounds, shape.ordered, shape.clock_every,
                                    elapsed[gpu]);
                check(cudaGetLastError(), "launch");
            }
            synchronize(2);
            double ns = double(read_elapsed(0, elapsed[0])) / (rounds - 1);
            if (ns < best) best = ns;
            for (int gpu = 0; gpu < 2; ++gpu) {
                check(cudaSetDevice(gpu), "set device");
                check(cudaFree(word[gpu]), "free");
            }
        }
        std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/round trip\n", shape.label, 1, 1, best);
    }

    // One thread's fences on GPU 0, each after a store to GPU 1's memory.
    const char *kinds[] = {"fence.sc.sys", "fence.acq_rel.sys", "fence.release.sys", "fence.acquire.sys",
                           "fence.acq_rel.gpu"};
    unsigned *remote = zeroed(1, LINE32);
    for (int kind = 0; kind < 5; ++kind) {
        check(cudaSetDevice(0), "set device");
        fence_loop<<<1, 1>>>(remote, kind, iterations, elapsed[0]);
        check(cudaGetLastError(), "launch");
        synchronize(2);
        std::printf("fence  %-32s : %8.1f ns\n", kinds[kind], double(read_elapsed(0, elapsed[0])) / iterations);
    }
    return 0;
}
