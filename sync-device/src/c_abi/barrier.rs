//! `ss_barrier_<scope>_*`: [`Barrier`](crate::Barrier) at every scope, with and without
//! a completion function.

use core::ffi::c_void;

use sync_shared::{ArrivalToken, Completion};

use super::{timeout, usage, wait_status, write_into, SS_OK};
use crate::Gpu;

/// An arrival token in the caller's storage: `ss_arrival_token`, 32 bytes.
#[repr(C, align(8))]
pub struct TokenStorage([u64; 4]);

/// A C++ completion: `function(context)`, run once per phase by the completing thread.
#[repr(C)]
pub struct CCompletion {
    function: Option<unsafe extern "C" fn(*mut c_void)>,
    context: *mut c_void,
}

// SAFETY: the barrier runs the completion on one thread at a time (the completing
// arrival); what the context points to is the C++ caller's to share soundly, as a
// libcu++ completion functor's state is.
unsafe impl Send for CCompletion {}

impl Completion for CCompletion {
    #[inline]
    fn on_phase_complete(&mut self) {
        if let Some(function) = self.function {
            // SAFETY: the C++ side gave a device function taking this context.
            unsafe { function(self.context) }
        }
    }
}

/// The stop source of a stoppable wait: a `StopSource` of the object's scope, or none
/// (null).
///
/// # Safety
///
/// `stop` is null or points to a live `StopSource` for `'a`.
pub(super) unsafe fn stop_token<'a, S: sync_shared::Scope>(
    stop: *const crate::StopSource<S>,
) -> sync_shared::StopToken<'a, S, Gpu>
where
    Gpu: sync_shared::Backend<S>,
{
    // SAFETY: forwarded.
    match unsafe { stop.as_ref() } {
        Some(source) => source.token(),
        None => sync_shared::StopToken::none(),
    }
}

/// Reads the token the caller's storage holds (consuming it).
///
/// # Safety
///
/// `token` holds a token an arrive of this library wrote, not read before.
unsafe fn take(token: *const TokenStorage) -> ArrivalToken {
    // SAFETY: forwarded.
    unsafe { token.cast::<ArrivalToken>().read() }
}

/// Borrows the token the caller's storage holds.
///
/// # Safety
///
/// As [`take`], for `'a`.
unsafe fn peek<'a>(token: *const TokenStorage) -> &'a ArrivalToken {
    // SAFETY: forwarded.
    unsafe { &*token.cast::<ArrivalToken>() }
}

