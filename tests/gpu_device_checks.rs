//! The device's bad-input matrix and scope-misuse detection, in both builds of the
//! kernels (`KernelBuild`):
//!
//! - every broken precondition on the device (`arrive(0)`, over-arrival, a barrier
//!   created above its maximum, a latch counted down past zero, a semaphore released
//!   past its maximum) ends the kernel with a trap in both builds, and the host sees
//!   `CudaError::KernelTrapped`; the checked build prints the error's text and the
//!   thread first;
//! - a `Block`-scope object used by two blocks, a `Cluster`-scope one used by two
//!   clusters, and a `Block`-scope object in another block's shared memory trap in the
//!   checked build with a message naming the scope and the offending thread, and run
//!   through unchecked in the release build (whose PTX has no check:
//!   `tests/ptx_codegen.rs`);
//! - a `Barrier<Block>` in block-shared memory that was not placed there
//!   (`Barrier::init_in_place`), placed after it took an arrival, or placed with more
//!   arrivals than the hardware barrier holds, traps in both builds;
//! - a bus object that was written into mapped memory by hand instead of placed by
//!   the runtime traps in both builds at its first GPU read-modify-write (it has no
//!   GPU side word attached);
//! - the legal uses beside them never trap, in either build, including one object
//!   used by a different block in each of two launches, and a barrier placed in
//!   dynamic shared memory with `init_in_place` and an array of barriers placed by
//!   `SharedSlot::init_block` (whose phases check each other's writes).
//!
//! A trap poisons the CUDA context for the rest of the process, so every case runs in
//! a child process: this binary (no libtest harness) runs itself again with the case
//! and the build in `CHILD`, and checks what the child reports and prints. Without a
//! CUDA driver it prints "skipped: no CUDA driver". `--list` names each case and build
//! (`traps::release::barrier_arrive_zero`), `--exact NAME` runs one: `sanitize.sh`
//! runs each under each tool in a process of its own.

use std::io::Write;
use std::process::{Command, ExitCode};

use harness::Gpu;
use scoped_sync::cuda::{CudaError, KernelArgs, KernelBuild, LaunchConfig};
use scoped_sync::{Barrier, BusStopSource, CountingSemaphore, Latch};

/// The variable that tells a child which case to run: `<case>:<build>`.
const CHILD: &str = "SCOPED_SYNC_DEVICE_CHECK_CHILD";

/// What a case must do.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// Trap in both builds; the checked build prints these.
    TrapsAlways(&'static [&'static str]),
    /// Trap with these printed in the checked build; run through in the release build.
    TrapsWhenChecked(&'static [&'static str]),
    /// Never trap.
    Runs,
}

struct Case {
    /// For the command line and `sanitize.sh` (see `test_name`).
    id: &'static str,
    name: &'static str,
    run: fn(&Gpu) -> Result<(), CudaError>,
    expect: Expect,
}

