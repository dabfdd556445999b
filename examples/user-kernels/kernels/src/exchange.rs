//! Threads of a block exchange values through shared memory behind a block barrier
//! (the hardware `mbarrier`), and the two blocks of a cluster read each other's shared
//! memory behind a cluster barrier.

use scoped_sync::prelude::*;

/// Threads per block at most (the shared array's length).
pub const MAX_BLOCK: usize = 1024;

/// The value thread `thread` of block `block` writes in round `round`. The host
/// computes the same.
pub fn value(block: u32, thread: u32, round: u32) -> u32 {
    block.wrapping_mul(1_000_003) ^ thread.wrapping_mul(7919) ^ round.wrapping_mul(104_729)
}

/// What a thread accumulates from one round: its block neighbour's value and its
/// partner block's value for the same thread. The host computes the same.
pub fn mix(acc: u32, neighbour: u32, partner: u32) -> u32 {
    acc.wrapping_mul(31)
        .wrapping_add(neighbour ^ partner.rotate_left(7))
}

/// `rounds` rounds; in each, thread `t` of block `b` writes [`value`]`(b, t, round)`
/// into its block's shared array, reads thread `(t + 1) % n`'s value after the block
/// barrier and the partner block's (`b ^ 1`) value of thread `t` after the cluster
/// barrier, and folds both into its result with [`mix`]; at the end each thread writes
/// its result to `out[global index]`.
///
/// Launch: clusters of 2 blocks in x (`LaunchConfig::cluster`), a 1-D grid of an even
/// number of blocks of at most [`MAX_BLOCK`] threads. The host recomputes every result.
///
/// # Safety
///
/// `out` has a word per thread of the grid.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn block_and_cluster_exchange(out: *mut u32, rounds: u32) {
    let values = shared!(EXCHANGE_VALUES: [u32; MAX_BLOCK]);
    let phase = shared!(EXCHANGE_PHASE: SharedBarrier);
    // SAFETY: every thread of the block calls it once, before any use.
    let block_barrier = unsafe { SharedBarrier::init(&phase, block_size()) };
    let cluster = ClusterBarrier::new();
    let (t, n) = (thread_in_block(), block_size());
    let (rank, _) = cluster_rank();
    let block = block_index();
    let mine = values.as_ptr().cast::<u32>();
    let partners = map_to_block(values.as_ptr(), rank ^ 1).cast::<u32>();
    let mut acc = 0_u32;
    for round in 0..rounds {
        // SAFETY: one slot per thread, `t < n <= MAX_BLOCK`; no one reads it until
        // the barriers below.
        unsafe { mine.add(t as usize).write_volatile(value(block, t, round)) };
        // The block's writes of this round are visible to the block.
        block_barrier.arrive_and_wait();
        // SAFETY: written by thread `(t + 1) % n` before the block barrier.
        let neighbour = unsafe { mine.add(((t + 1) % n) as usize).read_volatile() };
        // The cluster's writes of this round are visible to the cluster.
        cluster.wait(cluster.arrive());
        // SAFETY: the partner block's slot `t`, written before the cluster barrier; the
        // partner cannot leave or overwrite it before the second barrier.
        let partner = unsafe { partners.add(t as usize).read_volatile() };
        acc = mix(acc, neighbour, partner);
        // Every read of this round is done before the next round's writes (and before
        // a block exits while its partner still reads its shared memory).
        cluster.wait(cluster.arrive());
    }
    // SAFETY: one word per thread of the grid.
    unsafe { *out.add(global_thread_index() as usize) = acc };
}
