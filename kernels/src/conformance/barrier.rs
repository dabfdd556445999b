//! Barriers: one phase loop for `Barrier` (every scope) and `SharedBarrier`, and the
//! portable barrier met by whole blocks and warps of any shape (its GPU paths in PTX).

use super::*;

/// This file's number in recorded positions (see `SOURCE` in `mod.rs`).
const SOURCE: u32 = 1;

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
            ctx.timed_out(here!());
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
/// completion in global memory, shared by the whole grid (a grid-barrier launch), arriving in
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
            ctx.timed_out(here!());
            continue;
        }
        ctx.check_neighbours(buffer, phase, block_size());
    }
}

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

/// [`barrier_phases`] at device scope. Launched with its grid barrier first, then
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

/// Every thread's `arrive_and_wait` on one of two `Barrier<Device>`s in global memory,
/// chosen by the parity of its lane: all 32 lanes of a warp run it together, on two
/// barriers, so the warp's test for one barrier (`match.all` in
/// `sync_device::warp_barrier_phase`) fails and each lane arrives alone (a test that
/// passed would have lane 0 arrive for all 32 on one barrier: that barrier would trap
/// on over-arrival and the other never complete). `phases` phases, each checking the
/// same thread of the next block, which is on the same barrier. Both barriers are built
/// in `objects` by thread 0 of the grid, each expecting half the grid. Launched with
/// its grid barrier first (blocks of whole warps), then `(objects, slots, phases,
/// report)`; phase `p` writes buffer `p % 2` of `slots` (two words per thread).
#[no_mangle]
pub unsafe extern "gpu-kernel" fn conf_barrier_lanes_apart_device(
    mut grid: Grid,
    objects: *mut PlainBarrier<Device>,
    slots: *mut u32,
    phases: u32,
    report: *mut u32,
) {
    let report = Report(report);
    let (me, size) = (grid.thread_rank(), grid.size());
    if me == 0 {
        for which in 0..2 {
            // SAFETY: one thread builds both objects before anyone uses them (the grid
            // barrier below).
            unsafe { objects.add(which).write(Barrier::new(size / 2)) };
        }
    }
    grid.sync();
    // SAFETY: built above, and lives as long as the launch.
    let barrier = unsafe { &*objects.add((warp::lane() % 2) as usize) };
    let next = (block_index() + 1) % block_count() * block_size() + thread_in_block();
    for phase in 1..=phases {
        let buffer = ((phase % 2) * size) as usize;
        // SAFETY: this thread's slot of the buffer.
        unsafe { slots.add(buffer + me as usize).write_volatile(phase) };
        barrier.arrive_and_wait();
        // SAFETY: a slot of the buffer, written by a thread on the same barrier before
        // its phase-`p` arrival; its next write needs this thread's next arrival.
        let seen = unsafe { slots.add(buffer + next as usize).read_volatile() };
        check!(report, seen == phase);
    }
}
