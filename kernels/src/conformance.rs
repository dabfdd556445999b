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
//! teams a multiple of 4 members.

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

/// Counts a failure at this line unless `$condition` holds.
macro_rules! check {
    ($report:expr, $condition:expr) => {
        if !$condition {
            $report.fail(line!());
        }
    };
}

/// Counts a timeout at this line unless the timed wait `$wait` returned `true`; is the
/// wait's result.
macro_rules! in_time {
    ($report:expr, $wait:expr) => {{
        let done: bool = $wait;
        if !done {
            $report.timed_out(line!());
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
        #[doc = concat!($what, " `", stringify!($scope), "` scope, object in global memory, team = the whole grid (launch_grid).")]
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

// ---------------------------------------------------------------------------------
// Barriers: one phase loop for `Barrier` (every scope) and `SharedBarrier`.

/// The split-phase barrier operations the phase loop uses, so one loop tests both the
/// generic [`Barrier`] and the hardware [`SharedBarrier`].
trait PhaseBarrier {
    type Token;
    /// Whether a completion counts finished phases in counter 0 ([`PhaseCheck`]).
    const COUNTS_PHASES: bool;
    fn arrive(&self, n: u32) -> Self::Token;
    /// The token's phase parity, where the token exposes it.
    fn token_parity(token: &Self::Token) -> Option<bool>;
    fn try_wait_for(&self, token: &Self::Token, timeout: Duration) -> bool;
    fn try_wait_until(&self, token: &Self::Token, deadline: GlobalTime) -> bool;
    fn try_wait(&self, token: &Self::Token) -> bool;
    fn wait(&self, token: Self::Token);
    fn arrive_and_wait(&self);
    fn wait_parity(&self, parity: bool);
    fn try_wait_parity(&self, parity: bool) -> bool;
    /// Arrives once and waits by the parity the caller keeps (the hardware object's
    /// own form; elsewhere an arrival and a parity wait).
    fn arrive_and_wait_parity(&self, parity: bool) {
        let _token = self.arrive(1);
        self.wait_parity(parity);
    }
    fn arrive_and_drop(&self);
    /// The whole block arrives as one ([`WholeBlock`]) where the object supports it.
    /// Collective over the block.
    fn block_arrive_and_wait(&self);
}

impl<S: PtxScope, F: Completion> PhaseBarrier for Barrier<S, Gpu, F> {
    type Token = ArrivalToken;
    const COUNTS_PHASES: bool = !F::IS_NONE;
    fn arrive(&self, n: u32) -> ArrivalToken {
        Barrier::arrive(self, n)
    }
    fn token_parity(token: &ArrivalToken) -> Option<bool> {
        Some(token.parity())
    }
    fn try_wait_for(&self, token: &ArrivalToken, timeout: Duration) -> bool {
        Barrier::try_wait_for(self, token, timeout)
    }
    fn try_wait_until(&self, token: &ArrivalToken, deadline: GlobalTime) -> bool {
        Barrier::try_wait_until(self, token, deadline)
    }
    fn try_wait(&self, token: &ArrivalToken) -> bool {
        Barrier::try_wait(self, token)
    }
    fn wait(&self, token: ArrivalToken) {
        Barrier::wait(self, token)
    }
    fn arrive_and_wait(&self) {
        Barrier::arrive_and_wait(self)
    }
    fn wait_parity(&self, parity: bool) {
        Barrier::wait_parity(self, parity)
    }
    fn try_wait_parity(&self, parity: bool) -> bool {
        Barrier::try_wait_parity(self, parity)
    }
    fn arrive_and_drop(&self) {
        Barrier::arrive_and_drop(self)
    }
    fn block_arrive_and_wait(&self) {
        WholeBlock::block_arrive_and_wait(self)
    }
}

impl PhaseBarrier for SharedBarrier {
    type Token = SharedToken;
    const COUNTS_PHASES: bool = false;
    fn arrive(&self, n: u32) -> SharedToken {
        SharedBarrier::arrive(self, n)
    }
    fn token_parity(_token: &SharedToken) -> Option<bool> {
        None
    }
    fn try_wait_for(&self, token: &SharedToken, timeout: Duration) -> bool {
        SharedBarrier::try_wait_for(self, token, timeout)
    }
    fn try_wait_until(&self, token: &SharedToken, deadline: GlobalTime) -> bool {
        SharedBarrier::try_wait_until(self, token, deadline)
    }
    fn try_wait(&self, token: &SharedToken) -> bool {
        SharedBarrier::try_wait(self, token)
    }
    fn wait(&self, token: SharedToken) {
        SharedBarrier::wait(self, token)
    }
    fn arrive_and_wait(&self) {
        SharedBarrier::arrive_and_wait(self)
    }
    fn wait_parity(&self, parity: bool) {
        SharedBarrier::wait_parity(self, parity)
    }
    fn try_wait_parity(&self, parity: bool) -> bool {
        SharedBarrier::try_wait_parity(self, parity)
    }
    fn arrive_and_wait_parity(&self, parity: bool) {
        SharedBarrier::arrive_and_wait_parity(self, parity)
    }
    fn arrive_and_drop(&self) {
        SharedBarrier::arrive_and_drop(self)
    }
    fn block_arrive_and_wait(&self) {
        // No whole-block form on the hardware object (it takes every thread's arrival
        // in stride).
        SharedBarrier::arrive_and_wait(self)
    }
}

/// How the team meets in one phase.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Meeting {
    /// `arrive(1)`, then a timed wait on the token.
    Split,
    /// `arrive_and_wait()`.
    AndWait,
    /// Members `4k` arrive for two (`arrive(2)`), members `4k+1` do not arrive and wait
    /// by parity; the rest arrive once.
    Pairs,
    /// `arrive(1)`, then `wait_parity` with the token's parity.
    Parity,
    /// `arrive_and_wait_parity()` with the parity the loop keeps.
    AndWaitParity,
    /// `block_arrive_and_wait()` (one arrival per block).
    WholeBlock,
}

/// The schedule: phases before the drop cycle through every way of meeting (the
/// whole-block one only if `whole_block`, else `AndWait` in its place); from the drop
/// phase on, `Split` and `AndWait` alternate.
fn meeting(phase: u32, drop_phase: u32, whole_block: bool) -> Meeting {
    if phase >= drop_phase {
        return if phase % 2 == 0 {
            Meeting::AndWait
        } else {
            Meeting::Split
        };
    }
    match phase % 4 {
        1 if phase == 1 => Meeting::Split,
        1 => Meeting::Pairs,
        2 if phase % 8 == 6 && whole_block => Meeting::WholeBlock,
        2 => Meeting::AndWait,
        3 => Meeting::Split,
        0 if phase % 8 == 4 => Meeting::AndWaitParity,
        _ => Meeting::Parity,
    }
}

/// `arrive(n)` and a timed wait; checks the token's parity and that `try_wait` agrees
/// once the wait returned. `false` on timeout.
fn split_phase<B: PhaseBarrier>(barrier: &B, ctx: &Ctx, n: u32, parity: bool) -> bool {
    let token = barrier.arrive(n);
    if let Some(token_parity) = B::token_parity(&token) {
        check!(ctx, token_parity == parity);
    }
    if !barrier.try_wait_for(&token, ctx.patience()) {
        return false;
    }
    check!(ctx, barrier.try_wait(&token));
    // Complete already: returns at once.
    barrier.wait(token);
    true
}

/// Polls `try_wait_parity(parity)` until it holds or the patience runs out.
fn poll_parity<B: PhaseBarrier>(barrier: &B, ctx: &Ctx, parity: bool) -> bool {
    let deadline = deadline_in(ctx.patience());
    loop {
        if barrier.try_wait_parity(parity) {
            return true;
        }
        if now() >= deadline {
            return false;
        }
        <Gpu as Backend<Block>>::yield_now();
    }
}

/// One phase's arrival and wait, as `meeting` says. `false` on timeout.
fn meet<B: PhaseBarrier>(barrier: &B, ctx: &Ctx, meeting: Meeting, parity: bool) -> bool {
    match meeting {
        Meeting::Split => split_phase(barrier, ctx, 1, parity),
        Meeting::AndWait => {
            if ctx.aborted() {
                return split_phase(barrier, ctx, 1, parity);
            }
            barrier.arrive_and_wait();
            true
        }
        Meeting::Pairs => {
            // Member 4k+1's slot write (and arrival count) must be ordered before
            // member 4k's arrival, which stands for both: `bar.warp.sync` orders the
            // memory accesses of the warp's lanes (4k and 4k+1 share a warp).
            warp::sync(u32::MAX);
            match ctx.team.me % 4 {
                0 => split_phase(barrier, ctx, 2, parity),
                1 => poll_parity(barrier, ctx, parity),
                _ => split_phase(barrier, ctx, 1, parity),
            }
        }
        Meeting::Parity => {
            let token = barrier.arrive(1);
            if let Some(token_parity) = B::token_parity(&token) {
                check!(ctx, token_parity == parity);
            }
            if ctx.aborted() {
                return barrier.try_wait_for(&token, ctx.patience());
            }
            barrier.wait_parity(parity);
            true
        }
        Meeting::AndWaitParity => {
            if ctx.aborted() {
                return split_phase(barrier, ctx, 1, parity);
            }
            barrier.arrive_and_wait_parity(parity);
            true
        }
        Meeting::WholeBlock => {
            // The whole block must take the same path into the collective operation.
            if sync_block_any(ctx.aborted()) {
                return split_phase(barrier, ctx, 1, parity);
            }
            barrier.block_arrive_and_wait();
            true
        }
    }
}

/// The barrier checks, for any team: `ctx.rounds` phases of the whole team cycling
/// through every way of arriving and waiting, then a phase in which the odd members
/// `arrive_and_drop`, then [`PHASES_AFTER_DROP`] phases of the even members alone.
/// In phase `p` every live member first writes `p` to its slot of buffer `p % 2` (two
/// buffers, so a slow reader of phase `p` never sees phase `p + 1`'s value: that write
/// needs the reader's next arrival), and counts itself in counter `2 + p % 2`. After
/// the wait it checks: two other members' slots hold `p` (no early release, writes
/// published); the completion has run exactly `p` times (counter 0, where the barrier
/// has a [`PhaseCheck`] completion); `try_wait_parity(parity of p)` holds and
/// `try_wait_parity(parity of p + 1)` does not (the next phase needs this thread).
fn check_phases<B: PhaseBarrier>(barrier: &B, ctx: &Ctx) {
    let team = ctx.team;
    let drop_phase = ctx.rounds + 1;
    let survivor = team.me % 2 == 0;
    for phase in 1..=drop_phase + PHASES_AFTER_DROP {
        let buffer = phase % 2;
        ctx.write_slot(buffer, phase);
        device_add(ctx.counter(2 + buffer as usize), 1);
        if phase == drop_phase && !survivor {
            // This arrival still counts in this phase; later phases expect one less.
            barrier.arrive_and_drop();
            return;
        }
        // Phases alternate parity; the first one's is `false`.
        let parity = phase % 2 == 0;
        let meeting = meeting(phase, drop_phase, ctx.report.whole_block_meetings());
        if !meet(barrier, ctx, meeting, parity) {
            ctx.timed_out(line!());
            continue;
        }
        if B::COUNTS_PHASES {
            // SAFETY: a live counter word; the completion's write is ordered before
            // this read by the barrier.
            let completed = unsafe { ctx.counter_ptr(0).read_volatile() };
            check!(ctx, completed == phase);
        }
        check!(ctx, barrier.try_wait_parity(parity));
        check!(ctx, !barrier.try_wait_parity(!parity));
        ctx.check_neighbours(buffer, phase, if phase > drop_phase { 2 } else { 1 });
    }
}

/// The completion under test: counts completed phases in a global word, and checks
/// that it sees every arrival of the phase (the members count themselves in a word
/// per phase parity before arriving; the completion reads and resets it).
struct PhaseCheck {
    /// Completed phases.
    phases: *mut u32,
    /// Two words: arrivals of even and odd phases.
    arrivals: *mut u32,
    size: u32,
    /// The phase in which half of the team drops out (later phases expect half).
    drop_phase: u32,
    report: Report,
}

impl Completion for PhaseCheck {
    fn on_phase_complete(&mut self) {
        // SAFETY: live global words; only the completing thread runs this, and the
        // barrier orders successive completions.
        let phase = unsafe { self.phases.read_volatile() } + 1;
        // SAFETY: as above.
        unsafe { self.phases.write_volatile(phase) };
        // SAFETY: as above; `phase % 2 < 2`.
        let arrivals = unsafe { Word::from_ptr(self.arrivals.add((phase % 2) as usize)) };
        let live = if phase <= self.drop_phase {
            self.size
        } else {
            self.size / 2
        };
        check!(self.report, device_load(arrivals) == live);
        // The next phase of this parity counts from zero (its members write after
        // the next phase completes, so after this).
        device_store(arrivals, 0);
    }
}

/// The matrix's barrier: a [`Barrier`] with the [`PhaseCheck`] completion.
type CheckedBarrier<S> = Barrier<S, Gpu, PhaseCheck>;

fn new_barrier<S: PtxScope>(ctx: &Ctx) -> CheckedBarrier<S> {
    Barrier::with_completion(
        ctx.team.size,
        PhaseCheck {
            phases: ctx.counter_ptr(0),
            arrivals: ctx.counter_ptr(2),
            size: ctx.team.size,
            drop_phase: ctx.rounds + 1,
            report: ctx.report,
        },
    )
}

fn check_barrier<S: PtxScope>(barrier: &CheckedBarrier<S>, ctx: &Ctx) {
    check_form(barrier, ctx, hardware_expected(barrier));
    check_phases(barrier, ctx);
}

matrix! {
    CheckedBarrier, new_barrier, check_barrier,
    "Barrier conformance (see `check_phases`; counter 0 ends at `rounds + 5`):":
    conf_barrier_block_shared: Block, block_shared;
    conf_barrier_block_global: Block, block_global;
    conf_barrier_cluster_shared: Cluster, cluster_shared;
    conf_barrier_cluster_global: Cluster, cluster_global;
    conf_barrier_device_shared: Device, block_shared;
    conf_barrier_device_global: Device, grid_global;
    conf_barrier_system_shared: System, block_shared;
    conf_barrier_system_global: System, grid_global;
}

/// The matrix's barrier without completion function: the single-add arrival at every
/// scope, and the hardware form without the reserved arrival at `Block` scope in shared
/// memory.
type PlainBarrier<S> = Barrier<S, Gpu>;

fn new_plain_barrier<S: PtxScope>(ctx: &Ctx) -> PlainBarrier<S> {
    Barrier::new(ctx.team.size)
}

fn check_plain_barrier<S: PtxScope>(barrier: &PlainBarrier<S>, ctx: &Ctx) {
    check_form(barrier, ctx, hardware_expected(barrier));
    check_phases(barrier, ctx);
}

matrix! {
    PlainBarrier, new_plain_barrier, check_plain_barrier,
    "Barrier without completion conformance (see `check_phases`):":
    conf_plain_barrier_block_shared: Block, block_shared;
    conf_plain_barrier_block_global: Block, block_global;
    conf_plain_barrier_cluster_shared: Cluster, cluster_shared;
    conf_plain_barrier_cluster_global: Cluster, cluster_global;
    conf_plain_barrier_device_shared: Device, block_shared;
    conf_plain_barrier_device_global: Device, grid_global;
    conf_plain_barrier_system_shared: System, block_shared;
    conf_plain_barrier_system_global: System, grid_global;
}

/// [`check_barrier`] with a team barrier between member 0's [`check_form`] and the
/// phases. When a barrier became the `mbarrier` at its first operation, this ordered
/// that conversion before every other member's first use in a way racecheck models
/// (`docs/sanitizers.md`); `init_block` now places the barrier before the block
/// barrier that publishes it, so both variants start from a placed barrier. The
/// variant racecheck judges.
fn check_barrier_settled<S: PtxScope>(barrier: &CheckedBarrier<S>, ctx: &Ctx) {
    check_form(barrier, ctx, hardware_expected(barrier));
    ctx.team.sync();
    check_phases(barrier, ctx);
}

/// [`check_plain_barrier`] with the form settled first, as in
/// [`check_barrier_settled`].
fn check_plain_barrier_settled<S: PtxScope>(barrier: &PlainBarrier<S>, ctx: &Ctx) {
    check_form(barrier, ctx, hardware_expected(barrier));
    ctx.team.sync();
    check_phases(barrier, ctx);
}

matrix! {
    CheckedBarrier, new_barrier, check_barrier_settled,
    "Barrier conformance in block-shared memory (the hardware form) with the form settled first (see `check_barrier_settled`; counter 0 ends at `rounds + 5`):":
    conf_barrier_settled_block_shared: Block, block_shared;
}

matrix! {
    PlainBarrier, new_plain_barrier, check_plain_barrier_settled,
    "Barrier without completion in block-shared memory (the hardware form) with the form settled first (see `check_barrier_settled`):":
    conf_plain_barrier_settled_block_shared: Block, block_shared;
}

/// Whether a matrix barrier must be in the hardware form: `Block` scope, in shared
/// memory.
fn hardware_expected<S: PtxScope, F: Completion>(barrier: &Barrier<S, Gpu, F>) -> bool {
    <S as sync_shared::Scope>::LEVEL == <Block as sync_shared::Scope>::LEVEL && is_shared(barrier)
}

/// The form each matrix barrier must take: the hardware one exactly for `Block` scope
/// in shared memory (placed there by `init_block`). One thread per team asks, before
/// the phases begin.
fn check_form<S: PtxScope, F: Completion>(barrier: &Barrier<S, Gpu, F>, ctx: &Ctx, hardware: bool) {
    if ctx.team.me == 0 {
        check!(ctx, barrier.uses_hardware() == hardware);
    }
}

/// `Barrier<Block>` in shared memory (the hardware form) timeouts, with and without a
/// completion ([`timeout_then_complete`]). Same signature as the matrix kernels;
/// counter 0 counts the completions (2, one per phase).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_generic_block_barrier_timeout(
    objects: *mut u8,
    slots: *mut u32,
    counters: *mut u32,
    report: *mut u32,
    rounds: u32,
) {
    let _ = (objects, rounds);
    // SAFETY: the host sizes the buffers per block.
    let ctx = unsafe { Ctx::new(Team::block(), slots, counters, report, 0) };
    let plain = shared!(CONF_GENERIC_TIMEOUT_PLAIN: Barrier<Block, Gpu>);
    let counted = shared!(CONF_GENERIC_TIMEOUT_COUNTED: Barrier<Block, Gpu, CountInto>);
    // SAFETY: every thread of the block runs each once.
    let (plain, counted) = unsafe {
        (
            plain.init_block(Barrier::new(block_size() + 1)),
            counted.init_block(Barrier::with_completion(
                block_size() + 1,
                CountInto(ctx.counter_ptr(0)),
            )),
        )
    };
    check_form(plain, &ctx, true);
    check_form(counted, &ctx, true);
    // `init_block` placed both (`mbarrier.init` before its block barrier); this block
    // barrier keeps thread 0's form checks apart from the others' first arrivals.
    sync_block();
    timeout_then_complete(plain, &ctx);
    timeout_then_complete(counted, &ctx);
}

/// A barrier of the block expecting one arrival more than the block has: every
/// thread's timed waits return `false` after their timeout and `try_wait` is `false`;
/// then thread 0 arrives once more, and every thread's wait on its old token succeeds
/// (a timed-out wait leaves the barrier usable); then one more such phase, whose tokens
/// have the other parity.
fn timeout_then_complete<B: PhaseBarrier>(barrier: &B, ctx: &Ctx) {
    for phase in 0..2 {
        let parity = phase == 1;
        let token = barrier.arrive(1);
        if let Some(token_parity) = B::token_parity(&token) {
            check!(ctx, token_parity == parity);
        }
        if phase == 0 {
            let start = now();
            check!(ctx, !barrier.try_wait_for(&token, SHORT_TIMEOUT));
            check!(ctx, nanos_since(start) >= SHORT_TIMEOUT.as_nanos() as u64);
            let deadline = deadline_in(SHORT_TIMEOUT);
            check!(ctx, !barrier.try_wait_until(&token, deadline));
            check!(ctx, now() >= deadline);
            check!(ctx, !barrier.try_wait(&token));
            check!(ctx, !barrier.try_wait_parity(parity));
        }
        // Every thread has seen the phase incomplete; now the missing arrival.
        sync_block();
        if thread_in_block() == 0 {
            let _last = barrier.arrive(1);
        }
        if in_time!(ctx, barrier.try_wait_for(&token, ctx.patience())) {
            check!(ctx, barrier.try_wait(&token));
            check!(ctx, barrier.try_wait_parity(parity));
            check!(ctx, !barrier.try_wait_parity(!parity));
        }
        sync_block();
    }
}

/// The device barrier under stress: `rounds` phases of a `Barrier<Device>` without
/// completion in global memory, shared by the whole grid (launch_grid), arriving in
/// turn with `arrive_and_wait`, split arrive/wait and whole-block arrivals. Each
/// phase every thread writes the phase number to its slot before arriving, and
/// afterwards checks the slots of a thread in another block (a write before the
/// barrier is seen after it, across SMs). Same signature as the grid matrix kernels.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_device_barrier_stress(
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
            global_object::<PlainBarrier<Device>>(objects, 0),
        )
    };
    if team.me == 0 {
        // SAFETY: one thread builds the object before anyone uses it.
        unsafe { object.write(Barrier::new(team.size)) };
    }
    team.sync();
    // SAFETY: built above, and lives as long as the launch.
    let barrier = unsafe { &*object };
    check_form(barrier, &ctx, false);
    for phase in 1..=rounds {
        let buffer = phase % 2;
        ctx.write_slot(buffer, phase);
        let meeting = match phase % 3 {
            0 => Meeting::WholeBlock,
            1 => Meeting::AndWait,
            _ => Meeting::Split,
        };
        if !meet(barrier, &ctx, meeting, phase % 2 == 0) {
            ctx.timed_out(line!());
            continue;
        }
        ctx.check_neighbours(buffer, phase, block_size());
    }
}

