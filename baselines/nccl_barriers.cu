// NCCL's device-API barrier (`ncclLsaBarrierSession`, NCCL >= 2.28) on GPUs 0..N-1 (N
// from the command line, 2 unless given), the anchor the multi-GPU issue names beside
// scoped-sync's `MultiGrid`. One process, one host thread per GPU (each its own rank of
// one communicator), a device communicator with one LSA barrier per block, and three
// kernels of the same shape as `scoped-sync --multi-gpu` (132 blocks of 128 or 1024
// threads per GPU):
//  - "NCCL LSA barrier per block": every block syncs with the blocks of the same index on
//    the peers (NCCL's idiom: `index = blockIdx.x`). It orders block b of each GPU with
//    block b of the others only: NOT a barrier of the whole grids, shown as the floor of
//    NCCL's mechanism (one release fence, a relaxed store to each peer's inbox, local
//    polls);
//  - "NCCL LSA per block + grid.sync": the same, then cooperative groups' grid sync on
//    each GPU. That is a barrier of every block of every GPU (block x of GPU 0 is ordered
//    before block x of GPU 1 by the LSA barrier, and before every block of GPU 1 by GPU
//    1's grid sync), the semantics of `MultiGrid::sync`;
//  - "grid.sync + NCCL LSA (block 0) + grid.sync": the textbook composition (each GPU
//    gathers its blocks, block 0 meets the peer, each GPU releases its blocks).
// Every barrier uses `cuda::memory_order_acq_rel`, what a barrier that publishes data needs.
//
// Build (NCCL's headers and library from the `nvidia-nccl-cu12`/`-cu13` wheel or a system
// install; `scripts/gpu-multi-compare.sh` finds them):
//   nvcc -O3 -std=c++20 -arch=sm_90 -I$NCCL/include nccl_barriers.cu -L$NCCL/lib -l:libnccl.so.2
// Run: ./nccl_barriers [GPUS]. Prints "skipped: ..." and exits 0 with fewer GPUs than asked
// or without device-API support.
// One process per GPU instead (the anchor of `scoped-sync --multi-gpu-processes`):
//   scoped-sync-run -n GPUS -- ./nccl_barriers --processes ID-FILE
// each process one rank (RANK, WORLD_SIZE, LOCAL_RANK from the launcher, or Open MPI's
// OMPI_COMM_WORLD_*), on GPU LOCAL_RANK; rank 0 writes NCCL's unique ID into ID-FILE, the
// others read it there; the labels end in ", processes".
// Times come from %globaltimer in thread 0 of block 0 on GPU 0 (phase 2 to the last), best
// of a few launches, as in multi_gpu_baselines.cu.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <nccl.h>
#include <nccl_device.h>
#include <string>
#include <thread>

#include "process_rank.h"

namespace cg = cooperative_groups;

