//! GPU tests of the runtime as a user meets it: opening a GPU by ordinal or from a
//! cudarc stream, loading modules (embedded, text, file; several at once), 3-D
//! launches, dynamic shared memory, launches on a stream of their own, and the typed
//! errors for a bad module, a missing kernel and a launch that does not fit. The
//! kernels are the project's own (`harness::KERNELS`), loaded through the public API
//! only.
//!
//! Without a CUDA driver every test prints "skipped: no CUDA driver" and passes.

use std::io::Write;

use harness::KERNELS;
use scoped_sync::cuda::cudarc::driver::CudaContext;
use scoped_sync::cuda::{
    CudaError, Dim3, KernelArgs, KernelBuild, LaunchConfig, LaunchLimit, Module, Runtime,
};

/// GPU 0 with the project's release kernels loaded, or `None` without a driver.
fn open() -> Option<(Runtime, Module)> {
    match Runtime::open(0) {
        Ok(runtime) => {
            let module = runtime
                .load_build(&KERNELS, KernelBuild::Release)
                .expect("load the project's kernels");
            Some((runtime, module))
        }
        Err(CudaError::NoDriver) => {
            let _ = writeln!(std::io::stderr(), "skipped: no CUDA driver");
            None
        }
        Err(other) => panic!("cannot open GPU 0: {other}"),
    }
}

/// Runs `fetch_add_device` on `grid × block` threads of `module`, `iterations` each,
/// and returns the counter.
fn count_increments(runtime: &Runtime, module: &Module, grid: u32, block: u32) -> u32 {
    let kernel = module.kernel("fetch_add_device").unwrap();
    let counter = runtime.zeros::<u32>(1).unwrap();
    let iterations = 3_u32;
    // SAFETY: (u32 pointer, u32) is the kernel's signature.
    unsafe {
        kernel.launch(
            LaunchConfig::new(grid, block),
            KernelArgs::new().arg(&counter).arg(iterations),
        )
    }
    .unwrap();
    runtime.download(&counter).unwrap()[0]
}

#[test]
fn open_refuses_an_ordinal_past_the_last_gpu() {
    let Some(_) = open() else { return };
    let count = Runtime::device_count().unwrap();
    match Runtime::open(count) {
        Err(CudaError::NoSuchDevice {
            ordinal,
            count: seen,
        }) => assert_eq!((ordinal, seen), (count, count)),
        other => panic!("expected NoSuchDevice, got {other:?}"),
    }
    let message = Runtime::open(count).unwrap_err().to_string();
    assert!(message.contains(&format!("no GPU {count}")), "{message}");
}

#[test]
fn every_gpu_opens_by_ordinal_and_runs_a_kernel() {
    let Some(_) = open() else { return };
    for ordinal in 0..Runtime::device_count().unwrap() {
        let runtime = Runtime::open(ordinal).unwrap();
        assert_eq!(runtime.ordinal(), ordinal);
        let module = runtime.load(&KERNELS).unwrap();
        assert_eq!(count_increments(&runtime, &module, 4, 64), 4 * 64 * 3);
    }
}

#[test]
fn a_cudarc_stream_is_adopted_with_its_context() {
    let Some(_) = open() else { return };
    let context = CudaContext::new(0).unwrap();
    let stream = context.new_stream().unwrap();
    let runtime = Runtime::from_cudarc(stream.clone());
    assert!(std::sync::Arc::ptr_eq(runtime.cudarc_stream(), &stream));
    assert!(std::sync::Arc::ptr_eq(runtime.cudarc_context(), &context));
    let module = runtime.load(&KERNELS).unwrap();
    assert_eq!(count_increments(&runtime, &module, 2, 32), 2 * 32 * 3);
    // The work went to the caller's stream: cudarc's own copy sees it.
    let values = stream.clone_htod(&[5_u32, 6]).unwrap();
    assert_eq!(runtime.download(&values).unwrap(), [5, 6]);
}

#[test]
fn both_builds_load_side_by_side_and_run() {
    let Some((runtime, release)) = open() else {
        return;
    };
    let checked = runtime.load_build(&KERNELS, KernelBuild::Checked).unwrap();
    assert_eq!(checked.build(), Some(KernelBuild::Checked));
    assert_eq!(release.build(), Some(KernelBuild::Release));
    assert_eq!(count_increments(&runtime, &release, 3, 32), 3 * 32 * 3);
    assert_eq!(count_increments(&runtime, &checked, 3, 32), 3 * 32 * 3);
}

