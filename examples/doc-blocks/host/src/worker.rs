//! The README's host side of the persistent worker (section 3), compiled as written
//! there, inside a function that gives it the runtime and the module.

use scoped_sync::cuda::{Module, Runtime};

/// Feeds the `worker` kernel of `module` 1000 items and stops it.
#[allow(dead_code)]
pub fn feed(runtime: &Runtime, module: &Module) -> Result<(), Box<dyn std::error::Error>> {
    use scoped_sync::cuda::{KernelArgs, LaunchConfig};
    use scoped_sync::{BusStopSource, HandoffChannel};

    let channel = runtime.place_mapped(HandoffChannel::new(0, 0))?;
    let stop = runtime.place_mapped(BusStopSource::new())?;
    let ring = runtime.mapped(2 * 64)?; // 64 items of u64
    let results = runtime.mapped(2 * 64)?;
    let worker = module.kernel("worker")?;
    let stream = runtime.new_stream()?;
    let args = KernelArgs::new()
        .arg(&channel)
        .arg(&stop)
        .arg(&ring)
        .arg(&results)
        .arg(64_u32);
    let config = LaunchConfig::new(1, 32).on(&stream);
    // SAFETY: the arguments match `worker` and outlive it.
    let run = unsafe {
        worker.launch_beside(
            config,
            args,
            |kernel| -> Result<(), Box<dyn std::error::Error>> {
                let (mut to_gpu, mut from_gpu) = channel.endpoints().expect("the host's endpoints");
                for item in 0..1000_u64 {
                    to_gpu.release_with(1, |seq| ring.write_u64((seq % 64) as usize, item));
                    let seq = from_gpu.acquire(kernel.wait())?;
                    assert_eq!(results.read_u64((seq % 64) as usize), item.wrapping_mul(3));
                }
                stop.request_stop();
                Ok(())
            },
        )
    };
    stream.synchronize()?;
    run.launch?;
    run.host?;
    Ok(())
}
