//! What the checked build of the kernels prints before it traps (through
//! `sync_shared::vprintf`, which says why nothing here uses `core::fmt`), and the trap.

use core::panic::Location;

use sync_shared::vprintf::{print, CString};

use crate::ptx::geometry::{block_coordinates, thread_coordinates};

/// A thread's place in the launch, as the messages print it: `(x, y, z)` in its block
/// and its block's `(x, y, z)` in the grid (six `%u`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Whereabouts {
    thread: [u32; 3],
    block: [u32; 3],
}

impl Whereabouts {
    /// The calling thread's.
    pub(crate) fn here() -> Self {
        Self {
            thread: thread_coordinates(),
            block: block_coordinates(),
        }
    }
}

/// Prints where a device panic was raised and by which thread. A broken precondition
/// has printed its own message just before (`sync_shared::UsageError`); the kernels'
/// panic handler calls this in the checked build, then traps.
///
/// It takes the location alone: the panic's message is a `core::fmt::Arguments`, and
/// touching it would keep the formatting code in the module (see `sync_shared::vprintf`).
pub fn print_panic(location: Option<&Location<'_>>) {
    let (file, line) = match location {
        Some(location) => (location.file(), location.line()),
        None => ("an unknown place", 0),
    };
    let file = CString::new(file);
    #[repr(C)]
    struct Arguments {
        whereabouts: Whereabouts,
        file: *const u8,
        line: u32,
    }
    print(
        b"scoped-sync: kernel panic in thread (%u, %u, %u) of block (%u, %u, %u) at %s:%u\n\0",
        &Arguments {
            whereabouts: Whereabouts::here(),
            file: file.as_ptr(),
            line,
        },
    );
}

/// Ends the kernel: the host sees `CUDA_ERROR_ILLEGAL_INSTRUCTION`
/// (`sync_host::cuda::CudaError::KernelTrapped`).
pub fn trap() -> ! {
    // SAFETY: `trap` aborts the kernel; it has no operands.
    unsafe { core::arch::asm!("trap;", options(noreturn)) }
}

/// Defines the kernel crate's panic handler: every kernel crate needs one, and this is
/// the one the primitives are documented with.
///
/// A panic on the device (a broken precondition: `arrive(0)`, a latch counted down
/// past zero, a semaphore released past its maximum; or the user's own `panic!` or
/// failed `assert!`) ends the kernel with `trap`: the launch fails, the host sees
/// `CudaError::KernelTrapped`, and the CUDA context is lost. In the checked flavour of
/// the kernels (built with debug assertions, `sync_build::KernelCrate::checked`) the
/// handler first prints the source location and the thread and block coordinates (and
/// a broken precondition has printed its own message just before).
///
/// Write it once, at the crate root:
///
/// ```ignore
/// #![no_std]
/// #![feature(abi_gpu_kernel)]
/// #![feature(asm_experimental_arch)] // `shared!` (block-shared variables) is inline asm
/// #![allow(improper_gpu_kernel_arg)]
///
/// use scoped_sync::prelude::*;
///
/// scoped_sync::panic_handler!(); // trap; the checked build prints where first
/// ```
///
/// The message text of a `panic!` is not printed: formatting it would pull
/// `core::fmt` into every kernel (see `sync_shared::vprintf`).
#[macro_export]
macro_rules! panic_handler {
    () => {
        #[panic_handler]
        fn panic(info: &::core::panic::PanicInfo<'_>) -> ! {
            // The kernel crate's own setting: on in its checked flavour.
            if ::core::cfg!(debug_assertions) {
                $crate::print_panic(info.location());
            }
            $crate::trap()
        }
    };
}