const CASES: &[Case] = &[
    Case {
        id: "barrier_arrive_zero",
        name: "barrier arrive(0)",
        run: barrier_arrive_zero,
        expect: Expect::TrapsAlways(&[
            "scoped-sync: Barrier::arrive: n = 0, but an arrival must count at least 1",
            "kernel panic in thread (0, 0, 0) of block (0, 0, 0) at src/device_checks.rs:",
        ]),
    },
    Case {
        id: "barrier_over_arrival",
        name: "barrier over-arrival",
        run: barrier_over_arrive,
        expect: Expect::TrapsAlways(&[
            "scoped-sync: Barrier::arrive: n = 3 exceeds the 2 arrival(s) the current phase still expects",
        ]),
    },
    Case {
        id: "barrier_above_max",
        name: "barrier created above max()",
        run: barrier_new_above_max,
        // `new` is a `const fn`: its panic cannot print its own text on the device
        // (that needs a runtime call), so only where and who.
        expect: Expect::TrapsAlways(&[
            "kernel panic in thread (0, 0, 0) of block (0, 0, 0) at src/device_checks.rs:",
        ]),
    },
    Case {
        id: "latch_past_zero",
        name: "latch counted down past zero",
        run: latch_count_down_past_zero,
        expect: Expect::TrapsAlways(&[
            "scoped-sync: Latch::count_down: n = 2 exceeds the counter (1)",
            "at sync-shared/src/latch.rs:",
        ]),
    },
    Case {
        id: "semaphore_past_max",
        name: "semaphore released past max()",
        run: semaphore_release_past_max,
        expect: Expect::TrapsAlways(&[
            "releasing n = 1 onto a counter of 4 exceeds max() = 4",
        ]),
    },
    Case {
        id: "block_scope_across_blocks",
        name: "Block scope across blocks",
        run: block_scope_across_blocks,
        expect: Expect::TrapsWhenChecked(&[
            "scoped-sync: scope misuse: thread (0, 0, 0) of block (",
            "used a Block-scope object at 0x",
            "of this launch used first",
        ]),
    },
    Case {
        id: "cluster_scope_across_clusters",
        name: "Cluster scope across clusters",
        run: cluster_scope_across_clusters,
        expect: Expect::TrapsWhenChecked(&[
            "scoped-sync: scope misuse: thread (0, 0, 0) of block (",
            "used a Cluster-scope object at 0x",
        ]),
    },
    Case {
        id: "block_scope_in_other_blocks_shared",
        name: "Block scope in another block's shared memory",
        run: block_scope_in_other_blocks_shared,
        expect: Expect::TrapsWhenChecked(&[
            "scoped-sync: scope misuse: thread (0, 0, 0) of block (1, 0, 0) (rank 1 in its cluster) used a Block-scope object at 0x",
            "in the shared memory of block rank 0 of its cluster",
        ]),
    },
    // The same checks in CUDA C++ kernels through the device library
    // (`kernels/cuda/misuse.cu`): the same messages as the Rust kernels'.
    Case {
        id: "cpp_barrier_arrive_zero",
        name: "C++ barrier arrive(0)",
        run: |gpu| barrier_arrive_zero(&cuda_cpp(gpu)?),
        expect: Expect::TrapsAlways(&[
            "scoped-sync: Barrier::arrive: n = 0, but an arrival must count at least 1",
            "kernel panic in thread (0, 0, 0) of block (0, 0, 0) at sync-device/src/c_abi/barrier.rs:",
        ]),
    },
    Case {
        id: "cpp_block_scope_across_blocks",
        name: "C++ Block scope across blocks",
        run: |gpu| block_scope_across_blocks(&cuda_cpp(gpu)?),
        expect: Expect::TrapsWhenChecked(&[
            "scoped-sync: scope misuse: thread (0, 0, 0) of block (",
            "used a Block-scope object at 0x",
            "of this launch used first",
        ]),
    },
    Case {
        id: "cpp_block_scope_own_objects",
        name: "C++ Block scope, each block its own object",
        run: |gpu| block_scope_own_objects(&cuda_cpp(gpu)?),
        expect: Expect::Runs,
    },
    Case {
        id: "block_scope_own_objects",
        name: "Block scope, each block its own object",
        run: block_scope_own_objects,
        expect: Expect::Runs,
    },
    Case {
        id: "cluster_scope_own_objects",
        name: "Cluster scope, each cluster its own object",
        run: cluster_scope_own_objects,
        expect: Expect::Runs,
    },
    Case {
        id: "block_scope_one_block_per_launch",
        name: "Block scope, one block per launch, a different one each launch",
        run: block_scope_one_block_per_launch,
        expect: Expect::Runs,
    },
    Case {
        id: "block_barrier_not_placed",
        name: "Barrier<Block> in shared memory, not placed",
        run: block_barrier_not_placed,
        expect: Expect::TrapsAlways(&[
            "scoped-sync: Barrier::arrive_and_wait: the barrier lies in block-shared memory but was not placed there",
        ]),
    },
    Case {
        id: "block_barrier_placed_after_use",
        name: "Barrier<Block> placed after an arrival",
        run: block_barrier_placed_after_use,
        expect: Expect::TrapsAlways(&[
            "scoped-sync: Barrier::init_in_place: only a fresh barrier (no arrivals yet, not placed before) can be placed into its hardware form",
        ]),
    },
    Case {
        id: "block_barrier_above_hardware",
        name: "Barrier<Block> in shared memory above the hardware's count",
        run: block_barrier_above_hardware,
        expect: Expect::TrapsAlways(&[
            "scoped-sync: Barrier::init_in_place: 1048576 exceeds max() = 1048575",
        ]),
    },
    Case {
        id: "block_barrier_init_in_place",
        name: "Barrier<Block> in dynamic shared memory, init_in_place",
        run: block_barrier_init_in_place,
        expect: Expect::Runs,
    },
    Case {
        id: "block_barrier_array_placed",
        name: "[Barrier<Block>; 2] in shared memory, init_block",
        run: block_barrier_array_placed,
        expect: Expect::Runs,
    },
    Case {
        id: "bus_object_not_placed",
        name: "bus object in mapped memory, not placed",
        run: bus_object_not_placed,
        expect: Expect::TrapsAlways(&[
            "scoped-sync: bus object on the GPU: the object was not placed by the runtime",
        ]),
    },
];

