#![no_std]
#![feature(abi_gpu_kernel)]
#![feature(asm_experimental_arch)] // `shared!` (block-shared variables) is inline asm
#![allow(improper_gpu_kernel_arg)]

use scoped_sync::prelude::*;

scoped_sync::panic_handler!(); // trap; the checked build prints where first

/// One Jacobi sweep per step; `Grid::sync` between steps.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn relax(
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
            let c = i as usize;
            // SAFETY: 0 < c < n - 1, inside both buffers of n cells.
            unsafe { *dst.add(c) = 0.5 * (*src.add(c - 1) + *src.add(c + 1)) };
            i += grid.size();
        }
        grid.sync(); // this step's writes are visible to every thread
        core::mem::swap(&mut src, &mut dst);
    }
}

// The persistent kernel of the README's section 3.
mod worker;

// The device examples of the library's rustdoc.
mod crate_docs;