// ---------------------------------------------------------------------------------
// Latches.

/// The three latches of one team.
#[repr(C)]
struct Latches<S: PtxScope> {
    /// Counted down by 2 by every fourth member and by 1 by the others.
    counted: Latch<S, Gpu>,
    /// `arrive_and_wait(1)` by every member.
    together: Latch<S, Gpu>,
    /// `block_arrive_and_wait` by every block of the team.
    whole_blocks: Latch<S, Gpu>,
}

fn new_latches<S: PtxScope>(ctx: &Ctx) -> Latches<S> {
    let size = ctx.team.size;
    Latches {
        counted: Latch::new(size + size / 4),
        together: Latch::new(size),
        whole_blocks: Latch::new(size),
    }
}

/// Latch checks: (1) before its own count-down a member sees `try_wait() == false`
/// (the latch needs it), member 0 sees timed waits time out after at least the
/// timeout; members count down by 1 or 2, wait with a timed wait, then `try_wait()`
/// holds, `wait()` returns, and two other members' slots (written before their
/// count-down) are visible; a count-down below zero is refused. (2) The same with
/// `arrive_and_wait(1)`. (3) The same with `block_arrive_and_wait` ([`WholeBlock`],
/// one count-down of the block's size by thread 0).
fn check_latches<S: PtxScope>(latches: &Latches<S>, ctx: &Ctx) {
    let team = ctx.team;

    // (1) count_down by 1 or 2, timed wait.
    ctx.write_slot(0, 1);
    check!(ctx, !latches.counted.try_wait());
    if team.me == 0 {
        let start = now();
        check!(ctx, !latches.counted.try_wait_for(SHORT_TIMEOUT));
        check!(ctx, nanos_since(start) >= SHORT_TIMEOUT.as_nanos() as u64);
        let deadline = deadline_in(SHORT_TIMEOUT);
        check!(ctx, !latches.counted.try_wait_until(deadline));
        check!(ctx, now() >= deadline);
    }
    latches
        .counted
        .count_down(if team.me % 4 == 0 { 2 } else { 1 });
    if in_time!(ctx, latches.counted.try_wait_for(ctx.patience())) {
        check!(ctx, latches.counted.try_wait());
        // At zero already: returns at once.
        latches.counted.wait();
        ctx.check_neighbours(0, 1, 1);
        check!(ctx, latches.counted.try_count_down(1).is_err());
    }

    // (2) arrive_and_wait. Buffer 1 is untouched so far.
    ctx.write_slot(1, 2);
    check!(ctx, !latches.together.try_wait());
    if ctx.aborted() {
        latches.together.count_down(1);
        in_time!(ctx, latches.together.try_wait_for(ctx.patience()));
    } else {
        latches.together.arrive_and_wait(1);
    }
    check!(ctx, latches.together.try_wait());
    ctx.check_neighbours(1, 2, 1);

    // (3) One arrival per block. Rewriting buffer 0 is safe: every read of it in (1)
    // came before its reader's arrival in (2), which this thread has seen complete.
    ctx.write_slot(0, 3);
    check!(ctx, !latches.whole_blocks.try_wait());
    if sync_block_any(ctx.aborted()) {
        sync_block();
        if thread_in_block() == 0 {
            latches.whole_blocks.count_down(block_size());
        }
        in_time!(ctx, latches.whole_blocks.try_wait_for(ctx.patience()));
    } else {
        latches.whole_blocks.block_arrive_and_wait();
    }
    check!(ctx, latches.whole_blocks.try_wait());
    ctx.check_neighbours(0, 3, 1);
}

