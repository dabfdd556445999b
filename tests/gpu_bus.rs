//! GPU tests of the bus objects: host threads and a kernel use one object in mapped (or
//! managed) memory at the same time. Without a CUDA driver every test prints "skipped:
//! no CUDA driver" and passes. A kernel that traps poisons its context, so that test
//! has its own binary (`tests/gpu_fault.rs`).
//!
//! A kernel that host threads feed is launched from a helper thread while the test's
//! thread plays the host's side
//! ([`launch_beside`](scoped_sync::cuda::Kernel::launch_beside)), so that the tests
//! also pass where launches block until their kernel ends
//! (`CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1`, the bundle's second run).
//! Each test has one kernel running at a time, so none waits for a kernel queued after
//! it (which one hardware queue would never start).

mod common;

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::bus::{
    barrier_shows_each_side_the_others_writes, beside, latch_opens_after_host_and_gpu_count_downs,
    wait,
};
use common::hang_guard;
use harness::bus_demo::{self, Paths, PhaseBarrier, RoundTrips};
use harness::Gpu;
use scoped_sync::bus::{GpuSideLines, ITS_OWN_WORD};
use scoped_sync::cuda::{
    HostWaitError, KernelArgs, LaunchConfig, MappedBuffer, PlacementError, Stream,
};
use scoped_sync::{
    Barrier, BusBarrier, BusLatch, BusStopSource, BusWait, CountingSemaphore, GpuToHost,
    HandoffChannel, HandoffSemaphore, HostToGpu, Latch, StopSource, SEMAPHORE_MAX,
};

fn runtime() -> Option<Gpu> {
    common::gpu_runtime()
}

/// The payload of unit `seq` (the kernels compute the same).
fn payload_of(seq: u64) -> u32 {
    (seq as u32).wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995
}

/// Launches `kernel` on `stream` with `args` (`grid` blocks of `block` threads), for a
/// kernel that no host thread feeds.
fn launch(gpu: &Gpu, stream: &Stream, kernel: &str, grid: u32, block: u32, args: KernelArgs<'_>) {
    let kernel = gpu.kernel(kernel).unwrap();
    let config = LaunchConfig::new(grid, block).on(stream);
    // SAFETY: each caller passes the kernel's parameters in order, pointing at objects
    // that outlive the kernel (the caller synchronizes the stream before they drop).
    unsafe { kernel.launch(config, args) }.unwrap();
}

#[test]
fn handoff_channel_ping_pong_hands_every_unit_in_order() {
    let Some(gpu) = runtime() else { return };
    let channel = gpu.place_mapped(HandoffChannel::new(0, 0)).unwrap();
    let failures = gpu.zeros::<u32>(1).unwrap();
    let stream = gpu.new_stream().unwrap();
    let rounds = 2_000_u32;
    for kernel in ["bus_pingpong", "bus_pingpong_shared"] {
        let first = channel.received();
        let args = KernelArgs::new().arg(&channel).arg(rounds).arg(&failures);
        beside(&gpu, &stream, (kernel, 1, 1), args, |running| {
            for round in 0..u64::from(rounds) {
                channel.release(1);
                let unit = channel.acquire(wait(running)).unwrap();
                assert_eq!(unit, first + round, "{kernel}: units come back in order");
            }
        });
    }
    assert_eq!(gpu.download(&failures).unwrap(), [0]);
    assert_eq!(channel.try_acquire(), None, "no unit left over");
    assert_eq!(channel.sent(), u64::from(2 * rounds));
}

/// Units per GPU thread of the million-unit stress tests: `full`, or a 64th of it under
/// compute-sanitizer, where a million hand-offs across the bus took about 300 s per
/// test and tool on an H100 and kept the rest of the suite from running
/// (`docs/sanitizers.md`); the hand-off protocol is the same at any count.
fn stress_units(full: u32) -> u32 {
    if common::under_compute_sanitizer().is_some() {
        full / 64
    } else {
        full
    }
}

