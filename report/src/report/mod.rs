//! The per-scope cost report: what each primitive, atomic and fence costs on this
//! machine, beside the peers a Rust program would otherwise use.
//!
//! One file per concept: [`cli`] reads the command line, [`workloads`] and
//! [`atomics`] are the timed loops (shared with `benches/host.rs`, as is [`peers`]),
//! [`measure`] says how long and how often, [`host`] lists the host section's
//! measurements (with [`anchor`], libstdc++'s beside them), [`gpu`],
//! [`gpu_primitives`], [`domains`], [`bus`] and [`host_device`] the GPU section's (when
//! a GPU is present); [`sample`] is the record schema, [`output`] prints the records, [`plot`]
//! draws them and [`gate`] checks their ratios against stored ones. [`multi_gpu`] is
//! the two-GPU measurement of `--multi-gpu`.

pub mod anchor;
pub mod atomics;
pub mod bus;
pub mod cli;
pub mod domains;
pub mod gate;
pub mod gpu;
pub mod gpu_primitives;
pub mod host;
pub mod host_device;
pub mod litmus;
pub mod litmus_host;
pub mod machine;
pub mod measure;
pub mod multi_gpu;
pub mod output;
pub mod peers;
pub mod plot;
pub mod progress;
pub mod sample;
pub mod stop_wake;
pub mod workloads;
