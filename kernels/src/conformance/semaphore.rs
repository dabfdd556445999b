//! Semaphores: mutex, units and the unfair semaphore's stress.

use super::*;

/// This file's number in recorded positions (see `SOURCE` in `mod.rs`).
const SOURCE: u32 = 4;

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
