// Why the report measures raw spinning and the handoff channel on one mapped line.
//
// A host<->GPU ping-pong on pinned mapped memory, in two shapes:
//   raw: the anchor's (baselines/gpu_baselines.cu) one 32-bit word, the host
//        stores odd values, the GPU answers with the next even one;
//   2w:  the HandoffChannel's shape, two 64-bit words on one line, each written by one
//        side only (the host's count and the GPU's count).
// Each shape runs on three lines of one allocation, alternating, `reps` times. On an
// H100 the lines differed by up to 12% from one host core, the shapes on one line by
// 13-19 ns (under 1%).
//
// Then one more question: does a GPU thread that keeps several polls of the line in
// flight see the host's store sooner? (No: its .sys loads do not overlap; each extra
// poll in flight added about 1 us to the round trip.)
//
//   nvcc -O3 -std=c++20 -arch=sm_90 gpu-mapped-line.cu -o mapped-line
//   ./mapped-line [reps]            # or: taskset -c CORE ./mapped-line
#include <cuda_runtime.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t error = (call);                                                        \
        if (error != cudaSuccess) {                                                        \
            std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(error));      \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

typedef unsigned long long u64;

__device__ __forceinline__ u64 load_acquire(const u64 *p) {
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 load_relaxed(const u64 *p) {
    u64 v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store_release(u64 *p, u64 v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__global__ void raw_pingpong(unsigned *flag, int rounds) {
    for (int i = 0; i < rounds; ++i) {
        unsigned v;
        do {
            asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
        } while (v != 2 * i + 1);
        asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(2 * i + 2) : "memory");
    }
}

// `in_flight` == 1: one acquire poll at a time. Otherwise that many relaxed polls in
// flight, issued `gap` cycles apart, and an acquire fence after the one that hits.
__global__ void two_word_pingpong(u64 *in, u64 *out, int rounds, int in_flight, long long gap) {
    for (u64 i = 1; i <= (u64)rounds; ++i) {
        if (in_flight == 1) {
            while (load_acquire(in) < i) {
            }
        } else {
            u64 polls[4];
            for (int k = 0; k < in_flight; ++k) {
                polls[k] = load_relaxed(in);
                long long t0 = clock64();
                while (clock64() - t0 < gap) {
                }
            }
            for (int k = 0;; k = (k + 1) % in_flight) {
                if (polls[k] >= i) break;
                polls[k] = load_relaxed(in);
            }
            asm volatile("fence.acquire.sys;" ::: "memory");
        }
        store_release(out, i);
    }
}

static double now_ns() {
    return std::chrono::duration<double, std::nano>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Case {
    const char *shape;
    size_t offset;
    int in_flight;
};

static double run(const Case &c, char *host, char *device, cudaStream_t stream, long long gap) {
    const int rounds = 5000;
    std::memset(host + c.offset, 0, 64);
    double t0, t1;
    if (c.in_flight == 0) {
        raw_pingpong<<<1, 1, 0, stream>>>((unsigned *)(device + c.offset), rounds);
        std::atomic_ref<unsigned> flag(*(unsigned *)(host + c.offset));
        t0 = now_ns();
        for (unsigned i = 0; i < (unsigned)rounds; ++i) {
            flag.store(2 * i + 1, std::memory_order_release);
            while (flag.load(std::memory_order_acquire) != 2 * i + 2) __builtin_ia32_pause();
        }
        t1 = now_ns();
    } else {
        u64 *in = (u64 *)(device + c.offset);
        two_word_pingpong<<<1, 1, 0, stream>>>(in, in + 1, rounds, c.in_flight, gap);
        std::atomic_ref<u64> to_gpu(*(u64 *)(host + c.offset)), to_host(*((u64 *)(host + c.offset) + 1));
        t0 = now_ns();
        for (u64 i = 1; i <= (u64)rounds; ++i) {
            to_gpu.store(i, std::memory_order_release);
            while (to_host.load(std::memory_order_acquire) < i) __builtin_ia32_pause();
        }
        t1 = now_ns();
    }
    CHECK(cudaStreamSynchronize(stream));
    return (t1 - t0) / rounds;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? std::atoi(argv[1]) : 9;
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    char *host, *device;
    CHECK(cudaHostAlloc(&host, 1 << 16, cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void **)&device, host, 0));
    int clock_khz;
    CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    long long gap = (long long)(0.5e-6 * clock_khz * 1e3);  // 0.5 us: half a PCIe read
    std::vector<Case> cases = {{"raw", 0, 0},    {"2w", 0, 1},   {"raw", 4096, 0},
                               {"2w", 4096, 1},  {"raw", 8256, 0}, {"2w", 8256, 1},
                               {"2w, 2 polls in flight", 0, 2}, {"2w, 3 polls in flight", 0, 3}};
    std::vector<std::vector<double>> took(cases.size());
    for (int r = 0; r < reps; ++r)
        for (size_t c = 0; c < cases.size(); ++c) took[c].push_back(run(cases[c], host, device, stream, gap));
    std::printf("round trip, ns: %d alternating runs of 5000 each\n", reps);
    for (size_t c = 0; c < cases.size(); ++c) {
        auto &t = took[c];
        std::sort(t.begin(), t.end());
        std::printf("%-24s line at +%-5zu min %7.1f  median %7.1f  max %7.1f\n", cases[c].shape,
                    cases[c].offset, t[0], t[t.size() / 2], t.back());
    }
}
