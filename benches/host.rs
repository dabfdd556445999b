//! Criterion benches of the host flavour: the report's operations, each in one group
//! with its peer (`std::sync::Barrier`, a Mutex+Condvar semaphore or latch), so that
//! criterion's comparison across runs and the side-by-side figures come together.
//!
//! The timed loops are the report binary's own (`report/src/report/workloads.rs`,
//! `report/src/report/atomics.rs`, `report/src/report/peers.rs`, included below), so the bench and
//! `cargo run --release` measure the same code. Multi-threaded workloads spawn their
//! threads per batch, as the report does; criterion's batches are long enough (tens of
//! milliseconds) for the spawn to be small beside them.
//!
//! `cargo bench --bench host` takes about two minutes; `cargo bench --bench host --
//! semaphore` runs one group.

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use scoped_sync::{Barrier, CountingSemaphore, FairSemaphore, Host, Latch, System};

#[path = "../report/src/report/atomics.rs"]
mod atomics;
#[path = "../report/src/report/peers.rs"]
mod peers;
#[path = "../report/src/report/workloads.rs"]
mod workloads;

use peers::{MutexCondvarLatch, MutexCondvarSemaphore};
use workloads::*;

/// Names of the contenders, as they appear in criterion's ids.
const OURS: &str = "scoped_sync";
const OURS_FAIR: &str = "scoped_sync_fair";

/// Settings for the thread hand-off groups: microsecond operations whose figures move
/// with the scheduler, so a few seconds each.
fn handoff_group<'c>(c: &'c mut Criterion, name: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    group
}

/// Settings for single-thread fast paths and atomics: nanosecond operations that
/// settle quickly.
fn fast_path_group<'c>(c: &'c mut Criterion, name: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30);
    group
}

fn barrier(c: &mut Criterion) {
    let mut group = handoff_group(c, "barrier_arrive_and_wait");
    for threads in [2, 4] {
        group.bench_function(BenchmarkId::new(OURS, threads), |b| {
            b.iter_custom(|phases| barrier_phases::<Barrier>(threads, phases));
        });
        group.bench_function(BenchmarkId::new("std_barrier", threads), |b| {
            b.iter_custom(|phases| barrier_phases::<std::sync::Barrier>(threads, phases));
        });
    }
    group.finish();
}

fn semaphore(c: &mut Criterion) {
    let mut group = handoff_group(c, "semaphore_ping_pong");
    group.bench_function(OURS, |b| b.iter_custom(ping_pong::<CountingSemaphore>));
    group.bench_function(OURS_FAIR, |b| b.iter_custom(ping_pong::<FairSemaphore>));
    group.bench_function("mutex_condvar_semaphore", |b| {
        b.iter_custom(ping_pong::<MutexCondvarSemaphore>);
    });
    group.finish();

    let mut group = fast_path_group(c, "semaphore_acquire_release_uncontended");
    group.bench_function(OURS, |b| {
        b.iter_custom(acquire_release_uncontended::<CountingSemaphore>);
    });
    group.bench_function(OURS_FAIR, |b| {
        b.iter_custom(acquire_release_uncontended::<FairSemaphore>);
    });
    group.bench_function("mutex_condvar_semaphore", |b| {
        b.iter_custom(acquire_release_uncontended::<MutexCondvarSemaphore>);
    });
    group.finish();

    // The report's --scaling shapes at 4 threads: pairs ping-ponging at once, and every
    // thread on one semaphore of CONTENDED_UNITS.
    let mut group = handoff_group(c, "semaphore_4_threads");
    group.bench_function(BenchmarkId::new(OURS, "ping_pong_pairs"), |b| {
        b.iter_custom(|n| ping_pong_pairs::<CountingSemaphore>(4, n));
    });
    group.bench_function(
        BenchmarkId::new("mutex_condvar_semaphore", "ping_pong_pairs"),
        |b| {
            b.iter_custom(|n| ping_pong_pairs::<MutexCondvarSemaphore>(4, n));
        },
    );
    let contended = format!("acquire_release_contended_{CONTENDED_UNITS}_units");
    group.bench_function(BenchmarkId::new(OURS, &contended), |b| {
        b.iter_custom(|n| acquire_release_contended::<CountingSemaphore>(4, n));
    });
    group.bench_function(
        BenchmarkId::new("mutex_condvar_semaphore", &contended),
        |b| {
            b.iter_custom(|n| acquire_release_contended::<MutexCondvarSemaphore>(4, n));
        },
    );
    group.finish();
}

fn latch(c: &mut Criterion) {
    let mut group = fast_path_group(c, "latch_count_down_wait");
    group.bench_function(OURS, |b| b.iter_custom(count_down_wait::<Latch>));
    group.bench_function("mutex_condvar_latch", |b| {
        b.iter_custom(count_down_wait::<MutexCondvarLatch>);
    });
    group.finish();

    let mut group = handoff_group(c, "latch_rounds_4_threads");
    group.bench_function(OURS, |b| b.iter_custom(|n| latch_rounds::<Latch>(4, n)));
    group.bench_function("mutex_condvar_latch", |b| {
        b.iter_custom(|n| latch_rounds::<MutexCondvarLatch>(4, n));
    });
    group.bench_function("crossbeam_wait_group", |b| {
        b.iter_custom(|n| wait_group_rounds(4, n));
    });
    group.finish();
}

fn stop_token(c: &mut Criterion) {
    // std has no stop token; libstdc++'s is measured by scripts/compare-host.sh.
    let mut group = fast_path_group(c, "stop_token");
    group.bench_function("stop_requested", |b| b.iter_custom(stop_requested));
    group.bench_function("stop_callback_register_drop", |b| {
        b.iter_custom(stop_callback_register_drop);
    });
    group.finish();
}

fn atomics(c: &mut Criterion) {
    for primitive in ["atomic", "fence"] {
        let mut group = fast_path_group(c, &format!("system_{primitive}"));
        for &op in atomics::ALL.iter().filter(|op| op.primitive() == primitive) {
            group.bench_function(op.name(), |b| {
                b.iter_custom(|n| op.run::<System, Host>(n));
            });
        }
        group.finish();
    }
}

criterion_group!(benches, barrier, semaphore, latch, stop_token, atomics);
criterion_main!(benches);
