//! A stop callback that panics inside `request_stop`: the rule of
//! [`StopSource::request_stop`](scoped_sync::StopSource::request_stop) is that the other
//! callbacks still run, the source is left consistent (a thread dropping the panicking
//! callback's registration does not wait for ever, later registrations run at once),
//! and the panic then reaches the caller; a second panicking callback aborts the
//! process. Never a hang, never a callback skipped without the process knowing.

use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use scoped_sync::{stop_callback, StopCallback, StopSource};

mod common;
use common::{hang_guard, run_in_child, spin_until};

/// Runs `request_stop` and returns the panic's message, failing if it did not panic.
fn request_stop_panics(source: &StopSource) -> String {
    let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| source.request_stop())) else {
        panic!("request_stop returned although a callback panicked");
    };
    payload
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[test]
fn the_other_callbacks_run_and_the_panic_reaches_the_requester() {
    hang_guard("panic_reaches_the_requester", 30, || {
        let source = StopSource::new();
        let runs = AtomicU32::new(0);
        let count = || {
            runs.fetch_add(1, Ordering::Relaxed);
        };
        // Callbacks run newest first: two before the panicking one, two after it.
        let first = stop_callback(source.token(), count);
        let second = stop_callback(source.token(), count);
        let failing = stop_callback(source.token(), || panic!("callback failed"));
        let third = stop_callback(source.token(), count);
        let fourth = stop_callback(source.token(), count);

        assert_eq!(request_stop_panics(&source), "callback failed");
        assert_eq!(runs.load(Ordering::Relaxed), 4, "every other callback ran");
        assert!(source.stop_requested());
        assert!(source.token().stop_requested());
        assert!(
            !source.request_stop(),
            "stop was requested: a later request is not the first"
        );

        // The source is consistent: a new registration runs at once, and every
        // registration (the panicking one too) drops without waiting.
        let late = stop_callback(source.token(), count);
        assert_eq!(runs.load(Ordering::Relaxed), 5);
        drop((first, second, failing, third, fourth, late));
    });
}

#[test]
fn dropping_the_panicking_callback_after_the_panic_returns() {
    hang_guard("dropping_after_the_panic", 30, || {
        let source = StopSource::new();
        let failing = stop_callback(source.token(), || panic!("callback failed"));
        thread::scope(|s| {
            let requester = s.spawn(|| request_stop_panics(&source));
            assert_eq!(requester.join().expect("requester"), "callback failed");
        });
        // Before the rule, the source still named this callback as running on the
        // (finished) requester, and this drop parked for ever.
        drop(failing);
    });
}

#[test]
fn a_drop_waiting_for_the_panicking_callback_is_woken_by_the_panic() {
    hang_guard("drop_woken_by_the_panic", 30, || {
        let source = StopSource::new();
        let started = AtomicBool::new(false);
        let go = AtomicBool::new(false);
        let failing = stop_callback(source.token(), || {
            started.store(true, Ordering::SeqCst);
            spin_until(|| go.load(Ordering::SeqCst));
            panic!("callback failed");
        });
        thread::scope(|s| {
            let requester = s.spawn(|| request_stop_panics(&source));
            spin_until(|| started.load(Ordering::SeqCst));
            // This drop waits for the running callback; the panic must end that wait.
            let dropper = s.spawn(move || drop(failing));
            thread::sleep(Duration::from_millis(20));
            go.store(true, Ordering::SeqCst);
            dropper.join().expect("dropper");
            assert_eq!(requester.join().expect("requester"), "callback failed");
        });
    });
}

#[test]
fn a_callback_registered_after_stop_that_panics_leaves_the_source_usable() {
    let source = StopSource::new();
    source.request_stop();
    let callback = pin!(StopCallback::new(source.token(), || panic!("late failure")));
    let registering = panic::catch_unwind(AssertUnwindSafe(|| callback.as_ref().register()));
    assert!(
        registering.is_err(),
        "the panic reaches the registering thread"
    );
    let ran = AtomicBool::new(false);
    let other = stop_callback(source.token(), || ran.store(true, Ordering::Relaxed));
    assert!(ran.load(Ordering::Relaxed));
    drop(other);
}

/// Set in the child process of `two_panicking_callbacks_abort_the_process`.
const TWO_PANICS_CHILD: &str = "SCOPED_SYNC_TWO_PANICKING_CALLBACKS_CHILD";

#[test]
fn two_panicking_callbacks_abort_the_process() {
    if std::env::var_os(TWO_PANICS_CHILD).is_some() {
        let source = StopSource::new();
        let _first = stop_callback(source.token(), || panic!("first callback failed"));
        let _second = stop_callback(source.token(), || panic!("second callback failed"));
        // The second panic comes while the first unwinds: the process aborts here.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| source.request_stop()));
        unreachable!("the process must abort at the second panicking callback");
    }
    let (status, stderr) = run_in_child(
        "two_panicking_callbacks_abort_the_process",
        TWO_PANICS_CHILD,
    );
    assert!(!status.success(), "the child must not succeed: {stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(libc_sigabrt()),
            "the child aborts (SIGABRT): {stderr}"
        );
    }
    // Both failures are reported: neither callback was skipped silently.
    assert!(stderr.contains("second callback failed"), "{stderr}");
    assert!(stderr.contains("first callback failed"), "{stderr}");
}

/// SIGABRT's number on the Unix targets Rust supports.
#[cfg(unix)]
fn libc_sigabrt() -> i32 {
    6
}
