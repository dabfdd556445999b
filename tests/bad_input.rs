//! Broken preconditions (undefined behaviour in C++): the panicking operations panic
//! with a message naming the operation and the values involved, and the `try_` forms
//! return the typed `UsageError` and leave the object unchanged.

use std::panic::{catch_unwind, AssertUnwindSafe};

use scoped_sync::{
    Barrier, BinarySemaphore, CountingSemaphore, FairSemaphore, Latch, NoCompletion, System,
    UsageError, UsageErrorKind, SEMAPHORE_MAX,
};

/// Runs `f`, which must panic; returns the panic message.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the operation must panic");
    if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else {
        panic!("panic payload is not a string")
    }
}

/// Asserts that `message` contains every one of `parts`.
fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "panic message {message:?} does not mention {part:?}"
        );
    }
}

const BARRIER_MAX: u32 = (1 << 28) - 1;
const LATCH_MAX: u32 = (1 << 30) - 1;

// ---------------------------------------------------------------- Barrier

#[test]
fn barrier_arrive_zero() {
    let barrier = Barrier::new(2);
    let message = panic_message(|| {
        let _ = barrier.arrive(0);
    });
    assert_mentions(&message, &["Barrier::arrive", "n = 0"]);
    assert_eq!(
        barrier.try_arrive(0).unwrap_err(),
        UsageError {
            operation: "Barrier::arrive",
            kind: UsageErrorKind::ZeroArrival,
        }
    );
    // Unchanged: still two arrivals to go.
    let token = barrier.arrive(1);
    assert!(!barrier.try_wait(&token));
    let _ = barrier.arrive(1);
    assert!(barrier.try_wait(&token));
}

#[test]
fn barrier_arrive_beyond_remaining() {
    let barrier = Barrier::new(3);
    let first = barrier.arrive(1);
    let message = panic_message(|| {
        let _ = barrier.arrive(3);
    });
    assert_mentions(&message, &["Barrier::arrive", "n = 3", "2"]);
    let error = barrier.try_arrive(3).unwrap_err();
    assert_eq!(error.operation, "Barrier::arrive");
    assert_eq!(
        error.kind,
        UsageErrorKind::ArrivalExceedsRemaining { n: 3, remaining: 2 }
    );
    assert_eq!(
        error.to_string(),
        message,
        "panic text is the error's Display"
    );
    assert_eq!(
        barrier.try_arrive(u32::MAX).unwrap_err().kind,
        UsageErrorKind::ArrivalExceedsRemaining {
            n: u32::MAX,
            remaining: 2
        }
    );
    // Unchanged: two more arrivals complete the phase, then the next one works.
    assert!(!barrier.try_wait(&first));
    let second = barrier.try_arrive(2).expect("a valid arrival");
    assert!(barrier.try_wait(&first) && barrier.try_wait(&second));
    let next = barrier.arrive(3);
    assert!(barrier.try_wait(&next));
}

#[test]
fn barrier_new_beyond_max_panics() {
    let message = panic_message(|| {
        let _ = Barrier::<System>::new(BARRIER_MAX + 1);
    });
    assert_mentions(
        &message,
        &["Barrier::new", "268435456", &BARRIER_MAX.to_string()],
    );
    let message = panic_message(|| {
        let _ = Barrier::<System>::new(u32::MAX);
    });
    assert_mentions(&message, &["Barrier::new", "4294967295", "268435455"]);
    let message = panic_message(|| {
        let _ = Barrier::with_completion(u32::MAX, || {});
    });
    assert_mentions(&message, &["Barrier::new", "4294967295", "268435455"]);
    // The limit itself is fine.
    let _ = Barrier::<System>::new(BARRIER_MAX);
}