#[test]
fn a_million_gpu_releases_reach_host_threads_once_each_with_their_payloads() {
    let Some(gpu) = runtime() else { return };
    let (grid, block, per_thread) = (8_u32, 32_u32, stress_units(4096));
    let total = (grid * block * per_thread) as usize;
    let results = gpu
        .place_mapped(HandoffSemaphore::<GpuToHost>::new(0))
        .unwrap();
    let payload = gpu.mapped(total).unwrap();
    let stream = gpu.new_stream().unwrap();
    let args = KernelArgs::new()
        .arg(&results)
        .arg(&payload)
        .arg(per_thread);
    let seen: Vec<AtomicU8> = (0..total).map(|_| AtomicU8::new(0)).collect();
    let taken = AtomicUsize::new(0);
    let bad_payloads = AtomicUsize::new(0);
    let kernel = ("bus_release_stress", grid, block);
    beside(&gpu, &stream, kernel, args, |running| {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while taken.fetch_add(1, Ordering::Relaxed) < total {
                        let seq = results.acquire(wait(running)).unwrap();
                        if payload.read(seq as usize) != payload_of(seq) {
                            bad_payloads.fetch_add(1, Ordering::Relaxed);
                        }
                        seen[seq as usize].fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
    });
    assert_eq!(
        bad_payloads.into_inner(),
        0,
        "payload read before its release"
    );
    let wrong = seen
        .iter()
        .filter(|count| count.load(Ordering::Relaxed) != 1)
        .count();
    assert_eq!(wrong, 0, "units lost or duplicated");
    assert_eq!(results.released(), total as u64);
    assert_eq!(results.try_acquire(), None);
}

#[test]
fn a_million_host_releases_reach_gpu_threads_once_each_with_their_payloads() {
    let Some(gpu) = runtime() else { return };
    let (grid, block, per_thread) = (16_u32, 4_u32, stress_units(16_384));
    let total = (grid * block * per_thread) as usize;
    let work = gpu
        .place_mapped(HandoffSemaphore::<HostToGpu>::new(0))
        .unwrap();
    let payload = gpu.mapped(total).unwrap();
    let seen = gpu.zeros::<u32>(total).unwrap();
    let failures = gpu.zeros::<u32>(1).unwrap();
    let stream = gpu.new_stream().unwrap();
    let args = KernelArgs::new()
        .arg(&work)
        .arg(&payload)
        .arg(&seen)
        .arg(per_thread)
        .arg(&failures);
    let host = payload.host_words();
    let kernel = ("bus_acquire_stress", grid, block);
    beside(&gpu, &stream, kernel, args, |_| {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..total / 4 {
                        work.release_with(1, |seq| {
                            host[seq as usize].store(payload_of(seq), Ordering::Relaxed)
                        });
                    }
                });
            }
        });
    });
    assert_eq!(
        gpu.download(&failures).unwrap(),
        [0],
        "bad payloads or waits"
    );
    let seen = gpu.download(&seen).unwrap();
    let wrong = seen.iter().filter(|&&count| count != 1).count();
    assert_eq!(wrong, 0, "units lost or duplicated");
}

#[test]
fn host_waits_end_when_the_kernel_finishes_without_releasing_or_on_timeout_or_stop() {
    let Some(gpu) = runtime() else { return };
    let results = gpu
        .place_mapped(HandoffSemaphore::<GpuToHost>::new(0))
        .unwrap();
    let stop = gpu.place_mapped(BusStopSource::new()).unwrap();
    let seen = gpu.zeros::<u32>(1).unwrap();
    let stream = gpu.new_stream().unwrap();

    // A kernel that waits for a stop request (up to 10 s) and releases nothing.
    let args = KernelArgs::new().arg(&stop).arg(&seen);
    beside(&gpu, &stream, ("bus_stop_wait", 1, 1), args, |running| {
        let timed = results.acquire(running.wait().timeout(Duration::from_millis(50)));
        assert!(matches!(timed, Err(HostWaitError::TimedOut)), "{timed:?}");

        let host_stop = StopSource::new();
        let stopped = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                host_stop.request_stop();
            });
            results.acquire(wait(running).stop(host_stop.token()))
        });
        assert!(
            matches!(stopped, Err(HostWaitError::Stopped)),
            "{stopped:?}"
        );

        // Let the kernel end without releasing: the wait must say so, promptly.
        assert!(stop.request_stop());
        let start = Instant::now();
        let finished = results.acquire(wait(running));
        assert!(
            matches!(finished, Err(HostWaitError::KernelFinished)),
            "{finished:?}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    });
    assert_eq!(
        gpu.download(&seen).unwrap(),
        [1],
        "the kernel saw the host's stop"
    );
}

