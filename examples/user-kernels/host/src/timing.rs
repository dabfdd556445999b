//! `bench`: ns per grid barrier of the user's `grid_sync_loop`, beside the project's
//! own `cost_grid_sync` (loaded from its PTX file) in the same run, alternating.

use std::time::Duration;

use scoped_sync::cuda::{CudaError, Kernel, KernelArgs, LaunchConfig, Module, Runtime};

use crate::Error;

/// Barriers per launch, and launches per kind and shape (alternating; best kept).
const ITERATIONS: u32 = 2_000;
const ROUNDS: usize = 7;
/// Threads per block of the two shapes (one block per SM).
const BLOCKS: [u32; 2] = [128, 1024];

fn time(runtime: &Runtime, kernel: &Kernel, grid: u32, block: u32) -> Result<Duration, CudaError> {
    let sink = runtime.zeros::<u32>(1)?;
    // SAFETY: both kernels take (Grid, u32, u32 pointer); the launch fills in the Grid.
    runtime.gpu_time(|| unsafe {
        let args = KernelArgs::new().grid_barrier().arg(ITERATIONS).arg(&sink);
        kernel.launch(LaunchConfig::new(grid, block).cooperative(), args)
    })
}

pub fn run(runtime: &Runtime, module: &Module, reference: Option<&str>) -> Result<(), Error> {
    let ours = module.kernel("grid_sync_loop")?;
    let theirs = match reference {
        Some(path) => Some(runtime.load_file(path)?.kernel("cost_grid_sync")?),
        None => None,
    };
    let grid = runtime.sm_count()?;
    for block in BLOCKS {
        // Warm-up: the first launch pays the module's lazy loading.
        time(runtime, &ours, grid, block)?;
        let (mut best_ours, mut best_theirs) = (Duration::MAX, Duration::MAX);
        for _ in 0..ROUNDS {
            best_ours = best_ours.min(time(runtime, &ours, grid, block)?);
            if let Some(theirs) = &theirs {
                best_theirs = best_theirs.min(time(runtime, theirs, grid, block)?);
            }
        }
        let per = |d: Duration| d.as_secs_f64() * 1e9 / f64::from(ITERATIONS);
        match theirs {
            Some(_) => println!(
                "bench: grid barrier {grid}×{block}: user kernel {:.1} ns, project's Grid::sync kernel {:.1} ns, ratio {:.3} (best of {ROUNDS}, alternating)",
                per(best_ours),
                per(best_theirs),
                per(best_ours) / per(best_theirs)
            ),
            None => println!(
                "bench: grid barrier {grid}×{block}: user kernel {:.1} ns (best of {ROUNDS})",
                per(best_ours)
            ),
        }
    }
    Ok(())
}