#[test]
fn barrier_try_with_completion_beyond_max() {
    let error = Barrier::<System, NoCompletion>::try_with_completion(BARRIER_MAX + 1, NoCompletion)
        .unwrap_err();
    assert_eq!(
        error,
        UsageError {
            operation: "Barrier::new",
            kind: UsageErrorKind::ExceedsMax {
                value: BARRIER_MAX + 1,
                max: BARRIER_MAX,
            },
        }
    );
    assert_mentions(
        &error.to_string(),
        &["Barrier::new", "268435456", "268435455"],
    );
    let ok = Barrier::<System, NoCompletion>::try_with_completion(BARRIER_MAX, NoCompletion);
    assert!(ok.is_ok());
}

#[test]
fn barrier_arrive_and_drop_beyond() {
    let barrier = Barrier::new(1);
    barrier.arrive_and_drop();
    // Nobody is left: a further drop or arrival has nothing to count against.
    let message = panic_message(|| barrier.arrive_and_drop());
    assert_mentions(&message, &["Barrier::arrive_and_drop", "n = 1", "0"]);
    assert_eq!(
        barrier.try_arrive_and_drop().unwrap_err(),
        UsageError {
            operation: "Barrier::arrive_and_drop",
            kind: UsageErrorKind::ArrivalExceedsRemaining { n: 1, remaining: 0 },
        }
    );
    let message = panic_message(|| {
        let _ = barrier.arrive(1);
    });
    assert_mentions(&message, &["Barrier::arrive", "n = 1", "0"]);
}

#[test]
fn barrier_arrive_on_an_empty_barrier_reports_the_requested_count() {
    // Barrier::new(0) (or one every thread dropped from) expects no arrivals: an
    // arrival of n reports n, not 1.
    let barrier = Barrier::<System>::new(0);
    let message = panic_message(|| {
        let _ = barrier.arrive(3);
    });
    assert_mentions(&message, &["Barrier::arrive", "n = 3"]);
    assert_eq!(
        barrier.try_arrive(3).unwrap_err().kind,
        UsageErrorKind::ArrivalExceedsRemaining { n: 3, remaining: 0 }
    );
}

#[test]
fn barrier_failed_try_arrive_and_drop_leaves_it_working() {
    // A rejected drop must not lower the expected count of later phases.
    let barrier = Barrier::new(2);
    barrier.arrive_and_drop();
    barrier.arrive_and_drop();
    assert!(barrier.try_arrive_and_drop().is_err());
    assert!(barrier.try_arrive(1).is_err());
    assert!(barrier.try_arrive_and_drop().is_err());

    let barrier = Barrier::new(2);
    let token = barrier.arrive(1);
    assert!(barrier.try_arrive(2).is_err());
    assert!(barrier.try_arrive(0).is_err());
    let _ = barrier.arrive(1);
    assert!(barrier.try_wait(&token));
    // Phase 2 still expects two.
    let token = barrier.arrive(1);
    assert!(!barrier.try_wait(&token));
    let _ = barrier.arrive(1);
    assert!(barrier.try_wait(&token));
}

// ---------------------------------------------------------------- Latch

#[test]
fn latch_count_down_beyond_counter() {
    let latch = Latch::new(2);
    let message = panic_message(|| latch.count_down(3));
    assert_mentions(&message, &["Latch::count_down", "n = 3", "2"]);
    let error = latch.try_count_down(3).unwrap_err();
    assert_eq!(
        error,
        UsageError {
            operation: "Latch::count_down",
            kind: UsageErrorKind::CountDownExceedsCount { n: 3, count: 2 },
        }
    );
    assert_eq!(error.to_string(), message);
    // Unchanged.
    assert!(!latch.try_wait());
    latch.count_down(1);
    assert!(!latch.try_wait());
    assert_eq!(
        latch.try_count_down(2).unwrap_err().kind,
        UsageErrorKind::CountDownExceedsCount { n: 2, count: 1 }
    );
    latch.count_down(1);
    assert!(latch.try_wait());
    // An open latch refuses any positive count.
    let message = panic_message(|| latch.count_down(1));
    assert_mentions(&message, &["Latch::count_down", "n = 1", "0"]);
}

