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
