//! Parking on Linux: the `futex` system call, process-private.
//!
//! Model: the Rust standard library's `sys/pal/unix/futex.rs`. Private futexes are
//! keyed by address within this process, which is what objects in ordinary or pinned
//! host memory need; an object shared between processes would need shared futexes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sync_shared::Word;

/// Sleeps while `*word == expected`, at most `timeout`. Returns on wake-up, value
/// change, timeout, signal or spuriously.
pub(crate) fn wait(word: &Word, expected: u32, timeout: Option<Duration>) {
    let timespec = timeout.map(|timeout| libc::timespec {
        tv_sec: timeout.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    });
    let timespec_ptr = timespec
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned 32-bit atomic; the kernel only reads it (and
    // compares atomically with `expected`); the timespec outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            timespec_ptr,
        );
    }
}

/// Wakes at most `count` threads parked on `word`.
pub(crate) fn wake(word: &Word, count: i32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key; it never dereferences freed
    // memory on our behalf, so a stale address at worst wakes spuriously.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            count,
        );
    }
}

/// One entry of FUTEX_WAITV's array (`struct futex_waitv` of the kernel's uapi
/// `linux/futex.h`, which the libc crate does not declare).
#[repr(C)]
struct FutexWaitv {
    /// The value the word must hold for the sleep to begin.
    val: u64,
    /// The word's address.
    uaddr: u64,
    /// Size and kind of the word.
    flags: u32,
    reserved: u32,
}

/// `FUTEX2_SIZE_U32`: the word is 32 bits.
const FUTEX2_SIZE_U32: u32 = 0x02;
/// `FUTEX2_PRIVATE`: keyed by address within this process, like FUTEX_PRIVATE_FLAG.
const FUTEX2_PRIVATE: u32 = 128;

/// Set once FUTEX_WAITV failed other than by a value, a timeout or a signal (ENOSYS
/// on a kernel before 5.16, EPERM from a sandbox that filters the call): later sleeps
/// do not ask again.
static NO_FUTEX_WAITV: AtomicBool = AtomicBool::new(false);

/// Sleeps while `*word == expected` and `*other == other_expected`, at most `timeout`;
/// a FUTEX_WAKE of either word ends it. Returns `false` at once if FUTEX_WAITV cannot
/// be used here (then nothing slept), `true` otherwise (on wake-up, value change,
/// timeout, signal or spuriously).
pub(crate) fn wait_either(
    word: &Word,
    expected: u32,
    other: &Word,
    other_expected: u32,
    timeout: Option<Duration>,
) -> bool {
    // Miri emulates FUTEX_WAIT and FUTEX_WAKE, not FUTEX_WAITV.
    if cfg!(miri) || NO_FUTEX_WAITV.load(Ordering::Relaxed) {
        return false;
    }
    let entry = |word: &Word, value: u32| FutexWaitv {
        val: u64::from(value),
        uaddr: word.as_ptr() as u64,
        flags: FUTEX2_SIZE_U32 | FUTEX2_PRIVATE,
        reserved: 0,
    };
    let waiters = [entry(word, expected), entry(other, other_expected)];
    // FUTEX_WAITV takes an absolute time on the clock it is given: CLOCK_MONOTONIC,
    // the clock of `Instant`.
    let until = timeout.map(|timeout| {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid timespec for the call to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let nanos = u64::try_from(now.tv_nsec).unwrap_or(0) + u64::from(timeout.subsec_nanos());
        let seconds = (now.tv_sec as u64)
            .saturating_add(timeout.as_secs())
            .saturating_add(nanos / 1_000_000_000)
            .min(libc::time_t::MAX as u64);
        libc::timespec {
            tv_sec: seconds as libc::time_t,
            tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
        }
    });
    let until_ptr = until
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `waiters` holds two valid entries naming live, aligned 32-bit atomics,
    // which the kernel only reads and compares atomically with their values; the
    // array and the timespec outlive the call; flags 0 is the only defined value.
    let result = unsafe {
        libc::syscall(
            libc::SYS_futex_waitv,
            waiters.as_ptr(),
            waiters.len() as libc::c_uint,
            0 as libc::c_uint,
            until_ptr,
            libc::CLOCK_MONOTONIC,
        )
    };
    if result >= 0 {
        return true;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        // A word differed, the time ran out, or a signal came: the sleep happened as
        // asked (or needed not happen).
        Some(libc::EAGAIN | libc::ETIMEDOUT | libc::EINTR) => true,
        // No FUTEX_WAITV here (ENOSYS: before Linux 5.16; EPERM or another error: a
        // sandbox's filter, say). Returning `true` would make the caller's wait spin
        // on a sleep that never sleeps: fall back for good instead.
        _ => {
            NO_FUTEX_WAITV.store(true, Ordering::Relaxed);
            false
        }
    }
}

/// Test hook: makes [`wait_either`] answer as on a kernel without FUTEX_WAITV (or
/// answer again as the kernel does).
#[cfg(test)]
pub(crate) fn pretend_no_futex_waitv(no: bool) {
    NO_FUTEX_WAITV.store(no, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;
    use std::thread;
    use std::time::Duration;

    use sync_shared::Stopped;

    use super::*;

    #[test]
    fn wait_either_does_not_sleep_when_either_word_differs() {
        let word = AtomicU32::new(1);
        let other = AtomicU32::new(2);
        // Each would sleep for ever (and the test hang) if its comparison were
        // skipped; `false` (no FUTEX_WAITV, or another test pretending so) sleeps not
        // at all.
        wait_either(&word, 0, &other, 2, None);
        wait_either(&word, 1, &other, 0, None);
    }

    #[test]
    fn wait_either_ends_at_a_wake_of_either_word() {
        let word = AtomicU32::new(0);
        let other = AtomicU32::new(0);
        for wake_other in [false, true] {
            thread::scope(|s| {
                let sleeper = s.spawn(|| {
                    // Spurious returns are allowed: sleep until the value changed.
                    while word.load(Ordering::SeqCst) == 0 && other.load(Ordering::SeqCst) == 0 {
                        if !wait_either(&word, 0, &other, 0, None) {
                            thread::yield_now();
                        }
                    }
                });
                thread::sleep(Duration::from_millis(10));
                let target = if wake_other { &other } else { &word };
                target.store(1, Ordering::SeqCst);
                wake(target, i32::MAX);
                sleeper.join().expect("sleeper");
            });
            word.store(0, Ordering::SeqCst);
            other.store(0, Ordering::SeqCst);
        }
    }

    /// On a kernel without FUTEX_WAITV a stoppable wait sleeps in slices instead: a
    /// stop still ends it.
    #[test]
    fn without_futex_waitv_a_stoppable_wait_still_ends_at_a_stop() {
        pretend_no_futex_waitv(true);
        let source = crate::StopSource::new();
        let semaphore: crate::CountingSemaphore = crate::CountingSemaphore::new(0);
        let result = thread::scope(|s| {
            let waiter = s.spawn(|| semaphore.acquire_stoppable(source.token()));
            thread::sleep(Duration::from_millis(20));
            source.request_stop();
            waiter.join().expect("waiter")
        });
        pretend_no_futex_waitv(false);
        assert_eq!(result, Err(Stopped));
    }
}