#[test]
fn bus_latch_opens_after_host_and_gpu_count_downs() {
    let Some(gpu) = runtime() else { return };
    let shape = (4_u32, 64_u32, 3_u32);
    let latch = gpu
        .place_mapped(BusLatch::new(u64::from(shape.0 * shape.1 + shape.2)))
        .unwrap();
    latch_opens_after_host_and_gpu_count_downs(
        &gpu,
        latch.device_address(),
        "bus_latch_count_down",
        shape,
        |wait| latch.arrive_and_wait(1, wait),
    );
    assert_eq!(latch.counted(), latch.expected());
}

#[test]
fn managed_latch_opens_after_host_and_gpu_count_downs() {
    let Some(gpu) = runtime() else { return };
    if !gpu.concurrent_managed_access().unwrap() {
        common::skip("no concurrentManagedAccess");
        return;
    }
    let shape = (2_u32, 32_u32, 3_u32);
    let latch = gpu
        .place_managed(Latch::new(shape.0 * shape.1 + shape.2))
        .unwrap();
    latch_opens_after_host_and_gpu_count_downs(
        &gpu,
        latch.device_address(),
        "bus_managed_latch_count_down",
        shape,
        |wait| latch.arrive_and_wait(1, wait),
    );
    assert!(latch.try_wait());
}

#[test]
fn bus_barrier_shows_each_side_the_others_writes_every_phase() {
    let Some(gpu) = runtime() else { return };
    let shape = (4_u32, 2_u32, 200_u32);
    let barrier = gpu
        .place_mapped(BusBarrier::new(u64::from(shape.1), u64::from(shape.0)))
        .unwrap();
    barrier_shows_each_side_the_others_writes(
        &gpu,
        barrier.device_address(),
        "bus_barrier_phases",
        shape,
        |wait| barrier.arrive_and_wait(wait),
    );
}

#[test]
fn managed_barrier_shows_each_side_the_others_writes_every_phase() {
    let Some(gpu) = runtime() else { return };
    if !gpu.concurrent_managed_access().unwrap() {
        common::skip("no concurrentManagedAccess");
        return;
    }
    // Fewer phases: every access of a managed word from the other side migrates its
    // page.
    let shape = (4_u32, 2_u32, 50_u32);
    let barrier = gpu.place_managed(Barrier::new(shape.0 + shape.1)).unwrap();
    barrier_shows_each_side_the_others_writes(
        &gpu,
        barrier.device_address(),
        "bus_managed_barrier_phases",
        shape,
        |wait| barrier.arrive_and_wait(wait),
    );
}

#[test]
fn stop_requests_cross_the_bus_both_ways() {
    let Some(gpu) = runtime() else { return };
    let stream = gpu.new_stream().unwrap();
    let counter = gpu.zeros::<u32>(1).unwrap();

    // The host stops a waiting kernel.
    let to_gpu = gpu.place_mapped(BusStopSource::new()).unwrap();
    let args = KernelArgs::new().arg(&to_gpu).arg(&counter);
    beside(&gpu, &stream, ("bus_stop_wait", 2, 32), args, |_| {
        assert!(to_gpu.request_stop());
        assert!(
            !to_gpu.request_stop(),
            "only the first request returns true"
        );
    });
    assert_eq!(gpu.download(&counter).unwrap(), [64]);

    // A kernel requests stop; the host forwards it to its own source's callbacks.
    let from_gpu = gpu.place_mapped(BusStopSource::new()).unwrap();
    let first = gpu.zeros::<u32>(1).unwrap();
    let host_source = StopSource::new();
    let ran = std::sync::atomic::AtomicBool::new(false);
    let _callback =
        scoped_sync::stop_callback(host_source.token(), || ran.store(true, Ordering::Relaxed));
    let args = KernelArgs::new().arg(&from_gpu).arg(&first);
    let forwarded = beside(
        &gpu,
        &stream,
        ("bus_stop_request", 4, 64),
        args,
        |running| from_gpu.forward_to(&host_source, wait(running)),
    );
    assert!(matches!(forwarded, Ok(true)), "{forwarded:?}");
    assert!(ran.load(Ordering::Relaxed), "the host callback ran");
    assert!(from_gpu.requested_by_gpu() && !from_gpu.requested_by_host());
    assert_eq!(
        gpu.download(&first).unwrap(),
        [1],
        "one GPU request was first"
    );
}