matrix! {
    Latches, new_latches, check_latches,
    "Latch conformance (see `check_latches`):":
    conf_latch_block_shared: Block, block_shared;
    conf_latch_block_global: Block, block_global;
    conf_latch_cluster_shared: Cluster, cluster_shared;
    conf_latch_cluster_global: Cluster, cluster_global;
    conf_latch_device_shared: Device, block_shared;
    conf_latch_device_global: Device, grid_global;
    conf_latch_system_shared: System, block_shared;
    conf_latch_system_global: System, grid_global;
}

// ---------------------------------------------------------------------------------
// Semaphores.

/// The semaphores of one team, and the data the mutex protects (in the same memory
/// space as the semaphores).
#[repr(C)]
struct Semaphores<S: PtxScope> {
    /// A binary semaphore used as a mutex (starts at 1).
    mutex: CountingSemaphore<S, Gpu, 1>,
    /// Producer/consumer units (starts at 0).
    items: CountingSemaphore<S, Gpu, SEMAPHORE_MAX>,
    /// Used by member 0 alone for the exact try/timed checks (starts at 0).
    idle: CountingSemaphore<S, Gpu, SEMAPHORE_MAX>,
    /// Incremented with plain (non-atomic) accesses, only under the mutex.
    guarded: UnsafeCell<u32>,
    /// Members inside the critical section: never more than one.
    inside: Word,
}

