//! `jacobi_1d`: a grid barrier between the steps of a solver, checked against the CPU.

use scoped_sync::cuda::{CudaError, KernelArgs, LaunchConfig, Module, Runtime};

use crate::Error;

/// Cells, steps (even: the result ends in the first buffer) and threads per block.
const CELLS: usize = 100_003;
const STEPS: u32 = 400;
const BLOCK: u32 = 256;

/// The start: fixed boundaries 1 and -1, a deterministic ragged interior.
fn initial() -> Vec<f32> {
    let mut cells: Vec<f32> = (0..CELLS)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
        .collect();
    cells[0] = 1.0;
    cells[CELLS - 1] = -1.0;
    cells
}

/// The same sweeps on the CPU, the same operations in the same order.
fn on_cpu(mut a: Vec<f32>, steps: u32) -> Vec<f32> {
    let mut b = a.clone();
    for _ in 0..steps {
        for i in 1..a.len() - 1 {
            b[i] = 0.5 * (a[i - 1] + a[i + 1]);
        }
        std::mem::swap(&mut a, &mut b);
    }
    a
}

pub fn run(runtime: &Runtime, module: &Module) -> Result<(), Error> {
    let kernel = module.kernel("jacobi_1d")?;
    let blocks = kernel.max_coresident_blocks(BLOCK)?;
    let cells = initial();
    let a = runtime.upload(&cells)?;
    let b = runtime.upload(&cells)?;
    let (n, steps) = (CELLS as u32, STEPS);

    let args = || {
        KernelArgs::new()
            .grid_barrier()
            .arg(&a)
            .arg(&b)
            .arg(n)
            .arg(steps)
    };
    // A grid that cannot be co-resident is refused, not deadlocked.
    // SAFETY: refused before the driver sees it.
    let refused =
        unsafe { kernel.launch(LaunchConfig::new(blocks + 1, BLOCK).cooperative(), args()) };
    if !matches!(refused, Err(CudaError::GridTooLarge { .. })) {
        return Err(format!(
            "jacobi: {} blocks were not refused: {refused:?}",
            blocks + 1
        )
        .into());
    }

    // SAFETY: jacobi_1d(Grid, *mut f32, *mut f32, u32, u32); the launch fills in the
    // Grid; both buffers hold `n` cells.
    let time = runtime.gpu_time(|| unsafe {
        kernel.launch(LaunchConfig::new(blocks, BLOCK).cooperative(), args())
    })?;
    let gpu = runtime.download(&a)?;
    let cpu = on_cpu(cells, steps);
    let wrong = gpu
        .iter()
        .zip(&cpu)
        .filter(|(g, c)| g.to_bits() != c.to_bits())
        .count();
    if wrong != 0 {
        let first = gpu.iter().zip(&cpu).position(|(g, c)| g != c).unwrap_or(0);
        return Err(format!(
            "jacobi: {wrong} of {CELLS} cells differ from the CPU's (first: cell {first}, GPU {} vs CPU {})",
            gpu[first], cpu[first]
        )
        .into());
    }
    println!(
        "jacobi: ok ({CELLS} cells, {steps} steps on {blocks}×{BLOCK} threads, equal to the CPU's to the bit; {:.2} µs per step including the grid barrier)",
        time.as_secs_f64() * 1e6 / f64::from(steps)
    );
    Ok(())
}
