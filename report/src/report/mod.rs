//! The per-scope cost report: what each primitive, atomic and fence costs on this
//! machine, beside the peers a Rust program would otherwise use.
//!
//! One file per concept: [`cli`] reads the command line, [`workloads`] and
//! [`atomics`] are the timed loops (shared with `benches/host.rs`, as is [`peers`]),
//! [`measure`] says how long and how often, [`host`] lists the host section's
//! measurements, [`gpu`], [`gpu_primitives`], [`domains`] and [`bus`] the GPU section's (when a
//! GPU is present),
//! [`output`] prints them.

pub mod atomics;
pub mod bus;
pub mod cli;
pub mod domains;
pub mod gpu;
pub mod gpu_primitives;
pub mod host;
pub mod litmus;
pub mod litmus_host;
pub mod machine;
pub mod measure;
pub mod output;
pub mod peers;
pub mod progress;
pub mod sample;
pub mod workloads;