/// Issue 34's promise of `HandoffChannel::endpoints`: of 1024 threads that race for
/// both endpoints, 1000 times, exactly one gets them each time, and it serves.
#[test]
fn one_of_a_thousand_racing_threads_gets_both_endpoints_every_round() {
    let Some(gpu) = runtime() else { return };
    let rounds = 1000_u32;
    let channel = gpu.place_mapped(HandoffChannel::new(0, 0)).unwrap();
    // One unit per round for its winner to take.
    channel.release(u64::from(rounds));
    let winners = gpu.zeros::<u32>(rounds as usize).unwrap();
    let failures = gpu.zeros::<u32>(1).unwrap();
    let stream = gpu.new_stream().unwrap();
    let args = KernelArgs::new()
        .arg(&channel)
        .arg(rounds)
        .arg(&winners)
        .arg(&failures);
    launch(&gpu, &stream, "bus_endpoints_race", 1, 1024, args);
    stream.synchronize().unwrap();
    let winners = gpu.download(&winners).unwrap();
    let split: Vec<(usize, u32)> = winners
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, won)| won != 1)
        .collect();
    assert!(
        split.is_empty(),
        "rounds without exactly one winner (round, winners): {split:?}"
    );
    assert_eq!(
        gpu.download(&failures).unwrap(),
        [0],
        "a winner found no unit, the wrong one, or an endpoint still free"
    );
    for round in 0..u64::from(rounds) {
        assert_eq!(
            channel.try_acquire(),
            Some(round),
            "each winner answered once"
        );
    }
    assert_eq!(channel.try_acquire(), None);
}

#[test]
fn persistent_worker_serves_items_until_stopped() {
    let Some(gpu) = runtime() else { return };
    // `persistent_worker` checks every answer and fails on a wrong one; then it stops
    // the kernel with a `BusStopSource` and synchronizes its stream, which would hang
    // if the kernel missed the stop: the guard turns that into a failure.
    hang_guard("persistent worker", 120, || {
        for window in [1, 16] {
            let run = bus_demo::persistent_worker(&gpu, 5_000, window, 128).unwrap();
            assert_eq!((run.items, run.window), (5_000, window));
        }
    });
}

#[test]
fn the_reports_host_gpu_measurements_run_and_check_their_results() {
    let Some(gpu) = runtime() else { return };
    // Each measurement checks what the kernel and the host saw and fails otherwise;
    // the guard turns a lost hand-off into a failure instead of a hang.
    hang_guard("host-GPU measurements", 120, || {
        let mut trips = RoundTrips::new(&gpu).unwrap();
        for _ in 0..2 {
            assert!(trips.raw_spin(200).unwrap() > Duration::ZERO);
            assert!(trips.handoff(200, Paths::Exclusive).unwrap() > Duration::ZERO);
            assert!(trips.handoff(50, Paths::Shared).unwrap() > Duration::ZERO);
        }
        assert!(bus_demo::barrier_phase(&gpu, 100, PhaseBarrier::Bus).unwrap() > Duration::ZERO);
        if gpu.concurrent_managed_access().unwrap() {
            let phase = bus_demo::barrier_phase(&gpu, 5, PhaseBarrier::Managed).unwrap();
            assert!(phase > Duration::ZERO);
        }
        let waited = Duration::from_millis(1);
        for wake_up in [
            bus_demo::host_wake_up(&gpu, waited, 3).unwrap(),
            bus_demo::device_wake_up(&gpu, waited, 3).unwrap(),
        ] {
            assert!(wake_up.plain > Duration::ZERO);
            assert!(wake_up.after_wait_worst >= wake_up.after_wait);
        }
    });
}

