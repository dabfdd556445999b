//! Typed errors: broken preconditions (returned by the `try_` forms, turned into
//! panics by the others) and early returns of waits.

use core::fmt;

/// A broken precondition of a primitive's operation.
///
/// C++ leaves these undefined; here the panicking operations panic with this error's
/// text, and the `try_` forms return it *before* changing the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsageError {
    /// The operation, as `Type::method`.
    pub operation: &'static str,
    /// What was wrong, with the values involved.
    pub kind: UsageErrorKind,
}

/// The kinds of [`UsageError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UsageErrorKind {
    /// `arrive(0)`: an arrival must count at least one.
    ZeroArrival,
    /// More arrivals than the current phase still expects.
    ArrivalExceedsRemaining {
        /// Arrivals asked for.
        n: u32,
        /// Arrivals the current phase still expects.
        remaining: u32,
    },
    /// An expected count or initial value above the primitive's `max()`.
    ExceedsMax {
        /// The value asked for.
        value: u32,
        /// The primitive's `max()`.
        max: u32,
    },
    /// A latch counted down by more than its counter.
    CountDownExceedsCount {
        /// The decrement asked for.
        n: u32,
        /// The counter at that moment.
        count: u32,
    },
    /// A semaphore released beyond its `MAX`.
    ReleaseExceedsMax {
        /// The release asked for.
        n: u32,
        /// The counter at that moment.
        count: u32,
        /// The semaphore's `max()`.
        max: u32,
    },
}

impl UsageError {
    pub(crate) const fn new(operation: &'static str, kind: UsageErrorKind) -> Self {
        Self { operation, kind }
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.operation)?;
        match self.kind {
            UsageErrorKind::ZeroArrival => write!(f, "n = 0, but an arrival must count at least 1"),
            UsageErrorKind::ArrivalExceedsRemaining { n, remaining } => write!(
                f,
                "n = {n} exceeds the {remaining} arrival(s) the current phase still expects"
            ),
            UsageErrorKind::ExceedsMax { value, max } => {
                write!(f, "{value} exceeds max() = {max}")
            }
            UsageErrorKind::CountDownExceedsCount { n, count } => {
                write!(f, "n = {n} exceeds the counter ({count})")
            }
            UsageErrorKind::ReleaseExceedsMax { n, count, max } => write!(
                f,
                "releasing n = {n} onto a counter of {count} exceeds max() = {max}"
            ),
        }
    }
}

impl core::error::Error for UsageError {}

/// Panics with the error's text: the panicking forms of the operations call this.
/// On the device, `panic = "abort"` turns it into a trap; the checked build of the
/// kernels prints the text first (the device panic handler cannot format it).
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn violated(error: UsageError) -> ! {
    #[cfg(all(target_arch = "nvptx64", debug_assertions))]
    crate::vprintf::print_usage_error(&error);
    panic!("{error}")
}

/// A wait that returned early because its [`StopToken`](crate::StopToken) was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stopped;

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the wait was interrupted by a stop request")
    }
}

impl core::error::Error for Stopped {}

/// Why a bounded wait returned without its condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interrupted {
    TimedOut,
    Stopped,
}
