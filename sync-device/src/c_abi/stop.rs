//! `ss_stop_source_<scope>_*` and `ss_stop_callback_<scope>_*`: stop sources and
//! callbacks in memory every requesting thread reaches.

use core::ffi::c_void;
use core::pin::Pin;

/// A C++ stop callback: `function(context)`, run once by the requesting thread (or by
/// the registering thread, if stop was requested before).
struct CCallback {
    function: unsafe extern "C" fn(*mut c_void),
    context: *mut c_void,
}

// SAFETY: run once, by whichever thread requests stop; the context is the C++
// caller's to share soundly, as a `std::stop_callback`'s callable is.
unsafe impl Send for CCallback {}

impl CCallback {
    fn run(self) {
        // SAFETY: the C++ side gave a device function taking this context.
        unsafe { (self.function)(self.context) }
    }
}

/// Storage of `ss_stop_callback`: a registered callback, in memory every thread that
/// may request stop reaches (global memory, or shared memory for a block's source).
#[repr(C, align(16))]
pub struct CallbackStorage([u8; sync_shared::layout::STOP_CALLBACK.size]);

macro_rules! stop_abi {
    ($module:ident, $scope:ty, $source:literal, $callback:literal) => {
        mod $module {
            use super::*;

            type Source = crate::StopSource<$scope>;

            /// `init(source)`: a source no stop was requested on.
            #[export_name = concat!($source, "_init")]
            pub unsafe extern "C" fn init(source: *mut Source) {
                // SAFETY: storage of the header's `ss_stop_source` for a new one.
                unsafe { source.write(Source::new()) }
            }

            /// `request_stop()`: true only for the first request; runs the callbacks.
            #[export_name = concat!($source, "_request_stop")]
            pub unsafe extern "C" fn request_stop(source: *const Source) -> bool {
                // SAFETY: a live source.
                unsafe { (*source).request_stop() }
            }

            /// `stop_requested()`.
            #[export_name = concat!($source, "_stop_requested")]
            pub unsafe extern "C" fn stop_requested(source: *const Source) -> bool {
                // SAFETY: a live source.
                unsafe { (*source).stop_requested() }
            }

            /// `stop_possible()`.
            #[export_name = concat!($source, "_stop_possible")]
            pub unsafe extern "C" fn stop_possible(source: *const Source) -> bool {
                // SAFETY: a live source.
                unsafe { (*source).stop_possible() }
            }

            /// Registers `function(context)` with `source` in `storage` (or runs it now
            /// if stop was requested already).
            #[export_name = concat!($callback, "_register")]
            pub unsafe extern "C" fn register(
                storage: *mut CallbackStorage,
                source: *const Source,
                function: Option<unsafe extern "C" fn(*mut c_void)>,
                context: *mut c_void,
            ) {
                // A null function from C: a broken precondition, not a call through null.
                let Some(function) = function else {
                    panic!("stop_callback: the callback function is null")
                };
                let callback = closure(CCallback { function, context });
                // SAFETY: the source outlives the callback, which `deregister` ends
                // (the header's contract); the storage holds no live callback.
                unsafe { place::<$scope, _>(storage, &*source, callback) };
            }

            /// Deregisters the callback in `storage`, waiting if another thread is
            /// running it (not if this thread is: a callback may end itself).
            #[export_name = concat!($callback, "_deregister")]
            pub unsafe extern "C" fn deregister(storage: *mut CallbackStorage) {
                // SAFETY: a callback `register` placed, dropped once.
                unsafe { drop_placed::<$scope, _>(storage, closure) }
            }
        }
    };
}

/// The `FnOnce` a `StopCallback` takes: one closure type, which [`drop_placed`] names
/// through this function's return type.
fn closure(callback: CCallback) -> impl FnOnce() + Send {
    move || callback.run()
}

/// Writes a callback for `source` into `storage` and registers it.
///
/// # Safety
///
/// `storage` holds no live callback and stays in place until [`drop_placed`]; `source`
/// outlives that.
unsafe fn place<S: sync_shared::Scope, F: FnOnce() + Send>(
    storage: *mut CallbackStorage,
    source: &crate::StopSource<S>,
    callback: F,
) where
    crate::Gpu: sync_shared::Backend<S>,
{
    // SAFETY: the caller's promise that the source outlives the placed callback.
    let source: &'static crate::StopSource<S> = unsafe { &*core::ptr::from_ref(source) };
    // SAFETY: empty storage; the size is checked in `write_into`.
    unsafe { super::write_into(storage, crate::StopCallback::new(source.token(), callback)) };
    // SAFETY: written above; it stays in place until `drop_placed`.
    let pinned =
        unsafe { Pin::new_unchecked(&*storage.cast::<crate::StopCallback<'static, F, S>>()) };
    pinned.register();
}

/// Drops the callback [`place`] put in `storage`, whose closure `_make` returns.
///
/// # Safety
///
/// `storage` holds a callback `place` placed with a closure of `_make`'s type.
unsafe fn drop_placed<S: sync_shared::Scope, F: FnOnce() + Send>(
    storage: *mut CallbackStorage,
    _make: fn(CCallback) -> F,
) where
    crate::Gpu: sync_shared::Backend<S>,
{
    // SAFETY: forwarded; dropped once.
    unsafe { core::ptr::drop_in_place(storage.cast::<crate::StopCallback<'static, F, S>>()) }
}

stop_abi!(
    block,
    sync_shared::Block,
    "ss_stop_source_block",
    "ss_stop_callback_block"
);
#[cfg(target_feature = "sm_90")]
stop_abi!(
    cluster,
    sync_shared::Cluster,
    "ss_stop_source_cluster",
    "ss_stop_callback_cluster"
);
stop_abi!(
    device,
    sync_shared::Device,
    "ss_stop_source_device",
    "ss_stop_callback_device"
);
stop_abi!(
    system,
    sync_shared::System,
    "ss_stop_source_system",
    "ss_stop_callback_system"
);

sync_shared::assert_layout!(CallbackStorage, sync_shared::layout::STOP_CALLBACK);