/// The same GPU with the CUDA C++ kernels of the same build in place of the Rust ones.
fn cuda_cpp(gpu: &Gpu) -> Result<Gpu, CudaError> {
    let module = gpu.load_build(&harness::CUDA_KERNELS, gpu.kernel_build())?;
    Ok(Gpu::with_module(module))
}

fn launch(
    gpu: &Gpu,
    kernel: &str,
    grid: u32,
    block: u32,
    cluster: Option<u32>,
    args: KernelArgs<'_>,
) -> Result<(), CudaError> {
    let kernel = gpu.kernel(kernel)?;
    let stream = gpu.default_stream();
    let mut config = LaunchConfig::new(grid, block).on(&stream);
    config.cluster = cluster.map(scoped_sync::cuda::Dim3::x);
    // SAFETY: each caller passes the parameters its kernel takes
    // (kernels/src/device_checks.rs), pointing at memory alive until the synchronize.
    unsafe { kernel.launch(config, args) }?;
    stream.synchronize()
}

fn barrier_arrive_zero(gpu: &Gpu) -> Result<(), CudaError> {
    let barrier = gpu.upload_object(&Barrier::new(2))?;
    let args = KernelArgs::new().arg(&barrier);
    launch(gpu, "check_barrier_arrive_zero", 1, 1, None, args)
}

fn barrier_over_arrive(gpu: &Gpu) -> Result<(), CudaError> {
    let barrier = gpu.upload_object(&Barrier::new(2))?;
    let args = KernelArgs::new().arg(&barrier);
    launch(gpu, "check_barrier_over_arrive", 1, 1, None, args)
}

fn barrier_new_above_max(gpu: &Gpu) -> Result<(), CudaError> {
    let out = gpu.zeros::<u32>(1)?;
    let args = KernelArgs::new().arg(&out);
    launch(gpu, "check_barrier_new_above_max", 1, 1, None, args)
}

fn latch_count_down_past_zero(gpu: &Gpu) -> Result<(), CudaError> {
    let latch = gpu.upload_object(&Latch::new(1))?;
    let args = KernelArgs::new().arg(&latch);
    launch(gpu, "check_latch_count_down_past_zero", 1, 1, None, args)
}

fn semaphore_release_past_max(gpu: &Gpu) -> Result<(), CudaError> {
    let semaphore = gpu.upload_object(&CountingSemaphore::<4>::new(4))?;
    let args = KernelArgs::new().arg(&semaphore);
    launch(gpu, "check_semaphore_release_past_max", 1, 1, None, args)
}

fn block_scope_across_blocks(gpu: &Gpu) -> Result<(), CudaError> {
    // The bytes of a latch do not depend on its scope, so a host latch stands in for
    // the kernel's `Latch<Block>`.
    let latch = gpu.upload_object(&Latch::new(2))?;
    let args = KernelArgs::new().arg(&latch);
    launch(gpu, "check_block_scope_across_blocks", 2, 32, None, args)
}

fn cluster_scope_across_clusters(gpu: &Gpu) -> Result<(), CudaError> {
    let latch = gpu.upload_object(&Latch::new(4))?;
    let args = KernelArgs::new().arg(&latch);
    launch(
        gpu,
        "check_cluster_scope_across_clusters",
        4,
        32,
        Some(2),
        args,
    )
}

fn block_scope_in_other_blocks_shared(gpu: &Gpu) -> Result<(), CudaError> {
    let out = gpu.zeros::<u32>(1)?;
    let args = KernelArgs::new().arg(&out);
    launch(
        gpu,
        "check_block_scope_in_other_blocks_shared",
        2,
        32,
        Some(2),
        args,
    )
}