fn new_semaphores<S: PtxScope>(_ctx: &Ctx) -> Semaphores<S> {
    Semaphores {
        mutex: CountingSemaphore::new(1),
        items: CountingSemaphore::new(0),
        idle: CountingSemaphore::new(0),
        guarded: UnsafeCell::new(0),
        inside: Word::new(0),
    }
}

/// `try_acquire` in a loop until the patience runs out.
fn spin_acquire<S: PtxScope, const MAX: u32>(
    semaphore: &CountingSemaphore<S, Gpu, MAX>,
    patience: Duration,
) -> bool {
    let deadline = deadline_in(patience);
    loop {
        if semaphore.try_acquire() {
            return true;
        }
        if now() >= deadline {
            return false;
        }
        <Gpu as Backend<S>>::yield_now();
    }
}

/// One timed acquire, in one of three forms chosen by `round`.
fn timed_acquire<S: PtxScope, const MAX: u32>(
    semaphore: &CountingSemaphore<S, Gpu, MAX>,
    ctx: &Ctx,
    round: u32,
) -> bool {
    match round % 3 {
        0 => semaphore.try_acquire_for(ctx.patience()),
        1 => semaphore.try_acquire_until(deadline_in(ctx.patience())),
        _ => spin_acquire(semaphore, ctx.patience()),
    }
}

