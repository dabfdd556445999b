//! Latches: the three latches of a team, and rounds of latches counted down by whole
//! warps and lanes alone (the GPU path in PTX).

use super::*;

/// This file's number in recorded positions (see `SOURCE` in `mod.rs`).
const SOURCE: u32 = 3;

/// The three latches of one team.
#[repr(C)]
struct Latches<S: PtxScope> {
    /// Counted down by 2 by every fourth member and by 1 by the others.
    counted: Latch<S, Gpu>,
    /// `arrive_and_wait(1)` by every member.
    together: Latch<S, Gpu>,
    /// `block_arrive_and_wait` by every block of the team.
    whole_blocks: Latch<S, Gpu>,
}

fn new_latches<S: PtxScope>(ctx: &Ctx) -> Latches<S> {
    let size = ctx.team.size;
    Latches {
        counted: Latch::new(size + size / 4),
        together: Latch::new(size),
        whole_blocks: Latch::new(size),
    }
}

/// Latch checks: (1) before its own count-down a member sees `try_wait() == false`
/// (the latch needs it), member 0 sees timed waits time out after at least the
/// timeout; members count down by 1 or 2, wait with a timed wait, then `try_wait()`
/// holds, `wait()` returns, and two other members' slots (written before their
/// count-down) are visible; a count-down below zero is refused. (2) The same with
/// `arrive_and_wait(1)`. (3) The same with `block_arrive_and_wait` ([`WholeBlock`],
/// one count-down of the block's size by thread 0).
fn check_latches<S: PtxScope>(latches: &Latches<S>, ctx: &Ctx) {
    let team = ctx.team;

    // (1) count_down by 1 or 2, timed wait.
    ctx.write_slot(0, 1);
    check!(ctx, !latches.counted.try_wait());
    if team.me == 0 {
        let start = now();
        check!(ctx, !latches.counted.try_wait_for(SHORT_TIMEOUT));
        check!(ctx, nanos_since(start) >= SHORT_TIMEOUT.as_nanos() as u64);
        let deadline = deadline_in(SHORT_TIMEOUT);
        check!(ctx, !latches.counted.try_wait_until(deadline));
        check!(ctx, now() >= deadline);
    }
    latches
        .counted
        .count_down(if team.me % 4 == 0 { 2 } else { 1 });
    if in_time!(ctx, latches.counted.try_wait_for(ctx.patience())) {
        check!(ctx, latches.counted.try_wait());
        // At zero already: returns at once.
        latches.counted.wait();
        ctx.check_neighbours(0, 1, 1);
        check!(ctx, latches.counted.try_count_down(1).is_err());
    }

    // (2) arrive_and_wait. Buffer 1 is untouched so far.
    ctx.write_slot(1, 2);
    check!(ctx, !latches.together.try_wait());
    if ctx.aborted() {
        latches.together.count_down(1);
        in_time!(ctx, latches.together.try_wait_for(ctx.patience()));
    } else {
        latches.together.arrive_and_wait(1);
    }
    check!(ctx, latches.together.try_wait());
    ctx.check_neighbours(1, 2, 1);

    // (3) One arrival per block. Rewriting buffer 0 is safe: every read of it in (1)
    // came before its reader's arrival in (2), which this thread has seen complete.
    ctx.write_slot(0, 3);
    check!(ctx, !latches.whole_blocks.try_wait());
    if sync_block_any(ctx.aborted()) {
        sync_block();
        if thread_in_block() == 0 {
            latches.whole_blocks.count_down(block_size());
        }
        in_time!(ctx, latches.whole_blocks.try_wait_for(ctx.patience()));
    } else {
        latches.whole_blocks.block_arrive_and_wait();
    }
    check!(ctx, latches.whole_blocks.try_wait());
    ctx.check_neighbours(0, 3, 1);
}

matrix! {
    Latches, new_latches, check_latches,
    "Latch conformance (see `check_latches`):":
    conf_latch_block_shared: Block, block_shared;
    conf_latch_block_global: Block, block_global;
    conf_latch_cluster_shared: Cluster, cluster_shared;
    conf_latch_cluster_global: Cluster, cluster_global;
    conf_latch_device_shared: Device, block_shared;
    conf_latch_device_global: Device, grid_global;
    conf_latch_system_shared: System, block_shared;
    conf_latch_system_global: System, grid_global;
}

