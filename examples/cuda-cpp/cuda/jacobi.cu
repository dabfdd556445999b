// A Jacobi solver in CUDA C++ whose sweeps are separated by scoped-sync's grid barrier
// (a cooperative launch; the host's `KernelArgs::grid_barrier()` fills in the `grid`).
#include <scoped_sync.cuh>

// `steps` sweeps `b[i] = (a[i-1] + a[i+1]) / 2` over the interior of `n` cells,
// ping-ponging between `a` and `b`.
extern "C" __global__ void jacobi_1d(scoped_sync::grid grid, float* a, float* b, unsigned int n,
                                     unsigned int steps) {
    const unsigned int threads = gridDim.x * blockDim.x;
    for (unsigned int step = 0; step < steps; ++step) {
        for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x + 1; i + 1 < n; i += threads) {
            // Rounded step by step, as the CPU's check computes it (no fused multiply-add).
            b[i] = __fmul_rn(0.5f, __fadd_rn(a[i - 1], a[i + 1]));
        }
        grid.sync();
        float* swap = a;
        a = b;
        b = swap;
    }
}
