//! A user's kernel crate: ordinary Rust kernels that use scoped-sync's device types.
//! The host program next door (`../host`) compiles it to PTX in its `build.rs` with
//! `sync_build::KernelCrate` and launches the kernels through `scoped_sync::cuda`.
//!
//! - [`jacobi`]: an iterative solver with a grid barrier between steps;
//! - [`exchange`]: a block barrier in shared memory and a cluster barrier, with reads
//!   of the partner block's shared memory;
//! - [`worker`]: a persistent kernel fed by host threads through a `HandoffChannel`
//!   and stopped with a `BusStopSource`;
//! - [`bench`]: a grid barrier in a loop, timed beside the project's own.
#![no_std]
#![feature(abi_gpu_kernel)]
// `shared!` declares block-shared variables with inline assembly.
#![feature(asm_experimental_arch)]
// Kernel parameters are raw pointers and `#[repr(C)]` structs: as CUDA C++ takes them.
#![allow(improper_gpu_kernel_arg)]

// A panic (a broken precondition, say) traps the kernel; the checked build prints
// where and which thread first.
scoped_sync::panic_handler!();

pub mod bench;
pub mod exchange;
pub mod jacobi;
pub mod worker;
