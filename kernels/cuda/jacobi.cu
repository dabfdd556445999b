// A grid-barrier Jacobi solver in CUDA C++ through `scoped_sync.cuh`: `sweeps` sweeps of
// a 1-D three-point stencil over `cells` cells, ping-ponging between `a` and `b`, the
// sweeps separated by the library's grid barrier. `tests/gpu_cuda_cpp.rs` compares the
// result with the same sweeps on the CPU bit for bit, so the arithmetic is rounded step
// by step (`__fmul_rn`, `__fadd_rn`: no fused multiply-add the CPU does not do).
#include <scoped_sync.cuh>

namespace ss = scoped_sync;

extern "C" __global__ void cpp_jacobi(ss_grid grid_parameter, float* a, float* b,
                                      unsigned int cells, unsigned int sweeps) {
    auto& grid = ss::grid::from(grid_parameter);
    const unsigned int total = gridDim.x * blockDim.x;
    const unsigned int first = blockIdx.x * blockDim.x + threadIdx.x;
    float* current = a;
    float* next = b;
    for (unsigned int sweep = 0; sweep < sweeps; ++sweep) {
        for (unsigned int i = first; i < cells; i += total) {
            float left = i == 0 ? current[i] : current[i - 1];
            float right = i + 1 == cells ? current[i] : current[i + 1];
            float sum = __fadd_rn(__fmul_rn(0.25f, left), __fmul_rn(0.5f, current[i]));
            next[i] = __fadd_rn(sum, __fmul_rn(0.25f, right));
        }
        // Every cell of this sweep is written before any thread reads it in the next.
        grid.sync();
        float* swap = current;
        current = next;
        next = swap;
    }
}
