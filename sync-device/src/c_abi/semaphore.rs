//! `ss_counting_semaphore_<scope>_*`, `ss_binary_semaphore_<scope>_*` and
//! `ss_fair_semaphore_<scope>_*`: the semaphores at every scope.

use sync_shared::WaiterSlot;

use super::barrier::stop_token;
use super::{timeout, usage, wait_status};

/// The functions both the counting and the binary semaphore have.
macro_rules! semaphore_abi {
    ($module:ident, $semaphore:ty, $scope:ty, $prefix:literal) => {
        mod $module {
            use super::*;

            type Semaphore = $semaphore;

            /// `init(semaphore, initial)`: traps above the semaphore's `max()`.
            #[export_name = concat!($prefix, "_init")]
            pub unsafe extern "C" fn init(semaphore: *mut Semaphore, initial: u32) {
                // SAFETY: storage of the header's semaphore type for a new one.
                unsafe { semaphore.write(Semaphore::new(initial)) }
            }

            /// `release(n)`: traps where the count would pass `max()`.
            #[export_name = concat!($prefix, "_release")]
            pub unsafe extern "C" fn release(semaphore: *const Semaphore, n: u32) {
                // SAFETY: a live semaphore.
                unsafe { (*semaphore).release(n) }
            }

            /// `try_release(n)`: `SS_USAGE_ERROR` (and no change) instead of a trap.
            #[export_name = concat!($prefix, "_try_release")]
            pub unsafe extern "C" fn try_release(semaphore: *const Semaphore, n: u32) -> u32 {
                // SAFETY: a live semaphore.
                usage(unsafe { (*semaphore).try_release(n) })
            }

            /// `acquire()`.
            #[export_name = concat!($prefix, "_acquire")]
            pub unsafe extern "C" fn acquire(semaphore: *const Semaphore) {
                // SAFETY: a live semaphore.
                unsafe { (*semaphore).acquire() }
            }

            /// `try_acquire()`.
            #[export_name = concat!($prefix, "_try_acquire")]
            pub unsafe extern "C" fn try_acquire(semaphore: *const Semaphore) -> bool {
                // SAFETY: a live semaphore.
                unsafe { (*semaphore).try_acquire() }
            }

            /// `try_acquire_for(ns)`.
            #[export_name = concat!($prefix, "_try_acquire_for")]
            pub unsafe extern "C" fn try_acquire_for(
                semaphore: *const Semaphore,
                nanoseconds: u64,
            ) -> bool {
                // SAFETY: a live semaphore.
                let semaphore = unsafe { &*semaphore };
                match timeout(nanoseconds) {
                    Some(limit) => semaphore.try_acquire_for(limit),
                    None => {
                        semaphore.acquire();
                        true
                    }
                }
            }

            /// `acquire_stoppable(stop)`: `SS_OK` or `SS_STOPPED`.
            #[export_name = concat!($prefix, "_acquire_stoppable")]
            pub unsafe extern "C" fn acquire_stoppable(
                semaphore: *const Semaphore,
                stop: *const crate::StopSource<$scope>,
            ) -> u32 {
                // SAFETY: a live semaphore and a live stop source or null.
                unsafe { wait_status((*semaphore).acquire_stoppable(stop_token(stop))) }
            }
        }
    };
}

