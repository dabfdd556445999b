//! The per-primitive cost kernels of the embedded PTX (`kernels/src/primitive_costs.rs`):
//! which kernel, in which launch shape, with which arguments, shaped like the kernels of
//! `baselines/gpu_baselines.cu`, and one timed launch of each. The report and the
//! criterion GPU benches both measure through this.

use std::time::Duration;

use scoped_sync::cuda::{CudaError, Kernel, KernelArgs, LaunchConfig};

use crate::Gpu;
use scoped_sync::{Barrier, CountingSemaphore, Latch};

/// How a cost kernel is launched and what it takes.
#[derive(Clone, Copy, Debug)]
pub enum Launch {
    /// `(iterations, sink)` on `SMs × block` threads.
    Plain,
    /// `(Grid, iterations, sink)`, cooperative, on `SMs × block` threads.
    Grid,
    /// As [`Grid`](Launch::Grid), on [`CROWDED_BLOCKS_PER_SM`] blocks per SM.
    CrowdedGrid,
    /// `(barrier, iterations, sink)`; a fresh device barrier expecting every thread.
    DeviceBarrier,
    /// `(two semaphores, iterations)` on 2 × 32 threads.
    PingPong,
    /// `(three latches, iterations, sink)`; fresh device latches expecting every thread.
    DeviceLatch,
    /// `(iterations, sink)` on one block.
    OneBlock,
}

/// Blocks per SM of a [`Launch::CrowdedGrid`]: with 128 threads each, the most an sm_90
/// SM holds at once (2048 threads), so every arrival of the largest co-resident grid
/// queues at the grid barrier's one counter.
pub const CROWDED_BLOCKS_PER_SM: u32 = 16;

/// One measured workload, with the anchor's launch shapes and iteration count.
#[derive(Debug)]
pub struct Workload {
    /// The cost kernel's name in the embedded PTX.
    pub kernel: &'static str,
    /// The scope of the primitive under test (a label).
    pub scope: &'static str,
    /// The primitive, a report identifier: the type measured, in snake case
    /// (`"barrier"`, `"shared_barrier"`, `"grid"`, ...).
    pub primitive: &'static str,
    /// The operation, a report identifier (`"arrive_and_wait"`, `"sync"`, ...).
    pub op: &'static str,
    /// What distinguishes this workload from another of the same primitive and op
    /// (`"shared_memory"`), a report identifier.
    pub variant: Option<&'static str>,
    /// How the kernel is launched.
    pub launch: Launch,
    /// Threads per block, one measurement each.
    pub blocks: &'static [u32],
    /// Phases (or round trips) per launch.
    pub iterations: u32,
}

/// Every device primitive the report and the benches time.
pub const WORKLOADS: [Workload; 14] = [
    Workload {
        kernel: "cost_block_barrier",
        scope: "block",
        primitive: "block_barrier",
        op: "sync",
        variant: None,
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_shared_barrier",
        scope: "block",
        primitive: "shared_barrier",
        op: "arrive_and_wait",
        variant: None,
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_shared_barrier_parity",
        scope: "block",
        primitive: "shared_barrier",
        op: "arrive_and_wait_parity",
        variant: None,
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_generic_block_barrier",
        scope: "block",
        primitive: "barrier",
        op: "arrive_and_wait",
        variant: Some("shared_memory"),
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_generic_block_barrier_completion",
        scope: "block",
        primitive: "barrier",
        op: "arrive_and_wait",
        variant: Some("shared_memory_completion"),
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_block_latch",
        scope: "block",
        primitive: "latch",
        op: "arrive_and_wait",
        variant: Some("shared_memory"),
        launch: Launch::Plain,
        blocks: &[128, 1024],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_block_semaphore_ping_pong",
        scope: "block",
        primitive: "semaphore",
        op: "ping_pong",
        variant: Some("two_warps"),
        launch: Launch::OneBlock,
        blocks: &[64],
        iterations: 20_000,
    },
    Workload {
        kernel: "cost_grid_sync",
        scope: "device",
        primitive: "grid",
        op: "sync",
        variant: None,
        launch: Launch::Grid,
        blocks: &[128, 1024],
        iterations: 5_000,
    },
    Workload {
        kernel: "cost_grid_sync",
        scope: "device",
        primitive: "grid",
        op: "sync",
        variant: Some("sixteen_blocks_per_sm"),
        launch: Launch::CrowdedGrid,
        blocks: &[128],
        iterations: 5_000,
    },
    Workload {
        kernel: "cost_device_barrier_block",
        scope: "device",
        primitive: "barrier",
        op: "block_arrive_and_wait",
        variant: None,
        launch: Launch::DeviceBarrier,
        blocks: &[128, 1024],
        iterations: 5_000,
    },
    Workload {
        kernel: "cost_device_barrier_all",
        scope: "device",
        primitive: "barrier",
        op: "arrive_and_wait",
        variant: None,
        launch: Launch::DeviceBarrier,
        blocks: &[128],
        iterations: 200,
    },
    Workload {
        kernel: "cost_device_latch",
        scope: "device",
        primitive: "latch",
        op: "arrive_and_wait",
        variant: None,
        launch: Launch::DeviceLatch,
        blocks: &[128],
        iterations: 200,
    },
    Workload {
        kernel: "cost_grid_lower_bound",
        scope: "device",
        primitive: "atomic",
        op: "release_add_poll_round_trip",
        variant: None,
        launch: Launch::OneBlock,
        blocks: &[32],
        iterations: 5_000,
    },
    Workload {
        kernel: "cost_semaphore_ping_pong",
        scope: "device",
        primitive: "semaphore",
        op: "ping_pong",
        variant: Some("two_blocks"),
        launch: Launch::PingPong,
        blocks: &[32],
        iterations: 20_000,
    },
];

