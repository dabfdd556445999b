//! The atomics facade: every atomic word of the algorithms comes from here, so that
//! `--cfg loom` swaps in loom's checked atomics (the pattern of crossbeam's
//! `primitive` module and tokio's `loom` module).

#[cfg(not(loom))]
pub use core::sync::atomic::{AtomicU32, AtomicU64};
#[cfg(loom)]
pub use loom::sync::atomic::{AtomicU32, AtomicU64};

pub use core::sync::atomic::Ordering;

/// Declares `const fn`s that cannot be `const` under loom (loom's atomics have no
/// `const fn new`).
macro_rules! const_fn {
    ($(#[$meta:meta])* $vis:vis fn $name:ident $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$meta])* $vis const fn $name $($rest)*
        #[cfg(loom)]
        $(#[$meta])* $vis fn $name $($rest)*
    };
}
pub(crate) use const_fn;
