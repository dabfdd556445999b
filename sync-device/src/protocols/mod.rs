//! The PTX protocols: whole barrier and latch phases written as one `asm` block each,
//! where the Rust form of the same protocol (`sync_shared`'s portable barrier and
//! latch, which these follow step for step) would let the compiler wrap divergent
//! branches in convergence bookkeeping. The release build's `Gpu` backend and `Grid`
//! call them; the checked build keeps the Rust paths.

pub(crate) mod grid_arrival;
pub(crate) mod warp_barrier_phase;
pub(crate) mod warp_latch_phase;