#[test]
fn mapped_placement_refuses_read_modify_writes_from_both_sides() {
    let Some(gpu) = runtime() else { return };
    let placed = gpu.place_mapped(CountingSemaphore::<1>::new(0));
    if gpu.host_native_atomics().unwrap() {
        assert!(placed.is_ok());
    } else {
        let error = placed.unwrap_err();
        assert!(
            matches!(
                error,
                PlacementError::NotAtomic {
                    attribute: "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED",
                    memory: "mapped",
                    ..
                }
            ),
            "{error}"
        );
    }
    assert!(gpu
        .place_mapped(HandoffSemaphore::<GpuToHost>::new(0))
        .is_ok());
}

/// Whether `address` lies in the `size` bytes from `start`.
fn within(address: u64, start: u64, size: usize) -> bool {
    (start..start + size as u64).contains(&address)
}

/// Every GPU side line of `object`, placed at `start`: its attached word, which must be
/// set, and whether it lies inside the object (or is the line's own, `ITS_OWN_WORD`).
fn attached_words<T: GpuSideLines>(object: &T, start: u64) -> Vec<(u64, bool)> {
    let lines: Vec<_> = object.gpu_side_lines().into_iter().flatten().collect();
    assert!(!lines.is_empty(), "every bus object has a GPU side line");
    lines
        .iter()
        .map(|line| {
            let word = line.gpu_word();
            assert_ne!(word, 0, "a placed object's GPU side word is attached");
            let inside = word == ITS_OWN_WORD || within(word, start, std::mem::size_of::<T>());
            (word, inside)
        })
        .collect()
}

#[test]
fn placed_bus_objects_keep_the_gpus_read_modify_writes_off_mapped_memory() {
    let Some(gpu) = runtime() else { return };
    fn outside<T: scoped_sync::cuda::Shareable<HostView = T> + GpuSideLines>(
        gpu: &Gpu,
        object: T,
    ) -> Vec<(u64, bool)> {
        let placed = gpu.place_mapped(object).unwrap();
        attached_words::<T>(&placed, placed.device_address())
    }
    let mapped = [
        outside(&gpu, HandoffSemaphore::<GpuToHost>::new(3)),
        outside(&gpu, HandoffSemaphore::<HostToGpu>::new(3)),
        outside(&gpu, HandoffChannel::new(1, 2)),
        outside(&gpu, BusLatch::new(4)),
        outside(&gpu, BusBarrier::new(1, 1)),
        outside(&gpu, BusStopSource::new()),
    ];
    for (object, words) in mapped.iter().enumerate() {
        assert!(
            words.iter().all(|&(_, inside)| !inside),
            "object {object}: a GPU side word in mapped memory: {words:?}"
        );
    }
    // The device words hold the lines' counts: a semaphore made with 3 units hands
    // the GPU's releases on from 3 (the rotation test below runs that on the GPU).
    // In device memory (uploaded) and managed memory the words are the object's own.
    // They hold no address (ITS_OWN_WORD), so the bytes read the same wherever a
    // process maps them: read back from the device.
    let stop = gpu.upload_object(&BusStopSource::new()).unwrap();
    let uploaded = gpu.download(&stop).unwrap();
    assert_eq!(uploaded.len(), std::mem::size_of::<BusStopSource>());
    let mut copy = std::mem::MaybeUninit::<BusStopSource>::uninit();
    // SAFETY: a bus object is plain atomic words (`DeviceObject`): its bytes, copied,
    // are a valid object.
    let copy = unsafe {
        std::ptr::copy_nonoverlapping(uploaded.as_ptr(), copy.as_mut_ptr().cast(), uploaded.len());
        copy.assume_init()
    };
    assert!(attached_words(&copy, gpu.address(&stop))
        .iter()
        .all(|&(word, inside)| inside && word == ITS_OWN_WORD));
    // A channel the caller put into mapped memory itself: attached while the guard
    // lives, detached after.
    let memory = gpu
        .mapped(std::mem::size_of::<HandoffChannel>() / 4)
        .unwrap();
    // SAFETY: pinned allocations are page-aligned; the words are atomics nothing else
    // uses, and the channel (plain atomics) lives as long as `memory`.
    let channel = unsafe {
        let channel = memory
            .host_words()
            .as_ptr()
            .cast_mut()
            .cast::<HandoffChannel>();
        channel.write(HandoffChannel::new(0, 0));
        &*channel
    };
    let words = gpu.attach_gpu_words(channel).unwrap();
    let attached = attached_words(channel, memory.device_address());
    assert!(attached.iter().all(|&(_, inside)| !inside), "{attached:?}");
    drop(words);
    assert!(channel
        .gpu_side_lines()
        .into_iter()
        .flatten()
        .all(|line| line.gpu_word() == 0));
    if gpu.concurrent_managed_access().unwrap() {
        let latch = gpu.place_managed(BusLatch::new(1)).unwrap();
        let words = attached_words::<BusLatch>(&latch, latch.device_address());
        assert!(words.iter().all(|&(_, inside)| inside), "{words:?}");
    }
}

