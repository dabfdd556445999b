// Grid-barrier shapes timed side by side on one GPU (ns per phase, best of 3 rounds
// alternating): cooperative groups' `this_grid().sync()`, CUDA C++ versions of shapes
// `Grid::sync` was built from or measured against (thread 0 alone, the whole first warp
// with `bra.uni` branches, aligned and non-aligned block barriers, one arrival per
// cluster through `barrier.cluster`), and any number of builds of the project's own
// `cost_grid_sync` loaded from cubins. docs/measurements.md ("`Grid::sync` by the first
// warp") cites its figures.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o grid-shapes scripts/gpu-grid-shapes.cu -lcuda
//   ptxas -arch=sm_90 -O3 bundle/kernels.ptx -o ours.cubin     # any number of builds
//   ONLY="cg single uni" ./grid-shapes ours.cubin [more.cubin ...]
//
// ONLY (default: every shape) keeps the C++ shapes whose names it contains. Shapes run
// at SMs × 128, SMs × 1024 and SMs × 16 × 128 threads; a shape a launch refuses (a
// cluster size the cooperative launch does not take, say) prints 1e18.
#include <cooperative_groups.h>
#include <cuda.h>
#include <string>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>
namespace cg = cooperative_groups;

__device__ __forceinline__ unsigned atom_add_release(unsigned* p, unsigned v) {
  unsigned r; asm volatile("atom.release.gpu.add.u32 %0,[%1],%2;" : "=r"(r) : "l"(p), "r"(v) : "memory"); return r; }
__device__ __forceinline__ unsigned ld_relaxed(unsigned* p) {
  unsigned r; asm volatile("ld.relaxed.gpu.u32 %0,[%1];" : "=r"(r) : "l"(p) : "memory"); return r; }
__device__ __forceinline__ void fence_acquire() { asm volatile("fence.acquire.gpu;" ::: "memory"); }
__device__ __forceinline__ void cluster_sync_aligned() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ unsigned cluster_rank() { unsigned r; asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ unsigned cluster_size() { unsigned r; asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(r)); return r; }

__device__ __forceinline__ void single_sync(unsigned* ctr, unsigned& phase) {
  phase++;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned target = phase * gridDim.x;
    unsigned before = atom_add_release(ctr, 1);
    if (before + 1 != target) while ((int)(ld_relaxed(ctr) - target) < 0) {}
    fence_acquire();
  }
  __syncthreads();
}

// One arrival per cluster: the cluster's hardware barrier gathers its blocks, rank 0's
// thread 0 arrives on the grid counter and polls, the cluster barrier releases the rest.
__device__ __forceinline__ void cluster_sync_grid(unsigned* ctr, unsigned& phase) {
  phase++;
  cluster_sync_aligned();
  if (threadIdx.x == 0 && cluster_rank() == 0) {
    unsigned clusters = gridDim.x / cluster_size();
    unsigned target = phase * clusters;
    unsigned before = atom_add_release(ctr, 1);
    if (before + 1 != target) while ((int)(ld_relaxed(ctr) - target) < 0) {}
    fence_acquire();
  }
  cluster_sync_aligned();
}

// Gather through the cluster barrier, but every block's thread 0 polls (no second cluster
// barrier): rank 0 arrives for the cluster.
__device__ __forceinline__ void cluster_gather_poll_all(unsigned* ctr, unsigned& phase) {
  phase++;
  cluster_sync_aligned();
  if (threadIdx.x == 0) {
    unsigned clusters = gridDim.x / cluster_size();
    unsigned target = phase * clusters;
    bool done = false;
    if (cluster_rank() == 0) { unsigned before = atom_add_release(ctr, 1); done = before + 1 == target; }
    if (!done) while ((int)(ld_relaxed(ctr) - target) < 0) {}
    fence_acquire();
  }
  __syncthreads();
}

