//! How fast a stop request wakes a thread that sleeps in a stoppable wait, beside the
//! same wait woken by a release (the floor: a plain wake-up of a parked thread).
//!
//! Each try: a thread calls `CountingSemaphore::acquire_stoppable` on a semaphore with
//! no units and sleeps in it for [`IDLE`]; then this thread notes the time and either
//! requests stop (ours) or releases one unit (the peer), and the waiter notes the time
//! it returned. The figure is the difference, so it holds the wake-up alone, not the
//! idle time. Both kinds alternate try by try, so noise hits both.

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use scoped_sync::{CountingSemaphore, Scope, StopSource, System};

use super::measure::Plan;
use super::progress::Progress;
use super::sample::{Row, Sample, Stats};

/// How long the waiter sleeps before it is woken: long enough that it has stopped
/// spinning and yielding and is parked.
const IDLE: Duration = Duration::from_millis(5);

/// Tries of each kind in a full run (the figure: the worst of 50).
const TRIES: u64 = 50;

/// The rows of this section: one.
pub fn steps() -> usize {
    1
}

/// What wakes the waiter.
#[derive(Clone, Copy)]
enum Waker {
    Stop,
    Release,
}

/// One try: the time from the wake-up call to the waiter's return.
fn wake_up(waker: Waker) -> Duration {
    let semaphore: CountingSemaphore = CountingSemaphore::new(0);
    let source = StopSource::new();
    let woken_at = Mutex::new(None);
    let woken_at = &woken_at;
    let (semaphore, source) = (&semaphore, &source);
    let called_at = thread::scope(|s| {
        s.spawn(move || {
            // Either outcome ends the wait: the figure is when.
            let _ = semaphore.acquire_stoppable(source.token());
            let now = Instant::now();
            *woken_at.lock().expect("waker clock") = Some(now);
        });
        thread::sleep(IDLE);
        let called_at = Instant::now();
        match waker {
            Waker::Stop => {
                source.request_stop();
            }
            Waker::Release => semaphore.release(1),
        }
        called_at
    });
    let woken_at = woken_at
        .lock()
        .expect("waker clock")
        .expect("the waiter ran");
    woken_at.saturating_duration_since(called_at)
}

/// Measures the section under `plan` (a quick run makes fewer tries).
pub fn measure(plan: Plan, progress: &mut Progress) -> Vec<Row> {
    progress.step("stop token: wake-up of a sleeping stoppable wait");
    let tries = plan.scale(TRIES).max(3);
    let (mut stops, mut releases) = (Vec::new(), Vec::new());
    for _ in 0..tries {
        stops.push(wake_up(Waker::Stop).as_secs_f64() * 1e9);
        releases.push(wake_up(Waker::Release).as_secs_f64() * 1e9);
    }
    let ours = Sample::ours(
        "host",
        System::NAME,
        "stop_token",
        "wake_after_idle_wait",
        2,
        Stats::of(&stops),
    )
    .variant("request_stop");
    let peer = ours.peer("same_wait_woken_by_release", Stats::of(&releases));
    vec![Row::beside(ours, peer)]
}
