//! scoped-sync: barriers, latches, semaphores and stop tokens parameterized by thread
//! scope, for CPU threads and (with the device backend) CUDA kernels.
//!
//! On CPU targets this crate re-exports the host flavour ([`sync_host`]); on
//! `nvptx64` it re-exports the device flavour. The algorithms live in [`sync_shared`].
//!
//! ```
//! use scoped_sync::{Barrier, CountingSemaphore, Latch};
//!
//! let barrier = Barrier::new(2);
//! let done = Latch::new(2);
//! let items: CountingSemaphore = CountingSemaphore::new(0);
//! std::thread::scope(|s| {
//!     s.spawn(|| {
//!         barrier.arrive_and_wait();
//!         items.release(1);
//!         done.count_down(1);
//!     });
//!     barrier.arrive_and_wait();
//!     items.acquire();
//!     done.count_down(1);
//! });
//! done.wait();
//! ```
#![cfg_attr(target_arch = "nvptx64", no_std)]

pub use sync_shared::{backend, bus, layout, scope, Backend, Ordering};

#[cfg(not(target_arch = "nvptx64"))]
pub use sync_host::*;

#[cfg(target_arch = "nvptx64")]
pub use sync_device::*;

/// The README's code blocks, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