__device__ __forceinline__ void single_sync_lin(unsigned* ctr, unsigned& phase) {
  phase++;
  __syncthreads();
  if ((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x == 0) {
    unsigned target = phase * gridDim.x;
    unsigned before = atom_add_release(ctr, 1);
    if (before + 1 != target) while ((int)(ld_relaxed(ctr) - target) < 0) {}
    fence_acquire();
  }
  __syncthreads();
}
__global__ void k_single_lin(unsigned* ctr, int iters, unsigned* sink) {
  unsigned phase = 0; for (int i = 0; i < iters; i++) single_sync_lin(ctr, phase);
  if (phase == 0xffffffff) *sink = phase; }
__device__ __forceinline__ void bar_na() { asm volatile("barrier.sync 0;" ::: "memory"); }
__device__ __forceinline__ void single_sync_na(unsigned* ctr, unsigned& phase) {
  phase++;
  bar_na();
  if (threadIdx.x == 0) {
    unsigned target = phase * gridDim.x;
    unsigned before = atom_add_release(ctr, 1);
    if (before + 1 != target) while ((int)(ld_relaxed(ctr) - target) < 0) {}
    fence_acquire();
  }
  bar_na();
}
__global__ void k_single_na(unsigned* ctr, int iters, unsigned* sink) {
  unsigned phase = 0; for (int i = 0; i < iters; i++) single_sync_na(ctr, phase);
  if (phase == 0xffffffff) *sink = phase; }

template <int FIRST, int SECOND>
__device__ __forceinline__ void bar_sel(int which) {
  int kind = which == 0 ? FIRST : SECOND;
  if (kind == 0) __syncthreads();
  else if (kind == 1) asm volatile("barrier.sync 0;" ::: "memory");
  else { __syncwarp(); asm volatile("barrier.sync 0;" ::: "memory"); }
}
template <int FIRST, int SECOND>
__global__ void k_mix(unsigned* ctr, int iters, unsigned* sink) {
  unsigned phase = 0;
  for (int i = 0; i < iters; i++) {
    phase++;
    bar_sel<FIRST, SECOND>(0);
    if (threadIdx.x == 0) {
      unsigned target = phase * gridDim.x;
      unsigned before = atom_add_release(ctr, 1);
      if (before + 1 != target) while ((int)(ld_relaxed(ctr) - target) < 0) {}
      fence_acquire();
    }
    bar_sel<FIRST, SECOND>(1);
  }
  if (phase == 0xffffffff) *sink = phase; }

// Whole sync in one asm block, non-aligned barriers, warp 0 polls as a whole (uniform
// branches asserted with bra.uni), lane 0 arrives.
__device__ __forceinline__ void uni_sync(unsigned* ctr, unsigned target, unsigned warp0, unsigned lane0) {
  asm volatile("{\n\t"
    ".reg .pred W, L, D;\n\t"
    ".reg .b32 v;\n\t"
    "setp.ne.u32 W, %1, 0;\n\t"
    "setp.ne.u32 L, %2, 0;\n\t"
    "barrier.sync 0;\n\t"
    "@!W bra.uni SKIP;\n\t"
    "@L atom.release.gpu.add.u32 v, [%0], 1;\n\t"
    "shfl.sync.idx.b32 v, v, 0, 31, -1;\n\t"
    "add.u32 v, v, 1;\n\t"
    "setp.eq.u32 D, v, %3;\n\t"
    "@D bra.uni DONE;\n\t"
    "POLL:\n\t"
    "ld.relaxed.gpu.u32 v, [%0];\n\t"
    "shfl.sync.idx.b32 v, v, 0, 31, -1;\n\t"
    "sub.u32 v, v, %3;\n\t"
    "setp.lt.s32 D, v, 0;\n\t"
    "@D bra.uni POLL;\n\t"
    "DONE:\n\t"
    "fence.acquire.gpu;\n\t"
    "SKIP:\n\t"
    "barrier.sync 0;\n\t"
    "}" :: "l"(ctr), "r"(warp0), "r"(lane0), "r"(target) : "memory");
}
__global__ void k_uni(unsigned* ctr, int iters, unsigned* sink) {
  unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned phase = 0;
  for (int i = 0; i < iters; i++) { phase++; uni_sync(ctr, phase * gridDim.x, t < 32, t == 0); }
  if (phase == 0xffffffff) *sink = phase; }
// Same but only lane 0 polls (divergent loop inside the asm).
__device__ __forceinline__ void lane_sync(unsigned* ctr, unsigned target, unsigned lead) {
  asm volatile("{\n\t"
    ".reg .pred L, D;\n\t"
    ".reg .b32 v;\n\t"
    "setp.ne.u32 L, %1, 0;\n\t"
    "barrier.sync 0;\n\t"
    "@!L bra SKIP;\n\t"
    "atom.release.gpu.add.u32 v, [%0], 1;\n\t"
    "add.u32 v, v, 1;\n\t"
    "setp.eq.u32 D, v, %2;\n\t"
    "@D bra DONE;\n\t"
    "POLL:\n\t"
    "ld.relaxed.gpu.u32 v, [%0];\n\t"
    "sub.u32 v, v, %2;\n\t"
    "setp.lt.s32 D, v, 0;\n\t"
    "@D bra POLL;\n\t"
    "DONE:\n\t"
    "fence.acquire.gpu;\n\t"
    "SKIP:\n\t"
    "barrier.sync 0;\n\t"
    "}" :: "l"(ctr), "r"(lead), "r"(target) : "memory");
}
__global__ void k_lane(unsigned* ctr, int iters, unsigned* sink) {
  unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned phase = 0;
  for (int i = 0; i < iters; i++) { phase++; lane_sync(ctr, phase * gridDim.x, t == 0); }
  if (phase == 0xffffffff) *sink = phase; }

__global__ void k_uni_sz(unsigned* ctr, int iters, unsigned* sink) {
  unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned phase = 0;
  for (int i = 0; i < iters; i++) { phase++;
    if (blockDim.x * blockDim.y * blockDim.z >= 32) uni_sync(ctr, phase * gridDim.x, t < 32, t == 0);
    else uni_sync(ctr, phase * gridDim.x + 1, t < 32, t == 0); }
  if (phase == 0xffffffff) *sink = phase; }
__global__ void k_uni_two(unsigned* ctr, int iters, unsigned* sink) {
  unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned phase = 0;
  for (int i = 0; i < iters; i++) { phase++;
    if (gridDim.x * gridDim.y * gridDim.z <= 1535) uni_sync(ctr, phase * gridDim.x, t < 32, t == 0);
    else { __syncthreads(); if (t == 0) { atom_add_release(ctr, 1); while (ld_relaxed(ctr) < phase) {} } __syncthreads(); } }
  if (phase == 0xffffffff) *sink = phase; }
__global__ void k_single(unsigned* ctr, int iters, unsigned* sink) {
  unsigned phase = 0; for (int i = 0; i < iters; i++) single_sync(ctr, phase);
  if (phase == 0xffffffff) *sink = phase; }
__global__ void k_cg(unsigned* ctr, int iters, unsigned* sink) {
  auto g = cg::this_grid(); for (int i = 0; i < iters; i++) g.sync(); }
__global__ void k_cluster(unsigned* ctr, int iters, unsigned* sink) {
  unsigned phase = 0; for (int i = 0; i < iters; i++) cluster_sync_grid(ctr, phase);
  if (phase == 0xffffffff) *sink = phase; }
__global__ void k_cluster_pollall(unsigned* ctr, int iters, unsigned* sink) {
  unsigned phase = 0; for (int i = 0; i < iters; i++) cluster_gather_poll_all(ctr, phase);
  if (phase == 0xffffffff) *sink = phase; }
__global__ void k_clusterbar_only(unsigned* ctr, int iters, unsigned* sink) {
  for (int i = 0; i < iters; i++) cluster_sync_aligned(); }
__global__ void k_bar_only(unsigned* ctr, int iters, unsigned* sink) {
  for (int i = 0; i < iters; i++) __syncthreads(); }

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("ERR %s: %s\n", #x, cudaGetErrorString(e)); return -1.0; } } while (0)

double run(void (*k)(unsigned*, int, unsigned*), int blocks, int threads, int cluster, int iters, unsigned* ctr, unsigned* sink) {
  cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute at[2]; int n = 0;
  cfg.gridDim = blocks; cfg.blockDim = threads;
  at[n].id = cudaLaunchAttributeCooperative; at[n].val.cooperative = 1; n++;
  if (cluster > 1) { at[n].id = cudaLaunchAttributeClusterDimension; at[n].val.clusterDim.x = cluster; at[n].val.clusterDim.y = 1; at[n].val.clusterDim.z = 1; n++; }
  cfg.attrs = at; cfg.numAttrs = n;
  if (cluster > 1) CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  CK(cudaMemset(ctr, 0, 4));
  CK(cudaLaunchKernelEx(&cfg, k, ctr, 10, sink)); CK(cudaDeviceSynchronize());
  CK(cudaMemset(ctr, 0, 4));
  cudaEventRecord(a);
  CK(cudaLaunchKernelEx(&cfg, k, ctr, iters, sink));
  cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float ms; cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a); cudaEventDestroy(b);
  return ms * 1e6 / iters;
}

struct GridParam { unsigned* arrivals; unsigned phase, reserved; };
double run_ptx(CUfunction f, int blocks, int threads, int iters, unsigned* words, unsigned* sink) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  GridParam g = {words, 0, 0}; unsigned it = 10;
  void* args[] = {&g, &it, &sink};
  cudaMemset(words, 0, 1 << 20);
  if (cuLaunchCooperativeKernel(f, blocks, 1, 1, threads, 1, 1, 0, 0, args)) { printf("ptx launch failed\n"); return -1; }
  cudaDeviceSynchronize(); cudaMemset(words, 0, 1 << 20); it = iters;
  cudaEventRecord(a);
  if (cuLaunchCooperativeKernel(f, blocks, 1, 1, threads, 1, 1, 0, 0, args)) { printf("ptx launch failed\n"); return -1; }
  cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a); cudaEventDestroy(b);
  return ms * 1e6 / iters;
}
int main(int argc, char** argv) {
  int iters = 20000;
  unsigned *ctr, *sink; cudaMalloc(&ctr, 1 << 20); cudaMalloc(&sink, 4096);
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s SMs %d\n", p.name, p.multiProcessorCount);
  int sms = p.multiProcessorCount;
  struct V { const char* name; void (*k)(unsigned*, int, unsigned*); int cluster; };
  cudaFree(0);
  std::vector<std::pair<std::string, CUfunction>> ptx;
  for (int i = 1; i < argc; i++) { CUmodule m; CUfunction f;
    if (cuModuleLoad(&m, argv[i]) || cuModuleGetFunction(&f, m, "cost_grid_sync")) { printf("load %s failed\n", argv[i]); return 1; }
    ptx.push_back({argv[i], f}); }
  std::vector<V> vs = {
    {"cg", k_cg, 1}, {"single", k_single, 1}, {"single_lin", k_single_lin, 1}, {"single_na", k_single_na, 1}, {"mix_a_n", k_mix<0,1>, 1}, {"uni", k_uni, 1}, {"uni_sz", k_uni_sz, 1}, {"uni_two", k_uni_two, 1}, {"lane", k_lane, 1}, {"mix_n_a", k_mix<1,0>, 1}, {"mix_w_w", k_mix<2,2>, 1}, {"mix_a_w", k_mix<0,2>, 1},
    {"cluster2", k_cluster, 2}, {"cluster4", k_cluster, 4}, {"cluster8", k_cluster, 8},
    {"pollall2", k_cluster_pollall, 2}, {"pollall4", k_cluster_pollall, 4},
    {"clbar_only2", k_clusterbar_only, 2}, {"clbar_only4", k_clusterbar_only, 4}, {"clbar_only8", k_clusterbar_only, 8},
    {"bar_only", k_bar_only, 1},
  };
  const char* only = getenv("ONLY");
  if (only) { std::vector<V> keep; for (auto& v : vs) if (strstr(only, v.name)) keep.push_back(v); vs = keep; }
  int shapes[][2] = {{sms, 128}, {sms, 1024}, {sms * 16, 128}};
  for (auto& s : shapes) {
    std::vector<double> best(vs.size(), 1e18), pbest(ptx.size(), 1e18);
    for (int round = 0; round < 3; round++) {
      for (size_t i = 0; i < ptx.size(); i++) { double t = run_ptx(ptx[i].second, s[0], s[1], iters, ctr, sink); if (t > 0) pbest[i] = std::min(pbest[i], t); }
      for (size_t i = 0; i < vs.size(); i++) {
        if (s[0] % vs[i].cluster) continue;
        double t = run(vs[i].k, s[0], s[1], vs[i].cluster, iters, ctr, sink);
        if (t > 0) best[i] = std::min(best[i], t);
      }
    }
    for (size_t i = 0; i < ptx.size(); i++) printf("%5d x %4d  %-12s %8.1f ns\n", s[0], s[1], ptx[i].first.c_str(), pbest[i]);
    for (size_t i = 0; i < vs.size(); i++) printf("%5d x %4d  %-12s %8.1f ns\n", s[0], s[1], vs[i].name, best[i]);
  }
}
