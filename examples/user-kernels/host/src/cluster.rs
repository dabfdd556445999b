//! `block_and_cluster_exchange`: a block barrier in shared memory and a cluster
//! barrier, every thread's result recomputed on the CPU.

use scoped_sync::cuda::{KernelArgs, LaunchConfig, Module, Runtime};

use crate::Error;

const BLOCK: u32 = 256;
const ROUNDS: u32 = 200;

/// As the kernel crate's `exchange::value`.
fn value(block: u32, thread: u32, round: u32) -> u32 {
    block.wrapping_mul(1_000_003) ^ thread.wrapping_mul(7919) ^ round.wrapping_mul(104_729)
}

/// As the kernel crate's `exchange::mix`.
fn mix(acc: u32, neighbour: u32, partner: u32) -> u32 {
    acc.wrapping_mul(31)
        .wrapping_add(neighbour ^ partner.rotate_left(7))
}

fn expected(blocks: u32) -> Vec<u32> {
    let mut results = Vec::with_capacity((blocks * BLOCK) as usize);
    for block in 0..blocks {
        for thread in 0..BLOCK {
            let mut acc = 0;
            for round in 0..ROUNDS {
                let neighbour = value(block, (thread + 1) % BLOCK, round);
                let partner = value(block ^ 1, thread, round);
                acc = mix(acc, neighbour, partner);
            }
            results.push(acc);
        }
    }
    results
}

pub fn run(runtime: &Runtime, module: &Module) -> Result<(), Error> {
    let kernel = module.kernel("block_and_cluster_exchange")?;
    let blocks = 2 * runtime.sm_count()?;
    let out = runtime.zeros::<u32>((blocks * BLOCK) as usize)?;
    let stream = runtime.new_stream()?;
    let config = LaunchConfig::new(blocks, BLOCK).cluster(2).on(&stream);
    let args = KernelArgs::new().arg(&out).arg(ROUNDS);
    // SAFETY: (u32 pointer, u32); `out` has a word per thread and outlives the launch.
    unsafe { kernel.launch(config, args) }?;
    stream.synchronize()?;
    let got = runtime.download(&out)?;
    let wrong = got
        .iter()
        .zip(expected(blocks))
        .filter(|(g, e)| **g != *e)
        .count();
    if wrong != 0 {
        return Err(format!(
            "cluster: {wrong} of {} threads computed a wrong result",
            got.len()
        )
        .into());
    }
    println!(
        "cluster: ok ({blocks} blocks in clusters of 2, {BLOCK} threads, {ROUNDS} rounds of block and cluster barriers; every thread's result as on the CPU)"
    );
    Ok(())
}
