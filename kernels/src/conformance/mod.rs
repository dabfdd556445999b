//! The GPU conformance matrix (run by `tests/gpu_conformance.rs`): every primitive at
//! every scope (`Block`, `Cluster`, `Device`, `System`), with its object in block-shared
//! memory and in global memory, plus the hardware barriers (`SharedBarrier`,
//! `BlockBarrier`, `ClusterBarrier`, `Grid`).
//!
//! # Teams
//!
//! A *team* is the set of threads that share one object under test:
//!
//! | kernel suffix | scope | object | team |
//! |---|---|---|---|
//! | `block_shared` | `Block` | `shared!` in the block | the block |
//! | `block_global` | `Block` | global memory, one per block | the block |
//! | `cluster_shared` | `Cluster` | `shared!` in cluster rank 0 | the cluster |
//! | `cluster_global` | `Cluster` | global memory, one per cluster | the cluster |
//! | `device_shared`, `system_shared` | `Device`, `System` | `shared!` in the block | the block |
//! | `device_global`, `system_global` | `Device`, `System` | global memory, one | the grid (cooperative launch) |
//!
//! Every matrix kernel has the signature `(objects, slots, counters, report, rounds)`
//! (grid kernels take a `Grid` first): `objects` holds [`OBJECT_BYTES`] zeroed bytes per
//! team (global-memory kernels build their object there), `slots` two words per team
//! member, `counters` [`COUNTER_WORDS`] words per team, `report` [`REPORT_WORDS`]
//! words for the whole launch (see [`Report`]), and `rounds` is the family's workload
//! size (barrier: phases before the drop; semaphore: iterations per thread; latch:
//! unused).
//!
//! # Hangs
//!
//! A broken primitive must not hang the GPU where the API allows otherwise: every wait
//! that has a timed form uses it (with [`PATIENCE`], far beyond what a working
//! primitive needs) and a timeout counts in the report instead of blocking. The untimed
//! operations under test (`Barrier::arrive_and_wait`, `wait_parity`,
//! `block_arrive_and_wait`, `Latch::arrive_and_wait`) run only while no timeout has
//! been seen in the launch; once one has, threads keep the same arrivals but wait with
//! timed waits of [`PATIENCE_AFTER_TIMEOUT`], so a failing launch ends quickly (a
//! collective operation is chosen by a vote of the whole block, so the block takes
//! one path). The untimed `CountingSemaphore::acquire` runs only where the units are
//! known to be there. The hardware barriers (`barrier.sync`, `barrier.cluster`,
//! `Grid::sync`) have no timed form.
//!
//! Blocks must have a multiple of 32 threads (a pair phase syncs whole warps), and
//! teams a multiple of 4 members; the kernels of the GPU's warp paths
//! (`conf_barrier_phases_*`, `conf_latch_rounds_*`) and of `Grid::sync` take blocks of
//! any shape.
//!
//! One file per family: [`barrier`] (`Barrier` at every scope and `SharedBarrier`),
//! [`latch`], [`semaphore`], [`hardware`] (`BlockBarrier`, `ClusterBarrier`, `Grid`);
//! this file holds the report, the teams and the matrix macro they share.

use core::cell::UnsafeCell;
use core::time::Duration;

use sync_device::ptx_atomics::PtxScope;
use sync_device::{
    block_count, block_index, block_size, cluster_rank, global_thread_count, global_thread_index,
    is_shared, map_to_block, shared, sync_block, sync_block_any, sync_cluster, thread_in_block,
    warp, BlockBarrier, ClusterBarrier, GlobalTime, Gpu, Grid, SharedBarrier, SharedToken,
    WholeBlock,
};
use sync_shared::{
    ArrivalToken, Backend, Barrier, Block, Cluster, Completion, CountingSemaphore, Device, Latch,
    Ordering, System, Word, SEMAPHORE_MAX,
};

