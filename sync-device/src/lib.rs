//! The device (nvptx64) flavour of scoped-sync.
//!
//! Skeleton: the inline-PTX backend (scoped atomics and fences, nanosleep backoff,
//! hardware barriers) lands with the GPU backend issue. On host targets this crate is
//! empty, so `cargo build` and `cargo test` of the workspace are unaffected.
#![no_std]

pub use sync_shared::{Block, Cluster, Device, Scope, System, Thread};