#[test]
fn a_ptx_file_loads_and_a_missing_file_is_a_bad_module() {
    let Some((runtime, _)) = open() else { return };
    let path = std::env::temp_dir().join(format!("scoped-sync-{}.ptx", std::process::id()));
    std::fs::write(&path, KERNELS.ptx(KernelBuild::Release).unwrap()).unwrap();
    let module = runtime.load_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(module.name(), path.display().to_string());
    assert_eq!(count_increments(&runtime, &module, 2, 64), 2 * 64 * 3);
    match runtime.load_file(&path) {
        Err(CudaError::BadModule { module, log, .. }) => {
            assert_eq!(module, path.display().to_string());
            assert!(log.contains("cannot read"), "{log}");
        }
        other => panic!("expected BadModule, got {other:?}"),
    }
}

#[test]
fn broken_ptx_is_refused_with_the_jit_log() {
    let Some((runtime, _)) = open() else { return };
    let broken = ".version 8.6\n.target sm_90\n.address_size 64\n\n.visible .entry broken()\n{\n\tnot_an_instruction;\n}\n";
    match runtime.load_ptx("broken", broken) {
        Err(CudaError::BadModule { module, error, log }) => {
            assert_eq!(module, "broken");
            assert!(error.is_some());
            assert!(!log.is_empty(), "the JIT log is empty");
            let message = runtime.load_ptx("broken", broken).unwrap_err().to_string();
            assert!(message.contains("refused module `broken`"), "{message}");
        }
        other => panic!("expected BadModule, got {other:?}"),
    }
}

#[test]
fn a_missing_kernel_is_named() {
    let Some((_, module)) = open() else { return };
    match module.kernel("no_such_kernel") {
        Err(CudaError::NoSuchKernel { module, kernel }) => {
            assert_eq!(
                (module.as_str(), kernel.as_str()),
                ("kernels", "no_such_kernel")
            );
        }
        other => panic!("expected NoSuchKernel, got {other:?}"),
    }
}

