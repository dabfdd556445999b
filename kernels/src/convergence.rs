//! Kernels of `tests/gpu_convergence.rs`: does a warp that enters a blocking operation
//! converged leave it converged? A warp that stays split after a wait runs every later
//! instruction once per part (slower), and meets the next block barrier split, which
//! compute-sanitizer's synccheck reports as "Divergent thread(s) in block" although the
//! non-aligned `barrier.sync` allows it (`docs/sanitizers.md`).

use core::time::Duration;

use sync_device::warp::active_lanes;
use sync_device::{block_size, shared, sync_block, thread_in_block, Gpu, WholeBlock};
use sync_shared::{Barrier, Block, Latch};

use crate::conformance::CountInto;

/// One block: `rounds` times, the block meets at a block barrier, runs operation
/// `operation` (0 to 7, see the match; `tests/gpu_convergence.rs` names them in the
/// same order), and each thread ANDs its `activemask` into a mask; thread `t` writes
/// that mask to `out[t]`, and the completion (where the operation's barrier has one)
/// counts its runs in `out[blockDim]`.
///
/// # Safety
///
/// `out` holds `blockDim + 1` words; one block of whole warps.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn convergence_after_operation(
    out: *mut u32,
    operation: u32,
    rounds: u32,
) {
    let runs = {
        // SAFETY: the caller's contract: the word after the masks.
        unsafe { out.add(block_size() as usize) }
    };
    let plain = shared!(CONVERGENCE_PLAIN: Barrier<Block, Gpu>);
    let counted = shared!(CONVERGENCE_COUNTED: Barrier<Block, Gpu, CountInto>);
    let latch = shared!(CONVERGENCE_LATCH: Latch<Block, Gpu>);
    // SAFETY: every thread of the block runs each once.
    let (plain, counted, latch) = unsafe {
        (
            plain.init_block(Barrier::new(block_size())),
            counted.init_block(Barrier::with_completion(block_size(), CountInto(runs))),
            latch.init_block(Latch::new(block_size())),
        )
    };
    // `init_block` placed each barrier into the hardware form; thread 0 asks, as the
    // kernel did when the first operation converted a barrier (a conversion racing
    // the first arrivals ended racecheck's process: `docs/sanitizers.md`).
    if thread_in_block() == 0 {
        let _ = (plain.uses_hardware(), counted.uses_hardware());
    }
    let mut mask = u32::MAX;
    for round in 0..rounds {
        sync_block();
        match operation {
            0 => plain.arrive_and_wait(),
            1 => counted.arrive_and_wait(),
            2 => counted.wait(counted.arrive(1)),
            3 => {
                let _token = counted.arrive(1);
                counted.wait_parity(round % 2 == 1);
            }
            4 => {
                let token = counted.arrive(1);
                let _ = counted.try_wait_for(&token, Duration::from_secs(10));
            }
            5 => plain.wait(plain.arrive(1)),
            // A latch opens once: the first round counts down and waits, the later
            // ones find it open.
            6 if round == 0 => latch.arrive_and_wait(1),
            6 => latch.wait(),
            _ => counted.block_arrive_and_wait(),
        }
        mask &= active_lanes();
    }
    // SAFETY: the caller's contract.
    unsafe { out.add(thread_in_block() as usize).write_volatile(mask) };
}