fn block_scope_own_objects(gpu: &Gpu) -> Result<(), CudaError> {
    let latches = gpu.upload_object(&[
        Latch::new(64),
        Latch::new(64),
        Latch::new(64),
        Latch::new(64),
    ])?;
    let args = KernelArgs::new().arg(&latches);
    launch(gpu, "check_block_scope_own_objects", 4, 64, None, args)
}

fn cluster_scope_own_objects(gpu: &Gpu) -> Result<(), CudaError> {
    let latches = gpu.upload_object(&[Latch::new(128), Latch::new(128)])?;
    let args = KernelArgs::new().arg(&latches);
    launch(gpu, "check_cluster_scope_own_objects", 4, 64, Some(2), args)
}

fn block_scope_one_block_per_launch(gpu: &Gpu) -> Result<(), CudaError> {
    let latch = gpu.upload_object(&Latch::new(64))?;
    for user in [0_u32, 1] {
        let args = KernelArgs::new().arg(&latch).arg(user);
        launch(gpu, "check_block_scope_one_block", 2, 32, None, args)?;
    }
    Ok(())
}

fn block_barrier_not_placed(gpu: &Gpu) -> Result<(), CudaError> {
    let args = KernelArgs::new();
    launch(gpu, "check_block_barrier_not_placed", 1, 64, None, args)
}

fn block_barrier_placed_after_use(gpu: &Gpu) -> Result<(), CudaError> {
    let barrier = gpu.upload_object(&Barrier::new(2))?;
    let args = KernelArgs::new().arg(&barrier);
    launch(
        gpu,
        "check_block_barrier_placed_after_use",
        1,
        1,
        None,
        args,
    )
}

fn block_barrier_above_hardware(gpu: &Gpu) -> Result<(), CudaError> {
    let args = KernelArgs::new();
    launch(gpu, "check_block_barrier_above_hardware", 1, 1, None, args)
}

fn block_barrier_init_in_place(gpu: &Gpu) -> Result<(), CudaError> {
    const THREADS: u32 = 256;
    let kernel = gpu.kernel("check_block_barrier_init_in_place")?;
    let stream = gpu.default_stream();
    let config = LaunchConfig::new(1, THREADS)
        .on(&stream)
        .shared_memory(16 + 4 * THREADS);
    let args = KernelArgs::new().arg(100_u32);
    // SAFETY: the kernel takes `rounds: u32` and gets the dynamic shared memory it
    // needs for a block of THREADS.
    unsafe { kernel.launch(config, args) }?;
    stream.synchronize()
}

fn block_barrier_array_placed(gpu: &Gpu) -> Result<(), CudaError> {
    let args = KernelArgs::new().arg(100_u32);
    launch(gpu, "check_block_barrier_array_placed", 1, 1024, None, args)
}

fn bus_object_not_placed(gpu: &Gpu) -> Result<(), CudaError> {
    let memory = gpu.mapped(64)?;
    // SAFETY: pinned allocations are page-aligned and hold 256 bytes, room for the
    // 192-byte stop source; no kernel uses the memory yet.
    unsafe {
        memory
            .host_words()
            .as_ptr()
            .cast_mut()
            .cast::<BusStopSource>()
            .write(BusStopSource::new())
    };
    let args = KernelArgs::new().arg(&memory);
    launch(gpu, "check_bus_object_not_placed", 1, 1, None, args)
}

fn build_name(build: KernelBuild) -> &'static str {
    match build {
        KernelBuild::Release => "release",
        KernelBuild::Checked => "checked",
    }
}

/// In the child: runs one case and reports how it ended on stdout.
fn child(spec: &str) -> ExitCode {
    let (name, build) = spec.rsplit_once(':').expect("<case>:<build>");
    let build = if build == "checked" {
        KernelBuild::Checked
    } else {
        KernelBuild::Release
    };
    let case = CASES.iter().find(|case| case.id == name).expect("a case");
    let gpu = Gpu::open_build(build).expect("open the GPU");
    let outcome = (case.run)(&gpu);
    let mut out = std::io::stdout();
    match outcome {
        Ok(()) => writeln!(out, "outcome: ran"),
        Err(error @ CudaError::KernelTrapped { .. }) => {
            writeln!(out, "outcome: trapped\nerror: {error}")
        }
        Err(other) => writeln!(out, "outcome: failed\nerror: {other}"),
    }
    .expect("write to stdout");
    ExitCode::SUCCESS
}

