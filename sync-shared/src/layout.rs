//! The byte layout every backend's objects must have, so that an object created by one
//! side (host) can be used through the other side's type (device). Each backend crate
//! asserts its aliases against these at compile time.

/// Size and alignment of a type, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `size_of`.
    pub size: usize,
    /// `align_of`.
    pub align: usize,
}

/// `Barrier` without completion function: state word, expected word, hardware word.
pub const BARRIER: Layout = Layout { size: 16, align: 8 };
/// `Latch`: one word.
pub const LATCH: Layout = Layout { size: 4, align: 4 };
/// `CountingSemaphore` (and `BinarySemaphore`): counter word, waiter word.
pub const COUNTING_SEMAPHORE: Layout = Layout { size: 8, align: 4 };
/// `FairSemaphore` on a 64-bit target: state word, queue head, queue tail.
pub const FAIR_SEMAPHORE: Layout = Layout { size: 24, align: 8 };
/// `StopSource` on a 64-bit target: state word, requester, list head, running node.
pub const STOP_SOURCE: Layout = Layout { size: 32, align: 8 };

/// `bus::HandoffSemaphore`: released (bus), reserved and taken lines.
pub const HANDOFF_SEMAPHORE: Layout = Layout {
    size: 192,
    align: 64,
};
/// `bus::HandoffChannel`: both released counts on one line, then four side lines.
pub const HANDOFF_CHANNEL: Layout = Layout {
    size: 320,
    align: 64,
};
/// `bus::BusLatch`: both counts on one line, two side lines, the expected count.
pub const BUS_LATCH: Layout = Layout {
    size: 256,
    align: 64,
};
/// `bus::BusBarrier`: both counts on one line, two side lines, the parties.
pub const BUS_BARRIER: Layout = Layout {
    size: 256,
    align: 64,
};
/// `bus::BusStopSource`: both request words on one line, two claim lines.
pub const BUS_STOP_SOURCE: Layout = Layout {
    size: 192,
    align: 64,
};

/// `sync_device::MultiGrid`, the kernel parameter of a multi-GPU launch on a 64-bit
/// target: `multi_grid::MAX_RANKS` addresses and the phase, then rank, GPU count and
/// two flags, then the host parties' two addresses, their count and the crossing.
pub const MULTI_GRID: Layout = Layout {
    size: 112,
    align: 8,
};

/// `sync_device::Grid`, the kernel parameter of a cooperative launch: the barrier's
/// words' address, the thread's phase, a reserved word.
pub const GRID: Layout = Layout { size: 16, align: 8 };

/// `WaiterSlot` on a 64-bit target: a fair-semaphore waiter's queue node.
pub const WAITER_SLOT: Layout = Layout { size: 24, align: 8 };

/// The device library's storage for a `Barrier`'s arrival token (C ABI).
pub const ARRIVAL_TOKEN_STORAGE: Layout = Layout { size: 32, align: 8 };
/// The device library's `Barrier` with a C completion function (function, context).
pub const BARRIER_WITH_COMPLETION: Layout = Layout { size: 32, align: 8 };
/// The device library's storage for a registered C stop callback.
pub const STOP_CALLBACK: Layout = Layout {
    size: 64,
    align: 16,
};
/// The device library's storage for a handoff `Producer` or `Consumer`.
pub const HANDOFF_ENDPOINT: Layout = Layout { size: 32, align: 8 };
/// Where a handoff `Producer` keeps the address of its published count and its own
/// count, in [`HANDOFF_ENDPOINT`] storage: the C++ header's `handoff_producer::release`
/// publishes inline from them (sync-device's C ABI asserts both).
pub mod handoff_producer {
    /// The offset of the address of the published count (a `u64` in mapped or device
    /// memory, stored with `st.release.sys`).
    pub const PUBLISHED: usize = 0;
    /// The offset of the producer's cumulative count (`u64`).
    pub const COUNT: usize = 16;
    /// The offset of the PE whose copy the consumer polls, plus 1 (`u64`); 0 for an
    /// object that does not cross PEs. The inline release stores only where it is 0.
    pub const READING_PE: usize = 24;
}
/// Where a handoff `Consumer` keeps the address of the published count it polls and
/// the units it took, in [`HANDOFF_ENDPOINT`] storage: the C++ header's
/// `handoff_consumer` polls inline from them (sync-device's C ABI asserts both).
pub mod handoff_consumer {
    /// The offset of the address of the published count (a `u64` in mapped or device
    /// memory, read with `ld.acquire.sys`).
    pub const PUBLISHED: usize = 0;
    /// The offset of the consumer's cumulative count of units taken (`u64`).
    pub const TAKEN: usize = 24;
    /// Looks at the published count the header's `acquire` takes inline before it
    /// calls the library's wait: no more than the library's wait polls between looks
    /// at its deadline and stop source, so a stop or a timeout is seen as late as
    /// before by at most that many polls.
    pub const INLINE_POLLS: u32 = 4;
}
/// The device library's storage for a `BusArrivalToken`.
pub const BUS_ARRIVAL_TOKEN: Layout = Layout { size: 8, align: 8 };