impl Workload {
    /// Blocks in the launch on a GPU of `sms` multiprocessors: one per SM (or
    /// [`CROWDED_BLOCKS_PER_SM`]), or the two of a ping-pong.
    pub fn grid(&self, sms: u32) -> u32 {
        match self.launch {
            Launch::PingPong => 2,
            Launch::OneBlock => 1,
            Launch::CrowdedGrid => CROWDED_BLOCKS_PER_SM * sms,
            _ => sms,
        }
    }

    /// The GPU time of one launch of `kernel` (this workload's kernel) running
    /// `iterations` phases on `grid × block` threads; the objects it uses are set up
    /// before the timing starts.
    pub fn time(
        &self,
        runtime: &Gpu,
        kernel: &Kernel,
        grid: u32,
        block: u32,
        iterations: u32,
    ) -> Result<Duration, CudaError> {
        time_launch(runtime, kernel, self.launch, grid, block, iterations)
    }
}

fn time_launch(
    runtime: &Gpu,
    kernel: &Kernel,
    launch: Launch,
    grid: u32,
    block: u32,
    iterations: u32,
) -> Result<Duration, CudaError> {
    let sink = runtime.zeros::<u32>(1)?;
    let elapsed = match launch {
        // SAFETY: the plain cost kernels take (u32, u32 pointer).
        Launch::Plain | Launch::OneBlock => runtime.gpu_time(|| unsafe {
            kernel.launch(
                LaunchConfig::new(grid, block),
                KernelArgs::new().arg(iterations).arg(&sink),
            )
        })?,
        // SAFETY: `cost_grid_sync` takes (Grid, u32, u32 pointer).
        Launch::Grid | Launch::CrowdedGrid => runtime.gpu_time(|| unsafe {
            kernel.launch(
                LaunchConfig::new(grid, block).cooperative(),
                KernelArgs::new().grid_barrier().arg(iterations).arg(&sink),
            )
        })?,
        Launch::DeviceBarrier => {
            let barrier = runtime.upload_object(&Barrier::new(grid * block))?;
            // SAFETY: the device barrier kernels take (barrier pointer, u32, u32
            // pointer); the barrier expects every thread of the launch.
            runtime.gpu_time(|| unsafe {
                kernel.launch(
                    LaunchConfig::new(grid, block),
                    KernelArgs::new().arg(&barrier).arg(iterations).arg(&sink),
                )
            })?
        }
        Launch::DeviceLatch => {
            let count = grid * block;
            let latches = runtime.upload_object(&[
                Latch::new(count),
                Latch::new(count),
                Latch::new(count),
            ])?;
            // SAFETY: `cost_device_latch` takes (pointer to three latches, u32, u32
            // pointer); the latches expect every thread of the launch.
            runtime.gpu_time(|| unsafe {
                kernel.launch(
                    LaunchConfig::new(grid, block),
                    KernelArgs::new().arg(&latches).arg(iterations).arg(&sink),
                )
            })?
        }
        Launch::PingPong => {
            let semaphores: [CountingSemaphore; 2] =
                [CountingSemaphore::new(0), CountingSemaphore::new(0)];
            let both = runtime.upload_object(&semaphores)?;
            // SAFETY: `cost_semaphore_ping_pong` takes (pointer to two semaphores, u32).
            runtime.gpu_time(|| unsafe {
                kernel.launch(
                    LaunchConfig::new(grid, block),
                    KernelArgs::new().arg(&both).arg(iterations),
                )
            })?
        }
    };
    Ok(elapsed)
}
