//! A grid barrier in a loop, shaped like the project's own `cost_grid_sync` so that
//! the host can time both in one run (`user-kernels-example bench`).

use scoped_sync::prelude::*;

/// A value no thread's accumulator takes in practice: only then is `sink` written,
/// which keeps the loop from being optimized away.
const NEVER: u32 = 0xDEAD_BEEF;

/// `iterations` grid barriers. Launch: cooperative, the grid barrier first
/// (`KernelArgs::grid_barrier`).
///
/// # Safety
///
/// `sink` is a live device word.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn grid_sync_loop(mut grid: Grid, iterations: u32, sink: *mut u32) {
    let mut acc = 0_u32;
    for i in 0..iterations {
        acc = acc.wrapping_add(thread_in_block() ^ i);
        grid.sync();
    }
    if acc == NEVER {
        // SAFETY: the host passes a live word.
        unsafe { sink.write_volatile(acc) };
    }
}