/// The fair semaphore's functions: a thread that may wait queues in a `WaiterSlot` of
/// its own, in global or shared memory.
macro_rules! fair_semaphore_abi {
    ($module:ident, $scope:ty, $prefix:literal) => {
        mod $module {
            use super::*;

            type Semaphore = crate::FairSemaphore<{ sync_shared::SEMAPHORE_MAX }, $scope>;

            /// `init(semaphore, initial)`.
            #[export_name = concat!($prefix, "_init")]
            pub unsafe extern "C" fn init(semaphore: *mut Semaphore, initial: u32) {
                // SAFETY: storage of the header's `ss_fair_semaphore` for a new one.
                unsafe { semaphore.write(Semaphore::new(initial)) }
            }

            /// `release(n)`.
            #[export_name = concat!($prefix, "_release")]
            pub unsafe extern "C" fn release(semaphore: *const Semaphore, n: u32) {
                // SAFETY: a live semaphore.
                unsafe { (*semaphore).release(n) }
            }

            /// `try_release(n)`.
            #[export_name = concat!($prefix, "_try_release")]
            pub unsafe extern "C" fn try_release(semaphore: *const Semaphore, n: u32) -> u32 {
                // SAFETY: a live semaphore.
                usage(unsafe { (*semaphore).try_release(n) })
            }

            /// `try_acquire()`: never queues, so it needs no slot.
            #[export_name = concat!($prefix, "_try_acquire")]
            pub unsafe extern "C" fn try_acquire(semaphore: *const Semaphore) -> bool {
                // SAFETY: a live semaphore.
                unsafe { (*semaphore).try_acquire() }
            }

            /// `acquire_in(slot)`.
            #[export_name = concat!($prefix, "_acquire")]
            pub unsafe extern "C" fn acquire(semaphore: *const Semaphore, slot: *mut WaiterSlot) {
                // SAFETY: a live semaphore; the slot is the calling thread's.
                unsafe { (*semaphore).acquire_in(&mut *slot) }
            }

            /// `try_acquire_for_in(slot, ns)`.
            #[export_name = concat!($prefix, "_try_acquire_for")]
            pub unsafe extern "C" fn try_acquire_for(
                semaphore: *const Semaphore,
                slot: *mut WaiterSlot,
                nanoseconds: u64,
            ) -> bool {
                // SAFETY: a live semaphore; the slot is the calling thread's.
                let (semaphore, slot) = unsafe { (&*semaphore, &mut *slot) };
                match timeout(nanoseconds) {
                    Some(limit) => semaphore.try_acquire_for_in(slot, limit),
                    None => {
                        semaphore.acquire_in(slot);
                        true
                    }
                }
            }

            /// `acquire_stoppable_in(slot, stop)`: `SS_OK` or `SS_STOPPED`.
            #[export_name = concat!($prefix, "_acquire_stoppable")]
            pub unsafe extern "C" fn acquire_stoppable(
                semaphore: *const Semaphore,
                slot: *mut WaiterSlot,
                stop: *const crate::StopSource<$scope>,
            ) -> u32 {
                // SAFETY: a live semaphore, the caller's slot, a live stop source or null.
                unsafe {
                    wait_status((*semaphore).acquire_stoppable_in(&mut *slot, stop_token(stop)))
                }
            }
        }
    };
}

mod counting {
    use super::*;
    semaphore_abi!(block, crate::CountingSemaphore<{ sync_shared::SEMAPHORE_MAX }, sync_shared::Block>, sync_shared::Block, "ss_counting_semaphore_block");
    #[cfg(target_feature = "sm_90")]
    semaphore_abi!(cluster, crate::CountingSemaphore<{ sync_shared::SEMAPHORE_MAX }, sync_shared::Cluster>, sync_shared::Cluster, "ss_counting_semaphore_cluster");
    semaphore_abi!(device, crate::CountingSemaphore<{ sync_shared::SEMAPHORE_MAX }, sync_shared::Device>, sync_shared::Device, "ss_counting_semaphore_device");
    semaphore_abi!(system, crate::CountingSemaphore<{ sync_shared::SEMAPHORE_MAX }, sync_shared::System>, sync_shared::System, "ss_counting_semaphore_system");
}

mod binary {
    use super::*;
    semaphore_abi!(
        block,
        crate::BinarySemaphore<sync_shared::Block>,
        sync_shared::Block,
        "ss_binary_semaphore_block"
    );
    #[cfg(target_feature = "sm_90")]
    semaphore_abi!(
        cluster,
        crate::BinarySemaphore<sync_shared::Cluster>,
        sync_shared::Cluster,
        "ss_binary_semaphore_cluster"
    );
    semaphore_abi!(
        device,
        crate::BinarySemaphore<sync_shared::Device>,
        sync_shared::Device,
        "ss_binary_semaphore_device"
    );
    semaphore_abi!(
        system,
        crate::BinarySemaphore<sync_shared::System>,
        sync_shared::System,
        "ss_binary_semaphore_system"
    );
}

mod fair {
    use super::*;
    fair_semaphore_abi!(block, sync_shared::Block, "ss_fair_semaphore_block");
    #[cfg(target_feature = "sm_90")]
    fair_semaphore_abi!(cluster, sync_shared::Cluster, "ss_fair_semaphore_cluster");
    fair_semaphore_abi!(device, sync_shared::Device, "ss_fair_semaphore_device");
    fair_semaphore_abi!(system, sync_shared::System, "ss_fair_semaphore_system");
}

/// Writes an unused waiter slot.
///
/// # Safety
///
/// `slot` is storage of the header's `ss_waiter_slot`, not in a queue.
#[no_mangle]
pub unsafe extern "C" fn ss_waiter_slot_init(slot: *mut WaiterSlot) {
    // SAFETY: forwarded.
    unsafe { slot.write(WaiterSlot::new()) }
}

/// The largest count of the counting semaphore (`SEMAPHORE_MAX`).
#[no_mangle]
pub extern "C" fn ss_counting_semaphore_max() -> u32 {
    sync_shared::SEMAPHORE_MAX
}

sync_shared::assert_layout!(WaiterSlot, sync_shared::layout::WAITER_SLOT);
