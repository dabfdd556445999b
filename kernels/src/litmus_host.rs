//! Litmus tests between the GPU and a host thread, over mapped memory (pinned host
//! memory the GPU reaches across the bus): message passing in both directions and store
//! buffering, each GPU thread playing one role of one instance while a host thread plays
//! the other role of every instance. `harness::litmus_host` is the host side.
//!
//! # Harness
//!
//! A launch runs `batches` batches, numbered from `first`. Per batch, every GPU thread
//! takes one instance (its index in the grid) and the host thread takes all of them:
//!
//! 1. Thread 0 of each block stores `ready = batch` (a release at `System` scope):
//!    the block is done with the previous batch (its result registers are written).
//! 2. The host waits until every block is ready, stores the batch's pace, then
//!    `go = batch` (release). Thread 0 of each block polls `go` (acquire), bounded by
//!    [`PATIENCE`], and shares the pace with its block at a block barrier.
//! 3. The host plays its role on instances `0, 1, 2, ...` in order; meanwhile each warp
//!    waits until the host should be near its 32 instances (below), then plays its
//!    role and writes what it read to the instance's result registers (mapped too).
//! 4. After a block barrier, back to 1 with the next batch. After the last one the host
//!    reads the result registers and its own, and counts the outcomes.
//!
//! Every store of batch `b` writes the value `b`, so no location is reset between
//! batches: a read returns `b` (new) or `b - 1` (old), the host maps anything else to
//! "impossible". (The handshake orders every batch-`b - 1` store before every batch-`b`
//! read, so by coherence nothing older may be read.)
//!
//! **Overlap.** A host thread plays its instances one after another, tens to hundreds of
//! nanoseconds each, while a GPU thread's access takes about a microsecond to cross the
//! bus. So that the two roles of an instance meet, warp `w` waits (on `%clock64`) about
//! `32 w × pace` cycles after it sees `go`, where `pace` is the host's measured time per
//! instance (the host passes it with each batch, in GPU cycles), shifted by a random
//! offset per batch in `[-spread, spread]` (the bus latency is not known in advance) and
//! a random jitter per warp of up to one warp's span. The lanes of a warp share their
//! delay: lanes that left a spin loop early would only wait for the others at the
//! reconvergence point. The outcomes that only an interleaving produces (MP: flag old
//! but data new; SB: both new) show how often the roles met.
//!
//! A GPU thread gives up (and counts a failure in `failures`) when the host has not
//! raised `go` after [`PATIENCE`], or stops at once when the host stores [`ABORT`]
//! in `go`: a lost host never hangs the GPU.
//!
//! # Layout (32-bit words; a line is 32 words, 128 bytes)
//!
//! - `control`: line 0 holds `go` (word 0) and the pace (word 1); line `1 + k` holds
//!   block `k`'s `ready` word.
//! - `locations`: location `v` of instance `i` is line `v × instances + i`: every
//!   location has a line of its own (no false sharing between instances, nor between
//!   the two locations of one instance, on the host's 64-byte lines or the GPU's
//!   128-byte ones).
//! - `results`: two words per instance, the GPU role's registers, packed (they are
//!   written once per batch, after the role).
//!
//! # Why these outcomes are forbidden
//!
//! Host threads and GPU threads are all related by the system scope (CUDA C++ memory
//! model, "Scope Relationships"); aligned 32-bit loads and stores at system scope on
//! mapped memory are atomic (its "Atomicity" section). A host `AtomicU32` operation is a
//! C++ atomic at system scope, and in the PTX memory model it is *morally strong* with a
//! GPU operation exactly when the GPU operation's scope is `.sys` (the scope of each
//! must include the other thread). Each shape's table gives the reasons per variant.

use core::time::Duration;

use sync_device::ptx_atomics::PtxScope;
use sync_device::{
    block_index, block_size, clock64, global_thread_count, global_thread_index, shared, sync_block,
    thread_in_block, GlobalTime, Gpu,
};
use sync_shared::{Backend, Device, Ordering, System};

use crate::litmus::mix;

/// Words per line: 128 bytes, the GPU's cache line (two of the host's).
const LINE_WORDS: usize = 32;
/// Locations per instance.
const LOCATIONS: usize = 2;
/// Result registers per instance (the GPU role's reads).
const REGISTERS: usize = 2;
/// Threads that share one delay (a warp).
const WARP: u32 = 32;
/// What the host stores in `go` to stop the kernel (a batch number never reaches it).
pub const ABORT: u32 = u32::MAX;
/// How long thread 0 of a block waits for `go` before it gives up on the host.
const PATIENCE: Duration = Duration::from_secs(10);

