//! GPU tests: kernels built from this repository run on the first GPU. On a machine
//! without a CUDA driver every test prints "skipped: no CUDA driver" and passes.
//!
//! Run them on a GPU host without a Rust toolchain with the bundle:
//! `bash scripts/gpu-bundle.sh`, then `bash bundle/run.sh` there.

mod common;

use harness::Gpu;
use scoped_sync::cuda::{CudaError, KernelArgs, LaunchConfig, MemSyncDomain};
use scoped_sync::{Barrier, Latch};

fn runtime() -> Option<Gpu> {
    common::gpu_runtime()
}

#[test]
fn device_scope_fetch_add_counts_every_increment() {
    let Some(gpu) = runtime() else { return };
    let (grid, block, iterations) = (gpu.sm_count().unwrap() * 2, 256_u32, 100_u32);
    let counter = gpu.zeros::<u32>(1).unwrap();
    let kernel = gpu.kernel("fetch_add_device").unwrap();
    // SAFETY: (u32 pointer, u32) is the kernel's signature.
    unsafe {
        kernel.launch(
            LaunchConfig::new(grid, block),
            KernelArgs::new().arg(&counter).arg(iterations),
        )
    }
    .unwrap();
    assert_eq!(gpu.download(&counter).unwrap(), [grid * block * iterations]);
}

#[test]
fn grid_barrier_releases_no_thread_early() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("grid_barrier_phases").unwrap();
    let block = 64_u32;
    let grid = kernel
        .max_coresident_blocks(block)
        .unwrap()
        .min(gpu.sm_count().unwrap() * 2);
    let threads = grid * block;
    let phases = 8_u32;
    let barrier = gpu.upload_object(&Barrier::new(threads)).unwrap();
    let slots = gpu.zeros::<u32>(threads as usize).unwrap();
    let errors = gpu.zeros::<u32>(1).unwrap();
    // SAFETY: (barrier pointer, u32 pointer, u32, u32 pointer) is the kernel's signature.
    unsafe {
        kernel.launch(
            LaunchConfig::new(grid, block).cooperative(),
            KernelArgs::new()
                .arg(&barrier)
                .arg(&slots)
                .arg(phases)
                .arg(&errors),
        )
    }
    .unwrap();
    assert_eq!(
        gpu.download(&errors).unwrap(),
        [0],
        "threads saw a neighbour's old phase"
    );
    assert!(gpu
        .download(&slots)
        .unwrap()
        .iter()
        .all(|&slot| slot == phases));
}

#[test]
fn latch_publishes_every_write_before_count_down() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("latch_count_down_wait").unwrap();
    let block = 128_u32;
    let grid = kernel
        .max_coresident_blocks(block)
        .unwrap()
        .min(gpu.sm_count().unwrap());
    let threads = grid * block;
    let latch = gpu.upload_object(&Latch::new(threads)).unwrap();
    let flags = gpu.zeros::<u32>(threads as usize).unwrap();
    let errors = gpu.zeros::<u32>(1).unwrap();
    // SAFETY: (latch pointer, u32 pointer, u32 pointer) is the kernel's signature.
    unsafe {
        kernel.launch(
            LaunchConfig::new(grid, block).cooperative(),
            KernelArgs::new().arg(&latch).arg(&flags).arg(&errors),
        )
    }
    .unwrap();
    assert_eq!(gpu.download(&errors).unwrap(), [0]);
}

#[test]
fn cooperative_launch_refuses_a_grid_that_cannot_be_coresident() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("grid_barrier_phases").unwrap();
    let max = kernel.max_coresident_blocks(64).unwrap();
    let barrier = gpu.upload_object(&Barrier::new(1)).unwrap();
    let slots = gpu.zeros::<u32>(1).unwrap();
    let errors = gpu.zeros::<u32>(1).unwrap();
    // SAFETY: as in grid_barrier_releases_no_thread_early; the launch must not happen.
    let refused = unsafe {
        kernel.launch(
            LaunchConfig::new(max + 1, 64).cooperative(),
            KernelArgs::new()
                .arg(&barrier)
                .arg(&slots)
                .arg(1_u32)
                .arg(&errors),
        )
    };
    match refused {
        Err(CudaError::GridTooLarge {
            requested,
            max: limit,
        }) => {
            assert_eq!((requested, limit), (max + 1, max));
        }
        other => panic!("expected GridTooLarge, got {other:?}"),
    }
}