/// Units each producer releases in `rounds` rounds (alternately 1 and 3).
fn units_per_producer(rounds: u32) -> u32 {
    rounds + 2 * (rounds / 2)
}

/// Semaphore checks. (1) Mutex: every member takes the binary semaphore `rounds` times
/// (timed acquires in three forms), checks it is alone inside, increments `guarded`
/// with plain accesses and releases; afterwards `guarded == size × rounds` exactly (a
/// lost update or lost unit shows as a wrong count or a timeout) and is copied to
/// counter 1 for the host. (2) Producer/consumer: even members `release` 1 and 3
/// alternately `rounds` times, odd members take as many units one by one with timed
/// acquires; afterwards none is left. (3) Member 0 alone: a timed acquire of an empty
/// semaphore fails after at least its timeout; `release(3)` then exactly three
/// `try_acquire` succeed; `release(2)` then two untimed `acquire`s return; a binary
/// semaphore refuses a release past its `MAX`.
fn check_semaphores<S: PtxScope>(semaphores: &Semaphores<S>, ctx: &Ctx) {
    check_semaphores_guarding(semaphores, ctx, semaphores.guarded.get());
}

/// [`check_semaphores`] with the mutex-protected counter in global memory (counter 0
/// of the team) instead of beside the semaphores: the variant `racecheck` judges where
/// the semaphores are in shared memory. racecheck tracks shared memory only and does
/// not model the order that an atomics-based acquire and release give, so it reports
/// the plain accesses to a shared-memory counter under the mutex as hazards; with the
/// counter in global memory it judges every shared-memory access of the semaphores
/// themselves, and the count still shows a broken exclusion (a lost update).
fn check_semaphores_guarding_global<S: PtxScope>(semaphores: &Semaphores<S>, ctx: &Ctx) {
    check_semaphores_guarding(semaphores, ctx, ctx.counter_ptr(0));
}

