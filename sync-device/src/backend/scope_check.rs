//! Scope-misuse detection, in the checked build of the kernels only (debug assertions
//! on: `sync_host::cuda::KernelBuild::Checked`); the release build compiles it out.
//!
//! An operation at `Block` scope synchronizes only with threads of the same block, so
//! by the CUDA memory model ("Data Races") a `Block`-scope object that threads of two
//! blocks use is a data race: its atomics are not morally strong with respect to each
//! other, and on the hardware it works most of the time and fails rarely. Likewise a
//! `Cluster`-scope object used by two clusters. The checked build makes the mistake
//! loud: every operation of the [`Gpu`](crate::Gpu) backend on a `Block`- or
//! `Cluster`-scope word first checks that the word belongs to the caller's block
//! (cluster), and if not prints what happened (the object's address and scope, the
//! group that used it first, the offending thread) and traps.
//!
//! Who owns a word:
//! - In shared memory, the block whose shared memory it is: a `Block`-scope word in
//!   another block's shared memory (reached through the cluster window) is misused at
//!   once; a `Cluster`-scope word there is fine, the window spans one cluster.
//! - In global memory, the first block (cluster) of a launch to touch it, for the rest
//!   of that launch. A table in global memory remembers owners by address; each entry
//!   is tagged with the launch (`%gridid`), so the next launch starts afresh, and an
//!   entry of an earlier launch is free for reuse. Entries are 16 bytes, claimed and
//!   replaced with one 128-bit compare-and-swap, so no half-written entry is ever seen.
//!
//! Limits: the table has [`SLOTS`] entries searched [`PROBES`] deep from the address's
//! hash; a word that finds none free goes unchecked (a missed report, never a false
//! one). A word passed from one block to another within a launch is reported even if a
//! grid-wide barrier separates the two uses: legal, but a wider scope says it better.
//! `Thread` scope is not checked.

use sync_shared::Scope;
#[cfg(all(debug_assertions, target_feature = "sm_90"))]
use sync_shared::{Block, Cluster};

/// Checks that the calling thread may use `word` at scope `S` (see the module docs);
/// nothing in the release build.
#[inline(always)]
pub(crate) fn check<S: Scope>(word: *const u32) {
    #[cfg(all(debug_assertions, target_feature = "sm_90"))]
    {
        if S::LEVEL == Block::LEVEL {
            checked::check(word, checked::Group::Block);
        } else if S::LEVEL == Cluster::LEVEL {
            checked::check(word, checked::Group::Cluster);
        }
    }
    #[cfg(not(all(debug_assertions, target_feature = "sm_90")))]
    let _ = word;
}

// sm_90: a 128-bit CAS claims an owner entry, and shared addresses may be another
// block's (the cluster window); before sm_90 the checked build checks preconditions only.
#[cfg(all(debug_assertions, target_feature = "sm_90"))]
mod checked {
    use core::arch::asm;
    use core::cell::UnsafeCell;

    use sync_shared::vprintf::print;

    use crate::ptx::device_print::{trap, Whereabouts};
    use crate::ptx::geometry::{block_index, cluster_index, cluster_rank, launch_id};

    /// Entries of the owner table (a power of two).
    const SLOTS: usize = 4096;
    /// Entries tried per address before giving up.
    const PROBES: usize = 16;

