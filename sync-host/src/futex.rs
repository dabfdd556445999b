//! Parking on Linux: the `futex` system call, process-private.
//!
//! Model: the Rust standard library's `sys/pal/unix/futex.rs`. Private futexes are
//! keyed by address within this process, which is what objects in ordinary or pinned
//! host memory need; an object shared between processes would need shared futexes.

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
