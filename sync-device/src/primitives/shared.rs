//! Block-shared memory: static `.shared` variables declared from Rust, and their
//! one-time initialization by a block or a cluster.
//!
//! Rust has no `__shared__`: [`shared!`](crate::shared) declares the variable in the
//! PTX module with `global_asm!` and hands back a [`SharedSlot`] holding the generic
//! address of the calling block's instance. Each block (CTA) has its own instance.

use core::marker::PhantomData;

use sync_shared::{Backend, Barrier, Completion, Scope};

use crate::backend::gpu::Gpu;
use crate::primitives::block_barrier::sync_block;
#[cfg(target_feature = "sm_90")]
use crate::primitives::cluster::{map_to_block, sync_cluster};
#[cfg(target_feature = "sm_90")]
use crate::ptx::geometry::cluster_rank;
use crate::ptx::geometry::thread_in_block;

/// Declares an uninitialized block-shared variable of type `$ty` and evaluates to its
/// [`SharedSlot`]. Each expansion site is one variable (so a loop reuses it); `$name`
/// names it in the PTX module and must be unique in the kernel crate.
///
/// The kernel crate needs `#![feature(asm_experimental_arch)]`.
///
/// `$ty` is read where the macro is expanded to choose what initializing the slot does
/// besides writing the value: a [`Barrier`] (or an array of them) becomes the hardware
/// barrier there, any other type is only written. Name the type itself, not a generic
/// parameter standing for it (a `Barrier` behind a parameter is written, not placed:
/// call [`Barrier::init_in_place`] from `init_block_with` then).
///
/// ```ignore
/// let slot = scoped_sync::shared!(PHASES: SharedBarrier);
/// // SAFETY: every thread of the block runs this once.
/// let barrier = unsafe { SharedBarrier::init(&slot, scoped_sync::block_size()) };
/// ```
#[macro_export]
macro_rules! shared {
    ($name:ident : $ty:ty) => {{
        ::core::arch::global_asm!(
            concat!(".shared .align {align} .b8 scoped_sync_shared_", stringify!($name), "[{size}];"),
            align = const ::core::mem::align_of::<$ty>(),
            size = const $crate::shared_bytes(::core::mem::size_of::<$ty>()),
        );
        let address: u64;
        // SAFETY: converts the shared-window address of the variable declared above to
        // a generic address; touches no memory.
        unsafe {
            ::core::arch::asm!(
                concat!("cvta.shared.u64 {a}, scoped_sync_shared_", stringify!($name), ";"),
                a = out(reg64) address,
                options(pure, nomem, nostack),
            )
        };
        let place = {
            #[allow(unused_imports)]
            use $crate::WriteOnly as _;
            $crate::Placement::<$ty>::new().place()
        };
        // SAFETY: the address is this block's instance of a variable sized and aligned
        // for `$ty`, alive as long as the block; `place` was chosen for `$ty`.
        unsafe { $crate::SharedSlot::<$ty>::from_address(address as *mut $ty, place) }
    }};
}

/// Bytes to declare for a type of `size` bytes (PTX has no empty arrays).
#[doc(hidden)]
pub const fn shared_bytes(size: usize) -> usize {
    if size == 0 {
        1
    } else {
        size
    }
}

/// The calling block's instance of a block-shared variable of type `T`, not yet
/// initialized. Made by [`shared!`](crate::shared).
#[derive(Debug)]
pub struct SharedSlot<T> {
    address: *mut T,
    /// What initializing does after writing the value ([`Placement`]).
    place: unsafe fn(*mut T),
}

impl<T> SharedSlot<T> {
    /// Wraps the generic address of a block-shared variable.
    ///
    /// # Safety
    ///
    /// `address` points to block-shared memory sized and aligned for `T` that stays
    /// allocated while the block runs; `place` is [`Placement`]'s choice for `T`.
    #[doc(hidden)]
    pub const unsafe fn from_address(address: *mut T, place: unsafe fn(*mut T)) -> Self {
        Self { address, place }
    }

    /// The generic address of the variable.
    pub fn as_ptr(&self) -> *mut T {
        self.address
    }

    /// Thread 0 of the block stores `value`; then every thread waits for it at a block
    /// barrier and gets a reference to it. Collective: every thread of the block calls
    /// it.
    ///
    /// # Safety
    ///
    /// Every thread of the block calls this, once per variable (another call would
    /// overwrite an object the block may still use).
    pub unsafe fn init_block(&self, value: T) -> &'static T {
        // SAFETY: forwarded.
        unsafe { self.init_block_with(|slot| slot.write(value)) }
    }

    /// Like [`init_block`](Self::init_block), for objects built in place: thread 0 runs
    /// `init` on the slot's address.
    ///
    /// # Safety
    ///
    /// As for [`init_block`](Self::init_block); `init` leaves a valid `T` at the address.
    pub unsafe fn init_block_with(&self, init: impl FnOnce(*mut T)) -> &'static T {
        if thread_in_block() == 0 {
            init(self.address);
            // SAFETY: just written by this thread; the block barrier below orders it
            // before every other thread's use.
            unsafe { (self.place)(self.address) };
        }
        sync_block();
        // Tells the compiler what the slot's contract says, so that the address-space
        // tests of the caller's later operations on the object fold away: a
        // `Barrier<Block>` placed here loses the portable path beside its hardware
        // one (libcu++ gets the same from a `__shared__` variable's known address
        // space), and its phase gets much faster (docs/measurements.md,
        // `SharedSlot::init_block_with`).
        // SAFETY: the slot lies in block-shared memory (its contract).
        unsafe { core::hint::assert_unchecked(is_shared(self.address)) };
        // SAFETY: thread 0 initialized the variable, and the block barrier ordered that
        // before this read; the variable lives as long as the block.
        unsafe { &*self.address }
    }

    #[cfg(target_feature = "sm_90")]
    /// Thread 0 of block `owner` in the cluster stores `value` in its instance; after a
    /// cluster barrier every thread of the cluster gets a reference to that instance
    /// (in the owner's shared memory, reached through distributed shared memory).
    /// Collective: every thread of the cluster calls it.
    ///
    /// The owner block's shared memory must outlive every use: end the kernel with a
    /// [`ClusterBarrier`](crate::ClusterBarrier) `arrive_and_wait` after the last use.
    ///
    /// # Safety
    ///
    /// Every thread of the cluster calls this, once per variable, with the same `owner`,
    /// a rank of the cluster.
    pub unsafe fn init_cluster(&self, owner: u32, value: T) -> &'static T {
        let (rank, size) = cluster_rank();
        if owner >= size {
            panic!("SharedSlot::init_cluster: owner is not a rank of the cluster");
        }
        if rank == owner && thread_in_block() == 0 {
            // SAFETY: the owner's own instance, written and placed by one thread before
            // anyone reads it (the cluster barrier below).
            unsafe {
                self.address.write(value);
                (self.place)(self.address);
            }
        }
        sync_cluster();
        // SAFETY: the owner's instance is initialized (release/acquire cluster barrier)
        // and, per this function's contract, stays allocated while it is used.
        unsafe { &*map_to_block(self.address, owner) }
    }
}