    /// The group of threads a scope's objects belong to.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(super) enum Group {
        Block,
        Cluster,
    }

    /// One owner entry: the word's address and `launch << 32 | (group index + 1)`;
    /// all zero when free (an owner is never 0).
    #[repr(C, align(16))]
    struct Slot(UnsafeCell<[u64; 2]>);

    struct Table([Slot; SLOTS]);

    // SAFETY: the slots are only reached through 128-bit atomics (`cas_entry`).
    unsafe impl Sync for Table {}

    static OWNERS: Table = Table([const { Slot(UnsafeCell::new([0; 2])) }; SLOTS]);

    /// `atom.relaxed.gpu.cas.b128` on `slot`: replaces `expected` by `new`, returns
    /// what the slot held.
    fn cas_entry(slot: &Slot, expected: [u64; 2], new: [u64; 2]) -> [u64; 2] {
        let (low, high): (u64, u64);
        // SAFETY: `slot` is a live, 16-byte aligned entry of `OWNERS`, reached only by
        // this atomic; the registers are declared in the asm's own scope.
        unsafe {
            asm!(
                "{{",
                ".reg .b128 sc_expected, sc_new, sc_old;",
                "mov.b128 sc_expected, {{{e0}, {e1}}};",
                "mov.b128 sc_new, {{{n0}, {n1}}};",
                "atom.relaxed.gpu.cas.b128 sc_old, [{slot}], sc_expected, sc_new;",
                "mov.b128 {{{o0}, {o1}}}, sc_old;",
                "}}",
                slot = in(reg64) slot.0.get(),
                e0 = in(reg64) expected[0],
                e1 = in(reg64) expected[1],
                n0 = in(reg64) new[0],
                n1 = in(reg64) new[1],
                o0 = out(reg64) low,
                o1 = out(reg64) high,
                options(nostack),
            )
        };
        [low, high]
    }

    /// Whether `address` is in the calling block's shared memory (through either
    /// window), in another block's (with that block's rank in the cluster), or
    /// elsewhere.
    enum Space {
        OwnShared,
        OtherShared(u32),
        ThreadLocal,
        Global,
    }

    fn space(address: u64) -> Space {
        let (own, cluster_window, local, rank): (u32, u32, u32, u32);
        // SAFETY: classifies an address; touches no memory. `getctarank` runs only on
        // cluster-window addresses, for which it is defined.
        unsafe {
            asm!(
                "{{",
                ".reg .pred sc_p;",
                "isspacep.shared::cta sc_p, {a};",
                "selp.u32 {own}, 1, 0, sc_p;",
                "isspacep.shared::cluster sc_p, {a};",
                "selp.u32 {window}, 1, 0, sc_p;",
                "isspacep.local sc_p, {a};",
                "selp.u32 {local}, 1, 0, sc_p;",
                "mov.u32 {rank}, 0;",
                "isspacep.shared::cluster sc_p, {a};",
                "@sc_p getctarank.u64 {rank}, {a};",
                "}}",
                a = in(reg64) address,
                own = out(reg32) own,
                window = out(reg32) cluster_window,
                local = out(reg32) local,
                rank = out(reg32) rank,
                options(pure, nomem, nostack),
            )
        };
        if own != 0 || (cluster_window != 0 && rank == cluster_rank().0) {
            Space::OwnShared
        } else if cluster_window != 0 {
            Space::OtherShared(rank)
        } else if local != 0 {
            Space::ThreadLocal
        } else {
            Space::Global
        }
    }

    /// Out of line: the checked build calls it before every scoped atomic.
    #[inline(never)]
    pub(super) fn check(word: *const u32, group: Group) {
        let address = word as u64;
        match space(address) {
            Space::OwnShared | Space::ThreadLocal => {}
            Space::OtherShared(rank) if group == Group::Block => misused_shared(address, rank),
            Space::OtherShared(_) => {}
            Space::Global => check_global(address, group),
        }
    }

    fn check_global(address: u64, group: Group) {
        let index = match group {
            Group::Block => block_index(),
            Group::Cluster => cluster_index(),
        };
        let launch = launch_id() as u32;
        let mine = (u64::from(launch) << 32) | (u64::from(index) + 1);
        // Fibonacci hashing of the word index.
        let start = ((address >> 2).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize;
        for probe in 0..PROBES {
            let slot = &OWNERS.0[(start + probe) % SLOTS];
            let mut seen = cas_entry(slot, [0, 0], [address, mine]);
            loop {
                let [holder, owner] = seen;
                if holder == 0 {
                    return; // claimed a free entry
                }
                let this_launch = (owner >> 32) as u32 == launch;
                if holder == address && owner == mine {
                    return;
                }
                if holder == address && this_launch {
                    misused_global(address, group, (owner as u32) - 1);
                }
                if holder != address && this_launch {
                    break; // another word's entry: try the next one
                }
                // An entry of an earlier launch (this word's or another's): take it.
                let previous = cas_entry(slot, seen, [address, mine]);
                if previous == seen {
                    return;
                }
                seen = previous;
            }
        }
    }

    #[cold]
    fn misused_global(address: u64, group: Group, first: u32) -> ! {
        match group {
            Group::Block => {
                #[repr(C)]
                struct Arguments {
                    whereabouts: Whereabouts,
                    address: u64,
                    first: u32,
                }
                print(
                    b"scoped-sync: scope misuse: thread (%u, %u, %u) of block (%u, %u, %u) used a Block-scope object at 0x%llx that block %u (linear index) of this launch used first; Block scope synchronizes the threads of one block only (share it across blocks at Device scope)\n\0",
                    &Arguments {
                        whereabouts: Whereabouts::here(),
                        address,
                        first,
                    },
                );
            }
            Group::Cluster => {
                #[repr(C)]
                struct Arguments {
                    whereabouts: Whereabouts,
                    cluster: u32,
                    address: u64,
                    first: u32,
                }
                print(
                    b"scoped-sync: scope misuse: thread (%u, %u, %u) of block (%u, %u, %u) in cluster %u used a Cluster-scope object at 0x%llx that cluster %u of this launch used first; Cluster scope synchronizes the threads of one cluster only (share it across clusters at Device scope)\n\0",
                    &Arguments {
                        whereabouts: Whereabouts::here(),
                        cluster: cluster_index(),
                        address,
                        first,
                    },
                );
            }
        }
        trap()
    }

    #[cold]
    fn misused_shared(address: u64, owner_rank: u32) -> ! {
        #[repr(C)]
        struct Arguments {
            whereabouts: Whereabouts,
            rank: u32,
            address: u64,
            owner_rank: u32,
        }
        print(
            b"scoped-sync: scope misuse: thread (%u, %u, %u) of block (%u, %u, %u) (rank %u in its cluster) used a Block-scope object at 0x%llx in the shared memory of block rank %u of its cluster; Block scope synchronizes the threads of one block only (use Cluster scope)\n\0",
            &Arguments {
                whereabouts: Whereabouts::here(),
                rank: cluster_rank().0,
                address,
                owner_rank,
            },
        );
        trap()
    }
}