#[test]
fn latch_arrive_and_wait_beyond_counter() {
    let latch = Latch::new(1);
    let message = panic_message(|| latch.arrive_and_wait(5));
    assert_mentions(&message, &["Latch::arrive_and_wait", "n = 5", "1"]);
    assert!(!latch.try_wait(), "the latch is unchanged");
    latch.arrive_and_wait(1);
}

#[test]
fn latch_new_beyond_max() {
    let message = panic_message(|| {
        let _ = Latch::<System>::new(LATCH_MAX + 1);
    });
    assert_mentions(&message, &["Latch::new", "1073741824", "1073741823"]);
    let message = panic_message(|| {
        let _ = Latch::<System>::new(u32::MAX);
    });
    assert_mentions(&message, &["Latch::new", "4294967295", "1073741823"]);
    assert_eq!(
        Latch::<System>::try_new(LATCH_MAX + 1).unwrap_err(),
        UsageError {
            operation: "Latch::new",
            kind: UsageErrorKind::ExceedsMax {
                value: LATCH_MAX + 1,
                max: LATCH_MAX,
            },
        }
    );
    assert!(Latch::<System>::try_new(LATCH_MAX).is_ok());
}

// ---------------------------------------------------------------- CountingSemaphore

#[test]
fn counting_semaphore_release_beyond_max() {
    let semaphore: CountingSemaphore<3> = CountingSemaphore::new(2);
    let message = panic_message(|| semaphore.release(2));
    assert_mentions(
        &message,
        &["CountingSemaphore::release", "n = 2", "2", "max() = 3"],
    );
    let error = semaphore.try_release(2).unwrap_err();
    assert_eq!(
        error,
        UsageError {
            operation: "CountingSemaphore::release",
            kind: UsageErrorKind::ReleaseExceedsMax {
                n: 2,
                count: 2,
                max: 3
            },
        }
    );
    assert_eq!(error.to_string(), message);
    assert_eq!(
        semaphore.try_release(u32::MAX).unwrap_err().kind,
        UsageErrorKind::ReleaseExceedsMax {
            n: u32::MAX,
            count: 2,
            max: 3
        }
    );
    // Unchanged: exactly two units, and one more fits.
    assert!(semaphore.try_acquire());
    assert!(semaphore.try_acquire());
    assert!(!semaphore.try_acquire());
    semaphore.release(3);
    assert!(semaphore.try_release(1).is_err());
}

#[test]
fn default_counting_semaphore_release_beyond_max() {
    let semaphore: CountingSemaphore = CountingSemaphore::new(SEMAPHORE_MAX);
    let message = panic_message(|| semaphore.release(1));
    assert_mentions(
        &message,
        &["CountingSemaphore::release", "n = 1", "1073741823"],
    );
    let semaphore: CountingSemaphore = CountingSemaphore::new(0);
    let message = panic_message(|| semaphore.release(u32::MAX));
    assert_mentions(&message, &["CountingSemaphore::release", "4294967295"]);
    assert!(!semaphore.try_acquire(), "the failed release added nothing");
}

#[test]
fn binary_semaphore_release_beyond_max() {
    let semaphore: BinarySemaphore = BinarySemaphore::new(1);
    let message = panic_message(|| semaphore.release(1));
    assert_mentions(&message, &["release", "n = 1", "max() = 1"]);
    assert_eq!(
        semaphore.try_release(1).unwrap_err().kind,
        UsageErrorKind::ReleaseExceedsMax {
            n: 1,
            count: 1,
            max: 1
        }
    );
    assert!(semaphore.try_acquire());
    assert!(!semaphore.try_acquire());
    let message = panic_message(|| semaphore.release(2));
    assert_mentions(&message, &["n = 2", "max() = 1"]);
    assert!(!semaphore.try_acquire());
}

