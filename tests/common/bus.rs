//! Host-and-GPU helpers of the bus tests (`tests/gpu_bus.rs`, and `tests/gpu_cuda_cpp.rs`,
//! which runs them on the CUDA C++ kernels of the same names).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harness::Gpu;
use scoped_sync::cuda::beside::Beside;
use scoped_sync::cuda::{HostWait, HostWaitError, KernelArgs, LaunchConfig, Stream};

/// Every host wait of these tests gives up after this (a failure, not a hang).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A wait for what the kernel `running` beside the test releases.
pub fn wait<'a>(running: &Beside<'a>) -> HostWait<'a> {
    running.wait().timeout(PATIENCE)
}

/// Launches `kernel` on `stream` with `args` (`grid` blocks of `block` threads) from a
/// helper thread, runs `host` on this thread beside it
/// ([`launch_beside`](scoped_sync::cuda::Kernel::launch_beside); `host` waits through
/// the [`Beside`] it gets), synchronizes the stream, and returns what `host` returned.
///
/// A failed assertion in `host` is reported once the launch call has returned: where
/// launches block, when the kernel ends (the kernels these tests feed give up waiting
/// for the host after 10 s).
pub fn beside<R>(
    gpu: &Gpu,
    stream: &Stream,
    (kernel, grid, block): (&str, u32, u32),
    args: KernelArgs<'_>,
    host: impl FnOnce(&Beside<'_>) -> R,
) -> R {
    let kernel = gpu.kernel(kernel).unwrap();
    let config = LaunchConfig::new(grid, block).on(stream);
    // SAFETY: the caller passes the kernel's parameters in order, pointing at objects
    // that outlive the kernel (the stream is synchronized below).
    let run = unsafe { kernel.launch_beside(config, args, host) };
    stream.synchronize().unwrap();
    run.launch.unwrap();
    run.host
}

/// Launches `kernel` (`bus_latch_count_down` or its managed twin) on the latch at
/// `latch`, whose expected count is `grid * block + host_threads`, beside
/// `host_threads` host threads that count down and wait with `arrive_and_wait`.
pub fn latch_opens_after_host_and_gpu_count_downs(
    gpu: &Gpu,
    latch: u64,
    kernel: &str,
    (grid, block, host_threads): (u32, u32, u32),
    arrive_and_wait: impl Fn(HostWait<'_>) -> Result<(), HostWaitError> + Sync,
) {
    let failures = gpu.zeros::<u32>(1).unwrap();
    let stream = gpu.new_stream().unwrap();
    let args = KernelArgs::new().arg(latch).arg(&failures);
    beside(gpu, &stream, (kernel, grid, block), args, |running| {
        std::thread::scope(|s| {
            for _ in 0..host_threads {
                s.spawn(|| arrive_and_wait(wait(running)).unwrap());
            }
        });
    });
    assert_eq!(gpu.download(&failures).unwrap(), [0]);
}

/// Launches `kernel` (`bus_barrier_phases` or its managed twin) on the barrier at
/// `barrier`, which expects `blocks + host_threads` participants per phase, beside
/// `host_threads` host threads that arrive and wait with `arrive_and_wait`; checks that
/// each side sees the other's writes after every phase.
pub fn barrier_shows_each_side_the_others_writes(
    gpu: &Gpu,
    barrier: u64,
    kernel: &str,
    (blocks, host_threads, phases): (u32, u32, u32),
    arrive_and_wait: impl Fn(HostWait<'_>) -> Result<(), HostWaitError> + Sync,
) {
    let gpu_data = gpu.mapped((blocks * phases) as usize).unwrap();
    let host_data = gpu.mapped(phases as usize).unwrap();
    let copied = gpu.zeros::<u32>((blocks * phases) as usize).unwrap();
    let failures = gpu.zeros::<u32>(1).unwrap();
    let stream = gpu.new_stream().unwrap();
    let args = KernelArgs::new()
        .arg(barrier)
        .arg(phases)
        .arg(&gpu_data)
        .arg(&host_data)
        .arg(&copied)
        .arg(&failures);
    let late = AtomicUsize::new(0);
    beside(gpu, &stream, (kernel, blocks, 32), args, |running| {
        std::thread::scope(|s| {
            for thread in 0..host_threads {
                let (gpu_data, host_data, late) = (&gpu_data, &host_data, &late);
                let arrive_and_wait = &arrive_and_wait;
                s.spawn(move || {
                    for phase in 0..phases {
                        if thread == 0 {
                            let word = &host_data.host_words()[phase as usize];
                            word.store(phase + 1, Ordering::Relaxed);
                        }
                        arrive_and_wait(wait(running)).unwrap();
                        for block in 0..blocks {
                            if gpu_data.read((block * phases + phase) as usize) != phase + 1 {
                                late.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
    });
    assert_eq!(gpu.download(&failures).unwrap(), [0]);
    assert_eq!(
        late.into_inner(),
        0,
        "a GPU write was not visible after its phase"
    );
    let copied = gpu.download(&copied).unwrap();
    for (slot, &value) in copied.iter().enumerate() {
        assert_eq!(
            value,
            slot as u32 % phases + 1,
            "a host write was not visible"
        );
    }
}
