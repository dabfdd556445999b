//! The device-only primitives: the barriers that exist only on a GPU (a whole block's,
//! a cluster's, a cooperative grid's, several GPUs' grids), block-shared memory and its
//! one-time initialization, and [`WholeBlock`](crate::WholeBlock) arrivals. The
//! primitives shared with the host (`Barrier`, `Latch`, the semaphores, stop sources,
//! bus objects) are `sync_shared`'s on the [`Gpu`](crate::Gpu) backend (the type
//! aliases at the crate root).

pub(crate) mod block_barrier;
#[cfg(target_feature = "sm_90")]
pub(crate) mod cluster;
pub(crate) mod grid;
pub(crate) mod multi_grid;
mod multi_grid_crossing;
pub(crate) mod shared;
#[cfg(target_feature = "sm_90")]
pub(crate) mod shared_barrier;
pub(crate) mod stop_callback_slot;
pub(crate) mod whole_block;
