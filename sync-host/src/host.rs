//! [`Host`]: the `Backend` of CPU threads, at `System` scope only.

use std::time::{Duration, Instant};

use sync_shared::{Backend, Ordering, System, Word};

#[cfg(all(target_os = "linux", not(loom)))]
use crate::futex as parking;
#[cfg(any(not(target_os = "linux"), loom))]
use crate::parking;

/// The host backend: `core::sync::atomic` (already system-wide on a CPU), spin then
/// park on a futex (Linux) or a Mutex+Condvar bucket (elsewhere, and under loom).
///
/// It implements `Backend<System>` only: a CPU thread is never inside a GPU block,
/// cluster or device, so `Barrier<Block, Host>` has no methods.
#[derive(Clone, Copy, Debug, Default)]
pub struct Host;

/// Pure spin rounds (round `r` spins `2^r` pause instructions): a few, because a
/// cross-core hand-off takes well under a microsecond when the other thread runs.
///
/// Tuned on the 2-core machine of this project (see docs/measurements.md): 3 spin and 16
/// yield rounds gave the best barrier and ping-pong times with 2 threads *and* with 4
/// threads on 2 cores; longer pure spinning (10 rounds) cost 15x at 4 threads, because
/// the spinner holds the core the awaited thread needs; no spinning cost 5x at 2.
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 3;
/// Rounds that yield the processor before parking: with more threads than cores the
/// awaited thread may need this core, and with an idle core a yield returns at once,
/// so these rounds double as a polite spin; parking costs a futex round trip.
const YIELD_ROUNDS: u32 = 16;
/// Yield rounds of a wait on other threads' arrivals (latch, barrier), per processor
/// this process may run on, between `YIELD_ROUNDS` and `ARRIVAL_YIELD_ROUNDS_MAX`. The
/// threads still to arrive are on their way; with more threads than cores they need
/// the waiters' cores, which a yield hands over while a parked waiter must later be
/// woken, one futex wake per sleeper by the last arrival, and the more processors the
/// more sleepers. Measured in docs/measurements.md ("Waiting for arrivals"): 64 rounds
/// removed the latch's and the barrier's cliff at twice the cores of a 32-core host and
/// helped on 16 cores; on 2 cores the barrier did better with 16.
const ARRIVAL_YIELD_ROUNDS_PER_PROCESSOR: u32 = 8;
/// The most yield rounds of a wait on arrivals.
const ARRIVAL_YIELD_ROUNDS_MAX: u32 = 64;

// SAFETY: the atomics are `core::sync::atomic` operations with the requested ordering
// (system scope is all a CPU has); `park` is FUTEX_WAIT (or a check-then-wait under the
// bucket lock), whose compare is atomic with FUTEX_WAKE, and `park_unless` is
// FUTEX_WAITV over both words (or a check of both under the bucket lock), whose
// compares are atomic with a FUTEX_WAKE of either; wakes use the address as a key
// only; thread ids come from a counter that never wraps on 64 bits.
unsafe impl Backend<System> for Host {
    type Instant = Instant;
    type HardwareBarrier = sync_shared::barrier::NoHardwareBarrier;

    #[inline(always)]
    fn load(word: &Word, order: Ordering) -> u32 {
        // loom lets a SeqCst load read a value older than the latest SeqCst store
        // (tokio-rs/loom#180), which would break the semaphores' store-buffering
        // handshakes in the model only: there, such a load is an acquire
        // read-modify-write, which reads the latest value (at least as strong).
        #[cfg(loom)]
        if order == Ordering::SeqCst {
            return word.fetch_add(0, Ordering::Acquire);
        }
        word.load(order)
    }
    #[inline(always)]
    fn store(word: &Word, value: u32, order: Ordering) {
        word.store(value, order)
    }
    #[inline(always)]
    fn swap(word: &Word, value: u32, order: Ordering) -> u32 {
        word.swap(value, order)
    }
    #[inline(always)]
    fn compare_exchange(
        word: &Word,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u32, u32> {
        word.compare_exchange(current, new, success, failure)
    }
    #[inline(always)]
    fn fetch_add(word: &Word, value: u32, order: Ordering) -> u32 {
        word.fetch_add(value, order)
    }
    #[inline(always)]
    fn fetch_sub(word: &Word, value: u32, order: Ordering) -> u32 {
        word.fetch_sub(value, order)
    }
    #[inline(always)]
    fn fence(order: Ordering) {
        #[cfg(loom)]
        loom::sync::atomic::fence(order);
        #[cfg(not(loom))]
        std::sync::atomic::fence(order);
    }

    #[inline]
    fn now() -> Instant {
        Instant::now()
    }
    fn after(from: Instant, duration: Duration) -> Instant {
        // About 30 years ahead stands in for "never" when the sum overflows.
        from.checked_add(duration)
            .unwrap_or_else(|| from + Duration::from_secs(1 << 30))
    }

    #[inline]
    fn relax(round: &mut u32) -> bool {
        relax_then_yield(round, YIELD_ROUNDS)
    }

    #[inline]
    fn relax_for_arrivals(round: &mut u32) -> bool {
        relax_then_yield(round, arrival_yield_rounds())
    }

    fn yield_now() {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        std::thread::yield_now();
    }

    #[cold]
    fn park(word: &Word, expected: u32, deadline: Option<Instant>) {
        let timeout = match deadline {
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return,
            },
            None => None,
        };
        parking::wait(word, expected, timeout);
    }