#[test]
fn cluster_launch_groups_blocks_in_pairs() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("cluster_rank_report").unwrap();
    let blocks = 8_u32;
    let out = gpu.zeros::<u32>(2 * blocks as usize).unwrap();
    let config = LaunchConfig::new(blocks, 32).cluster(2);
    // SAFETY: (u32 pointer) is the kernel's signature; `out` outlives the launch.
    unsafe { kernel.launch(config, KernelArgs::new().arg(&out)) }.unwrap();
    let reported = gpu.download(&out).unwrap();
    for (block, pair) in reported.chunks(2).enumerate() {
        assert_eq!(
            pair,
            [block as u32 % 2, 2],
            "block {block}: (rank in cluster, cluster size)"
        );
    }
}

#[test]
fn remote_domain_kernel_writes_mapped_host_memory() {
    let Some(gpu) = runtime() else { return };
    assert!(gpu.domain_count().unwrap() >= 1);
    let kernel = gpu.kernel("stream_writes").unwrap();
    let buffer = gpu.mapped(4096).unwrap();
    let stream = gpu.new_stream().unwrap();
    let config = LaunchConfig::new(4, 256)
        .on(&stream)
        .domain(MemSyncDomain::Remote);
    let args = KernelArgs::new().arg(&buffer).arg(4096_u32).arg(3_u32);
    // SAFETY: (u32 pointer, u32, u32) is the kernel's signature; the buffer outlives it.
    unsafe { kernel.launch(config, args) }.unwrap();
    stream.synchronize().unwrap();
    assert!(
        (0..buffer.len()).all(|word| buffer.read(word) == 3),
        "every word holds the last round"
    );
}

#[test]
fn stream_domain_map_is_set_and_read_back() {
    let Some(gpu) = runtime() else { return };
    let stream = gpu.new_stream().unwrap();
    let last = u8::try_from(gpu.domain_count().unwrap() - 1).unwrap();
    stream.set_domain_map(last, 0).unwrap();
    assert_eq!(stream.domain_map().unwrap(), (last, 0));
    // A default-domain launch on the remapped stream still runs.
    let kernel = gpu.kernel("stream_writes").unwrap();
    let out = gpu.zeros::<u32>(64).unwrap();
    let args = KernelArgs::new().arg(&out).arg(64_u32).arg(2_u32);
    // SAFETY: (u32 pointer, u32, u32) is the kernel's signature; `out` outlives it.
    unsafe { kernel.launch(LaunchConfig::new(1, 64).on(&stream), args) }.unwrap();
    stream.synchronize().unwrap();
    assert!(gpu.download(&out).unwrap().iter().all(|&word| word == 2));
}

#[test]
fn thread_ids_are_distinct_within_a_grid_and_between_launches() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("thread_ids").unwrap();
    let (grid, block) = (gpu.sm_count().unwrap() * 2, 256_u32);
    let threads = (grid * block) as usize;
    let mut seen = std::collections::HashSet::new();
    for launch in 0..2 {
        let ids = gpu.zeros::<u64>(threads).unwrap();
        // SAFETY: (u64 pointer) is the kernel's signature, one slot per thread.
        unsafe { kernel.launch(LaunchConfig::new(grid, block), KernelArgs::new().arg(&ids)) }
            .unwrap();
        for id in gpu.download(&ids).unwrap() {
            assert_ne!(id, 0, "0 never names a thread");
            assert!(
                seen.insert(id),
                "id {id:#x} given twice (launch {launch}): a later grid must not reuse an earlier one's ids"
            );
        }
    }
}

