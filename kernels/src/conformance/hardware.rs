//! Hardware barriers: `BlockBarrier`, `ClusterBarrier`, `Grid` (`SharedBarrier` runs the
//! generic barrier's phase loop, in `barrier`).

use super::*;

/// This file's number in recorded positions (see `SOURCE` in `mod.rs`).
const SOURCE: u32 = 2;

/// [`BlockBarrier::with_completion`]: `rounds` phases; each thread writes its slot,
/// meets, and checks two other threads' slots and that the completion has run once
/// per phase (counter 0 of the block, which ends at `rounds`). Same signature as the
/// matrix kernels.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_block_barrier_completion(
    objects: *mut u8,
    slots: *mut u32,
    counters: *mut u32,
    report: *mut u32,
    rounds: u32,
) {
    let _ = objects;
    // SAFETY: the host sizes the buffers per block.
    let ctx = unsafe { Ctx::new(Team::block(), slots, counters, report, rounds) };
    let mut barrier = BlockBarrier::with_completion(CountInto(ctx.counter_ptr(0)));
    for phase in 1..=rounds {
        let buffer = phase % 2;
        ctx.write_slot(buffer, phase);
        barrier.arrive_and_wait();
        // SAFETY: a live counter word, written by the completion before the barrier
        // released this thread.
        check!(ctx, unsafe { ctx.counter_ptr(0).read_volatile() } == phase);
        ctx.check_neighbours(buffer, phase, 1);
    }
}

/// The value block `rank` writes for thread `thread` in `phase` of the cluster test.
fn cluster_value(rank: u32, thread: u32, phase: u32) -> u32 {
    (phase << 12) | (rank << 9) | thread
}

/// [`ClusterBarrier`] over distributed shared memory, any cluster size: in each of
/// `phases` phases every thread writes a value naming (rank, thread, phase) into its
/// block's shared buffer `phase % 2`, the cluster meets (split `arrive`/`wait`,
/// `arrive_and_wait`, or `arrive_and_wait` of a barrier with a completion, in turn),
/// and each thread reads its counterpart's value in two other blocks through
/// [`map_to_block`]. The completion counts into `counters[cluster]`, which every thread
/// checks (it ends at `(phases + 1) / 3`). Blocks of at most [`CLUSTER_BLOCK_MAX`]
/// threads. Launched in clusters, parameters `(counters, report,
/// phases)`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_cluster_barrier(
    counters: *mut u32,
    report: *mut u32,
    phases: u32,
) {
    let report = Report(report);
    if block_size() as usize > CLUSTER_BLOCK_MAX {
        check!(report, false);
        return;
    }
    let (rank, blocks) = cluster_rank();
    let thread = thread_in_block();
    // SAFETY: one counter per cluster (the host allocates grid / cluster size words).
    let completed = unsafe { counters.add((block_index() / blocks) as usize) };
    let slot = shared!(CONF_CLUSTER_BARRIER_VALUES: [[u32; CLUSTER_BLOCK_MAX]; 2]);
    let values = slot.as_ptr().cast::<u32>();
    let mut plain = ClusterBarrier::new();
    let mut counting = ClusterBarrier::with_completion(CountInto(completed));
    for phase in 1..=phases {
        let buffer = (phase % 2) as usize * CLUSTER_BLOCK_MAX;
        // SAFETY: this thread's element of this block's shared buffer.
        unsafe {
            values
                .add(buffer + thread as usize)
                .write_volatile(cluster_value(rank, thread, phase))
        };
        match phase % 3 {
            0 => {
                let arrival = plain.arrive();
                plain.wait(arrival);
            }
            1 => plain.arrive_and_wait(),
            _ => counting.arrive_and_wait(),
        }
        for peer in [(rank + 1) % blocks, (rank + blocks / 2) % blocks] {
            // SAFETY: the same element in block `peer` of the cluster, which runs until
            // the final cluster barrier below.
            let seen =
                unsafe { map_to_block(values.add(buffer + thread as usize), peer).read_volatile() };
            check!(report, seen == cluster_value(peer, thread, phase));
        }
        // SAFETY: the completion's write came before the barrier released us, and the
        // next one needs this thread's next arrival.
        check!(
            report,
            unsafe { completed.read_volatile() } == (phase + 1) / 3
        );
    }
    // Blocks read each other's shared memory up to their last phase: none may exit
    // before every read is done.
    ClusterBarrier::new().arrive_and_wait();
}

/// [`Grid::sync`] at scale: `phases` grid barriers; in phase `p` every thread writes `p`
/// to its slot of buffer `p % 2` (`slots` holds two buffers of one word per thread),
/// syncs, then checks `grid.phase() == p` and the slots of the same thread in the next
/// block and of the thread half the grid away. Launched with its grid barrier first,
/// then `(slots, phases, report)`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_grid_sync(
    mut grid: Grid,
    slots: *mut u32,
    phases: u32,
    report: *mut u32,
) {
    let report = Report(report);
    let (me, size) = (grid.thread_rank(), grid.size());
    let others = [(me + block_size()) % size, (me + size / 2 + 1) % size];
    for phase in 1..=phases {
        let buffer = ((phase % 2) * size) as usize;
        // SAFETY: this thread's slot of the buffer.
        unsafe { slots.add(buffer + me as usize).write_volatile(phase) };
        grid.sync();
        check!(report, grid.phase() == phase);
        for other in others {
            // SAFETY: a slot of the buffer; its phase-`p` write was ordered before this
            // read by the grid barrier, and its next write needs this thread's next
            // arrival.
            let seen = unsafe { slots.add(buffer + other as usize).read_volatile() };
            check!(report, seen == phase);
        }
    }
}
