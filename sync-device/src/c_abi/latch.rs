//! `ss_latch_<scope>_*`: [`Latch`](crate::Latch) at every scope.

use super::barrier::stop_token;
use super::{timeout, usage, wait_status};

macro_rules! latch_abi {
    ($module:ident, $scope:ty, $prefix:literal) => {
        mod $module {
            use super::*;

            type Latch = crate::Latch<$scope>;

            /// `init(latch, expected)`: writes a new latch. Traps above `ss_latch_max()`.
            #[export_name = concat!($prefix, "_init")]
            pub unsafe extern "C" fn init(latch: *mut Latch, expected: u32) {
                // SAFETY: storage of the header's `ss_latch` for a new latch.
                unsafe { latch.write(Latch::new(expected)) }
            }

            /// `count_down(n)`: traps where `n` is 0 or exceeds the counter.
            #[export_name = concat!($prefix, "_count_down")]
            pub unsafe extern "C" fn count_down(latch: *const Latch, n: u32) {
                // SAFETY: a live latch.
                unsafe { (*latch).count_down(n) }
            }

            /// `try_count_down(n)`: `SS_USAGE_ERROR` (and no change) instead of a trap.
            #[export_name = concat!($prefix, "_try_count_down")]
            pub unsafe extern "C" fn try_count_down(latch: *const Latch, n: u32) -> u32 {
                // SAFETY: a live latch.
                usage(unsafe { (*latch).try_count_down(n) })
            }

            /// `try_wait()`: whether the counter reached zero.
            #[export_name = concat!($prefix, "_try_wait")]
            pub unsafe extern "C" fn try_wait(latch: *const Latch) -> bool {
                // SAFETY: a live latch.
                unsafe { (*latch).try_wait() }
            }

            /// `wait()`.
            #[export_name = concat!($prefix, "_wait")]
            pub unsafe extern "C" fn wait(latch: *const Latch) {
                // SAFETY: a live latch.
                unsafe { (*latch).wait() }
            }

            /// `try_wait_for(ns)`.
            #[export_name = concat!($prefix, "_try_wait_for")]
            pub unsafe extern "C" fn try_wait_for(latch: *const Latch, nanoseconds: u64) -> bool {
                // SAFETY: a live latch.
                let latch = unsafe { &*latch };
                match timeout(nanoseconds) {
                    Some(limit) => latch.try_wait_for(limit),
                    None => {
                        latch.wait();
                        true
                    }
                }
            }

            /// `wait_stoppable(stop)`: `SS_OK` or `SS_STOPPED`.
            #[export_name = concat!($prefix, "_wait_stoppable")]
            pub unsafe extern "C" fn wait_stoppable(
                latch: *const Latch,
                stop: *const crate::StopSource<$scope>,
            ) -> u32 {
                // SAFETY: a live latch and a live stop source or null.
                unsafe { wait_status((*latch).wait_stoppable(stop_token(stop))) }
            }

            /// `block_arrive_and_wait()` (`WholeBlock`): collective, every thread of
            /// the block counts down once, in one count-down of the block's size.
            #[export_name = concat!($prefix, "_block_arrive_and_wait")]
            pub unsafe extern "C" fn block_arrive_and_wait(latch: *const Latch) {
                // SAFETY: a live latch.
                unsafe { crate::WholeBlock::block_arrive_and_wait(&*latch) }
            }

            /// `arrive_and_wait(n)`.
            #[export_name = concat!($prefix, "_arrive_and_wait")]
            pub unsafe extern "C" fn arrive_and_wait(latch: *const Latch, n: u32) {
                // SAFETY: a live latch.
                unsafe { (*latch).arrive_and_wait(n) }
            }
        }
    };
}

latch_abi!(block, sync_shared::Block, "ss_latch_block");
#[cfg(target_feature = "sm_90")]
latch_abi!(cluster, sync_shared::Cluster, "ss_latch_cluster");
latch_abi!(device, sync_shared::Device, "ss_latch_device");
latch_abi!(system, sync_shared::System, "ss_latch_system");

/// The largest expected count (`Latch::max()`).
#[no_mangle]
pub extern "C" fn ss_latch_max() -> u32 {
    crate::Latch::<sync_shared::Device>::max()
}
