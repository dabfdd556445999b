//! Jacobi iteration of the 1-D heat equation, with a grid barrier between steps.

use scoped_sync::prelude::*;

/// `steps` Jacobi sweeps over `n` cells: every interior cell `i` becomes the mean of
/// its neighbours, `0.5 * (src[i - 1] + src[i + 1])`; cells 0 and `n - 1` are fixed
/// boundaries (both buffers must hold them). Step `k` reads `a` and writes `b` when `k`
/// is even, and the other way round when odd, so after an even number of steps the
/// result is in `a`, after an odd number in `b`.
///
/// Launch: cooperative, with the [`Grid`] filled in by the launch
/// (`KernelArgs::grid_barrier`); any 1-D shape whose blocks are all co-resident
/// (threads stride over the cells). The host checks every cell against the same sweeps
/// on the CPU: the same `f32` operations in the same order, so the results are equal to
/// the bit, and a missing or broken barrier (a thread reading a neighbour from the
/// wrong step) shows as a mismatch.
///
/// # Safety
///
/// `a` and `b` point at `n` cells each, `n >= 2`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn jacobi_1d(
    mut grid: Grid,
    a: *mut f32,
    b: *mut f32,
    n: u32,
    steps: u32,
) {
    let (mut src, mut dst) = (a, b);
    for _ in 0..steps {
        let mut i = grid.thread_rank() + 1;
        while i + 1 < n {
            let cell = i as usize;
            // SAFETY: 0 < cell < n - 1, inside both buffers; in this step only this
            // thread writes `dst[cell]`, and nobody writes `src`.
            unsafe { *dst.add(cell) = 0.5 * (*src.add(cell - 1) + *src.add(cell + 1)) };
            i += grid.size();
        }
        // Every write of this step is visible to every thread after it, and every
        // read of this step is done before the next step overwrites `src`.
        grid.sync();
        core::mem::swap(&mut src, &mut dst);
    }
}