/// Defines the functions of one barrier type: `$prefix` names them, `$barrier` is
/// the Rust type, `$new` builds one from `(expected, extra)` where the completion
/// form takes its completion as the extra argument.
macro_rules! barrier_abi {
    ($prefix:literal, $barrier:ty, $init:item) => {
        $init

        /// Places a block-scope barrier in shared memory into its hardware form
        /// (`Barrier::init_in_place`): one thread, before any use.
        #[export_name = concat!($prefix, "_init_in_place")]
        pub unsafe extern "C" fn init_in_place(barrier: *const $barrier) {
            // SAFETY: the C++ caller's contract (the header's `init_in_place`).
            unsafe { (*barrier).init_in_place() }
        }

        /// `arrive(n)` into the caller's token storage.
        #[export_name = concat!($prefix, "_arrive")]
        pub unsafe extern "C" fn arrive(barrier: *const $barrier, n: u32, token: *mut TokenStorage) {
            // SAFETY: a live barrier and empty token storage (the header's types).
            unsafe { write_into(token, (*barrier).arrive(n)) }
        }

        /// `try_arrive(n)`: `SS_USAGE_ERROR` (and no token) on `n == 0` or too many.
        #[export_name = concat!($prefix, "_try_arrive")]
        pub unsafe extern "C" fn try_arrive(
            barrier: *const $barrier,
            n: u32,
            token: *mut TokenStorage,
        ) -> u32 {
            // SAFETY: a live barrier (the header's type).
            match unsafe { (*barrier).try_arrive(n) } {
                // SAFETY: empty token storage.
                Ok(arrived) => unsafe {
                    write_into(token, arrived);
                    SS_OK
                },
                Err(error) => usage::<()>(Err(error)),
            }
        }

        /// `wait(token)`: consumes the token.
        #[export_name = concat!($prefix, "_wait")]
        pub unsafe extern "C" fn wait(barrier: *const $barrier, token: *const TokenStorage) {
            // SAFETY: a live barrier and a token of it, consumed once (the header moves it).
            unsafe { (*barrier).wait(take(token)) }
        }

        /// `try_wait(token)`: whether the token's phase has completed.
        #[export_name = concat!($prefix, "_try_wait")]
        pub unsafe extern "C" fn try_wait(barrier: *const $barrier, token: *const TokenStorage) -> bool {
            // SAFETY: a live barrier and a token of it.
            unsafe { (*barrier).try_wait(peek(token)) }
        }

        /// `try_wait_for(token, ns)`.
        #[export_name = concat!($prefix, "_try_wait_for")]
        pub unsafe extern "C" fn try_wait_for(
            barrier: *const $barrier,
            token: *const TokenStorage,
            nanoseconds: u64,
        ) -> bool {
            // SAFETY: a live barrier and a token of it.
            let (barrier, token) = unsafe { (&*barrier, peek(token)) };
            match timeout(nanoseconds) {
                Some(limit) => barrier.try_wait_for(token, limit),
                None => {
                    // The token stays the caller's: wait on its parity.
                    barrier.wait_parity(token.parity());
                    true
                }
            }
        }

        /// `wait_stoppable(token, stop)`: `SS_OK` or `SS_STOPPED`; consumes the token.
        #[export_name = concat!($prefix, "_wait_stoppable")]
        pub unsafe extern "C" fn wait_stoppable(
            barrier: *const $barrier,
            token: *const TokenStorage,
            stop: *const crate::StopSource<Scope>,
        ) -> u32 {
            // SAFETY: a live barrier, its token consumed once, a live stop source or null.
            unsafe { wait_status((*barrier).wait_stoppable(take(token), stop_token(stop))) }
        }

        /// The parity of the token's phase.
        #[export_name = concat!($prefix, "_token_parity")]
        pub unsafe extern "C" fn token_parity(token: *const TokenStorage) -> bool {
            // SAFETY: a token this library wrote.
            unsafe { peek(token).parity() }
        }

        /// Drops a token without waiting.
        #[export_name = concat!($prefix, "_token_drop")]
        pub unsafe extern "C" fn token_drop(token: *const TokenStorage) {
            // SAFETY: a token this library wrote, consumed once.
            drop(unsafe { take(token) })
        }

        /// `wait_parity(parity)`.
        #[export_name = concat!($prefix, "_wait_parity")]
        pub unsafe extern "C" fn wait_parity(barrier: *const $barrier, parity: bool) {
            // SAFETY: a live barrier.
            unsafe { (*barrier).wait_parity(parity) }
        }

        /// `try_wait_parity(parity)`.
        #[export_name = concat!($prefix, "_try_wait_parity")]
        pub unsafe extern "C" fn try_wait_parity(barrier: *const $barrier, parity: bool) -> bool {
            // SAFETY: a live barrier.
            unsafe { (*barrier).try_wait_parity(parity) }
        }

        /// `arrive_and_wait()`.
        #[export_name = concat!($prefix, "_arrive_and_wait")]
        pub unsafe extern "C" fn arrive_and_wait(barrier: *const $barrier) {
            // SAFETY: a live barrier.
            unsafe { (*barrier).arrive_and_wait() }
        }

        /// `block_arrive_and_wait()` (`WholeBlock`): collective, every thread of the
        /// block; one arrival of the block's thread count, by one thread.
        #[export_name = concat!($prefix, "_block_arrive_and_wait")]
        pub unsafe extern "C" fn block_arrive_and_wait(barrier: *const $barrier) {
            // SAFETY: a live barrier.
            unsafe { crate::WholeBlock::block_arrive_and_wait(&*barrier) }
        }

        /// `arrive_and_wait_stoppable(stop)`: `SS_OK` or `SS_STOPPED`.
        #[export_name = concat!($prefix, "_arrive_and_wait_stoppable")]
        pub unsafe extern "C" fn arrive_and_wait_stoppable(
            barrier: *const $barrier,
            stop: *const crate::StopSource<Scope>,
        ) -> u32 {
            // SAFETY: a live barrier and a live stop source or null.
            unsafe { wait_status((*barrier).arrive_and_wait_stoppable(stop_token(stop))) }
        }

        /// `arrive_and_drop()`.
        #[export_name = concat!($prefix, "_arrive_and_drop")]
        pub unsafe extern "C" fn arrive_and_drop(barrier: *const $barrier) {
            // SAFETY: a live barrier.
            unsafe { (*barrier).arrive_and_drop() }
        }

        /// `try_arrive_and_drop()`: `SS_USAGE_ERROR` where no arrival is left.
        #[export_name = concat!($prefix, "_try_arrive_and_drop")]
        pub unsafe extern "C" fn try_arrive_and_drop(barrier: *const $barrier) -> u32 {
            // SAFETY: a live barrier.
            usage(unsafe { (*barrier).try_arrive_and_drop() })
        }
    };
}