/// The layout of `T`.
pub const fn of<T>() -> Layout {
    Layout {
        size: core::mem::size_of::<T>(),
        align: core::mem::align_of::<T>(),
    }
}

/// Asserts at compile time that `$ty` has layout `$expected` (a [`Layout`] constant).
#[macro_export]
macro_rules! assert_layout {
    ($ty:ty, $expected:expr) => {
        const _: () = {
            let actual = $crate::layout::of::<$ty>();
            let expected: $crate::layout::Layout = $expected;
            assert!(
                actual.size == expected.size && actual.align == expected.align,
                concat!(
                    "layout of ",
                    stringify!($ty),
                    " differs from the shared layout"
                )
            );
        };
    };
}

pub mod grid {
    //! The words of a cooperative launch's grid barrier (`sync_device::Grid`), which the
    //! host allocates and zeroes before every launch and the device counts arrivals in.
    //!
    //! Up to [`GRID_TWO_LEVEL_FROM`] blocks, one word: every block adds its arrival to
    //! it. From there on, arrivals on one word queue behind each other at its L2 slice
    //! (docs/measurements.md, `layout::grid`), so the blocks arrive in groups of
    //! [`GRID_GROUP_BLOCKS`]: each group's counter and its release word sit on lines of
    //! their own, and only the last arrival of each group reaches the top counter.
    //! Every word is the first of its 128-byte line ([`GRID_LINE_WORDS`] words), so no
    //! two hot words share a line.

    /// `u32` words per 128-byte line (the L2 line; a line is one slice's).
    pub const GRID_LINE_WORDS: usize = 32;
    /// Blocks whose arrivals one group counter takes in the two-level form.
    pub const GRID_GROUP_BLOCKS: u32 = 64;
    /// Grids of at least this many blocks arrive in two levels: near the largest grid
    /// at which one level was measured to win, as one level is known to lose only a
    /// little below the crossover (docs/measurements.md, "Design figures behind the
    /// rustdoc").
    pub const GRID_TWO_LEVEL_FROM: u32 = 1536;

    /// Groups of a grid of `blocks` blocks (0: one level).
    pub const fn groups(blocks: u32) -> u32 {
        if blocks < GRID_TWO_LEVEL_FROM {
            0
        } else {
            blocks.div_ceil(GRID_GROUP_BLOCKS)
        }
    }

    /// Line of group `group`'s arrival counter (line 0 is the top counter).
    pub const fn group_counter_line(group: u32) -> usize {
        1 + 2 * group as usize
    }

    /// Line of group `group`'s release word.
    pub const fn group_release_line(group: u32) -> usize {
        2 + 2 * group as usize
    }

