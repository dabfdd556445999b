//! Where the calling thread sits in the launch: block, grid, cluster and clock
//! readings, from PTX special registers.

use core::arch::asm;

use crate::ptx::warp::lane;

macro_rules! sreg {
    ($vis:vis $name:ident, $reg:literal) => {
        $vis fn $name() -> u32 {
            let value: u32;
            // SAFETY: reading a special register touches no memory.
            unsafe { asm!(concat!("mov.u32 {v}, ", $reg, ";"), v = out(reg32) value, options(nomem, nostack, pure)) };
            value
        }
    };
}
sreg!(tid_x, "%tid.x");
sreg!(tid_y, "%tid.y");
sreg!(tid_z, "%tid.z");
sreg!(ntid_x, "%ntid.x");
sreg!(ntid_y, "%ntid.y");
sreg!(ntid_z, "%ntid.z");
sreg!(ctaid_x, "%ctaid.x");
sreg!(ctaid_y, "%ctaid.y");
sreg!(ctaid_z, "%ctaid.z");
sreg!(nctaid_x, "%nctaid.x");
sreg!(nctaid_y, "%nctaid.y");
sreg!(nctaid_z, "%nctaid.z");
// The cluster registers exist from sm_90 on.
#[cfg(target_feature = "sm_90")]
mod cluster_registers {
    use core::arch::asm;

    sreg!(pub(super) cluster_ctarank, "%cluster_ctarank");
    sreg!(pub(super) clusterid_x, "%clusterid.x");
    sreg!(pub(super) clusterid_y, "%clusterid.y");
    sreg!(pub(super) clusterid_z, "%clusterid.z");
    sreg!(pub(super) nclusterid_x, "%nclusterid.x");
    sreg!(pub(super) nclusterid_y, "%nclusterid.y");
    sreg!(pub(super) cluster_nctarank, "%cluster_nctarank");
}
#[cfg(target_feature = "sm_90")]
use cluster_registers::*;
sreg!(dynamic_smem_size, "%dynamic_smem_size");

/// The SM's cycle counter (`%clock64`). Not reordered with the code around it (the
/// asm block is a compiler barrier), so two readings bracket what lies between.
pub fn clock64() -> u64 {
    let cycles: u64;
    // SAFETY: reading a special register touches no memory.
    unsafe { asm!("mov.u64 {c}, %clock64;", c = out(reg64) cycles, options(nostack)) };
    cycles
}

/// This block's rank in its thread-block cluster, and the cluster's block count
/// (`(0, 1)` when the launch has no clusters). sm_90+.
#[cfg(target_feature = "sm_90")]
pub fn cluster_rank() -> (u32, u32) {
    (cluster_ctarank(), cluster_nctarank())
}

/// This thread's `(x, y, z)` in its block (`threadIdx`).
pub fn thread_coordinates() -> [u32; 3] {
    [tid_x(), tid_y(), tid_z()]
}

/// This block's `(x, y, z)` in the grid (`blockIdx`).
pub fn block_coordinates() -> [u32; 3] {
    [ctaid_x(), ctaid_y(), ctaid_z()]
}

/// This cluster's index in the grid (x fastest, then y, then z); 0 without clusters.
#[cfg(target_feature = "sm_90")]
pub(crate) fn cluster_index() -> u32 {
    (clusterid_z() * nclusterid_y() + clusterid_y()) * nclusterid_x() + clusterid_x()
}

/// The block's extent `(x, y, z)` (`blockDim`).
pub fn block_dimensions() -> [u32; 3] {
    [ntid_x(), ntid_y(), ntid_z()]
}

/// The grid's extent in blocks `(x, y, z)` (`gridDim`).
pub fn grid_dimensions() -> [u32; 3] {
    [nctaid_x(), nctaid_y(), nctaid_z()]
}

/// Bytes of dynamic shared memory the launch gave each block (`%dynamic_smem_size`).
pub fn dynamic_shared_bytes() -> u32 {
    dynamic_smem_size()
}

/// A number that tells this launch from every other of the program's lifetime
/// (`%gridid`).
pub(crate) fn launch_id() -> u64 {
    let id: u64;
    // SAFETY: reading a special register touches no memory.
    unsafe { asm!("mov.u64 {v}, %gridid;", v = out(reg64) id, options(nomem, nostack, pure)) };
    id
}

/// This thread's index in its block (x fastest, then y, then z).
#[inline]
pub fn thread_in_block() -> u32 {
    (tid_z() * ntid_y() + tid_y()) * ntid_x() + tid_x()
}

/// Whether this thread is its block's first (`thread_in_block() == 0`), tested as "lane
/// 0 of the block's first warp", of which ptxas can tell that one lane at most passes.
/// Behind `thread_in_block() == 0` (a product of registers it cannot see through)
/// ptxas wraps each atomic the branch guards in warp aggregation — vote, leader pick,
/// shuffle of the reply — which a lone arrival pays in latency (docs/measurements.md,
/// `is_block_leader`).
#[inline(always)]
pub(crate) fn is_block_leader() -> bool {
    let first_lane = lane() == 0;
    thread_in_block() < 32 && first_lane
}

/// Threads in a block.
#[inline]
pub fn block_size() -> u32 {
    ntid_x() * ntid_y() * ntid_z()
}

/// This block's index in the grid (x fastest, then y, then z).
#[inline]
pub fn block_index() -> u32 {
    (ctaid_z() * nctaid_y() + ctaid_y()) * nctaid_x() + ctaid_x()
}

/// This thread's index in the (1-D or 3-D) grid, counting blocks in x-y-z order.
pub fn global_thread_index() -> u32 {
    block_index() * block_size() + thread_in_block()
}

/// Blocks in the grid.
pub fn block_count() -> u32 {
    nctaid_x() * nctaid_y() * nctaid_z()
}

/// Threads in the grid.
pub fn global_thread_count() -> u32 {
    block_size() * block_count()
}
