//! [`ClusterBarrier`]: the barrier of a whole thread-block cluster, on the hardware's
//! `barrier.cluster`, and addressing another block's shared memory in the cluster.

use core::arch::asm;

use sync_shared::{Completion, NoCompletion};

use crate::ptx::geometry::{cluster_rank, thread_in_block};

/// `barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`: waits for every
/// thread of the cluster (sm_90; a launch without clusters is a cluster of one block).
#[inline(always)]
pub fn sync_cluster() {
    arrive_release();
    wait_acquire();
}

#[inline(always)]
fn arrive_release() {
    // SAFETY: a cluster barrier arrival; its memory effect is ordering only.
    unsafe { asm!("barrier.cluster.arrive.release;", options(nostack)) };
}

#[inline(always)]
fn wait_acquire() {
    // SAFETY: waits on the cluster barrier; its memory effect is ordering only.
    unsafe { asm!("barrier.cluster.wait.acquire;", options(nostack)) };
}

/// The address of the same block-shared variable in block `rank` of the cluster
/// (`mapa`): a generic address other blocks of the cluster can use, atomics included,
/// while that block runs.
///
/// # Panics
///
/// If `rank` is not a rank of the cluster.
pub fn map_to_block<T>(address: *mut T, rank: u32) -> *mut T {
    let (_, size) = cluster_rank();
    if rank >= size {
        panic!("map_to_block: rank is not a block of the cluster");
    }
    let mapped: u64;
    // SAFETY: computes an address; touches no memory.
    unsafe {
        asm!(
            "mapa.u64 {m}, {a}, {r};",
            m = out(reg64) mapped,
            a = in(reg64) address as u64,
            r = in(reg32) rank,
            options(pure, nomem, nostack),
        )
    };
    mapped as *mut T
}

/// A barrier that every thread of the thread-block cluster takes part in, on the
/// hardware cluster barrier (`barrier.cluster.arrive` / `barrier.cluster.wait`, sm_90):
/// no memory and no atomic operations. Arrival and wait can be split, so independent
/// work overlaps the other blocks' arrival.
///
/// With a completion function, thread 0 of cluster rank 0 runs its copy once per phase
/// between two hardware barriers.
///
/// Counterpart: `cooperative_groups::this_cluster().sync()`,
/// `barrier_arrive()`/`barrier_wait()`.
#[derive(Debug, Default)]
pub struct ClusterBarrier<F: Completion = NoCompletion> {
    completion: F,
}

/// What [`ClusterBarrier::arrive`] returns and [`ClusterBarrier::wait`] takes.
#[must_use = "the arrival must be waited for before the next arrival"]
#[derive(Debug)]
pub struct ClusterArrival(());

impl ClusterBarrier {
    /// A barrier of the whole cluster.
    pub const fn new() -> Self {
        Self {
            completion: NoCompletion,
        }
    }

    /// Arrives (release: this thread's earlier writes become visible to the cluster's
    /// threads once they wait). Wait with [`wait`](Self::wait) before arriving again.
    #[inline(always)]
    pub fn arrive(&self) -> ClusterArrival {
        arrive_release();
        ClusterArrival(())
    }

    /// Arrives without ordering memory (`.relaxed`): for pure execution barriers.
    #[inline(always)]
    pub fn arrive_relaxed(&self) -> ClusterArrival {
        // SAFETY: a cluster barrier arrival; touches no memory.
        unsafe { asm!("barrier.cluster.arrive.relaxed;", options(nostack)) };
        ClusterArrival(())
    }

    /// Waits until every thread of the cluster arrived (acquire).
    #[inline(always)]
    pub fn wait(&self, arrival: ClusterArrival) {
        let ClusterArrival(()) = arrival;
        wait_acquire();
    }
}

impl<F: Completion> ClusterBarrier<F> {
    /// A barrier of the whole cluster whose completion runs in thread 0 of rank 0.
    pub const fn with_completion(completion: F) -> Self {
        Self { completion }
    }

    /// Arrives and waits for every thread of the cluster, running the completion (if
    /// any) once in between. Collective: every thread of the cluster must call it.
    #[inline(always)]
    pub fn arrive_and_wait(&mut self) {
        sync_cluster();
        if !F::IS_NONE {
            if thread_in_block() == 0 && cluster_rank().0 == 0 {
                self.completion.on_phase_complete();
            }
            sync_cluster();
        }
    }
}