    /// `u32` words the barrier of a grid of `blocks` blocks uses, all zero at launch.
    pub const fn words(blocks: u32) -> usize {
        match groups(blocks) {
            0 => 1,
            groups => (1 + 2 * groups as usize) * GRID_LINE_WORDS,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn one_word_below_the_switch_and_two_lines_per_group_from_it() {
            assert_eq!(
                (
                    groups(GRID_TWO_LEVEL_FROM - 1),
                    words(GRID_TWO_LEVEL_FROM - 1)
                ),
                (0, 1)
            );
            let full = GRID_TWO_LEVEL_FROM / GRID_GROUP_BLOCKS;
            assert_eq!(groups(GRID_TWO_LEVEL_FROM), full);
            // One block more opens a group of one.
            assert_eq!(groups(GRID_TWO_LEVEL_FROM + 1), full + 1);
            let last_line = group_release_line(full);
            assert_eq!(
                words(GRID_TWO_LEVEL_FROM + 1),
                (last_line + 1) * GRID_LINE_WORDS
            );
            assert!(group_counter_line(0) > 0 && group_release_line(0) != group_counter_line(1));
        }
    }
}

/// The words of a launch's multi-GPU barrier (`sync_device::MultiGrid`): in each
/// GPU's memory, zeroed by the host before every launch, an arrival counter (a `u64`)
/// that one block of every GPU adds its GPU's arrivals to each phase, a relay word, and
/// a gather word the GPU's own blocks count their arrivals on, each on a
/// [`grid::GRID_LINE_WORDS`]-word line of its own.
pub mod multi_grid {
    use super::grid::GRID_LINE_WORDS;

    /// Set in a counter (and in the host parties' arrival word) once the barrier is
    /// broken (a timeout or an abort); arrival counts stay far below it. A wait that
    /// sees it reads the line's [`BROKEN_FROM_WORD`] to learn which phases fail.
    pub const POISONED: u64 = 1 << 63;

    /// The `u64` word beside the count, on the counter's line, on the host parties'
    /// arrival line and on each GPU's completion line: 0 while the barrier holds, then
    /// the first phase that fails (the lowest any breaker named). Phases before it
    /// complete normally, even for a wait that sees them complete only after the
    /// break; a poisoned count whose word is still 0 is a break in progress.
    pub const BROKEN_FROM_WORD: usize = 1;

    /// The `u64` word, on the host parties' arrival line, that a barrier joined across
    /// processes sets (nonzero) once its process group failed: every wait of the
    /// kernels gives up at its next look at the clock, as at its deadline, and every
    /// host party's wait fails. 0 otherwise (a barrier of one process never sets it).
    pub const GIVE_UP_WORD: usize = 2;

    /// `u32` words of one GPU's barrier memory: the counter's line, the relay's, then
    /// the gather's.
    pub const WORDS: usize = 3 * GRID_LINE_WORDS;

    /// The `u64` word, on the third line, where the GPU's own blocks count their
    /// arrivals (device scope); the block that completes a phase's count forwards the
    /// GPU's arrivals to every GPU's counter. Apart from the counter, which every GPU
    /// adds to and every block polls.
    pub const GATHER_WORD: usize = GRID_LINE_WORDS;

    /// The `u64` word, on the second line, through which block 0 of a GPU tells the
    /// GPU's other blocks that every host party arrived at a phase (the phase; only
    /// with host parties): one PCIe read per GPU and phase, not one per block.
    pub const RELAY_WORD: usize = GRID_LINE_WORDS / 2;

    /// `u64` words between two lines (128 bytes each) of the mapped host memory that
    /// host parties share with the GPUs: line 0 the host parties' arrival count (and
    /// its [`BROKEN_FROM_WORD`]), then one completion line per GPU: word 0 the last
    /// phase the GPU completed (stored by its block 0), word [`BROKEN_FROM_WORD`] the
    /// first failing phase once a block of the GPU broke the barrier. The GPUs only
    /// load and store host memory: they read-modify-write none of it.
    pub const COMPLETION_WORDS: usize = GRID_LINE_WORDS / 2;

    /// The most GPUs of one launch: every GPU's counter address travels in the kernel
    /// parameter (a table in global memory would be read after every phase's acquire
    /// fence, which empties the L1: an L2 round trip on the critical path).
    pub const MAX_RANKS: usize = 8;

    /// How a GPU's block reaches the other GPUs' counter lines (the parameter's
    /// `crossing` word): with its own atomics through peer addresses (one machine,
    /// NVLink or PCIe peer access).
    pub const CROSSING_PEER_ATOMICS: u32 = 0;

    /// Through NVSHMEM's device operations (signal add, atomics on a PE's copy), with
    /// every counter address this PE's copy in the symmetric heap and the rank the PE:
    /// what crosses to GPUs the block cannot load from or store to (other machines).
    pub const CROSSING_NVSHMEM: u32 = 1;
}