/// The semaphore checks of [`check_semaphores`], with the mutex-protected counter at
/// `guarded` (a zeroed word that only this team uses).
fn check_semaphores_guarding<S: PtxScope>(
    semaphores: &Semaphores<S>,
    ctx: &Ctx,
    guarded: *mut u32,
) {
    let team = ctx.team;
    let rounds = ctx.rounds;

    // (1) Mutual exclusion.
    for round in 0..rounds {
        if !in_time!(ctx, timed_acquire(&semaphores.mutex, ctx, round)) {
            continue;
        }
        let before = <Gpu as Backend<S>>::fetch_add(&semaphores.inside, 1, Ordering::Relaxed);
        check!(ctx, before == 0);
        // SAFETY: the mutex makes this thread the only one touching `guarded`; its
        // acquire/release order the previous holder's accesses before these.
        unsafe { guarded.write_volatile(guarded.read_volatile() + 1) };
        <Gpu as Backend<S>>::fetch_sub(&semaphores.inside, 1, Ordering::Relaxed);
        // Both release paths: the checked one, and the device's one-`fetch_add` fast
        // path (which traps the kernel if the mutex was not held).
        if round % 2 == 0 {
            check!(ctx, semaphores.mutex.try_release(1).is_ok());
        } else {
            semaphores.mutex.release(1);
        }
    }

    // (2) Producers and consumers.
    if team.me % 2 == 0 {
        for round in 0..rounds {
            // Both release paths, as for the mutex.
            let units = 1 + 2 * (round % 2);
            if round % 4 < 2 {
                semaphores.items.release(units);
            } else {
                check!(ctx, semaphores.items.try_release(units).is_ok());
            }
        }
    } else {
        for round in 0..units_per_producer(rounds) {
            in_time!(ctx, timed_acquire(&semaphores.items, ctx, round));
        }
    }

    // (3) Exact counts once every member is done.
    team.sync();
    if team.me != 0 {
        return;
    }
    check!(ctx, !semaphores.items.try_acquire());
    // SAFETY: every member is done with the mutex (the team barrier above ordered
    // their accesses before this read).
    let total = unsafe { guarded.read_volatile() };
    check!(ctx, total == team.size * rounds);
    device_store(ctx.counter(1), total);

    check!(ctx, semaphores.mutex.try_release(1).is_err());
    check!(ctx, semaphores.mutex.try_acquire());
    check!(ctx, !semaphores.mutex.try_acquire());
    check!(ctx, semaphores.mutex.try_release(1).is_ok());

    let idle = &semaphores.idle;
    check!(ctx, !idle.try_acquire());
    let start = now();
    check!(ctx, !idle.try_acquire_for(SHORT_TIMEOUT));
    check!(ctx, nanos_since(start) >= SHORT_TIMEOUT.as_nanos() as u64);
    let deadline = deadline_in(SHORT_TIMEOUT);
    check!(ctx, !idle.try_acquire_until(deadline));
    check!(ctx, now() >= deadline);

    idle.release(3);
    let taken = (0..4).filter(|_| idle.try_acquire()).count();
    check!(ctx, taken == 3);

    idle.release(2);
    // Two units are there (the exact count above shows the semaphore keeps what is
    // released), so the untimed acquires return at once; skipped if that count was
    // wrong, when they might block for ever.
    if taken == 3 {
        idle.acquire();
        idle.acquire();
    }
    check!(ctx, !idle.try_acquire());
}

matrix! {
    Semaphores, new_semaphores, check_semaphores,
    "Semaphore conformance and lost-wake-up stress (see `check_semaphores`; counter 1 ends at team size × `rounds`):":
    conf_semaphore_block_shared: Block, block_shared;
    conf_semaphore_block_global: Block, block_global;
    conf_semaphore_cluster_shared: Cluster, cluster_shared;
    conf_semaphore_cluster_global: Cluster, cluster_global;
    conf_semaphore_device_shared: Device, block_shared;
    conf_semaphore_device_global: Device, grid_global;
    conf_semaphore_system_shared: System, block_shared;
    conf_semaphore_system_global: System, grid_global;
}

matrix! {
    Semaphores, new_semaphores, check_semaphores_guarding_global,
    "Semaphore conformance with the mutex-protected counter in global memory (see `check_semaphores_guarding_global`; counter 1 ends at team size × `rounds`):":
    conf_semaphore_global_guard_block_shared: Block, block_shared;
    conf_semaphore_global_guard_cluster_shared: Cluster, cluster_shared;
    conf_semaphore_global_guard_device_shared: Device, block_shared;
    conf_semaphore_global_guard_system_shared: System, block_shared;
}

// ---------------------------------------------------------------------------------
// Hardware barriers.

/// [`SharedBarrier`] (`mbarrier`) conformance, one barrier per block: the phase loop of
/// [`check_phases`] (tokens, `arrive_and_wait`, `arrive(2)` with parity-only waiters,
/// `wait_parity`, `arrive_and_drop`), `ctx.rounds` phases before the drop. Same
/// signature as the matrix kernels.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_shared_barrier_phases(
    objects: *mut u8,
    slots: *mut u32,
    counters: *mut u32,
    report: *mut u32,
    rounds: u32,
) {
    let _ = objects;
    // SAFETY: the host sizes the buffers per block.
    let ctx = unsafe { Ctx::new(Team::block(), slots, counters, report, rounds) };
    let slot = shared!(CONF_SHARED_BARRIER_PHASES: SharedBarrier);
    // SAFETY: every thread of the block runs this once.
    let barrier = unsafe { SharedBarrier::init(&slot, block_size()) };
    check!(ctx, barrier.is_in_shared_memory());
    check_phases(barrier, &ctx);
}

/// [`SharedBarrier`] timeouts ([`timeout_then_complete`]). Same signature as the
/// matrix kernels.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_shared_barrier_timeout(
    objects: *mut u8,
    slots: *mut u32,
    counters: *mut u32,
    report: *mut u32,
    rounds: u32,
) {
    let _ = (objects, rounds);
    // SAFETY: the host sizes the buffers per block.
    let ctx = unsafe { Ctx::new(Team::block(), slots, counters, report, 0) };
    let slot = shared!(CONF_SHARED_BARRIER_TIMEOUT: SharedBarrier);
    // SAFETY: every thread of the block runs this once.
    let barrier = unsafe { SharedBarrier::init(&slot, block_size() + 1) };
    timeout_then_complete(barrier, &ctx);
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

/// [`BlockBarrier::with_completion`]: `rounds` phases; each thread writes its slot,
/// meets, and checks two other threads' slots and that the completion has run once
/// per phase (counter 0 of the block, which ends at `rounds`). Same signature as the
/// matrix kernels.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_block_barrier_completion(
    objects: *mut u8,
    slots: *mut u32,
    counters: *mut u32,
    report: *mut u32,
    rounds: u32,
) {
    let _ = objects;
    // SAFETY: the host sizes the buffers per block.
    let ctx = unsafe { Ctx::new(Team::block(), slots, counters, report, rounds) };
    let mut barrier = BlockBarrier::with_completion(CountInto(ctx.counter_ptr(0)));
    for phase in 1..=rounds {
        let buffer = phase % 2;
        ctx.write_slot(buffer, phase);
        barrier.arrive_and_wait();
        // SAFETY: a live counter word, written by the completion before the barrier
        // released this thread.
        check!(ctx, unsafe { ctx.counter_ptr(0).read_volatile() } == phase);
        ctx.check_neighbours(buffer, phase, 1);
    }
}