/// What thread `thread` of a block counts down by in [`latch_rounds_checked`]: 1 in
/// even warps (a whole warp counts down as one), 1 + lane % 3 in odd warps (the lanes'
/// counts differ, so each counts down alone).
fn latch_share(thread: u32) -> u32 {
    if (thread / 32) % 2 == 0 {
        1
    } else {
        1 + thread % 32 % 3
    }
}

/// `rounds` rounds of `Latch::arrive_and_wait(n)` by every thread of a team (`me` of
/// `size`, the team's first thread `first` in `slots`), a fresh latch per round
/// (three in rotation, the next one rebuilt by the team's thread 0 as in the cost
/// kernels), with [`latch_share`]'s `n` — in the release build the PTX of
/// `sync_device::warp_latch_phase`: a whole warp as one, or lanes alone (differing
/// counts, partial warps). Round `r` writes `r` to the thread's slot of buffer `r % 2`
/// (`slots` holds two buffers of `stride` words) and afterwards checks the slots of
/// two other members.
#[allow(clippy::too_many_arguments)]
fn latch_rounds_checked<S: PtxScope>(
    latches: *mut [Latch<S, Gpu>; 3],
    (me, size, first): (u32, u32, u32),
    total: u32,
    slots: *mut u32,
    stride: u32,
    rounds: u32,
    report: Report,
) {
    let n = latch_share(thread_in_block());
    let others = [(me + 1) % size, (me + size / 2 + 1) % size];
    for round in 1..=rounds {
        let buffer = (round % 2) * stride + first;
        if me == 0 {
            // Rebuilds the next latch: its one word back to `total`, by an atomic
            // exchange (racecheck's process dies on a plain or relaxed store to shared
            // memory that other threads load; docs/sanitizers.md).
            const _: () = assert!(core::mem::size_of::<Latch<Block, Gpu>>() == 4);
            // SAFETY: a latch is its state word; nobody uses the next latch until this
            // thread's count-down in this round (release) has been seen, and nobody
            // uses it since round − 2.
            let word =
                unsafe { Word::from_ptr((&raw mut (*latches)[(round as usize + 1) % 3]).cast()) };
            <Gpu as Backend<S>>::swap(word, total, Ordering::Relaxed);
        }
        // SAFETY: this thread's slot of the buffer.
        unsafe { slots.add((buffer + me) as usize).write_volatile(round) };
        // SAFETY: a live latch of the rotation.
        unsafe { (*latches)[round as usize % 3].arrive_and_wait(n) };
        for other in others {
            // SAFETY: a slot of the buffer, written before its thread's count-down;
            // its next write needs this thread's next count-down.
            let seen = unsafe { slots.add((buffer + other) as usize).read_volatile() };
            check!(report, seen == round);
        }
    }
}

/// [`latch_rounds_checked`] per block, the latches in shared memory: parameters
/// `(slots, rounds, report)`, `slots` two words per thread of the launch.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_latch_rounds_block(
    grid: Grid,
    slots: *mut u32,
    rounds: u32,
    report: *mut u32,
) {
    let threads = block_size();
    let total = (0..threads).map(latch_share).sum();
    let slot = shared!(CONF_LATCH_ROUNDS: [Latch<Block, Gpu>; 3]);
    // SAFETY: every thread of the block runs this once.
    unsafe { slot.init_block([Latch::new(total), Latch::new(total), Latch::new(total)]) };
    let team = (thread_in_block(), threads, block_index() * threads);
    let stride = grid.size();
    latch_rounds_checked(
        slot.as_ptr(),
        team,
        total,
        slots,
        stride,
        rounds,
        Report(report),
    );
}

/// [`latch_rounds_checked`] across the grid, the latches in global memory (`latches`,
/// three zeroed latches' bytes): parameters `(latches, slots, rounds, report)`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_latch_rounds_device(
    mut grid: Grid,
    latches: *mut [Latch<Device, Gpu>; 3],
    slots: *mut u32,
    rounds: u32,
    report: *mut u32,
) {
    let (me, size) = (grid.thread_rank(), grid.size());
    let total = (0..block_size()).map(latch_share).sum::<u32>() * block_count();
    if me == 0 {
        // SAFETY: one thread builds the latches before anyone uses them (the grid
        // barrier below).
        unsafe { latches.write([Latch::new(total), Latch::new(total), Latch::new(total)]) };
    }
    grid.sync();
    latch_rounds_checked(
        latches,
        (me, size, 0),
        total,
        slots,
        size,
        rounds,
        Report(report),
    );
}
