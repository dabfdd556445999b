//! The PTX layer: single instructions and special registers wrapped for Rust (scoped
//! atomics and fences, the thread's place in the launch, warp votes and shuffles, the
//! sm_90 `mbarrier`, the trap and the checked build's messages). No protocol lives
//! here: each function is one instruction or a fixed sequence of them.

pub mod atomics;
pub(crate) mod device_print;
pub(crate) mod geometry;
pub(crate) mod global_atomics;
#[cfg(target_feature = "sm_90")]
pub(crate) mod mbarrier;
pub mod warp;
