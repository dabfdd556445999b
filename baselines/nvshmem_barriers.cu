// NVSHMEM's own device barriers composed with `grid.sync()`, one process per GPU: the
// anchor the one-process-per-GPU issue names beside scoped-sync's `MultiGrid` placed in
// NVSHMEM's symmetric heap. Started by a launcher that sets RANK, WORLD_SIZE and
// LOCAL_RANK (scoped-sync-run, torchrun; under mpirun the OMPI_COMM_WORLD_* ones), the
// rank `i` on GPU LOCAL_RANK. NVSHMEM is bootstrapped by its unique ID (no MPI): rank 0
// writes the ID into the file named on the command line, the others read it there.
//
// Kernels (132 blocks of 128 or 1024 threads per GPU on an H100/H200, as
// `scoped-sync --multi-gpu`), each a collective launch (`nvshmemx_collective_launch`,
// which is cooperative, so `grid.sync()` works):
//  - "grid.sync + NVSHMEM barrier_all_block + grid.sync": each GPU gathers its blocks,
//    block 0 meets the other PEs with NVSHMEM's block-wide barrier (which also completes
//    the PE's outstanding puts), each GPU releases its blocks;
//  - "grid.sync + NVSHMEM sync_all_block + grid.sync": the same with NVSHMEM's
//    synchronization without the completion of puts (the lighter form);
//  - "grid.sync + nvshmem_barrier_all (one thread) + grid.sync": the thread-level form,
//    called by thread 0 of block 0.
// Times come from %globaltimer in thread 0 of block 0 on the rank-0 GPU (phase 2 to the
// last), best of a few launches, printed by rank 0 in the lines `multi-compare.sh` reads.
//
// Build (NVSHMEM's headers and libraries from the `nvidia-nvshmem-cu13` wheel, as PyTorch
// installs it; `scripts/gpu-multi-compare.sh` finds them):
//   nvcc -O3 -std=c++17 -arch=sm_90 -rdc=true -I$NVSHMEM/include nvshmem_barriers.cu \
//        -L$NVSHMEM/lib -l:libnvshmem_host.so.3 -lnvshmem_device -o nvshmem_barriers
// Run: scoped-sync-run -n 2 -- ./nvshmem_barriers /tmp/some-dir/nvshmem-id
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <string>

#include "process_rank.h"

namespace cg = cooperative_groups;

namespace {

void check_cuda(cudaError_t status, const char *what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "nvshmem_barriers: %s: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

void check_status(int status, const char *what) {
    if (status != 0) {
        std::fprintf(stderr, "nvshmem_barriers: %s: status %d\n", what, status);
        std::exit(1);
    }
}

__device__ unsigned long long now_ns() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

enum Shape : int { BARRIER_ALL_BLOCK = 0, SYNC_ALL_BLOCK = 1, BARRIER_ALL_THREAD = 2 };
constexpr int SHAPES = 3;
const char *const SHAPE_LABELS[SHAPES] = {"grid.sync + NVSHMEM barrier_all_block + grid.sync",
                                          "grid.sync + NVSHMEM sync_all_block + grid.sync",
                                          "grid.sync + nvshmem_barrier_all + grid.sync"};

__global__ void leader_phases(int shape, int iterations, unsigned long long *elapsed) {
    cg::grid_group grid = cg::this_grid();
    unsigned long long start = 0;
    for (int phase = 1; phase <= iterations; ++phase) {
        if (phase == 2 && blockIdx.x == 0 && threadIdx.x == 0) start = now_ns();
        grid.sync();
        if (blockIdx.x == 0) {
            if (shape == BARRIER_ALL_BLOCK) {
                nvshmemx_barrier_all_block();
            } else if (shape == SYNC_ALL_BLOCK) {
                nvshmemx_sync_all_block();
            } else if (threadIdx.x == 0) {
                nvshmem_barrier_all();
            }
        }
        grid.sync();
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *elapsed = now_ns() - start;
}

constexpr int ROUNDS = 3;
constexpr int ITERATIONS = 20000;

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: nvshmem_barriers ID-FILE (under a launcher: scoped-sync-run -n 2 -- ...)\n");
        return 2;
    }
    const auto [rank, ranks, local_rank] = process_rank("nvshmem_barriers");
    int gpus = 0;
    check_cuda(cudaGetDeviceCount(&gpus), "count GPUs");
    if (gpus <= local_rank) {
        if (rank == 0) std::printf("skipped: NVSHMEM anchor: local rank %d, %d GPUs here\n", local_rank, gpus);
        return 0;
    }
    check_cuda(cudaSetDevice(local_rank), "set device");
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    share_unique_id("nvshmem_barriers", rank, argv[1], &id,
                    [](nvshmemx_uniqueid_t *made) { check_status(nvshmemx_get_uniqueid(made), "nvshmemx_get_uniqueid"); });
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    check_status(nvshmemx_set_attr_uniqueid_args(rank, ranks, &id, &attr), "nvshmemx_set_attr_uniqueid_args");
    check_status(nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr), "nvshmemx_init_attr");
    if (nvshmem_my_pe() != rank || nvshmem_n_pes() != ranks) {
        std::fprintf(stderr, "nvshmem_barriers: PE %d of %d, rank %d of %d\n", nvshmem_my_pe(), nvshmem_n_pes(),
                     rank, ranks);
        return 1;
    }
    // Whether the peers are load/store reachable (NVLink, P2P): the direct-pointer path.
    int *probe = static_cast<int *>(nvshmem_malloc(sizeof(int)));
    int reachable = 0;
    for (int pe = 0; pe < ranks; ++pe) reachable += nvshmem_ptr(probe, pe) != nullptr;
    int sms = 0;
    check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, local_rank), "SM count");
    unsigned long long *elapsed = nullptr;
    check_cuda(cudaMalloc(&elapsed, sizeof(unsigned long long)), "cudaMalloc");
    if (rank == 0) {
        int major = 0, minor = 0;
        nvshmem_info_get_version(&major, &minor);
        char name[NVSHMEM_MAX_NAME_LEN] = {};
        nvshmem_info_get_name(name);
        std::printf("nvshmem version %d.%d (%s), %d PEs, %d load/store reachable from PE 0\n", major, minor, name,
                    ranks, reachable);
    }
    for (int threads : {128, 1024}) {
        for (int shape = 0; shape < SHAPES; ++shape) {
            double best = 1e30;
            for (int round = 0; round < ROUNDS; ++round) {
                int iterations = ITERATIONS;
                int which = shape;
                void *args[] = {&which, &iterations, &elapsed};
                check_status(nvshmemx_collective_launch((const void *)leader_phases, dim3(sms), dim3(threads), args,
                                                        0, 0),
                             "nvshmemx_collective_launch");
                check_cuda(cudaDeviceSynchronize(), "synchronize");
                unsigned long long ns = 0;
                check_cuda(cudaMemcpy(&ns, elapsed, sizeof ns, cudaMemcpyDeviceToHost), "read elapsed");
                double per_phase = double(ns) / (ITERATIONS - 1);
                if (per_phase < best) best = per_phase;
            }
            if (rank == 0) {
                std::printf("multi  %-32s grid=%d x %4d : %8.1f ns/barrier\n", SHAPE_LABELS[shape], sms, threads,
                            best);
                std::fflush(stdout);
            }
        }
    }
    check_cuda(cudaFree(elapsed), "free");
    nvshmem_free(probe);
    nvshmem_finalize();
    return 0;
}
