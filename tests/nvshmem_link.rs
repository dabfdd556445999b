//! The NVSHMEM shim and the kernels that call it fit together without a GPU: the
//! kernels built with sync-device's `nvshmem` feature (`kernels/nvshmem`) call only
//! functions the shim defines, with the same parameters; the project's ordinary
//! kernels call none; the shim records its headers' release; and the cubin
//! `sync_build::NvshmemShim` linked holds the kernels, the shim and NVSHMEM's device
//! state.

use std::path::PathBuf;

use harness::{KERNELS, KERNELS_NVSHMEM, KERNELS_NVSHMEM_PTX, NVSHMEM_SHIM_PTX};
use scoped_sync::cuda::KernelBuild;

/// The shim's function-name prefix.
const SHIM_PREFIX: &str = "scoped_sync_nvshmem_";

const BUILDS: [KernelBuild; 2] = [KernelBuild::Release, KernelBuild::Checked];

/// `module`'s PTX in `build`, or `None` after saying why it is missing.
fn ptx_of(module: &scoped_sync::cuda::EmbeddedModule, build: KernelBuild) -> Option<&'static str> {
    match module.ptx(build) {
        Ok(ptx) => Some(ptx),
        Err(missing) => {
            println!("skipped: {missing}");
            None
        }
    }
}

/// Each function named `prefix…` that `ptx` declares with `keyword` (`.extern .func`
/// or `.visible .func`), with the types of its return value and parameters. PTX puts
/// the keyword, the return value and the name on one line, the parameters in the
/// parentheses after the name.
fn functions_with(ptx: &str, keyword: &str, prefix: &str) -> Vec<(String, Vec<String>)> {
    let param_types = |text: &str| -> Vec<String> {
        text.split(".param")
            .skip(1)
            .map(|part| part.split_whitespace().next().unwrap_or("").to_owned())
            .collect()
    };
    let mut found = Vec::new();
    for (at, _) in ptx.match_indices(keyword) {
        let after = &ptx[at + keyword.len()..];
        let line = after.lines().next().unwrap_or("");
        let (returned, named) = match line.find(')') {
            Some(close) if line.trim_start().starts_with('(') => {
                (&line[..close], &line[close + 1..])
            }
            _ => ("", line),
        };
        let name: String = named
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.starts_with(prefix) {
            continue;
        }
        let from_name = &after[after.find(name.as_str()).unwrap_or(0) + name.len()..];
        let parameters = from_name
            .find('(')
            .zip(from_name.find(')'))
            .map_or("", |(open, close)| &from_name[open..close]);
        let mut types = param_types(returned);
        types.extend(param_types(parameters));
        found.push((name, types));
    }
    found
}

#[test]
fn the_ordinary_kernels_call_no_shim_function() {
    for build in BUILDS {
        let Some(ptx) = ptx_of(&KERNELS, build) else {
            continue;
        };
        let calls = functions_with(ptx, ".extern .func", SHIM_PREFIX);
        assert!(calls.is_empty(), "{build:?}: {calls:?}");
    }
}

#[test]
fn every_shim_function_the_nvshmem_kernels_call_is_defined_with_the_same_parameters() {
    let Some(shim) = ptx_of(&NVSHMEM_SHIM_PTX, KernelBuild::Release) else {
        return;
    };
    let defined = functions_with(shim, ".visible .func", SHIM_PREFIX);
    assert!(
        shim.contains(".entry scoped_sync_nvshmem_shim"),
        "the shim's empty kernel, by which the host finds the module"
    );
    assert!(
        shim.contains("scoped_sync_nvshmem_release[12]"),
        "the shim's release"
    );
    for build in BUILDS {
        let Some(kernels) = ptx_of(&KERNELS_NVSHMEM_PTX, build) else {
            continue;
        };
        let calls = functions_with(kernels, ".extern .func", SHIM_PREFIX);
        for name in ["signal_add", "or", "fetch", "compare_swap"] {
            let name = format!("{SHIM_PREFIX}{name}");
            assert!(
                calls.iter().any(|(called, _)| *called == name),
                "{build:?}: the barrier's crossing calls {name}: {calls:?}"
            );
        }
        // The signal add as sync-device declares it: address, value, PE.
        let signal_add = calls
            .iter()
            .find(|(called, _)| called.ends_with("signal_add"))
            .map(|(_, types)| types.join(" "));
        assert_eq!(signal_add.as_deref(), Some(".b64 .b64 .b32"), "{build:?}");
        for (name, types) in &calls {
            let definition = defined.iter().find(|(defined, _)| defined == name);
            assert_eq!(
                definition.map(|(_, types)| types),
                Some(types),
                "{build:?}: {name} as called and as the shim defines it"
            );
        }
    }
}

#[test]
fn the_shim_records_the_release_of_the_headers_it_was_built_with() {
    let (Some(shim), Some(home)) = (
        ptx_of(&NVSHMEM_SHIM_PTX, KernelBuild::Release),
        std::env::var_os("NVSHMEM_HOME"),
    ) else {
        println!("skipped: no shim or NVSHMEM_HOME unset");
        return;
    };
    let header =
        std::fs::read_to_string(PathBuf::from(home).join("include/non_abi/nvshmem_version.h"))
            .unwrap();
    let number = |name: &str| -> u8 {
        let line = header
            .lines()
            .find(|line| line.starts_with(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("{name} in nvshmem_version.h"));
        line.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    let (major, minor, patch) = (
        number("NVSHMEM_VENDOR_MAJOR_VERSION"),
        number("NVSHMEM_VENDOR_MINOR_VERSION"),
        number("NVSHMEM_VENDOR_PATCH_VERSION"),
    );
    // Three little-endian ints; PTX writes the bytes up to the last nonzero one.
    let mut bytes = vec![major, 0, 0, 0, minor, 0, 0, 0, patch, 0, 0, 0];
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    let listed = bytes
        .iter()
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    assert!(
        shim.contains(&format!("scoped_sync_nvshmem_release[12] = {{{listed}}}")),
        "the shim's release is {major}.{minor}.{patch}"
    );
}

#[test]
fn the_linked_kernels_hold_the_shim_and_nvshmems_device_state() {
    for build in BUILDS {
        let linked = match KERNELS_NVSHMEM.image(build) {
            Ok(cubin) => cubin,
            Err(missing) => {
                println!("skipped: {missing}");
                continue;
            }
        };
        assert!(
            KERNELS_NVSHMEM.is_cubin() && linked.starts_with(b"\x7fELF"),
            "{build:?}"
        );
        let holds = |name: &str| {
            linked
                .windows(name.len())
                .any(|window| window == name.as_bytes())
        };
        for name in [
            "multi_grid_phases",
            "scoped_sync_nvshmem_shim",
            "scoped_sync_nvshmem_release",
            "nvshmemi_device_state_d",
        ] {
            assert!(holds(name), "{build:?}: {name}");
        }
    }
}
