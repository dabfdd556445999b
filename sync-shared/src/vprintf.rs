//! Printing from a CUDA thread: `vprintf`, the system call behind `printf` in kernels.
//! The text reaches the host program's standard output when the host next
//! synchronizes with the GPU, a trapped kernel's included.
//!
//! Only the checked build of the kernels prints (debug assertions on); the release
//! build calls nothing here, so no `vprintf` is linked. Nothing here uses `core::fmt`:
//! its calls through function pointers make the CUDA assembler copy every formatting
//! function into every kernel, which grew the module's machine code to a hundred
//! megabytes and its assembly to minutes.

use crate::error::{UsageError, UsageErrorKind};

extern "C" {
    /// `format`: a NUL-terminated printf format; `arguments`: the arguments packed as
    /// a C struct (each at its natural alignment).
    fn vprintf(format: *const u8, arguments: *const u8) -> i32;
}

/// Prints `format` (NUL-terminated) with `arguments`, a `#[repr(C)]` struct whose
/// fields match the conversions in order (`%u`: `u32`, `%llx`: `u64`, `%s`: a pointer
/// to a NUL-terminated string).
pub fn print<A>(format: &'static [u8], arguments: &A) {
    debug_assert_eq!(format.last(), Some(&0));
    // SAFETY: `format` is NUL-terminated and `arguments` matches its conversions (the
    // caller's duty); vprintf only reads both.
    unsafe { vprintf(format.as_ptr(), core::ptr::from_ref(arguments).cast()) };
}

/// A string copied onto the stack with the NUL that `%s` needs; cut at its capacity.
pub struct CString {
    bytes: [u8; 160],
}

impl CString {
    /// `text`, cut to fit.
    pub fn new(text: &str) -> Self {
        let mut bytes = [0; 160];
        let length = text.len().min(bytes.len() - 1);
        bytes[..length].copy_from_slice(&text.as_bytes()[..length]);
        Self { bytes }
    }

    /// For a `%s` argument.
    pub fn as_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }
}

/// Prints a broken precondition as its `Display` text reads (the two must say the
/// same; `Display` is not usable here, see the module docs).
pub(crate) fn print_usage_error(error: &UsageError) {
    let operation = CString::new(error.operation);
    let operation = operation.as_ptr();
    #[repr(C)]
    struct One {
        operation: *const u8,
        a: u32,
    }
    #[repr(C)]
    struct Two {
        operation: *const u8,
        a: u32,
        b: u32,
    }
    #[repr(C)]
    struct Three {
        operation: *const u8,
        a: u32,
        b: u32,
        c: u32,
    }
    match error.kind {
        UsageErrorKind::ZeroArrival => print(
            b"scoped-sync: %s: n = 0, but an arrival must count at least 1\n\0",
            &One { operation, a: 0 },
        ),
        UsageErrorKind::ArrivalExceedsRemaining { n, remaining } => print(
            b"scoped-sync: %s: n = %u exceeds the %u arrival(s) the current phase still expects\n\0",
            &Two { operation, a: n, b: remaining },
        ),
        UsageErrorKind::ExceedsMax { value, max } => print(
            b"scoped-sync: %s: %u exceeds max() = %u\n\0",
            &Two { operation, a: value, b: max },
        ),
        UsageErrorKind::CountDownExceedsCount { n, count } => print(
            b"scoped-sync: %s: n = %u exceeds the counter (%u)\n\0",
            &Two { operation, a: n, b: count },
        ),
        UsageErrorKind::ReleaseExceedsMax { n, count, max } => print(
            b"scoped-sync: %s: releasing n = %u onto a counter of %u exceeds max() = %u\n\0",
            &Three { operation, a: n, b: count, c: max },
        ),
        UsageErrorKind::NotPlaced => print_misuse(error.operation, crate::error::NOT_PLACED),
        UsageErrorKind::PlacedAfterUse => {
            print_misuse(error.operation, crate::error::PLACED_AFTER_USE)
        }
    }
}

/// Prints a misuse of a bus object (`operation: what`).
pub(crate) fn print_misuse(operation: &str, what: &str) {
    let (operation, what) = (CString::new(operation), CString::new(what));
    #[repr(C)]
    struct Arguments {
        operation: *const u8,
        what: *const u8,
    }
    print(
        b"scoped-sync: %s: %s\n\0",
        &Arguments {
            operation: operation.as_ptr(),
            what: what.as_ptr(),
        },
    );
}