    #[cold]
    fn wake_one(word: &Word) {
        parking::wake(word, 1);
    }

    #[cold]
    fn wake_all(word: &Word) {
        parking::wake(word, i32::MAX);
    }

    #[inline]
    fn thread_id() -> usize {
        thread_identity()
    }

    #[cold]
    fn park_unless(
        word: &Word,
        expected: u32,
        stop: &Word,
        stop_expected: u32,
        deadline: Option<Instant>,
    ) -> bool {
        let timeout = match deadline {
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return true,
            },
            None => None,
        };
        parking::wait_either(word, expected, stop, stop_expected, timeout)
    }
}

/// One step of a spin of `SPIN_ROUNDS` pure spin rounds, then `yield_rounds` rounds
/// that yield the processor; `false` when the wait should park. Under loom: `false`,
/// because spinning only multiplies loom's interleavings.
#[cfg(loom)]
#[inline]
fn relax_then_yield(round: &mut u32, yield_rounds: u32) -> bool {
    let _ = (round, yield_rounds);
    false
}

/// One step of a spin of `SPIN_ROUNDS` pure spin rounds, then `yield_rounds` rounds
/// that yield the processor; `false` when the wait should park.
#[cfg(not(loom))]
#[inline]
fn relax_then_yield(round: &mut u32, yield_rounds: u32) -> bool {
    if *round < SPIN_ROUNDS {
        for _ in 0..1u32 << *round {
            std::hint::spin_loop();
        }
    } else if *round < SPIN_ROUNDS + yield_rounds {
        std::thread::yield_now();
    } else {
        return false;
    }
    *round += 1;
    true
}

/// The yield rounds of a wait on arrivals on this machine, asked once (the number of
/// processors costs a system call).
fn arrival_yield_rounds() -> u32 {
    static ROUNDS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *ROUNDS.get_or_init(|| {
        arrival_yield_rounds_for(std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// The yield rounds of a wait on arrivals for a process that may run on `processors`
/// processors (the affinity mask and cgroup quota: `available_parallelism`).
fn arrival_yield_rounds_for(processors: usize) -> u32 {
    u32::try_from(processors)
        .unwrap_or(u32::MAX)
        .saturating_mul(ARRIVAL_YIELD_ROUNDS_PER_PROCESSOR)
        .clamp(YIELD_ROUNDS, ARRIVAL_YIELD_ROUNDS_MAX)
}

/// The next thread identity to hand out. Identities are never reused (a 64-bit count
/// does not wrap), so a thread cannot be taken for an earlier one that is still inside
/// a stop callback, as a thread-local's address could be (a new thread may get the
/// address of one that just exited).
static NEXT_THREAD_IDENTITY: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(1);

/// The calling thread's identity, handed out at its first call.
#[inline]
fn thread_identity() -> usize {
    fn next() -> usize {
        // Relaxed: only uniqueness matters, which the read-modify-write gives.
        NEXT_THREAD_IDENTITY.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
    // loom runs its threads on one OS thread: its own thread-locals tell them apart.
    #[cfg(loom)]
    loom::thread_local! { static IDENTITY: usize = next(); }
    #[cfg(not(loom))]
    std::thread_local! { static IDENTITY: usize = next(); }
    IDENTITY.with(|identity| *identity)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::collections::HashSet;

    use sync_shared::{Backend, System};

    use super::Host;

    /// Threads that run one after another get different ids: the thread-local address
    /// that served as the id before is handed to the next thread once one exits (glibc
    /// reuses the stack and TLS block of a joined thread), so this failed with it.
    #[test]
    fn a_later_thread_never_gets_an_earlier_threads_id() {
        let mut seen = HashSet::new();
        for _ in 0..64 {
            let id = std::thread::spawn(<Host as Backend<System>>::thread_id)
                .join()
                .expect("thread");
            assert_ne!(id, 0, "0 never names a thread");
            assert!(seen.insert(id), "id {id} was handed out twice");
        }
    }

    /// A wait on other threads' arrivals yields as long as other waits on one or two
    /// processors, longer with more, up to a limit; and the backend's spin follows it.
    #[test]
    fn a_wait_for_arrivals_yields_longer_with_more_processors() {
        let yields: Vec<u32> = [1, 2, 4, 8, 64, usize::MAX]
            .into_iter()
            .map(super::arrival_yield_rounds_for)
            .collect();
        assert_eq!(yields, [16, 16, 32, 64, 64, 64]);

        let rounds = |relax: fn(&mut u32) -> bool| {
            let mut round = 0;
            while relax(&mut round) {}
            round
        };
        let arrivals = rounds(<Host as Backend<System>>::relax_for_arrivals);
        let usual = rounds(<Host as Backend<System>>::relax);
        assert_eq!(
            arrivals - usual,
            super::arrival_yield_rounds() - super::YIELD_ROUNDS,
            "{arrivals} rounds for arrivals, {usual} usual"
        );
    }

    #[test]
    fn a_thread_keeps_its_id() {
        let first = <Host as Backend<System>>::thread_id();
        assert_eq!(first, <Host as Backend<System>>::thread_id());
    }
}