/// Both barrier types of one scope, in a module of their own (the functions' Rust
/// names repeat; their exported names do not).
macro_rules! scope_barriers {
    ($module:ident, $scope:ty, $plain:literal, $with_completion:literal) => {
        mod $module {
            use super::*;

            type Scope = $scope;

            mod plain {
                use super::*;
                type Plain = crate::Barrier<$scope>;
                barrier_abi!(
                    $plain,
                    Plain,
                    /// `init(barrier, expected)`: writes a new barrier expecting
                    /// `expected` arrivals per phase. Traps above `ss_barrier_max()`.
                    #[export_name = concat!($plain, "_init")]
                    pub unsafe extern "C" fn init(barrier: *mut Plain, expected: u32) {
                        // SAFETY: storage of the header's `ss_barrier` for a new barrier.
                        unsafe { barrier.write(Plain::new(expected)) }
                    }
                );
            }

            mod with_completion {
                use super::*;
                type WithCompletion = crate::Barrier<$scope, CCompletion>;
                barrier_abi!(
                    $with_completion,
                    WithCompletion,
                    /// `init(barrier, expected, function, context)`: as the plain
                    /// barrier's, with `function(context)` run once per phase.
                    #[export_name = concat!($with_completion, "_init")]
                    pub unsafe extern "C" fn init(
                        barrier: *mut WithCompletion,
                        expected: u32,
                        function: Option<unsafe extern "C" fn(*mut c_void)>,
                        context: *mut c_void,
                    ) {
                        let completion = CCompletion { function, context };
                        // SAFETY: storage of the header's `ss_barrier_completion`.
                        unsafe {
                            barrier.write(WithCompletion::with_completion(expected, completion))
                        }
                    }
                );
            }
        }
    };
}

scope_barriers!(
    block,
    sync_shared::Block,
    "ss_barrier_block",
    "ss_barrier_completion_block"
);
#[cfg(target_feature = "sm_90")]
scope_barriers!(
    cluster,
    sync_shared::Cluster,
    "ss_barrier_cluster",
    "ss_barrier_completion_cluster"
);
scope_barriers!(
    device,
    sync_shared::Device,
    "ss_barrier_device",
    "ss_barrier_completion_device"
);
scope_barriers!(
    system,
    sync_shared::System,
    "ss_barrier_system",
    "ss_barrier_completion_system"
);

/// The most arrivals a phase can expect (`Barrier::max()`).
#[no_mangle]
pub extern "C" fn ss_barrier_max() -> u32 {
    crate::Barrier::<sync_shared::Device>::max()
}

sync_shared::assert_layout!(TokenStorage, sync_shared::layout::ARRIVAL_TOKEN_STORAGE);
sync_shared::assert_layout!(
    crate::Barrier<sync_shared::Device, CCompletion>,
    sync_shared::layout::BARRIER_WITH_COMPLETION
);
