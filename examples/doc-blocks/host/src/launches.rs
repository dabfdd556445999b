//! The README's launch shapes (section 2), compiled as written there, inside a
//! function that gives them a runtime, a kernel and its buffer.

use scoped_sync::cuda::{Kernel, KernelArgs, LaunchConfig, Runtime};

/// Launches `scale(data: *mut f32, n: u32)` plainly, then on a stream of its own in
/// clusters of 2 with dynamic shared memory.
#[allow(dead_code)]
pub fn shapes(runtime: &Runtime, scale: &Kernel) -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = 1 << 20;
    let data = runtime.zeros::<f32>(n as usize)?;
    // Plain, on the runtime's own stream.
    let plain = LaunchConfig::new(264, 256);
    // SAFETY: `scale` takes (*mut f32, u32); `data` outlives it (synchronized below).
    unsafe { scale.launch(plain, KernelArgs::new().arg(&data).arg(n)) }?;
    // On a stream of its own, in clusters of 2, with 64 KiB of dynamic shared memory.
    let stream = runtime.new_stream()?;
    let config = LaunchConfig::new(264, 256)
        .on(&stream)
        .cluster(2)
        .shared_memory(64 << 10);
    // SAFETY: as above.
    unsafe { scale.launch(config, KernelArgs::new().arg(&data).arg(n)) }?;
    stream.synchronize()?;
    runtime.synchronize()?;
    Ok(())
}