fn now() -> GlobalTime {
    <Gpu as Backend<System>>::now()
}

/// The locations and result registers of one instance.
struct Instance {
    locations: *mut u32,
    instances: usize,
    instance: usize,
    results: *mut u32,
}

impl Instance {
    fn location(&self, index: usize) -> *mut u32 {
        debug_assert!(index < LOCATIONS);
        // SAFETY (of the callers' accesses): `locations` holds `LOCATIONS × instances`
        // lines, as the host allocates.
        self.locations
            .wrapping_add((index * self.instances + self.instance) * LINE_WORDS)
    }

    fn set_register(&self, index: usize, value: u32) {
        // SAFETY: `results` holds `REGISTERS` words per instance; only this instance's
        // GPU thread writes them, and the host reads them after the block's `ready`
        // release (which the block barrier before it makes cumulative).
        unsafe {
            System::store_u32(
                self.results.add(self.instance * REGISTERS + index),
                value,
                Ordering::Relaxed,
            )
        };
    }
}

/// The GPU's role in a host–GPU litmus shape.
trait HostShape {
    /// Role of variant `variant` on `instance` in batch `batch` (the value it stores).
    fn run(instance: &Instance, variant: u32, batch: u32);
}

/// Message passing, host to GPU. Host: `x = b; y = b`; GPU: `r0 = y; r1 = x`. The weak
/// outcome is `r0` new, `r1` old (the flag seen, the data not).
///
/// | variant | host | GPU | weak outcome |
/// |---|---|---|---|
/// | 0 | relaxed stores | `ld.relaxed.sys` both | allowed: nothing orders either pair |
/// | 1 | `Release` store of `y` | `ld.acquire.sys` of `y` | forbidden |
/// | 2 | `Release` store of `y` | `ld.relaxed.sys` of `y`, `fence.acq_rel.sys` | forbidden |
/// | 3 | `Release` store of `y` | `ld.acquire.gpu` of `y` | allowed: `.gpu` excludes the host |
///
/// Variants 1 and 2: in C++, the release store synchronizes with the acquire load (or
/// the acquire fence after the relaxed load, [atomics.fences]/3) that reads its value,
/// so `x = b` happens before `r1 = x`, which then cannot read the older `b - 1`
/// (write-read coherence). In PTX: the host's release and the GPU's acquire pattern
/// (`ld.acquire.sys`, or `ld.relaxed.sys` then `fence.acq_rel.sys`) are morally strong
/// (both at system scope), so the store of `x` precedes the load of `x` in causality
/// order, and the Causality axiom forbids reading a write that precedes it in coherence.
/// Variant 3: the acquire's scope does not include the host thread, so it is not
/// morally strong with the release and orders nothing with it.
struct MessagePassingToGpu;

impl HostShape for MessagePassingToGpu {
    fn run(instance: &Instance, variant: u32, _batch: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        // SAFETY: the instance's own locations, reached only with atomics (the host
        // stores to them with aligned `AtomicU32` stores).
        let (flag, data) = unsafe {
            let flag = match variant {
                1 => System::load_u32(y, Ordering::Acquire),
                2 => {
                    let flag = System::load_u32(y, Ordering::Relaxed);
                    System::fence(Ordering::AcqRel);
                    flag
                }
                3 => Device::load_u32(y, Ordering::Acquire),
                _ => System::load_u32(y, Ordering::Relaxed),
            };
            (flag, System::load_u32(x, Ordering::Relaxed))
        };
        instance.set_register(0, flag);
        instance.set_register(1, data);
    }
}