/// How long a wait may take before it counts as a timeout, unless the host asks for
/// longer in `report[4]`. A working primitive needs microseconds to milliseconds here;
/// the longest legitimate wait is a thread starved by the unfair semaphore for the
/// length of the stress loop (well under a second, but tens of seconds under a
/// compute-sanitizer tool, which slows kernels a hundredfold).
const PATIENCE: Duration = Duration::from_secs(2);
/// The patience once any thread of the launch has timed out: the launch has failed,
/// and only needs to end without hanging.
const PATIENCE_AFTER_TIMEOUT: Duration = Duration::from_millis(1);
/// Timeout of the waits that must time out (nothing can complete them).
const SHORT_TIMEOUT: Duration = Duration::from_micros(100);
/// Phases a barrier runs after half of its team dropped out.
const PHASES_AFTER_DROP: u32 = 4;
/// Bytes of `objects` per team (the host allocates the same).
const OBJECT_BYTES: usize = 64;
/// Words of `counters` per team (the host allocates the same).
const COUNTER_WORDS: usize = 4;
/// Words of `report` (the host allocates the same).
const REPORT_WORDS: usize = 6;
/// `report[5]` bit: the barrier matrices meet with `arrive_and_wait` where they would
/// meet with a whole-block arrival ([`Meeting::WholeBlock`]). The host sets it under
/// compute-sanitizer's synccheck, which reports that meeting's block barrier when some
/// warps of the block reach it split and others not (`docs/sanitizers.md`).
const NO_WHOLE_BLOCK_MEETINGS: u32 = 1;
/// Largest block the cluster-barrier kernel supports (its shared buffer's length).
const CLUSTER_BLOCK_MAX: usize = 256;

// ---------------------------------------------------------------------------------
// Report, clock, device-scope helper atomics.

/// `report[0]`: failed checks; `[1]`: timed-out waits; `[2]`: the line (in this file)
/// of the first failed check; `[3]`: the line of the first timeout; `[4]`, written by
/// the host: the patience of the timed waits in milliseconds (0: [`PATIENCE`]); `[5]`,
/// written by the host: options ([`NO_WHOLE_BLOCK_MEETINGS`]). Global memory, updated
/// with device-scope atomics.
#[derive(Clone, Copy)]
struct Report(*mut u32);