#[test]
fn managed_memory_runs_the_ordinary_system_scope_semaphores() {
    let Some(gpu) = runtime() else { return };
    if !gpu.concurrent_managed_access().unwrap() {
        let refused = gpu.place_managed(CountingSemaphore::<1>::new(0));
        assert!(matches!(refused, Err(PlacementError::NotAtomic { .. })));
        return;
    }
    let to_gpu = gpu
        .place_managed(CountingSemaphore::<SEMAPHORE_MAX>::new(0))
        .unwrap();
    let to_host = gpu
        .place_managed(CountingSemaphore::<SEMAPHORE_MAX>::new(0))
        .unwrap();
    let failures = gpu.zeros::<u32>(1).unwrap();
    let stream = gpu.new_stream().unwrap();
    let rounds = 500_u32;
    let args = KernelArgs::new()
        .arg(&to_gpu)
        .arg(&to_host)
        .arg(rounds)
        .arg(&failures);
    let kernel = ("bus_managed_pingpong", 1, 1);
    beside(&gpu, &stream, kernel, args, |running| {
        for _ in 0..rounds {
            to_gpu.release(1);
            wait(running)
                .wait_until(&mut || to_host.try_acquire())
                .unwrap();
        }
    });
    assert_eq!(gpu.download(&failures).unwrap(), [0]);
}

/// The object a `bus_construct` kernel built at the start of `memory`, moved out (its
/// bytes as the GPU wrote them), for placing: a bus object's GPU side words get their
/// home in device memory when the runtime places it.
///
/// # Safety
///
/// The kernel built a `T` there and has ended; nothing else reads or writes the memory.
unsafe fn built_in<T>(memory: &MappedBuffer<'_>) -> T {
    // SAFETY: pinned allocations are page-aligned; the caller vouches for the rest.
    unsafe { memory.host_words().as_ptr().cast::<T>().read() }
}