/// The value block `rank` writes for thread `thread` in `phase` of the cluster test.
fn cluster_value(rank: u32, thread: u32, phase: u32) -> u32 {
    (phase << 12) | (rank << 9) | thread
}

/// [`ClusterBarrier`] over distributed shared memory, any cluster size: in each of
/// `phases` phases every thread writes a value naming (rank, thread, phase) into its
/// block's shared buffer `phase % 2`, the cluster meets (split `arrive`/`wait`,
/// `arrive_and_wait`, or `arrive_and_wait` of a barrier with a completion, in turn),
/// and each thread reads its counterpart's value in two other blocks through
/// [`map_to_block`]. The completion counts into `counters[cluster]`, which every thread
/// checks (it ends at `(phases + 1) / 3`). Blocks of at most [`CLUSTER_BLOCK_MAX`]
/// threads. Launched with `launch_ex` (clusters), parameters `(counters, report,
/// phases)`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_cluster_barrier(
    counters: *mut u32,
    report: *mut u32,
    phases: u32,
) {
    let report = Report(report);
    if block_size() as usize > CLUSTER_BLOCK_MAX {
        check!(report, false);
        return;
    }
    let (rank, blocks) = cluster_rank();
    let thread = thread_in_block();
    // SAFETY: one counter per cluster (the host allocates grid / cluster size words).
    let completed = unsafe { counters.add((block_index() / blocks) as usize) };
    let slot = shared!(CONF_CLUSTER_BARRIER_VALUES: [[u32; CLUSTER_BLOCK_MAX]; 2]);
    let values = slot.as_ptr().cast::<u32>();
    let mut plain = ClusterBarrier::new();
    let mut counting = ClusterBarrier::with_completion(CountInto(completed));
    for phase in 1..=phases {
        let buffer = (phase % 2) as usize * CLUSTER_BLOCK_MAX;
        // SAFETY: this thread's element of this block's shared buffer.
        unsafe {
            values
                .add(buffer + thread as usize)
                .write_volatile(cluster_value(rank, thread, phase))
        };
        match phase % 3 {
            0 => {
                let arrival = plain.arrive();
                plain.wait(arrival);
            }
            1 => plain.arrive_and_wait(),
            _ => counting.arrive_and_wait(),
        }
        for peer in [(rank + 1) % blocks, (rank + blocks / 2) % blocks] {
            // SAFETY: the same element in block `peer` of the cluster, which runs until
            // the final cluster barrier below.
            let seen =
                unsafe { map_to_block(values.add(buffer + thread as usize), peer).read_volatile() };
            check!(report, seen == cluster_value(peer, thread, phase));
        }
        // SAFETY: the completion's write came before the barrier released us, and the
        // next one needs this thread's next arrival.
        check!(
            report,
            unsafe { completed.read_volatile() } == (phase + 1) / 3
        );
    }
    // Blocks read each other's shared memory up to their last phase: none may exit
    // before every read is done.
    ClusterBarrier::new().arrive_and_wait();
}

/// [`Grid::sync`] at scale: `phases` grid barriers; in phase `p` every thread writes `p`
/// to its slot of buffer `p % 2` (`slots` holds two buffers of one word per thread),
/// syncs, then checks `grid.phase() == p` and the slots of the same thread in the next
/// block and of the thread half the grid away. Launched with `launch_grid`, parameters
/// `(slots, phases, report)`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_grid_sync(
    mut grid: Grid,
    slots: *mut u32,
    phases: u32,
    report: *mut u32,
) {
    let report = Report(report);
    let (me, size) = (grid.thread_rank(), grid.size());
    let others = [(me + block_size()) % size, (me + size / 2 + 1) % size];
    for phase in 1..=phases {
        let buffer = ((phase % 2) * size) as usize;
        // SAFETY: this thread's slot of the buffer.
        unsafe { slots.add(buffer + me as usize).write_volatile(phase) };
        grid.sync();
        check!(report, grid.phase() == phase);
        for other in others {
            // SAFETY: a slot of the buffer; its phase-`p` write was ordered before this
            // read by the grid barrier, and its next write needs this thread's next
            // arrival.
            let seen = unsafe { slots.add(buffer + other as usize).read_volatile() };
            check!(report, seen == phase);
        }
    }
}

/// A `Barrier<S>` in global memory met by every block of a cooperative launch, of any
/// block shape, in turn through [`WholeBlock`] (odd phases) and every thread's
/// `arrive_and_wait` (even phases) — in the release build the PTX of
/// `sync_device::warp_barrier_phase`: the block's first warp, a whole warp, or a lane
/// alone where its warp is partial. `phases` phases with neighbour checks (as in
/// [`conf_grid_sync`], the same thread of the next block and of the block half the grid
/// away); then a phase in which every thread of the odd blocks drops out
/// (`arrive_and_drop`) while the even blocks meet as before; then `phases` phases of
/// the even blocks alone, whose completions take the expected count from its word (a
/// thread has dropped). Phase `p` writes buffer `p % 2` of `slots` (two words per
/// thread); the barrier is built in `object` by thread 0 of the grid.
fn barrier_phases<S: PtxScope>(
    grid: &mut Grid,
    object: *mut PlainBarrier<S>,
    slots: *mut u32,
    phases: u32,
    report: Report,
) {
    let (me, size) = (grid.thread_rank(), grid.size());
    let (threads, block, blocks) = (block_size(), block_index(), block_count());
    if me == 0 {
        // SAFETY: one thread builds the object before anyone uses it (the grid
        // barrier below).
        unsafe { object.write(Barrier::new(size)) };
    }
    grid.sync();
    // SAFETY: built above, and lives as long as the launch.
    let barrier = unsafe { &*object };
    let same_thread_of = |other_block: u32| other_block * threads + thread_in_block();
    let meet = |phase: u32, others: [u32; 2]| {
        let buffer = ((phase % 2) * size) as usize;
        // SAFETY: this thread's slot of the buffer.
        unsafe { slots.add(buffer + me as usize).write_volatile(phase) };
        if phase % 2 == 1 {
            WholeBlock::block_arrive_and_wait(barrier);
        } else {
            Barrier::arrive_and_wait(barrier);
        }
        for other in others {
            // SAFETY: a slot of the buffer; its phase-`p` write was ordered before
            // this read by the barrier, and its next write needs this thread's next
            // arrival.
            let seen = unsafe { slots.add(buffer + other as usize).read_volatile() };
            check!(report, seen == phase);
        }
    };
    let everyone = [
        same_thread_of((block + 1) % blocks),
        same_thread_of((block + blocks / 2 + 1) % blocks),
    ];
    for phase in 1..=phases {
        meet(phase, everyone);
    }
    if block % 2 == 1 {
        barrier.arrive_and_drop();
        return;
    }
    let (even, evens) = (block / 2, blocks.div_ceil(2));
    let stayers = [
        same_thread_of((even + 1) % evens * 2),
        same_thread_of((even + evens / 2 + 1) % evens * 2),
    ];
    for phase in phases + 1..=2 * phases + 1 {
        meet(phase, stayers);
    }
}