/// Message passing, GPU to host. GPU: `x = b; y = b`; host: `r0 = y; r1 = x`. The weak
/// outcome is `r0` new, `r1` old.
///
/// | variant | GPU | host | weak outcome |
/// |---|---|---|---|
/// | 0 | `st.relaxed.sys` both | relaxed loads | allowed: nothing orders either pair |
/// | 1 | `st.release.sys` of `y` | `Acquire` load of `y` | forbidden |
/// | 2 | `fence.acq_rel.sys`, `st.relaxed.sys` of `y` | `Acquire` load of `y` | forbidden |
/// | 3 | `st.release.gpu` of `y` | `Acquire` load of `y` | allowed: `.gpu` excludes the host |
///
/// Variants 1 and 2: the GPU's release pattern (a release store, or a release fence
/// before a relaxed store, [atomics.fences]/2) synchronizes with the host's acquire load
/// that reads its value; morally strong in PTX (both system scope), so the store of `x`
/// precedes the host's load of `x` in causality order (Causality axiom; in C++,
/// write-read coherence). Variant 3: the release's scope does not include the host.
/// (On x86-64 the host's two loads are not reordered whatever the ordering; the weak
/// outcome of variant 0 can only come from the GPU's stores arriving out of order.)
struct MessagePassingToHost;

impl HostShape for MessagePassingToHost {
    fn run(instance: &Instance, variant: u32, batch: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        // SAFETY: the instance's own locations, reached only with atomics (the host
        // loads them with aligned `AtomicU32` loads).
        unsafe {
            System::store_u32(x, batch, Ordering::Relaxed);
            match variant {
                1 => System::store_u32(y, batch, Ordering::Release),
                2 => {
                    System::fence(Ordering::AcqRel);
                    System::store_u32(y, batch, Ordering::Relaxed);
                }
                3 => Device::store_u32(y, batch, Ordering::Release),
                _ => System::store_u32(y, batch, Ordering::Relaxed),
            }
        }
    }
}

/// Store buffering. Host: `x = b; r0 = y`; GPU: `y = b; r1 = x`. The weak outcome is
/// both old (each missed the other's store).
///
/// | variant | GPU, between its store and load | host, between | weak outcome |
/// |---|---|---|---|
/// | 0 | nothing | nothing | allowed (x86-64's store buffer alone can produce it) |
/// | 1 | `fence.sc.sys` | `fence(SeqCst)` | forbidden |
/// | 2 | `fence.acq_rel.sys` | `fence(SeqCst)` | allowed: an acq_rel fence does not order a store before a later load |
/// | 3 | `fence.sc.gpu` | `fence(SeqCst)` | allowed: `.gpu` excludes the host |
///
/// Variant 1, in C++ ([atomics.order]/4.4, C++20): if `r0` is old, the host's load of
/// `y` is coherence-ordered before the GPU's store of `y`, so the host's fence precedes
/// the GPU's in the single total order S of seq_cst fences; if `r1` is old, likewise the
/// GPU's fence precedes the host's. Both cannot hold. In PTX: the two `fence.sc` are
/// morally strong (system scope both), and the Fence-SC axiom orders them consistently
/// with causality order, which forbids the same cycle (the PTX model's own SB litmus
/// test with `fence.sc`).
struct StoreBuffering;

impl HostShape for StoreBuffering {
    fn run(instance: &Instance, variant: u32, batch: u32) {
        let (x, y) = (instance.location(0), instance.location(1));
        // SAFETY: the instance's own locations, reached only with atomics (the host
        // stores `x` and loads `y` with aligned `AtomicU32` operations).
        let seen = unsafe {
            System::store_u32(y, batch, Ordering::Relaxed);
            match variant {
                1 => System::fence(Ordering::SeqCst),
                2 => System::fence(Ordering::AcqRel),
                3 => Device::fence(Ordering::SeqCst),
                _ => {}
            }
            System::load_u32(x, Ordering::Relaxed)
        };
        instance.set_register(0, seen);
    }
}

/// Thread 0 of a block: waits for `go == batch` and returns the batch's pace, or
/// [`ABORT`] if the host stored it or did not come within [`PATIENCE`] (counted in
/// `failures`).
///
/// # Safety
///
/// `control` is the mapped control block (module docs); `failures` a device word.
unsafe fn wait_for_go(control: *mut u32, batch: u32, failures: *mut u32) -> u32 {
    let deadline = <Gpu as Backend<System>>::after(now(), PATIENCE);
    loop {
        // SAFETY: `go` is word 0 of the control block; the host stores it atomically.
        let go = unsafe { System::load_u32(control, Ordering::Acquire) };
        if go == ABORT {
            return ABORT;
        }
        if go == batch {
            // SAFETY: the pace is word 1, stored before `go` (ordered by the acquire).
            return unsafe { System::load_u32(control.add(1), Ordering::Relaxed) };
        }
        if now() >= deadline {
            // SAFETY: a device word, touched only atomically.
            unsafe { Device::fetch_add_u32(failures, 1, Ordering::Relaxed) };
            return ABORT;
        }
    }
}

