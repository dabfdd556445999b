//! [`StopCallbackSlot`]: room for a registered stop callback where every thread that may
//! request stop can run it.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::mem::{align_of, size_of, MaybeUninit};
use core::pin::Pin;

use sync_shared::{Backend, Device, Ordering, Scope, Word};

use crate::{Gpu, StopCallback, StopToken};

/// The slot holds no callback.
const FREE: u32 = 0;
/// A callback is placed in the slot (or being placed or dropped).
const TAKEN: u32 = 1;

/// Room for one [`StopCallback`] of up to `BYTES` bytes (16-aligned), in memory that
/// every thread which may request stop can reach: global memory, or the block's shared
/// memory for a source only the block uses. A callback on the registering thread's
/// stack would lie in local memory, where a `request_stop` of another block could not
/// run it; this is where a kernel keeps one instead.
///
/// All-zero bytes are an empty slot: the host allocates slots with `Runtime::zeros`
/// (`size_of::<StopCallbackSlot<BYTES>>()` bytes each, `BYTES` a multiple of 16) and
/// passes them to the kernel, which places a callback with [`place`](Self::place).
///
/// Counterpart: a `std::stop_callback` object, which C++ constructs wherever the
/// program puts it; here the place must be one the requesting thread can reach.
///
/// # Examples
///
/// ```ignore
/// #[no_mangle]
/// pub unsafe extern "gpu-kernel" fn wait_or_stop(
///     stop: *const StopSource,
///     slots: *const StopCallbackSlot,
///     stopped: *mut u32,
/// ) {
///     // SAFETY: built by the host (`new_stop_source`, zeroed slots), alive for the launch.
///     let (stop, slot) = unsafe { (&*stop, &*slots.add(block_index() as usize)) };
///     if thread_in_block() == 0 {
///         // SAFETY: one word the host zeroed, used atomically by every block.
///         let seen = unsafe { Word::from_ptr(stopped) };
///         let placed = slot.place(stop.token(), || {
///             <Gpu as Backend<Device>>::fetch_add(seen, 1, Ordering::Relaxed);
///         });
///         let _registered = placed.expect("one callback per slot");
///         // ... work until stop is requested; dropping `_registered` deregisters ...
///     }
/// }
/// ```
#[repr(C, align(16))]
pub struct StopCallbackSlot<const BYTES: usize = 112> {
    /// [`FREE`] or [`TAKEN`].
    state: Word,
    callback: UnsafeCell<CallbackBytes<BYTES>>,
}

/// The room for the callback, 16-aligned by itself: as a plain byte array it would
/// follow `state` at offset 4, misaligned for a callback holding pointers.
#[repr(C, align(16))]
struct CallbackBytes<const BYTES: usize>(MaybeUninit<[u8; BYTES]>);

// The callback's room starts 16-aligned, right after the state word's padding.
const _: () = assert!(core::mem::offset_of!(StopCallbackSlot, callback) == 16);
const _: () = assert!(size_of::<StopCallbackSlot>() == 128);

// SAFETY: the callback bytes are written and dropped only by the thread that claimed
// the slot through `state`; a placed callback is reached by other threads only through
// its stop source, which `StopCallback` makes sound.
unsafe impl<const BYTES: usize> Sync for StopCallbackSlot<BYTES> {}

impl<const BYTES: usize> StopCallbackSlot<BYTES> {
    /// An empty slot (all zero bytes, as the host allocates it).
    pub const fn new() -> Self {
        Self {
            state: Word::new(FREE),
            callback: UnsafeCell::new(CallbackBytes(MaybeUninit::uninit())),
        }
    }

    /// Places a callback for `token` that runs `callback` and registers it; `None` if
    /// the slot holds a callback already. The callback stays registered until the
    /// returned guard drops (which deregisters it, waiting if a requesting thread is
    /// running it, as [`StopCallback`]'s drop does) and the slot is free again.
    ///
    /// Memory ordering: the claim of the slot is an acquire compare-and-swap at device
    /// scope and its release a release store, so one placement's drop happens before the
    /// next placement in the same slot.
    ///
    /// Fails to compile if the callback does not fit `BYTES`.
    pub fn place<'a, F: FnOnce() + Send, S: Scope>(
        &'a self,
        token: StopToken<'a, S>,
        callback: F,
    ) -> Option<PlacedStopCallback<'a, F, S, BYTES>>
    where
        Gpu: Backend<S>,
    {
        const {
            assert!(
                size_of::<StopCallback<'a, F, S>>() <= BYTES
                    && align_of::<StopCallback<'a, F, S>>() <= 16,
                "the stop callback does not fit the slot: use a StopCallbackSlot of more bytes"
            )
        };
        <Gpu as Backend<Device>>::compare_exchange(
            &self.state,
            FREE,
            TAKEN,
            Ordering::Acquire,
            Ordering::Relaxed,
        )
        .ok()?;
        let at = self.callback.get().cast::<StopCallback<'a, F, S>>();
        // SAFETY: the slot is this thread's (claimed above) and holds room for the
        // callback, aligned (checked at compile time; the room is 16-aligned); the
        // callback stays in place until the guard drops it.
        let callback = unsafe {
            at.write(StopCallback::new(token, callback));
            Pin::new_unchecked(&*at)
        };
        callback.register();
        Some(PlacedStopCallback {
            slot: self,
            callback,
            _callback: PhantomData,
        })
    }
}

impl<const BYTES: usize> Default for StopCallbackSlot<BYTES> {
    fn default() -> Self {
        Self::new()
    }
}

/// A stop callback registered in a [`StopCallbackSlot`]; dropping it deregisters the
/// callback and frees the slot.
pub struct PlacedStopCallback<'a, F: FnOnce() + Send, S: Scope, const BYTES: usize>
where
    Gpu: Backend<S>,
{
    slot: &'a StopCallbackSlot<BYTES>,
    callback: Pin<&'a StopCallback<'a, F, S>>,
    _callback: PhantomData<F>,
}

impl<'a, F: FnOnce() + Send, S: Scope, const BYTES: usize> PlacedStopCallback<'a, F, S, BYTES>
where
    Gpu: Backend<S>,
{
    /// The registered callback.
    pub fn callback(&self) -> Pin<&StopCallback<'a, F, S>> {
        self.callback
    }
}

impl<F: FnOnce() + Send, S: Scope, const BYTES: usize> Drop for PlacedStopCallback<'_, F, S, BYTES>
where
    Gpu: Backend<S>,
{
    fn drop(&mut self) {
        // SAFETY: the callback was written by `place` and is dropped once, here; nothing
        // else refers to it afterwards (its source forgets it as it deregisters).
        unsafe {
            core::ptr::drop_in_place(core::ptr::from_ref(self.callback.get_ref()).cast_mut())
        };
        <Gpu as Backend<Device>>::store(&self.slot.state, FREE, Ordering::Release);
    }
}
