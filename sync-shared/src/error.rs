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
    /// A barrier in its hardware form (on the GPU: a `Barrier<Block>` in block-shared
    /// memory) used without having been placed there: its bytes were written into
    /// that memory directly, not through `SharedSlot::init_block` or
    /// `Barrier::init_in_place`.
    NotPlaced,
    /// A barrier placed into its hardware form after it had been used (some arrivals
    /// or phases already counted in its portable form).
    PlacedAfterUse,
}

/// The text of [`UsageErrorKind::NotPlaced`] (also printed on the GPU).
pub(crate) const NOT_PLACED: &str = "the barrier lies in block-shared memory but was not placed there: write it with SharedSlot::init_block, or call Barrier::init_in_place after writing it";
/// The text of [`UsageErrorKind::PlacedAfterUse`].
pub(crate) const PLACED_AFTER_USE: &str =
    "only a fresh barrier (no arrivals yet, not placed before) can be placed into its hardware form";

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
            UsageErrorKind::NotPlaced => f.write_str(NOT_PLACED),
            UsageErrorKind::PlacedAfterUse => f.write_str(PLACED_AFTER_USE),
        }
    }
}

impl core::error::Error for UsageError {}

/// [`violated`] for a check inside a hot loop: in the release build of GPU kernels,
/// where the documented panic handler (`sync_device::panic_handler!`) does nothing but
/// `trap`, a `trap` in place. A loop that contains a call, even one never taken, gets
/// a `YIELD` at its head and convergence barriers from ptxas (sm_90 SASS), which cost a
/// block-shared `Barrier`'s phase a large share of its time (docs/measurements.md,
/// `violated_in_loop`). Elsewhere, and in the checked build (which prints the error
/// first), the same as `violated`.
#[inline(always)]
#[track_caller]
pub(crate) fn violated_in_loop(error: impl FnOnce() -> UsageError) -> ! {
    #[cfg(all(target_arch = "nvptx64", not(debug_assertions)))]
    {
        let _ = error;
        // SAFETY: `trap` ends the kernel; it touches nothing.
        unsafe { core::arch::asm!("trap;", options(noreturn, nostack)) }
    }
    #[cfg(not(all(target_arch = "nvptx64", not(debug_assertions))))]
    violated(error())
}

/// [`violated_in_loop`] unless `holds`: in the release build of GPU kernels a
/// predicated `trap`, with no branch around it (a branch not taken still sits between
/// the instructions around it and, in a loop of phases, made ptxas order them worse).
#[inline(always)]
#[track_caller]
pub(crate) fn violated_in_loop_unless(holds: bool, error: impl FnOnce() -> UsageError) {
    #[cfg(all(target_arch = "nvptx64", not(debug_assertions)))]
    {
        let _ = error;
        // SAFETY: `trap` ends the kernel; it touches nothing.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred broken; setp.eq.u32 broken, {holds}, 0; @broken trap; }}",
                holds = in(reg32) u32::from(holds),
                options(nostack),
            )
        }
    }
    #[cfg(not(all(target_arch = "nvptx64", not(debug_assertions))))]
    if !holds {
        violated(error())
    }
}

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
