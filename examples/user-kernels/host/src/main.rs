//! The host program of the user's-workspace example: it builds `../kernels` to PTX in
//! its `build.rs` (sync-build), embeds it with `include_kernels!`, and runs
//!
//! - `jacobi`: a Jacobi solver whose steps are separated by a grid barrier, checked
//!   cell by cell against the same sweeps on the CPU;
//! - `cluster`: block and cluster barriers exchanging values through shared and
//!   distributed shared memory, every thread's result recomputed on the CPU;
//! - `worker`: a persistent kernel fed from this thread through a `HandoffChannel`
//!   and stopped with a `BusStopSource`, every answer and the count checked;
//! - `bench [PTX]`: ns per grid barrier of the user's kernel, and, given the project's
//!   module (the bundle's `kernels.ptx`), of its `cost_grid_sync` in the same run.
//!
//! ```sh
//! cargo run --release -p user-kernels-example [jacobi|cluster|worker [ITEMS]|bench [PTX]|all]
//! ```
//!
//! Without a GPU it prints "skipped: no CUDA driver" and exits 0; a wrong result exits 1.

mod cluster;
mod jacobi;
mod timing;
mod worker;

use std::process::ExitCode;

use scoped_sync::cuda::{CudaError, EmbeddedModule, Runtime};

/// The kernel crate's PTX, built by `build.rs` (both flavours).
static KERNELS: EmbeddedModule = scoped_sync::include_kernels!("user_kernels");

type Error = Box<dyn std::error::Error>;

const USAGE: &str = "usage: user-kernels-example [jacobi|cluster|worker [ITEMS]|bench [PTX]|all]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let part = args.first().map_or("all", String::as_str);
    let runtime = match Runtime::open(0) {
        Ok(runtime) => runtime,
        Err(CudaError::NoDriver) => {
            eprintln!("skipped: no CUDA driver");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("user-kernels-example: {error}");
            return ExitCode::FAILURE;
        }
    };
    match run(&runtime, part, args.get(1).map(String::as_str)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("user-kernels-example: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(runtime: &Runtime, part: &str, argument: Option<&str>) -> Result<(), Error> {
    let module = runtime.load(&KERNELS)?;
    println!(
        "GPU {}: {}; kernels `{}`, {:?} build",
        runtime.ordinal(),
        runtime.name()?,
        module.name(),
        module.build().expect("an embedded module")
    );
    let items = match argument {
        Some(items) if part == "worker" => items.parse().map_err(|_| USAGE)?,
        _ => worker::DEFAULT_ITEMS,
    };
    match part {
        "jacobi" => jacobi::run(runtime, &module),
        "cluster" => cluster::run(runtime, &module),
        "worker" => worker::run(runtime, &module, items),
        "bench" => timing::run(runtime, &module, argument),
        "all" => {
            jacobi::run(runtime, &module)?;
            cluster::run(runtime, &module)?;
            worker::run(runtime, &module, items)
        }
        _ => Err(USAGE.into()),
    }
}

#[cfg(test)]
mod tests {
    use scoped_sync::cuda::KernelBuild;

    use super::KERNELS;

    /// Both builds of the kernel crate are in the program, with every kernel, and
    /// `ptxas` (where `PTXAS` names one: `scripts/test.sh` sets it) assembles them for
    /// sm_90. Where the nightly toolchain is missing (and `SYNC_BUILD_REQUIRED` unset)
    /// the reason is embedded instead, naming the fix.
    #[test]
    fn both_builds_hold_every_kernel_and_assemble() {
        for build in [KernelBuild::Release, KernelBuild::Checked] {
            let ptx = match KERNELS.ptx(build) {
                Ok(ptx) => ptx,
                Err(missing) => {
                    assert!(missing.to_string().contains("rustup"), "{missing}");
                    println!("skipped: {missing}");
                    return;
                }
            };
            for kernel in [
                "jacobi_1d",
                "block_and_cluster_exchange",
                "persistent_worker",
                "grid_sync_loop",
            ] {
                assert!(
                    ptx.contains(&format!(".entry {kernel}(")),
                    "{build:?}: no {kernel}"
                );
            }
            let Some(ptxas) = std::env::var_os("PTXAS") else {
                println!("not assembled: PTXAS is not set");
                continue;
            };
            let file = std::env::temp_dir()
                .join(format!("user-kernels-{build:?}-{}.ptx", std::process::id()));
            std::fs::write(&file, ptx).unwrap();
            let status = std::process::Command::new(ptxas)
                .args(["-arch=sm_90", "-o", "/dev/null"])
                .arg(&file)
                .status()
                .unwrap();
            std::fs::remove_file(&file).unwrap();
            assert!(status.success(), "ptxas refused the {build:?} PTX");
        }
    }
}