/// Chooses, where [`shared!`](crate::shared) names the type, what initializing a slot
/// does after writing the value: nothing, except for a [`Barrier`] or an array of them,
/// which become the hardware barrier there ([`Barrier::init_in_place`]). Without this,
/// `slot.init_block(Barrier::new(n))`, the way the barrier is documented, would leave an
/// unplaced barrier in shared memory.
///
/// The choice is made by method resolution on the named type: Rust looks for inherent
/// methods before trait methods, so the inherent `place` of `Placement<Barrier<..>>`
/// (and of arrays of barriers) wins over [`WriteOnly`]'s, which every other type gets.
/// That needs no unstable `specialization`, but only works where the type is known.
#[doc(hidden)]
pub struct Placement<T>(PhantomData<T>);

impl<T> Placement<T> {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

/// The placement of every type that is not a barrier: the written value is the object.
#[doc(hidden)]
pub trait WriteOnly<T> {
    fn place(&self) -> unsafe fn(*mut T) {
        written_only::<T>
    }
}

impl<T> WriteOnly<T> for Placement<T> {}

/// # Safety
///
/// Nothing to uphold: it does nothing. `unsafe` for the slot's function-pointer type.
unsafe fn written_only<T>(_object: *mut T) {}

impl<S: Scope, F: Completion> Placement<Barrier<S, Gpu, F>>
where
    Gpu: Backend<S>,
{
    pub fn place(&self) -> unsafe fn(*mut Barrier<S, Gpu, F>) {
        place_barrier::<S, F>
    }
}

impl<S: Scope, F: Completion, const N: usize> Placement<[Barrier<S, Gpu, F>; N]>
where
    Gpu: Backend<S>,
{
    pub fn place(&self) -> unsafe fn(*mut [Barrier<S, Gpu, F>; N]) {
        place_barriers::<S, F, N>
    }
}

/// # Safety
///
/// `object` holds a barrier this thread has just written, which no other thread uses
/// until a block (or cluster) barrier after this call.
#[inline(always)]
unsafe fn place_barrier<S: Scope, F: Completion>(object: *mut Barrier<S, Gpu, F>)
where
    Gpu: Backend<S>,
{
    // SAFETY: forwarded.
    unsafe { (*object).init_in_place() }
}

/// # Safety
///
/// As for [`place_barrier`], for each barrier of the array.
#[inline(always)]
unsafe fn place_barriers<S: Scope, F: Completion, const N: usize>(
    objects: *mut [Barrier<S, Gpu, F>; N],
) where
    Gpu: Backend<S>,
{
    for index in 0..N {
        // SAFETY: an element of the array the caller vouches for.
        unsafe { place_barrier((objects as *mut Barrier<S, Gpu, F>).add(index)) }
    }
}

/// Whether `address` lies in the block-shared memory window (`isspacep.shared`).
pub fn is_shared<T>(address: *const T) -> bool {
    let shared: u32;
    // SAFETY: classifies an address; touches no memory.
    unsafe {
        core::arch::asm!(
            "{{ .reg .pred p; isspacep.shared p, {a}; selp.u32 {s}, 1, 0, p; }}",
            a = in(reg64) address as u64,
            s = out(reg32) shared,
            options(pure, nomem, nostack),
        )
    };
    shared != 0
}

// The launch's dynamic shared memory: one unsized `.extern .shared` array per module,
// at the start of the block's dynamic allocation.
core::arch::global_asm!(".extern .shared .align 16 .b8 scoped_sync_dynamic_shared[];");

/// The block's dynamic shared memory: the bytes the host asked for at launch
/// (`LaunchConfig::shared_memory` on the host), 16-byte aligned, as a
/// generic pointer; [`dynamic_shared_bytes`](crate::dynamic_shared_bytes) says how
/// many. Counterpart: `extern __shared__ T buffer[];` in CUDA C++.
///
/// The memory is uninitialized and shared by the block's threads: order their
/// accesses with a block barrier.
pub fn dynamic_shared<T>() -> *mut T {
    let address: u64;
    // SAFETY: converts the shared-window address of the array declared above to a
    // generic address; touches no memory.
    unsafe {
        core::arch::asm!(
            "cvta.shared.u64 {a}, scoped_sync_dynamic_shared;",
            a = out(reg64) address,
            options(pure, nomem, nostack),
        )
    };
    address as *mut T
}
