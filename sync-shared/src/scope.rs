//! Thread scopes: the set of threads an operation synchronizes with.
//!
//! A scope is a zero-sized tag type used as a type parameter. An atomic operation or
//! fence performed at scope `S` only orders memory with respect to threads that are
//! inside `S` (CUDA memory model, "Scope"). The scopes nest:
//! `Thread ⊂ Block ⊂ Cluster ⊂ Device ⊂ System`.
//!
//! Counterpart: libcu++'s `cuda::thread_scope` enumerators
//! (`thread_scope_thread`, `_block`, `_cluster`, `_device`, `_system`).

use core::fmt::Debug;

mod sealed {
    pub trait Sealed {}
}

/// A thread scope tag. Implemented only by [`Thread`], [`Block`], [`Cluster`],
/// [`Device`] and [`System`].
pub trait Scope: sealed::Sealed + Copy + Default + Debug + Send + Sync + 'static {
    /// Position in the inclusion order: a scope includes every scope with a lower level.
    const LEVEL: u8;
    /// Lower-case name, as used in PTX qualifiers' documentation and in reports.
    const NAME: &'static str;
}

/// Marker: `Self` includes every thread of scope `Inner`.
///
/// An object shared at scope `Self` may be used by any pair of threads that are both
/// inside one instance of `Self`; `Self: Includes<Inner>` lets generic code require a
/// scope at least as wide as another one.
pub trait Includes<Inner: Scope>: Scope {}

macro_rules! scopes {
    ($($(#[$doc:meta])* $name:ident = $level:literal, $text:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl Scope for $name {
            const LEVEL: u8 = $level;
            const NAME: &'static str = $text;
        }
    )*};
}

scopes! {
    /// Only the calling thread (libcu++ `thread_scope_thread`).
    Thread = 0, "thread";
    /// The threads of one CUDA thread block (CTA; PTX `.cta`).
    Block = 1, "block";
    /// The threads of one thread-block cluster (sm_90+; PTX `.cluster`).
    Cluster = 2, "cluster";
    /// All threads of one GPU (PTX `.gpu`).
    Device = 3, "device";
    /// All threads of the program: every GPU and the CPU threads (PTX `.sys`).
    /// This is the only scope host code may use.
    System = 4, "system";
}

macro_rules! includes {
    ($outer:ident: $($inner:ident),*) => { $(impl Includes<$inner> for $outer {})* };
}
includes!(Thread: Thread);
includes!(Block: Thread, Block);
includes!(Cluster: Thread, Block, Cluster);
includes!(Device: Thread, Block, Cluster, Device);
includes!(System: Thread, Block, Cluster, Device, System);

/// Whether scope `Outer` includes scope `Inner`, as a value (for reports and asserts).
pub const fn includes<Outer: Scope, Inner: Scope>() -> bool {
    Outer::LEVEL >= Inner::LEVEL
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requires_inclusion<O: Includes<I>, I: Scope>() -> bool {
        includes::<O, I>()
    }

    #[test]
    fn inclusion_follows_nesting() {
        assert!(requires_inclusion::<System, Block>());
        assert!(requires_inclusion::<Device, Device>());
        assert!(!includes::<Block, Device>());
        assert!(!includes::<Thread, System>());
        assert_eq!(
            [
                Thread::NAME,
                Block::NAME,
                Cluster::NAME,
                Device::NAME,
                System::NAME
            ],
            ["thread", "block", "cluster", "device", "system"]
        );
    }
}