namespace {

void check_cuda(cudaError_t status, const char *what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "nccl_barriers: %s: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

void check_nccl(ncclResult_t status, const char *what) {
    if (status != ncclSuccess) {
        std::fprintf(stderr, "nccl_barriers: %s: %s\n", what, ncclGetErrorString(status));
        std::exit(1);
    }
}

__device__ unsigned long long now_ns() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// Which barrier a launch measures (see the file's header).
enum Shape : int { PER_BLOCK = 0, PER_BLOCK_THEN_GRID = 1, GRID_LEADER_GRID = 2 };
constexpr int SHAPES = 3;
const char *const SHAPE_LABELS[SHAPES] = {"NCCL LSA barrier per block", "NCCL LSA per block + grid.sync",
                                          "grid.sync + NCCL LSA + grid.sync"};

// Times phases 2..iterations from thread 0 of block 0.
struct PhaseClock {
    unsigned long long start = 0;
    __device__ void tick(int phase) {
        if (phase == 2 && blockIdx.x == 0 && threadIdx.x == 0) start = now_ns();
    }
    __device__ void stop(unsigned long long *elapsed) const {
        if (blockIdx.x == 0 && threadIdx.x == 0) *elapsed = now_ns() - start;
    }
};

// PER_BLOCK and PER_BLOCK_THEN_GRID: one session per block (index = blockIdx.x).
__global__ void per_block_phases(ncclDevComm comm, bool then_grid, int iterations, unsigned long long *elapsed) {
    cg::grid_group grid = cg::this_grid();
    ncclLsaBarrierSession<ncclCoopCta> session(ncclCoopCta(), comm, ncclTeamTagLsa(), blockIdx.x);
    PhaseClock clock;
    for (int phase = 1; phase <= iterations; ++phase) {
        clock.tick(phase);
        session.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
        if (then_grid) grid.sync();
    }
    clock.stop(elapsed);
}

// GRID_LEADER_GRID: block 0 alone holds a session (a session's destructor stores its
// epoch back, so a block that never syncs must not hold one of the same index).
__global__ void leader_phases(ncclDevComm comm, int iterations, unsigned long long *elapsed) {
    cg::grid_group grid = cg::this_grid();
    PhaseClock clock;
    if (blockIdx.x == 0) {
        ncclLsaBarrierSession<ncclCoopCta> session(ncclCoopCta(), comm, ncclTeamTagLsa(), 0);
        for (int phase = 1; phase <= iterations; ++phase) {
            clock.tick(phase);
            grid.sync();
            session.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
            grid.sync();
        }
    } else {
        for (int phase = 1; phase <= iterations; ++phase) {
            grid.sync();
            grid.sync();
        }
    }
    clock.stop(elapsed);
}

constexpr int ROUNDS = 3;
constexpr int ITERATIONS = 20000;

// One rank: its GPU, its communicator and device communicator; `run` measures one shape.
struct Rank {
    int gpu = 0;
    ncclComm_t comm = nullptr;
    ncclDevComm dev_comm{};
    unsigned long long *elapsed = nullptr;
    bool supported = false;

    void init(ncclUniqueId id, int ranks, int rank, int blocks) {
        check_cuda(cudaSetDevice(gpu), "set device");
        check_nccl(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
        // NCCL 2.29 added the initializers (size, magic and version fields); 2.28's
        // requirements are a plain struct, zero for "none".
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
        ncclDevCommRequirements_t requirements = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
        ncclDevCommRequirements_t requirements = {};
#endif
        requirements.lsaBarrierCount = blocks;
        // The ranks are GPUs of one kind on one machine: ncclDevCommCreate (a
        // collective) fails on all (no symmetric memory, no device API) or on none.
        ncclResult_t created = ncclDevCommCreate(comm, &requirements, &dev_comm);
        supported = created == ncclSuccess;
        if (!supported) {
            std::fprintf(stderr, "nccl_barriers: ncclDevCommCreate on GPU %d: %s\n", gpu,
                         ncclGetErrorString(created));
        }
        check_cuda(cudaMalloc(&elapsed, sizeof(unsigned long long)), "cudaMalloc");
    }

    unsigned long long run(int shape, int blocks, int threads) {
        check_cuda(cudaSetDevice(gpu), "set device");
        int iterations = ITERATIONS;
        bool then_grid = shape == PER_BLOCK_THEN_GRID;
        void *per_block_args[] = {&dev_comm, &then_grid, &iterations, &elapsed};
        void *leader_args[] = {&dev_comm, &iterations, &elapsed};
        const bool leader = shape == GRID_LEADER_GRID;
        check_cuda(cudaLaunchCooperativeKernel(leader ? (void *)leader_phases : (void *)per_block_phases, blocks,
                                               threads, leader ? leader_args : per_block_args, 0, 0),
                   "cooperative launch");
        check_cuda(cudaDeviceSynchronize(), "synchronize");
        unsigned long long ns = 0;
        check_cuda(cudaMemcpy(&ns, elapsed, sizeof ns, cudaMemcpyDeviceToHost), "read elapsed");
        return ns;
    }

    void finish() {
        check_cuda(cudaSetDevice(gpu), "set device");
        if (supported) check_nccl(ncclDevCommDestroy(comm, &dev_comm), "ncclDevCommDestroy");
        check_cuda(cudaFree(elapsed), "free");
        check_nccl(ncclCommDestroy(comm), "ncclCommDestroy");
    }
};

} // namespace

// One line of the report: the best of ROUNDS launches of `run`, per phase.
template <typename Run> void print_best(const char *label, const char *suffix, int sms, int threads, Run run) {
    double best = 1e30;
    for (int round = 0; round < ROUNDS; ++round) {
        double per_phase = double(run()) / (ITERATIONS - 1);
        if (per_phase < best) best = per_phase;
    }
    std::string full = std::string(label) + suffix;
    std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/barrier\n", full.c_str(), sms, threads, best);
    std::fflush(stdout);
}

// One process per GPU: this process is one rank; rank 0 prints.
int run_as_process(const char *id_file) {
    const auto [rank, ranks, gpu] = process_rank("nccl_barriers");
    Rank self;
    self.gpu = gpu;
    int sms = 0;
    check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu), "SM count");
    ncclUniqueId id;
    share_unique_id("nccl_barriers", rank, id_file, &id,
                    [](ncclUniqueId *made) { check_nccl(ncclGetUniqueId(made), "ncclGetUniqueId"); });
    self.init(id, ranks, rank, sms);
    int version = 0;
    check_nccl(ncclGetVersion(&version), "ncclGetVersion");
    if (!self.supported) {
        if (rank == 0) std::printf("skipped: NCCL %d could not create a device communicator across processes\n", version);
    } else {
        for (int threads : {128, 1024}) {
            for (int shape = 0; shape < SHAPES; ++shape) {
                auto run = [&] { return self.run(shape, sms, threads); };
                if (rank == 0) {
                    print_best(SHAPE_LABELS[shape], ", processes", sms, threads, run);
                } else {
                    for (int round = 0; round < ROUNDS; ++round) run();
                }
            }
        }
    }
    self.finish();
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && std::string(argv[1]) == "--processes") return run_as_process(argv[2]);
    constexpr int MAX_RANKS = 8;
    const int count = argc > 1 ? std::atoi(argv[1]) : 2;
    if (count < 2 || count > MAX_RANKS) {
        std::fprintf(stderr, "usage: nccl_barriers [GPUS], GPUS from 2 to %d\n", MAX_RANKS);
        return 2;
    }
    int gpus = 0;
    check_cuda(cudaGetDeviceCount(&gpus), "count GPUs");
    if (gpus < count) {
        std::printf("skipped: fewer than %d GPUs (%d here)\n", count, gpus);
        return 0;
    }
    int version = 0;
    check_nccl(ncclGetVersion(&version), "ncclGetVersion");
    int sms = 0;
    check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
    ncclUniqueId id;
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    Rank ranks[MAX_RANKS];
    // One host thread per rank, joined before `each` returns.
    auto each = [&](auto &&body) {
        std::thread threads[MAX_RANKS];
        for (int r = 0; r < count; ++r) threads[r] = std::thread([&, r] { body(r); });
        for (int r = 0; r < count; ++r) threads[r].join();
    };
    each([&](int r) {
        ranks[r].gpu = r;
        ranks[r].init(id, count, r, sms);
    });
    bool supported = true;
    for (int r = 0; r < count; ++r) supported = supported && ranks[r].supported;
    if (!supported) {
        std::printf("skipped: NCCL %d could not create a device communicator on these GPUs\n", version);
    } else {
        std::printf("nccl   version %d\n", version);
        std::printf("gpus   %d\n", count);
        for (int threads : {128, 1024}) {
            for (int shape = 0; shape < SHAPES; ++shape) {
                print_best(SHAPE_LABELS[shape], "", sms, threads, [&] {
                    unsigned long long ns[MAX_RANKS] = {};
                    each([&](int r) { ns[r] = ranks[r].run(shape, sms, threads); });
                    return ns[0];
                });
            }
        }
    }
    each([&](int r) { ranks[r].finish(); });
    return 0;
}