#[test]
fn three_dimensional_grids_and_blocks_reach_every_thread() {
    let Some((runtime, module)) = open() else {
        return;
    };
    let kernel = module.kernel("launch_shape_report").unwrap();
    let (grid, block) = (Dim3::new(2, 3, 2), Dim3::new(4, 2, 8));
    let threads = grid.count().unwrap() * block.count().unwrap();
    let stream = runtime.new_stream().unwrap();
    for own_stream in [false, true] {
        let out = runtime.zeros::<u32>(threads as usize + 6).unwrap();
        let args = KernelArgs::new().arg(&out).arg(threads);
        if own_stream {
            // SAFETY: (u32 pointer, u32); `out` holds `threads + 6` words.
            unsafe { kernel.launch(LaunchConfig::new(grid, block).on(&stream), args) }.unwrap();
            stream.synchronize().unwrap();
        } else {
            // SAFETY: as above.
            unsafe { kernel.launch(LaunchConfig::new(grid, block), args) }.unwrap();
        }
        let words = runtime.download(&out).unwrap();
        let mut expected = Vec::new();
        for bz in 0..grid.z {
            for by in 0..grid.y {
                for bx in 0..grid.x {
                    for tz in 0..block.z {
                        for ty in 0..block.y {
                            for tx in 0..block.x {
                                expected
                                    .push(tx | ty << 4 | tz << 8 | bx << 12 | by << 16 | bz << 20);
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(
            &words[..threads as usize],
            expected,
            "own stream: {own_stream}"
        );
        assert_eq!(
            &words[threads as usize..],
            [4, 2, 8, 2, 3, 2],
            "own stream: {own_stream}"
        );
    }
}

#[test]
fn dynamic_shared_memory_past_48_kib_is_opted_in() {
    let Some((runtime, module)) = open() else {
        return;
    };
    let kernel = module.kernel("dynamic_shared_sum").unwrap();
    let blocks = 3_u32;
    let stream = runtime.new_stream().unwrap();
    for bytes in [4 * 1024, 96 * 1024] {
        assert!(bytes <= kernel.max_dynamic_shared_bytes());
        let words = bytes / 4;
        let expected_sum = (0..words).fold(0_u32, u32::wrapping_add);
        let out = runtime.zeros::<u32>(2 * blocks as usize).unwrap();
        let config = LaunchConfig::new(blocks, 256)
            .on(&stream)
            .shared_memory(bytes);
        // SAFETY: (u32 pointer); two words per block.
        unsafe { kernel.launch(config, KernelArgs::new().arg(&out)) }.unwrap();
        stream.synchronize().unwrap();
        let got = runtime.download(&out).unwrap();
        for block in got.chunks(2) {
            assert_eq!(block, [expected_sum, bytes], "{bytes} bytes");
        }
        // The same on the runtime's own stream.
        let out = runtime.zeros::<u32>(2 * blocks as usize).unwrap();
        let config = LaunchConfig::new(blocks, 256).shared_memory(bytes);
        // SAFETY: as above.
        unsafe { kernel.launch(config, KernelArgs::new().arg(&out)) }.unwrap();
        runtime.synchronize().unwrap();
        let got = runtime.download(&out).unwrap();
        for block in got.chunks(2) {
            assert_eq!(
                block,
                [expected_sum, bytes],
                "{bytes} bytes, runtime's stream"
            );
        }
    }
}

#[test]
fn launches_that_cannot_fit_are_refused_naming_the_limit() {
    let Some((runtime, module)) = open() else {
        return;
    };
    let kernel = module.kernel("dynamic_shared_sum").unwrap();
    let out = runtime.zeros::<u32>(64).unwrap();
    let stream = runtime.default_stream();
    let refused = |config: LaunchConfig<'static>| {
        let args = KernelArgs::new().arg(&out);
        // SAFETY: the launch must be refused before the driver sees it.
        match unsafe { kernel.launch(config.on(&stream), args) } {
            Err(CudaError::LaunchDoesNotFit {
                kernel: name,
                limit,
                requested,
                allowed,
            }) => {
                assert_eq!(name, "dynamic_shared_sum");
                (limit, requested, allowed)
            }
            other => panic!("expected LaunchDoesNotFit, got {other:?}"),
        }
    };
    let threads = u64::from(kernel.max_threads_per_block());
    assert_eq!(
        refused(LaunchConfig::new(Dim3::x(1), Dim3::new(1024, 2, 1))),
        (LaunchLimit::ThreadsPerBlock, 2048, threads)
    );
    // Too many threads, not too wide: the count is checked before each extent.
    assert_eq!(
        refused(LaunchConfig::new(Dim3::x(1), Dim3::x(2048))),
        (LaunchLimit::ThreadsPerBlock, 2048, threads)
    );
    assert_eq!(
        refused(LaunchConfig::new(Dim3::x(1), Dim3::new(1, 1, 128))).0,
        LaunchLimit::BlockDimension
    );
    assert_eq!(
        refused(LaunchConfig::new(Dim3::new(1, 70_000, 1), Dim3::x(32))).0,
        LaunchLimit::GridDimension
    );
    assert_eq!(
        refused(LaunchConfig::new(Dim3::new(1, 0, 1), Dim3::x(32))).0,
        LaunchLimit::EmptyDimension
    );
    let too_much = LaunchConfig::new(Dim3::x(1), Dim3::x(32))
        .shared_memory(kernel.max_dynamic_shared_bytes() + 1);
    assert_eq!(refused(too_much).0, LaunchLimit::SharedMemory);
    let pairs = LaunchConfig::new(Dim3::x(3), Dim3::x(32)).cluster(2);
    assert_eq!(refused(pairs), (LaunchLimit::ClusterShape, 3, 2));
    // A cooperative launch checks the same limits, before co-residency.
    // SAFETY: refused before the driver sees it.
    let cooperative = unsafe {
        kernel.launch(
            LaunchConfig::new(1, (1024, 2)).on(&stream).cooperative(),
            KernelArgs::new().arg(&out),
        )
    };
    assert!(matches!(
        cooperative,
        Err(CudaError::LaunchDoesNotFit {
            limit: LaunchLimit::ThreadsPerBlock,
            ..
        })
    ));
    // Nothing was launched: the context still works.
    assert_eq!(count_increments(&runtime, &module, 1, 32), 32 * 3);
}

/// A hand-written PTX module: one kernel adding 1 to a word.
const ADD_ONE: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry add_one(.param .u64 data) {
    .reg .u64 %rd<2>;
    .reg .u32 %r<2>;
    ld.param.u64 %rd0, [data];
    cvta.to.global.u64 %rd1, %rd0;
    ld.global.u32 %r0, [%rd1];
    add.u32 %r1, %r0, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
";

/// Runs `add_one` of `module` on a word holding 41.
fn adds_one(runtime: &Runtime, module: &Module) -> u32 {
    let kernel = module.kernel("add_one").unwrap();
    let data = runtime.upload(&[41_u32]).unwrap();
    // SAFETY: add_one takes one pointer to a u32.
    unsafe { kernel.launch(LaunchConfig::new(1, 1), KernelArgs::new().arg(&data)) }.unwrap();
    runtime.download(&data).unwrap()[0]
}

#[test]
fn ptx_text_and_a_cubin_from_ptxas_load_and_run() {
    let Some((runtime, _)) = open() else { return };
    let from_text = runtime.load_ptx("add_one", ADD_ONE).unwrap();
    assert_eq!(adds_one(&runtime, &from_text), 42);
    let ptxas = std::env::var_os("PTXAS").unwrap_or_else(|| "ptxas".into());
    let dir = std::env::temp_dir();
    let (ptx, cubin) = (
        dir.join(format!("add-one-{}.ptx", std::process::id())),
        dir.join(format!("add-one-{}.cubin", std::process::id())),
    );
    std::fs::write(&ptx, ADD_ONE).unwrap();
    let assembled = std::process::Command::new(&ptxas)
        .arg("-arch=sm_90")
        .arg(&ptx)
        .arg("-o")
        .arg(&cubin)
        .status();
    std::fs::remove_file(&ptx).unwrap();
    match assembled {
        Ok(status) if status.success() => {}
        _ => {
            let _ = writeln!(std::io::stderr(), "cubin part skipped: no ptxas");
            return;
        }
    }
    let image = std::fs::read(&cubin).unwrap();
    assert!(image.starts_with(b"\x7fELF"), "ptxas wrote no ELF cubin");
    let from_file = runtime.load_file(&cubin).unwrap();
    assert_eq!(adds_one(&runtime, &from_file), 42);
    let from_image = runtime.load_image("add_one.cubin", image).unwrap();
    assert_eq!(adds_one(&runtime, &from_image), 42);
    std::fs::remove_file(&cubin).unwrap();
}

#[test]
fn kernels_built_for_sm80_run_on_this_gpu() {
    let Some((runtime, _)) = open() else { return };
    // The driver JIT-compiles sm_80 PTX for a newer GPU.
    let module = runtime
        .load_build(&harness::KERNELS_SM80, KernelBuild::Release)
        .unwrap();
    let block = 128_u32;
    let phases = 50_u32;

    let grid_kernel = module.kernel("sm80_grid_phases").unwrap();
    let blocks = grid_kernel
        .max_coresident_blocks(block)
        .unwrap()
        .min(2 * runtime.sm_count().unwrap());
    let threads = (blocks * block) as usize;
    let slots = runtime.zeros::<u32>(threads).unwrap();
    let errors = runtime.zeros::<u32>(1).unwrap();
    // SAFETY: sm80_grid_phases(Grid, *mut u32, u32, *mut u32); one slot per thread.
    unsafe {
        grid_kernel.launch(
            LaunchConfig::new(blocks, block).cooperative(),
            KernelArgs::new()
                .grid_barrier()
                .arg(&slots)
                .arg(phases)
                .arg(&errors),
        )
    }
    .unwrap();
    assert_eq!(runtime.download(&errors).unwrap(), [0], "grid barrier");

    let barrier_kernel = module.kernel("sm80_barrier_phases").unwrap();
    let barrier = runtime
        .upload_object(&scoped_sync::Barrier::new(threads as u32))
        .unwrap();
    // SAFETY: sm80_barrier_phases(*const Barrier, *mut u32, u32, *mut u32); the barrier
    // expects every thread of the cooperative launch.
    unsafe {
        barrier_kernel.launch(
            LaunchConfig::new(blocks, block).cooperative(),
            KernelArgs::new()
                .arg(&barrier)
                .arg(&slots)
                .arg(phases)
                .arg(&errors),
        )
    }
    .unwrap();
    assert_eq!(runtime.download(&errors).unwrap(), [0], "Barrier<Device>");

    let exclusion = module.kernel("sm80_semaphore_exclusion").unwrap();
    let permits = 4_u32;
    let semaphore = runtime
        .upload_object(&scoped_sync::CountingSemaphore::<
            { scoped_sync::SEMAPHORE_MAX },
        >::new(permits))
        .unwrap();
    let words = runtime.zeros::<u32>(2).unwrap();
    let inside = runtime.address(&words);
    let rounds = 20_u32;
    let args = KernelArgs::new()
        .arg(&semaphore)
        .arg(inside)
        .arg(inside + 4)
        .arg(rounds);
    let stream = runtime.default_stream();
    // SAFETY: (semaphore, inside, most, rounds); all live until the synchronize.
    unsafe { exclusion.launch(LaunchConfig::new(blocks, block).on(&stream), args) }.unwrap();
    stream.synchronize().unwrap();
    let [now_inside, most] = runtime.download(&words).unwrap()[..] else {
        unreachable!()
    };
    assert_eq!(now_inside, 0);
    assert!(
        (1..=permits).contains(&most),
        "{most} threads held one of {permits} permits at once"
    );
}