/// Runs `kernel` (semaphore with no unit, new stop source, 128 zeroed bytes per block
/// for its callback, five u32 results) 20 times on up to 32 blocks of 32 threads, and
/// hands each run's results and the number of waiting blocks (all but block 0, which
/// requests stop) to `check`.
fn stop_from_another_block(gpu: &Gpu, kernel: &str, check: impl Fn([u32; 5], u32)) {
    let kernel = gpu.kernel(kernel).unwrap();
    let (grid, block) = (gpu.sm_count().unwrap().min(32), 32_u32);
    for _ in 0..20 {
        let semaphore = gpu
            .upload_object(&scoped_sync::CountingSemaphore::<1>::new(0))
            .unwrap();
        let source = gpu.new_stop_source().unwrap();
        let callbacks = gpu.zeros::<u64>(grid as usize * 16).unwrap();
        let results = gpu.zeros::<u32>(5).unwrap();
        // SAFETY: (semaphore, stop source, 128 bytes per block, u32 results: four or
        // five) is the signature of both kernels.
        unsafe {
            kernel.launch(
                LaunchConfig::new(grid, block),
                KernelArgs::new()
                    .arg(&semaphore)
                    .arg(&source)
                    .arg(&callbacks)
                    .arg(&results),
            )
        }
        .unwrap();
        check(
            gpu.download(&results).unwrap().try_into().unwrap(),
            grid - 1,
        );
    }
}

#[test]
fn stoppable_waits_and_callbacks_on_the_gpu_end_at_a_stop_from_another_block() {
    let Some(gpu) = runtime() else { return };
    stop_from_another_block(&gpu, "stoppable_waits_end_at_stop", |results, waiters| {
        let [called, stopped, registered, first, _] = results;
        assert_eq!(registered, waiters);
        assert_eq!(first, 1, "the one request is the first");
        assert_eq!(called, waiters, "every callback ran once");
        assert_eq!(stopped, waiters, "every stoppable wait ended with Stopped");
    });
}

/// `StopCallbackSlot`: the same stop from another block, with the callbacks kept in
/// slots the host allocated (zeroed: empty, 128 bytes each, asserted in the kernel); a
/// held slot refuses a second callback, a freed one takes a new one, which (placed
/// after the stop) runs at once.
#[test]
fn stop_callbacks_kept_in_slots_run_once_and_free_their_slots() {
    let Some(gpu) = runtime() else { return };
    stop_from_another_block(&gpu, "stop_callbacks_in_slots", |results, waiters| {
        let [called, stopped, registered, first, refused] = results;
        assert_eq!(registered, waiters);
        assert_eq!(refused, waiters, "a held slot refuses a second callback");
        assert_eq!(first, 1, "the one request is the first");
        assert_eq!(stopped, waiters, "every stoppable wait ended with Stopped");
        assert_eq!(
            called,
            2 * waiters,
            "every callback ran once, the ones placed after the stop at once"
        );
    });
}

/// A device-scope stop source ends waits on block-scope objects in shared memory (a
/// semaphore, a latch, a barrier): the token may be wider than the object, and the
/// wait reads it at the token's scope, so a request from another block reaches it.
#[test]
fn a_device_stop_ends_block_scope_waits_in_shared_memory() {
    let Some(gpu) = runtime() else { return };
    let kernel = gpu.kernel("block_waits_end_at_a_device_stop").unwrap();
    let grid = gpu.sm_count().unwrap().min(32);
    for _ in 0..20 {
        let source = gpu.new_stop_source().unwrap();
        let results = gpu.zeros::<u32>(5).unwrap();
        // SAFETY: (stop source, five u32 results) is the kernel's signature; both
        // outlive it (the download waits for it).
        unsafe {
            kernel.launch(
                LaunchConfig::new(grid, 64),
                KernelArgs::new().arg(&source).arg(&results),
            )
        }
        .unwrap();
        let waiters = grid - 1;
        let [semaphore, latch, barrier, registered, first]: [u32; 5] =
            gpu.download(&results).unwrap().try_into().unwrap();
        assert_eq!(registered, 3 * waiters);
        assert_eq!(first, 1, "the one request is the first");
        assert_eq!(
            semaphore, waiters,
            "every semaphore wait ended with Stopped"
        );
        assert_eq!(latch, waiters, "every latch wait ended with Stopped");
        assert_eq!(barrier, waiters, "every barrier wait ended with Stopped");
    }
}
