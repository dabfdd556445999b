//! Kernels that report the shape of their launch (run by `tests/gpu_runtime.rs`): 3-D
//! grids and blocks, and dynamic shared memory.

use sync_device::{
    block_coordinates, block_dimensions, dynamic_shared, dynamic_shared_bytes, global_thread_index,
    grid_dimensions, sync_block, thread_coordinates, thread_in_block,
};

/// Each thread writes, at its global index, its block and thread coordinates packed
/// into one word (4 bits each, x in the low bits: block z, y, x, then thread z, y, x),
/// and thread 0 of block 0 writes the block and grid extents after the last thread's
/// word (six words).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn launch_shape_report(out: *mut u32, threads: u32) {
    let [tx, ty, tz] = thread_coordinates();
    let [bx, by, bz] = block_coordinates();
    let packed = tx | ty << 4 | tz << 8 | bx << 12 | by << 16 | bz << 20;
    // SAFETY: the host passes `threads + 6` words; every index is below `threads`.
    unsafe { *out.add(global_thread_index() as usize) = packed };
    if global_thread_index() == 0 {
        let extents = block_dimensions().into_iter().chain(grid_dimensions());
        for (i, extent) in extents.enumerate() {
            // SAFETY: the six words after the threads' ones.
            unsafe { *out.add(threads as usize + i) = extent };
        }
    }
}

/// Each thread writes its index into the block's dynamic shared memory (as many `u32`
/// as the launch gave: threads stride over them), the block meets, and thread 0 writes
/// `[sum of every word, dynamic bytes]` for its block into `out[2 × block ..]`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn dynamic_shared_sum(out: *mut u32) {
    let words = dynamic_shared_bytes() / 4;
    let shared = dynamic_shared::<u32>();
    let threads = block_dimensions().into_iter().product::<u32>();
    let mut i = thread_in_block();
    while i < words {
        // SAFETY: below the launch's dynamic shared memory, one writer per word.
        unsafe { shared.add(i as usize).write_volatile(i) };
        i += threads;
    }
    sync_block();
    if thread_in_block() == 0 {
        let mut sum = 0_u32;
        for i in 0..words {
            // SAFETY: written before the block barrier.
            sum = sum.wrapping_add(unsafe { shared.add(i as usize).read_volatile() });
        }
        let block = block_coordinates()[0] as usize;
        // SAFETY: the host passes two words per block.
        unsafe {
            *out.add(2 * block) = sum;
            *out.add(2 * block + 1) = dynamic_shared_bytes();
        }
    }
}