/// [`barrier_phases`] at device scope. Launched with `launch_grid`, parameters
/// `(object, slots, phases, report)`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_barrier_phases_device(
    mut grid: Grid,
    object: *mut PlainBarrier<Device>,
    slots: *mut u32,
    phases: u32,
    report: *mut u32,
) {
    barrier_phases(&mut grid, object, slots, phases, Report(report));
}

/// [`barrier_phases`] at system scope (the barrier in device memory).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_barrier_phases_system(
    mut grid: Grid,
    object: *mut PlainBarrier<System>,
    slots: *mut u32,
    phases: u32,
    report: *mut u32,
) {
    barrier_phases(&mut grid, object, slots, phases, Report(report));
}

/// What thread `thread` of a block counts down by in [`latch_rounds_checked`]: 1 in
/// even warps (a whole warp counts down as one), 1 + lane % 3 in odd warps (the lanes'
/// counts differ, so each counts down alone).
fn latch_share(thread: u32) -> u32 {
    if (thread / 32) % 2 == 0 {
        1
    } else {
        1 + thread % 32 % 3
    }
}

/// `rounds` rounds of `Latch::arrive_and_wait(n)` by every thread of a team (`me` of
/// `size`, the team's first thread `first` in `slots`), a fresh latch per round
/// (three in rotation, the next one rebuilt by the team's thread 0 as in the cost
/// kernels), with [`latch_share`]'s `n` — in the release build the PTX of
/// `sync_device::warp_latch_phase`: a whole warp as one, or lanes alone (differing
/// counts, partial warps). Round `r` writes `r` to the thread's slot of buffer `r % 2`
/// (`slots` holds two buffers of `stride` words) and afterwards checks the slots of
/// two other members.
#[allow(clippy::too_many_arguments)]
fn latch_rounds_checked<S: PtxScope>(
    latches: *mut [Latch<S, Gpu>; 3],
    (me, size, first): (u32, u32, u32),
    total: u32,
    slots: *mut u32,
    stride: u32,
    rounds: u32,
    report: Report,
) {
    let n = latch_share(thread_in_block());
    let others = [(me + 1) % size, (me + size / 2 + 1) % size];
    for round in 1..=rounds {
        let buffer = (round % 2) * stride + first;
        if me == 0 {
            // Rebuilds the next latch: its one word back to `total`, by an atomic
            // exchange (racecheck's process dies on a plain or relaxed store to shared
            // memory that other threads load; docs/sanitizers.md).
            const _: () = assert!(core::mem::size_of::<Latch<Block, Gpu>>() == 4);
            // SAFETY: a latch is its state word; nobody uses the next latch until this
            // thread's count-down in this round (release) has been seen, and nobody
            // uses it since round − 2.
            let word =
                unsafe { Word::from_ptr((&raw mut (*latches)[(round as usize + 1) % 3]).cast()) };
            <Gpu as Backend<S>>::swap(word, total, Ordering::Relaxed);
        }
        // SAFETY: this thread's slot of the buffer.
        unsafe { slots.add((buffer + me) as usize).write_volatile(round) };
        // SAFETY: a live latch of the rotation.
        unsafe { (*latches)[round as usize % 3].arrive_and_wait(n) };
        for other in others {
            // SAFETY: a slot of the buffer, written before its thread's count-down;
            // its next write needs this thread's next count-down.
            let seen = unsafe { slots.add((buffer + other) as usize).read_volatile() };
            check!(report, seen == round);
        }
    }
}

/// [`latch_rounds_checked`] per block, the latches in shared memory: parameters
/// `(slots, rounds, report)`, `slots` two words per thread of the launch.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_latch_rounds_block(
    mut grid: Grid,
    slots: *mut u32,
    rounds: u32,
    report: *mut u32,
) {
    let threads = block_size();
    let total = (0..threads).map(latch_share).sum();
    let slot = shared!(CONF_LATCH_ROUNDS: [Latch<Block, Gpu>; 3]);
    // SAFETY: every thread of the block runs this once.
    unsafe { slot.init_block([Latch::new(total), Latch::new(total), Latch::new(total)]) };
    let team = (thread_in_block(), threads, block_index() * threads);
    let stride = grid.size();
    latch_rounds_checked(
        slot.as_ptr(),
        team,
        total,
        slots,
        stride,
        rounds,
        Report(report),
    );
}

/// [`latch_rounds_checked`] across the grid, the latches in global memory (`latches`,
/// three zeroed latches' bytes): parameters `(latches, slots, rounds, report)`.
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_latch_rounds_device(
    mut grid: Grid,
    latches: *mut [Latch<Device, Gpu>; 3],
    slots: *mut u32,
    rounds: u32,
    report: *mut u32,
) {
    let (me, size) = (grid.thread_rank(), grid.size());
    let total = (0..block_size()).map(latch_share).sum::<u32>() * block_count();
    if me == 0 {
        // SAFETY: one thread builds the latches before anyone uses them (the grid
        // barrier below).
        unsafe { latches.write([Latch::new(total), Latch::new(total), Latch::new(total)]) };
    }
    grid.sync();
    latch_rounds_checked(
        latches,
        (me, size, 0),
        total,
        slots,
        size,
        rounds,
        Report(report),
    );
}
