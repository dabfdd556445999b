//! Generates `probes.rs`: one kernel per scope × atomic operation × width × ordering,
//! each doing exactly that one operation, so that `tests/ptx_codegen.rs` can check
//! the PTX every combination compiles to.

use std::fmt::Write;
use std::path::PathBuf;

/// (Rust scope type, name used in kernel names)
const SCOPES: [(&str, &str); 5] = [
    ("Thread", "thread"),
    ("Block", "block"),
    ("Cluster", "cluster"),
    ("Device", "device"),
    ("System", "system"),
];
const WIDTHS: [&str; 2] = ["u32", "u64"];
const RMW: [&str; 8] = [
    "swap",
    "fetch_add",
    "fetch_sub",
    "fetch_and",
    "fetch_or",
    "fetch_xor",
    "fetch_min",
    "fetch_max",
];
const ALL_ORDERS: [(&str, &str); 5] = [
    ("Relaxed", "relaxed"),
    ("Acquire", "acquire"),
    ("Release", "release"),
    ("AcqRel", "acq_rel"),
    ("SeqCst", "seq_cst"),
];

fn order_name(order: &str) -> &'static str {
    ALL_ORDERS
        .iter()
        .find(|(rust, _)| *rust == order)
        .map(|(_, name)| *name)
        .unwrap()
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let mut out = String::new();
    for (scope, scope_name) in SCOPES {
        for width in WIDTHS {
            for order in ["Relaxed", "Acquire", "SeqCst"] {
                let name = format!("probe__load__{width}__{}__{scope_name}", order_name(order));
                writeln!(out, "#[no_mangle] pub unsafe extern \"gpu-kernel\" fn {name}(p: *mut {width}, out: *mut {width}) {{ unsafe {{ *out = <{scope} as PtxScope>::load_{width}(p, Ordering::{order}) }} }}").unwrap();
            }
            for order in ["Relaxed", "Release", "SeqCst"] {
                let name = format!("probe__store__{width}__{}__{scope_name}", order_name(order));
                writeln!(out, "#[no_mangle] pub unsafe extern \"gpu-kernel\" fn {name}(p: *mut {width}, v: {width}) {{ unsafe {{ <{scope} as PtxScope>::store_{width}(p, v, Ordering::{order}) }} }}").unwrap();
            }
            for (order, order_name) in ALL_ORDERS {
                for op in RMW {
                    let name = format!("probe__{op}__{width}__{order_name}__{scope_name}");
                    writeln!(out, "#[no_mangle] pub unsafe extern \"gpu-kernel\" fn {name}(p: *mut {width}, v: {width}, out: *mut {width}) {{ unsafe {{ *out = <{scope} as PtxScope>::{op}_{width}(p, v, Ordering::{order}) }} }}").unwrap();
                }
                let name = format!("probe__cas__{width}__{order_name}__{scope_name}");
                writeln!(out, "#[no_mangle] pub unsafe extern \"gpu-kernel\" fn {name}(p: *mut {width}, c: {width}, n: {width}, out: *mut {width}) {{ unsafe {{ *out = <{scope} as PtxScope>::cas_{width}(p, c, n, Ordering::{order}) }} }}").unwrap();
            }
        }
        for order in ["Acquire", "Release", "AcqRel", "SeqCst"] {
            let name = format!("probe__fence__none__{}__{scope_name}", order_name(order));
            writeln!(out, "#[no_mangle] pub extern \"gpu-kernel\" fn {name}() {{ <{scope} as PtxScope>::fence(Ordering::{order}) }}").unwrap();
        }
    }
    let path = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("probes.rs");
    std::fs::write(path, out).unwrap();
}