impl Report {
    fn word(self, index: usize) -> &'static Word {
        debug_assert!(index < REPORT_WORDS);
        // SAFETY: the host passes `REPORT_WORDS` live, aligned words for the launch.
        unsafe { Word::from_ptr(self.0.add(index)) }
    }

    /// Counts a failed check made at `line`.
    fn fail(self, line: u32) {
        device_add(self.word(0), 1);
        let _ = <Gpu as Backend<Device>>::compare_exchange(
            self.word(2),
            0,
            line,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Counts a wait at `line` that did not complete in time.
    fn timed_out(self, line: u32) {
        device_add(self.word(1), 1);
        let _ = <Gpu as Backend<Device>>::compare_exchange(
            self.word(3),
            0,
            line,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Whether any thread of the launch has timed out (the launch has failed).
    fn aborted(self) -> bool {
        <Gpu as Backend<Device>>::load(self.word(1), Ordering::Relaxed) != 0
    }

    /// How long the next wait may take.
    fn patience(self) -> Duration {
        if self.aborted() {
            return PATIENCE_AFTER_TIMEOUT;
        }
        match device_load(self.word(4)) {
            0 => PATIENCE,
            millis => Duration::from_millis(u64::from(millis)),
        }
    }

    /// Whether the barrier matrices may meet with a whole-block arrival.
    fn whole_block_meetings(self) -> bool {
        device_load(self.word(5)) & NO_WHOLE_BLOCK_MEETINGS == 0
    }
}

/// This file's number in a recorded position: the report records a check's place as
/// `SOURCE × LINES_PER_SOURCE + line` ([`here`]); each file of the module has its own
/// (`tests/gpu_conformance.rs` names them in the same order).
const SOURCE: u32 = 0;
/// Lines per file in a recorded position (no file of the module reaches it).
const LINES_PER_SOURCE: u32 = 10_000;

/// The position of the line it stands on, in the file it stands in (see [`SOURCE`]).
macro_rules! here {
    () => {
        SOURCE * LINES_PER_SOURCE + line!()
    };
}

/// Counts a failure at this line unless `$condition` holds.
macro_rules! check {
    ($report:expr, $condition:expr) => {
        if !$condition {
            $report.fail(here!());
        }
    };
}

/// Counts a timeout at this line unless the timed wait `$wait` returned `true`; is the
/// wait's result.
macro_rules! in_time {
    ($report:expr, $wait:expr) => {{
        let done: bool = $wait;
        if !done {
            $report.timed_out(here!());
        }
        done
    }};
}

/// `%globaltimer` (the clock of every timed wait; the scope does not matter to it).
fn now() -> GlobalTime {
    <Gpu as Backend<Device>>::now()
}

/// `now() + duration`.
fn deadline_in(duration: Duration) -> GlobalTime {
    <Gpu as Backend<Device>>::after(now(), duration)
}

/// Nanoseconds since `start`.
fn nanos_since(start: GlobalTime) -> u64 {
    now().0.saturating_sub(start.0)
}

fn device_add(word: &Word, n: u32) -> u32 {
    <Gpu as Backend<Device>>::fetch_add(word, n, Ordering::Relaxed)
}

fn device_load(word: &Word) -> u32 {
    <Gpu as Backend<Device>>::load(word, Ordering::Relaxed)
}

fn device_store(word: &Word, value: u32) {
    <Gpu as Backend<Device>>::store(word, value, Ordering::Relaxed)
}

// ---------------------------------------------------------------------------------
// Teams and the per-team test context.

/// How a team meets at a hardware barrier (between sub-tests).
#[derive(Clone, Copy)]
enum TeamSync {
    Block,
    Cluster,
    /// The kernel's own `Grid` parameter.
    Grid(*mut Grid),
}

/// The threads sharing one object: which team of the launch, this thread's rank in it,
/// and its size.
#[derive(Clone, Copy)]
struct Team {
    index: u32,
    me: u32,
    size: u32,
    sync: TeamSync,
}

impl Team {
    /// The calling thread's block.
    fn block() -> Self {
        Self {
            index: block_index(),
            me: thread_in_block(),
            size: block_size(),
            sync: TeamSync::Block,
        }
    }

    /// The calling thread's cluster (1-D launch: cluster `c` is blocks `c·n .. c·n+n`,
    /// rank = block index mod `n`).
    fn cluster() -> Self {
        let (rank, blocks) = cluster_rank();
        Self {
            index: block_index() / blocks,
            me: rank * block_size() + thread_in_block(),
            size: blocks * block_size(),
            sync: TeamSync::Cluster,
        }
    }

    /// The whole grid of a cooperative launch.
    fn grid(grid: &mut Grid) -> Self {
        Self {
            index: 0,
            me: global_thread_index(),
            size: global_thread_count(),
            sync: TeamSync::Grid(grid),
        }
    }

    /// Every thread of the team meets (hardware barrier; orders memory at the team's
    /// scope). Collective.
    fn sync(&self) {
        match self.sync {
            TeamSync::Block => sync_block(),
            TeamSync::Cluster => sync_cluster(),
            // SAFETY: the pointer is the kernel's own `Grid` parameter, alive for the
            // whole kernel, and only this thread uses it.
            TeamSync::Grid(grid) => unsafe { (*grid).sync() },
        }
    }
}

/// One team's view of the kernel's buffers.
struct Ctx {
    team: Team,
    /// `2 × team.size` words: two buffers of one slot per member.
    slots: *mut u32,
    /// `COUNTER_WORDS` words.
    counters: *mut u32,
    report: Report,
    rounds: u32,
}

impl Ctx {
    /// # Safety
    ///
    /// `slots` holds `2 × team.size` words per team, `counters` `COUNTER_WORDS` per
    /// team, `report` `REPORT_WORDS`, all live for the kernel.
    unsafe fn new(
        team: Team,
        slots: *mut u32,
        counters: *mut u32,
        report: *mut u32,
        rounds: u32,
    ) -> Self {
        let index = team.index as usize;
        // SAFETY: in bounds per the contract.
        let (slots, counters) = unsafe {
            (
                slots.add(index * 2 * team.size as usize),
                counters.add(index * COUNTER_WORDS),
            )
        };
        Self {
            team,
            slots,
            counters,
            report: Report(report),
            rounds,
        }
    }

    fn fail(&self, line: u32) {
        self.report.fail(line);
    }

    fn timed_out(&self, line: u32) {
        self.report.timed_out(line);
    }

    fn aborted(&self) -> bool {
        self.report.aborted()
    }

    fn patience(&self) -> Duration {
        self.report.patience()
    }

    fn slot(&self, buffer: u32, member: u32) -> *mut u32 {
        // SAFETY: `buffer < 2` and `member < team.size`: in bounds of the team's slots.
        unsafe { self.slots.add((buffer * self.team.size + member) as usize) }
    }

    /// Writes this thread's slot of `buffer`.
    fn write_slot(&self, buffer: u32, value: u32) {
        // SAFETY: only this thread writes its slot; readers are ordered by the
        // primitive under test (that is what the tests check).
        unsafe { self.slot(buffer, self.team.me).write_volatile(value) };
    }

    fn read_slot(&self, buffer: u32, member: u32) -> u32 {
        // SAFETY: a live word of the team's slots.
        unsafe { self.slot(buffer, member).read_volatile() }
    }

    fn counter_ptr(&self, index: usize) -> *mut u32 {
        // SAFETY: `index < COUNTER_WORDS`.
        unsafe { self.counters.add(index) }
    }

    fn counter(&self, index: usize) -> &'static Word {
        // SAFETY: a live, aligned word of the team's counters.
        unsafe { Word::from_ptr(self.counter_ptr(index)) }
    }

    /// Checks that two other members' slots of `buffer` hold `value`: the next one
    /// `stride` places on (usually in the same warp) and one half the team away (in
    /// another warp, block or cluster rank). With `stride == 2` only even members are
    /// read (the ones that did not drop out).
    fn check_neighbours(&self, buffer: u32, value: u32, stride: u32) {
        let (me, size) = (self.team.me, self.team.size);
        for other in [(me + stride) % size, (me + size / 2 + stride) % size] {
            check!(self, self.read_slot(buffer, other) == value);
        }
    }
}

/// Where a global-memory kernel builds team `team`'s object of type `T`.
///
/// # Safety
///
/// `objects` holds `OBJECT_BYTES` bytes per team, 8-byte aligned.
unsafe fn global_object<T>(objects: *mut u8, team: u32) -> *mut T {
    if core::mem::size_of::<T>() > OBJECT_BYTES || core::mem::align_of::<T>() > 8 {
        panic!("conformance: the object does not fit its OBJECT_BYTES");
    }
    // SAFETY: in bounds per the contract.
    unsafe { objects.add(team as usize * OBJECT_BYTES).cast() }
}

/// Generates one kernel per configuration of a family: `$object<Scope>` is the object
/// type, `$new::<Scope>(&ctx)` builds it, `$check::<Scope>(&object, &ctx)` runs the
/// family's checks. The team kind says where the object lives and who shares it (see
/// the module documentation).
macro_rules! matrix {
    ($object:ident, $new:ident, $check:ident, $what:literal:
     $($kernel:ident: $scope:ident, $kind:ident;)*) => {
        $( matrix!(@kernel $kind, $kernel, $object, $scope, $new, $check, $what); )*
    };

    (@kernel block_shared, $kernel:ident, $object:ident, $scope:ident, $new:ident, $check:ident, $what:literal) => {
        #[doc = concat!($what, " `", stringify!($scope), "` scope, object in block-shared memory, team = one block.")]
        #[no_mangle]
        pub unsafe extern "gpu-kernel" fn $kernel(
            objects: *mut u8,
            slots: *mut u32,
            counters: *mut u32,
            report: *mut u32,
            rounds: u32,
        ) {
            let _ = objects;
            // SAFETY: the host sizes the buffers per team (module documentation).
            let ctx = unsafe { Ctx::new(Team::block(), slots, counters, report, rounds) };
            let slot = shared!($kernel: $object<$scope>);
            // SAFETY: every thread of the block runs this once.
            let object = unsafe { slot.init_block($new::<$scope>(&ctx)) };
            $check::<$scope>(object, &ctx);
        }
    };

    (@kernel block_global, $kernel:ident, $object:ident, $scope:ident, $new:ident, $check:ident, $what:literal) => {
        #[doc = concat!($what, " `", stringify!($scope), "` scope, object in global memory, team = one block.")]
        #[no_mangle]
        pub unsafe extern "gpu-kernel" fn $kernel(
            objects: *mut u8,
            slots: *mut u32,
            counters: *mut u32,
            report: *mut u32,
            rounds: u32,
        ) {
            let team = Team::block();
            // SAFETY: the host sizes the buffers per team (module documentation).
            let (ctx, object) = unsafe {
                (
                    Ctx::new(team, slots, counters, report, rounds),
                    global_object::<$object<$scope>>(objects, team.index),
                )
            };
            if team.me == 0 {
                // SAFETY: one thread builds the block's object before anyone uses it.
                unsafe { object.write($new::<$scope>(&ctx)) };
            }
            // Publishes the object to the block.
            sync_block();
            // SAFETY: built above, and lives as long as the launch.
            $check::<$scope>(unsafe { &*object }, &ctx);
        }
    };

    (@kernel cluster_shared, $kernel:ident, $object:ident, $scope:ident, $new:ident, $check:ident, $what:literal) => {
        #[doc = concat!($what, " `", stringify!($scope), "` scope, object in cluster rank 0's shared memory, team = one cluster.")]
        #[no_mangle]
        pub unsafe extern "gpu-kernel" fn $kernel(
            objects: *mut u8,
            slots: *mut u32,
            counters: *mut u32,
            report: *mut u32,
            rounds: u32,
        ) {
            let _ = objects;
            // SAFETY: the host sizes the buffers per team (module documentation).
            let ctx = unsafe { Ctx::new(Team::cluster(), slots, counters, report, rounds) };
            let slot = shared!($kernel: $object<$scope>);
            // SAFETY: every thread of the cluster runs this once, with owner 0.
            let object = unsafe { slot.init_cluster(0, $new::<$scope>(&ctx)) };
            $check::<$scope>(object, &ctx);
            // The object lives in rank 0's shared memory: rank 0 must not exit while
            // another block may still use it.
            ClusterBarrier::new().arrive_and_wait();
        }
    };

    (@kernel cluster_global, $kernel:ident, $object:ident, $scope:ident, $new:ident, $check:ident, $what:literal) => {
        #[doc = concat!($what, " `", stringify!($scope), "` scope, object in global memory, team = one cluster.")]
        #[no_mangle]
        pub unsafe extern "gpu-kernel" fn $kernel(
            objects: *mut u8,
            slots: *mut u32,
            counters: *mut u32,
            report: *mut u32,
            rounds: u32,
        ) {
            let team = Team::cluster();
            // SAFETY: the host sizes the buffers per team (module documentation).
            let (ctx, object) = unsafe {
                (
                    Ctx::new(team, slots, counters, report, rounds),
                    global_object::<$object<$scope>>(objects, team.index),
                )
            };
            if team.me == 0 {
                // SAFETY: one thread builds the cluster's object before anyone uses it.
                unsafe { object.write($new::<$scope>(&ctx)) };
            }
            // Publishes the object to the cluster (release/acquire cluster barrier).
            sync_cluster();
            // SAFETY: built above, and lives as long as the launch.
            $check::<$scope>(unsafe { &*object }, &ctx);
        }
    };

    (@kernel grid_global, $kernel:ident, $object:ident, $scope:ident, $new:ident, $check:ident, $what:literal) => {
        #[doc = concat!($what, " `", stringify!($scope), "` scope, object in global memory, team = the whole grid (its grid barrier first).")]
        #[no_mangle]
        pub unsafe extern "gpu-kernel" fn $kernel(
            mut grid: Grid,
            objects: *mut u8,
            slots: *mut u32,
            counters: *mut u32,
            report: *mut u32,
            rounds: u32,
        ) {
            let team = Team::grid(&mut grid);
            // SAFETY: the host sizes the buffers for one team (module documentation).
            let (ctx, object) = unsafe {
                (
                    Ctx::new(team, slots, counters, report, rounds),
                    global_object::<$object<$scope>>(objects, 0),
                )
            };
            if team.me == 0 {
                // SAFETY: one thread builds the object before anyone uses it.
                unsafe { object.write($new::<$scope>(&ctx)) };
            }
            // Publishes the object to the grid.
            team.sync();
            // SAFETY: built above, and lives as long as the launch.
            $check::<$scope>(unsafe { &*object }, &ctx);
        }
    };
}

/// Counts completions in a global word (for the hardware barriers' completions, and
/// the generic barrier's in `convergence`).
pub(crate) struct CountInto(pub(crate) *mut u32);

impl Completion for CountInto {
    fn on_phase_complete(&mut self) {
        // SAFETY: a live global word, written only by the one thread that runs the
        // completion; the barrier orders successive runs.
        unsafe { self.0.write_volatile(self.0.read_volatile() + 1) };
    }
}

mod barrier;
mod hardware;
mod latch;
mod semaphore;