#[test]
fn bus_objects_built_by_the_gpu_serve_the_host_and_then_kernels() {
    let Some(gpu) = runtime() else { return };
    let stream = gpu.new_stream().unwrap();
    let failures = gpu.zeros::<u32>(1).unwrap();
    let counter = gpu.zeros::<u32>(1).unwrap();
    let build = |memory: &MappedBuffer<'_>, kind: u32, a: u64, b: u64| {
        let args = KernelArgs::new().arg(kind).arg(memory).arg(a).arg(b);
        launch(&gpu, &stream, "bus_construct", 1, 1, args);
        stream.synchronize().unwrap();
    };
    let memory: Vec<MappedBuffer<'_>> = (0..5).map(|_| gpu.mapped(128).unwrap()).collect();

    // A semaphore made holding 5 units: the host takes them, then a kernel releases 3
    // more with payloads.
    build(&memory[0], 0, 5, 0);
    // SAFETY: kind 0 is a `HandoffSemaphore<GpuToHost>`; the kernel has ended.
    let built: HandoffSemaphore<GpuToHost> = unsafe { built_in(&memory[0]) };
    let semaphore = gpu.place_mapped(built).unwrap();
    let units: Vec<_> = std::iter::from_fn(|| semaphore.try_acquire()).collect();
    assert_eq!(units, [0, 1, 2, 3, 4]);
    let payload = gpu.mapped(8).unwrap();
    let args = KernelArgs::new().arg(&semaphore).arg(&payload).arg(3_u32);
    beside(
        &gpu,
        &stream,
        ("bus_release_stress", 1, 1),
        args,
        |running| {
            for expected in 5..8 {
                assert_eq!(semaphore.acquire(wait(running)).unwrap(), expected);
                assert_eq!(payload.read(expected as usize), payload_of(expected));
            }
        },
    );

    // A channel made with 2 units for the GPU and 1 for the host: the host takes its
    // unit, a ping-pong kernel answers the 2 and one more the host releases.
    build(&memory[1], 1, 2, 1);
    // SAFETY: kind 1 is a `HandoffChannel`.
    let channel = gpu
        .place_mapped(unsafe { built_in::<HandoffChannel>(&memory[1]) })
        .unwrap();
    assert_eq!(channel.try_acquire(), Some(0));
    let args = KernelArgs::new().arg(&channel).arg(3_u32).arg(&failures);
    beside(&gpu, &stream, ("bus_pingpong", 1, 1), args, |running| {
        channel.release(1);
        for expected in 1..4 {
            assert_eq!(channel.acquire(wait(running)).unwrap(), expected);
        }
    });

    // A latch made expecting 2 × 64 GPU threads and 1 host count-down.
    build(&memory[2], 2, 129, 0);
    // SAFETY: kind 2 is a `BusLatch`.
    let latch = gpu
        .place_mapped(unsafe { built_in::<BusLatch>(&memory[2]) })
        .unwrap();
    let args = KernelArgs::new().arg(&latch).arg(&failures);
    let kernel = ("bus_latch_count_down", 2, 64);
    beside(&gpu, &stream, kernel, args, |running| {
        latch.arrive_and_wait(1, wait(running)).unwrap();
    });

    // A barrier made for 1 host and 2 GPU participants, 10 phases.
    build(&memory[3], 3, 1, 2);
    // SAFETY: kind 3 is a `BusBarrier`.
    let barrier = gpu
        .place_mapped(unsafe { built_in::<BusBarrier>(&memory[3]) })
        .unwrap();
    let (blocks, phases) = (2_u32, 10_u32);
    let gpu_data = gpu.mapped((blocks * phases) as usize).unwrap();
    let host_data = gpu.mapped(phases as usize).unwrap();
    let copied = gpu.zeros::<u32>((blocks * phases) as usize).unwrap();
    let args = KernelArgs::new()
        .arg(&barrier)
        .arg(phases)
        .arg(&gpu_data)
        .arg(&host_data)
        .arg(&copied)
        .arg(&failures);
    let kernel = ("bus_barrier_phases", blocks, 32);
    beside(&gpu, &stream, kernel, args, |running| {
        for phase in 0..phases {
            host_data.host_words()[phase as usize].store(phase + 1, Ordering::Relaxed);
            barrier.arrive_and_wait(wait(running)).unwrap();
        }
    });

    // A stop source: the host requests stop, a kernel's 32 threads see it.
    build(&memory[4], 4, 0, 0);
    // SAFETY: kind 4 is a `BusStopSource`.
    let stop = gpu
        .place_mapped(unsafe { built_in::<BusStopSource>(&memory[4]) })
        .unwrap();
    assert!(!stop.stop_requested());
    assert!(stop.request_stop());
    let args = KernelArgs::new().arg(&stop).arg(&counter);
    launch(&gpu, &stream, "bus_stop_wait", 1, 32, args);
    stream.synchronize().unwrap();

    assert_eq!(gpu.download(&failures).unwrap(), [0]);
    assert_eq!(gpu.download(&counter).unwrap(), [32]);
}