#[test]
fn counting_semaphore_new_beyond_max() {
    let message = panic_message(|| {
        let _ = CountingSemaphore::<3>::new(4);
    });
    assert_mentions(&message, &["CountingSemaphore::new", "4", "3"]);
    let message = panic_message(|| {
        let _ = BinarySemaphore::<System>::new(2);
    });
    assert_mentions(&message, &["new", "2", "max() = 1"]);
    assert_eq!(
        CountingSemaphore::<3>::try_new(4).unwrap_err(),
        UsageError {
            operation: "CountingSemaphore::new",
            kind: UsageErrorKind::ExceedsMax { value: 4, max: 3 },
        }
    );
    assert!(CountingSemaphore::<3>::try_new(3).is_ok());
}

// ---------------------------------------------------------------- FairSemaphore

#[test]
fn fair_semaphore_release_beyond_max() {
    let semaphore: FairSemaphore<3> = FairSemaphore::new(2);
    let message = panic_message(|| semaphore.release(2));
    assert_mentions(
        &message,
        &["FairSemaphore::release", "n = 2", "2", "max() = 3"],
    );
    let error = semaphore.try_release(2).unwrap_err();
    assert_eq!(
        error,
        UsageError {
            operation: "FairSemaphore::release",
            kind: UsageErrorKind::ReleaseExceedsMax {
                n: 2,
                count: 2,
                max: 3
            },
        }
    );
    assert_eq!(error.to_string(), message);
    assert!(semaphore.try_release(u32::MAX).is_err());
    // Unchanged.
    assert!(semaphore.try_acquire());
    assert!(semaphore.try_acquire());
    assert!(!semaphore.try_acquire());
    semaphore.release(3);
    assert!(semaphore.try_release(1).is_err());

    let binary: FairSemaphore<1> = FairSemaphore::new(1);
    let message = panic_message(|| binary.release(1));
    assert_mentions(&message, &["FairSemaphore::release", "n = 1", "max() = 1"]);
    assert!(binary.try_acquire());
    assert!(!binary.try_acquire());

    let largest: FairSemaphore = FairSemaphore::new(SEMAPHORE_MAX);
    let message = panic_message(|| largest.release(1));
    assert_mentions(&message, &["FairSemaphore::release", "1073741823"]);
}

#[test]
fn fair_semaphore_new_beyond_max() {
    let message = panic_message(|| {
        let _ = FairSemaphore::<3>::new(4);
    });
    assert_mentions(&message, &["FairSemaphore::new", "4", "3"]);
    assert_eq!(
        FairSemaphore::<3>::try_new(4).unwrap_err(),
        UsageError {
            operation: "FairSemaphore::new",
            kind: UsageErrorKind::ExceedsMax { value: 4, max: 3 },
        }
    );
    assert!(FairSemaphore::<3>::try_new(3).is_ok());
}

// ---------------------------------------------------------------- errors

#[test]
fn usage_errors_are_std_errors_with_readable_text() {
    let error: Box<dyn std::error::Error> =
        Box::new(Latch::<System>::new(0).try_count_down(1).unwrap_err());
    assert_eq!(
        error.to_string(),
        "Latch::count_down: n = 1 exceeds the counter (0)"
    );
    let stopped: Box<dyn std::error::Error> = Box::new(scoped_sync::Stopped);
    assert!(!stopped.to_string().is_empty());
}

#[test]
fn panics_point_at_the_caller() {
    // `#[track_caller]`: the panic location is this file, not the library.
    use std::sync::Mutex;
    static LOCATION: Mutex<Option<String>> = Mutex::new(None);
    let barrier = Barrier::new(1);
    let previous = std::panic::take_hook();
    let this_thread = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        // Other tests of this binary panic concurrently: record only ours.
        if std::thread::current().id() != this_thread {
            return;
        }
        if let Some(location) = info.location() {
            *LOCATION.lock().unwrap() = Some(location.file().to_owned());
        }
    }));
    let result = catch_unwind(AssertUnwindSafe(|| {
        let _ = barrier.arrive(2);
    }));
    std::panic::set_hook(previous);
    assert!(result.is_err());
    let file = LOCATION.lock().unwrap().clone().unwrap_or_default();
    assert!(file.ends_with("bad_input.rs"), "panic located in {file:?}");
}
