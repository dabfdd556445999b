//! The README's host program (section 2), compiled as written there; `launches.rs`
//! holds its launch shapes, `worker.rs` the host side of section 3.

mod crate_docs;
mod cuda_cpp;
mod launches;
mod worker;

use scoped_sync::cuda::{EmbeddedModule, KernelArgs, LaunchConfig, Runtime};

static KERNELS: EmbeddedModule = scoped_sync::include_kernels!("my_kernels");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::open(0)?;
    let module = runtime.load(&KERNELS)?;
    let relax = module.kernel("relax")?;
    let n = 1 << 16;
    let mut cells = vec![0.0_f32; n];
    cells[n - 1] = 1.0;
    let (a, b) = (runtime.upload(&cells)?, runtime.upload(&cells)?);
    let (n, steps) = (n as u32, 1000_u32);
    // Cooperative: refused with CudaError::GridTooLarge unless every block fits at once.
    let blocks = relax.max_coresident_blocks(256)?;
    let config = LaunchConfig::new(blocks, 256).cooperative();
    let args = KernelArgs::new()
        .grid_barrier()
        .arg(&a)
        .arg(&b)
        .arg(n)
        .arg(steps);
    // SAFETY: relax(Grid, *mut f32, *mut f32, u32, u32); the launch fills in the Grid.
    unsafe { relax.launch(config, args) }?;
    let result = runtime.download(&a)?; // steps is even: the last sweep wrote `a`
    println!("cell 1: {}", result[1]);
    Ok(())
}