/// Cycles warp `warp` waits after `go` in batch `batch` (module docs, "Overlap").
fn delay(seed: u32, batch: u32, warp: u32, pace: u32, spread: u32) -> u64 {
    let random = mix(seed ^ mix(batch));
    let spread = i64::from(spread);
    let offset = i64::from(mix(random)) % (2 * spread + 1) - spread;
    let span = u64::from(WARP) * u64::from(pace);
    let jitter = u64::from(mix(random ^ mix(warp + 1))) % (span + 1);
    let at = i64::try_from(u64::from(warp) * span + jitter).unwrap_or(i64::MAX);
    at.saturating_add(offset).max(0) as u64
}

/// Runs batches `first .. first + batches` of shape `S` (see the module docs).
///
/// # Safety
///
/// `control` holds `1 + blocks` lines of mapped memory, `locations` `LOCATIONS` lines
/// per instance, `results` `REGISTERS` words per instance (an instance per thread of the
/// grid); `failures` is a device word; the grid is co-resident (the host waits for
/// every block before each batch).
#[allow(clippy::too_many_arguments)]
unsafe fn run_shape<S: HostShape>(
    variant: u32,
    first: u32,
    batches: u32,
    seed: u32,
    spread: u32,
    control: *mut u32,
    locations: *mut u32,
    results: *mut u32,
    failures: *mut u32,
) {
    let leader = thread_in_block() == 0;
    let ready = control.wrapping_add((1 + block_index() as usize) * LINE_WORDS);
    let pace_slot = shared!(LITMUS_HOST_PACE: u32);
    let this = Instance {
        locations,
        instances: global_thread_count() as usize,
        instance: global_thread_index() as usize,
        results,
    };
    let warp = global_thread_index() / WARP;
    // The block size is a multiple of the warp size (the host launches so).
    debug_assert_eq!(block_size() % WARP, 0);
    for batch in first..first.saturating_add(batches) {
        if leader {
            // SAFETY: this block's `ready` word, which only this thread stores; the
            // release orders the block's result registers (written before the block
            // barrier below) before it.
            unsafe { System::store_u32(ready, batch, Ordering::Release) };
            // SAFETY: the control block and a device word, as the host passes them.
            let pace = unsafe { wait_for_go(control, batch, failures) };
            // SAFETY: the block's shared word; its readers read it only after the
            // barrier below, and read the previous value before the barrier at the end
            // of the previous batch.
            unsafe { pace_slot.as_ptr().write_volatile(pace) };
        }
        sync_block();
        // SAFETY: written by thread 0 before the barrier.
        let pace = unsafe { pace_slot.as_ptr().read_volatile() };
        if pace == ABORT {
            // Uniform over the block: every thread returns, no barrier is left waiting.
            return;
        }
        let wait = delay(seed, batch, warp, pace, spread);
        let start = clock64();
        while clock64().wrapping_sub(start) < wait {}
        S::run(&this, variant, batch);
        sync_block();
    }
    if leader {
        // SAFETY: as above: the last batch's results are written.
        unsafe { System::store_u32(ready, first.saturating_add(batches), Ordering::Release) };
    }
}

/// Declares the kernel of a shape: `(variant, first, batches, seed, spread, control,
/// locations, results, failures)`.
macro_rules! litmus_host_kernel {
    ($name:ident, $shape:ty) => {
        /// A host–GPU litmus kernel (see the module docs and the shape's table).
        ///
        /// # Safety
        ///
        /// As `run_shape`.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "gpu-kernel" fn $name(
            variant: u32,
            first: u32,
            batches: u32,
            seed: u32,
            spread: u32,
            control: *mut u32,
            locations: *mut u32,
            results: *mut u32,
            failures: *mut u32,
        ) {
            // SAFETY: forwarded contract.
            unsafe {
                run_shape::<$shape>(
                    variant, first, batches, seed, spread, control, locations, results, failures,
                )
            }
        }
    };
}

litmus_host_kernel!(litmus_host_mp_to_gpu, MessagePassingToGpu);
litmus_host_kernel!(litmus_host_mp_to_host, MessagePassingToHost);
litmus_host_kernel!(litmus_host_sb, StoreBuffering);
