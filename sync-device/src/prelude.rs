//! What a kernel usually needs, in one `use scoped_sync::prelude::*;` (or
//! `sync_device::prelude::*`): the primitives at every scope, the hardware barriers,
//! the bus endpoints, the scopes, and the thread's place in the launch.
//!
//! ```ignore
//! use scoped_sync::prelude::*;
//!
//! #[no_mangle]
//! pub unsafe extern "gpu-kernel" fn halve(mut grid: Grid, data: *mut f32) {
//!     let i = global_thread_index() as usize;
//!     // SAFETY: `data` holds one value per thread of the grid.
//!     unsafe { *data.add(i) *= 0.5 };
//!     grid.sync();
//! }
//! ```

pub use crate::ptx::atomics::PtxScope;
pub use crate::{
    block_coordinates, block_count, block_dimensions, block_index, block_size, clock64,
    dynamic_shared, dynamic_shared_bytes, global_thread_count, global_thread_index,
    grid_dimensions, shared, sync_block, thread_coordinates, thread_in_block,
};
// sm_90 only (see the crate docs' "Targets").
#[cfg(target_feature = "sm_90")]
pub use crate::{cluster_rank, map_to_block, sync_cluster, ClusterBarrier, SharedBarrier};
pub use crate::{
    Barrier, BinarySemaphore, CountingSemaphore, FairSemaphore, Latch, StopCallback, StopSource,
    StopToken,
};
pub use crate::{Block, Cluster, Device, Scope, System, Thread};
pub use crate::{BlockBarrier, Grid, SharedSlot, StopCallbackSlot, WholeBlock};
pub use crate::{
    BusBarrier, BusLatch, BusStopSource, DeviceWait, GpuToGpu, GpuToHost, HandoffChannel,
    HandoffSemaphore, HostToGpu,
};
pub use sync_shared::Ordering;
