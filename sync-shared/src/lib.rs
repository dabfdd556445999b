//! The `no_std` core of scoped-sync: thread scopes, the backend contract, and the
//! synchronization algorithms, written once and shared by the host (`sync-host`) and
//! device (`sync-device`) backends.
//!
//! Every primitive is generic over a scope `S` (see [`scope`]) and a backend
//! `B: Backend<S>`, is `#[repr(C)]`, and has a `const fn new`, so it can be a `static`
//! and can have the same bytes on both sides. Users normally name the aliases of a
//! backend crate (`scoped_sync::Barrier`) rather than these types.
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
// `trap` in place of a call on hot paths (`error::violated_in_loop`).
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]

#[cfg(test)]
extern crate std;

mod primitive;

pub mod backend;
pub mod barrier;
pub mod bus;
pub mod error;
pub mod fair_semaphore;
pub mod latch;
pub mod layout;
mod message;
pub mod scope;
pub mod semaphore;
pub mod stop_token;
mod update;
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
pub mod vprintf;
mod wait;

pub use backend::{Backend, Combined, Word};
pub use barrier::{ArrivalToken, Barrier, Completion, NoCompletion};
pub use error::{Stopped, UsageError, UsageErrorKind};
pub use fair_semaphore::{FairSemaphore, WaiterSlot};
pub use latch::Latch;
pub use primitive::Ordering;
pub use scope::{Block, Cluster, Device, Includes, Scope, System, Thread};
pub use semaphore::{BinarySemaphore, CountingSemaphore, SEMAPHORE_MAX};
pub use stop_token::{StopCallback, StopSource, StopToken};