/// In the parent: runs `case` in a child with `build`; `Err` says what went wrong.
fn check(case: &Case, build: KernelBuild) -> Result<(), String> {
    let output = Command::new(std::env::current_exe().expect("this test's path"))
        .env(CHILD, format!("{}:{}", case.id, build_name(build)))
        .output()
        .map_err(|error| format!("cannot run the child: {error}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let trap = traps(case, build);
    let printed: &[&str] = match (case.expect, build) {
        (
            Expect::TrapsAlways(printed) | Expect::TrapsWhenChecked(printed),
            KernelBuild::Checked,
        ) => printed,
        _ => &[],
    };
    let wanted = if trap {
        "outcome: trapped"
    } else {
        "outcome: ran"
    };
    if !output.status.success() || !text.contains(wanted) {
        return Err(format!("expected `{wanted}`; the child said:\n{text}"));
    }
    if let Some(missing) = printed.iter().find(|line| !text.contains(*line)) {
        return Err(format!(
            "expected the device to print `{missing}`; the child said:\n{text}"
        ));
    }
    if build == KernelBuild::Release && text.contains("scoped-sync:") {
        return Err(format!("the release kernels printed:\n{text}"));
    }
    Ok(())
}

/// Whether `case` must trap with the kernels of `build`.
fn traps(case: &Case, build: KernelBuild) -> bool {
    match case.expect {
        Expect::TrapsAlways(_) => true,
        Expect::TrapsWhenChecked(_) => build == KernelBuild::Checked,
        Expect::Runs => false,
    }
}

/// A case's name on the command line, `traps::release::barrier_arrive_zero` or
/// `runs::checked::...`: what it must do, with which kernels, which case. `sanitize.sh`
/// runs each in a process of its own and judges what each tool reports by it.
fn test_name(case: &Case, build: KernelBuild) -> String {
    let outcome = if traps(case, build) { "traps" } else { "runs" };
    format!("{outcome}::{}::{}", build_name(build), case.id)
}

/// Every case in both builds.
fn all_tests() -> impl Iterator<Item = (&'static Case, KernelBuild)> {
    CASES.iter().flat_map(|case| {
        [KernelBuild::Release, KernelBuild::Checked]
            .into_iter()
            .map(move |build| (case, build))
    })
}

/// Runs every case in both builds, or with `--exact NAME` the one named; `--list`
/// prints the names (as libtest's `--list --format terse` does, which `sanitize.sh`
/// reads). Other libtest flags (`--test-threads`, `--format`) are accepted and ignored.
fn main() -> ExitCode {
    if let Ok(spec) = std::env::var(CHILD) {
        return child(&spec);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout();
    if args.iter().any(|arg| arg == "--list") {
        for (case, build) in all_tests() {
            let _ = writeln!(out, "{}: test", test_name(case, build));
        }
        return ExitCode::SUCCESS;
    }
    let exact = args
        .iter()
        .position(|arg| arg == "--exact")
        .map(|at| args.get(at + 1).expect("--exact NAME").as_str());
    if let Some(name) = exact {
        if !all_tests().any(|(case, build)| test_name(case, build) == name) {
            eprintln!("no device check named `{name}` (see --list)");
            return ExitCode::FAILURE;
        }
    }
    let mut err = std::io::stderr();
    match Gpu::open() {
        Err(CudaError::NoDriver) => {
            let _ = writeln!(err, "skipped: no CUDA driver");
            return ExitCode::SUCCESS;
        }
        Err(other) => panic!("cannot open the GPU: {other}"),
        // The children open their own contexts.
        Ok(gpu) => drop(gpu),
    }
    let mut failures = 0;
    let mut passed = 0;
    for (case, build) in all_tests() {
        let name = test_name(case, build);
        if exact.is_some_and(|exact| exact != name) {
            continue;
        }
        let label = format!("{} ({} kernels) [{name}]", case.name, build_name(build));
        match check(case, build) {
            Ok(()) => {
                passed += 1;
                let _ = writeln!(err, "ok: {label}");
            }
            Err(why) => {
                failures += 1;
                let _ = writeln!(err, "FAILED: {label}: {why}");
            }
        }
    }
    let _ = writeln!(err, "device checks: {passed} passed, {failures} failed");
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
