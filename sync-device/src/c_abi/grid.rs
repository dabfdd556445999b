//! `ss_grid_*` and `ss_multi_grid_*`: the grid barrier of a cooperative launch and the
//! barrier of a launch on several GPUs. Both objects are kernel parameters, passed by
//! value to the kernel and by pointer here (they count the phases of the calling thread).

use crate::{Grid, MultiGrid, MultiGridError};

use super::{timeout, SS_BROKEN, SS_OK, SS_TIMED_OUT};

/// `Grid::sync`: collective, every thread of the grid.
///
/// # Safety
///
/// `grid` is this thread's copy of the kernel's `Grid` parameter.
#[no_mangle]
pub unsafe extern "C" fn ss_grid_sync(grid: *mut Grid) {
    // SAFETY: forwarded.
    unsafe { (*grid).sync() }
}

/// Phases of the grid barrier this thread has completed.
///
/// # Safety
///
/// As [`ss_grid_sync`].
#[no_mangle]
pub unsafe extern "C" fn ss_grid_phase(grid: *const Grid) -> u32 {
    // SAFETY: forwarded.
    unsafe { (*grid).phase() }
}

/// The status of a multi-GPU wait.
fn multi_grid_status(result: Result<(), MultiGridError>) -> u32 {
    match result {
        Ok(()) => SS_OK,
        Err(MultiGridError::TimedOut) => SS_TIMED_OUT,
        Err(MultiGridError::Broken) => SS_BROKEN,
    }
}

/// `MultiGrid::sync_for(ns)` (`FOREVER`: `sync`, which traps on a broken barrier):
/// `SS_OK`, `SS_TIMED_OUT` or `SS_BROKEN`. Collective, every thread of every GPU's grid.
///
/// # Safety
///
/// `multi_grid` is this thread's copy of the kernel's `MultiGrid` parameter.
#[no_mangle]
pub unsafe extern "C" fn ss_multi_grid_sync_for(
    multi_grid: *mut MultiGrid,
    nanoseconds: u64,
) -> u32 {
    // SAFETY: forwarded.
    let multi_grid = unsafe { &mut *multi_grid };
    match timeout(nanoseconds) {
        Some(limit) => multi_grid_status(multi_grid.sync_for(limit)),
        None => {
            multi_grid.sync();
            SS_OK
        }
    }
}

/// `MultiGrid::arrive` then, later, `MultiGrid::wait_for(ns)`: the block's arrival
/// without waiting. Returns the phase to pass to [`ss_multi_grid_wait_for`].
///
/// # Safety
///
/// As [`ss_multi_grid_sync_for`].
#[no_mangle]
pub unsafe extern "C" fn ss_multi_grid_arrive(multi_grid: *mut MultiGrid) -> u64 {
    // SAFETY: forwarded.
    unsafe { (*multi_grid).arrive() }.phase()
}

/// Waits for the phase an [`ss_multi_grid_arrive`] returned: `SS_OK`, `SS_TIMED_OUT`
/// or `SS_BROKEN`.
///
/// # Safety
///
/// As [`ss_multi_grid_sync_for`]; `phase` is the last arrival's, not waited for yet.
#[no_mangle]
pub unsafe extern "C" fn ss_multi_grid_wait_for(
    multi_grid: *mut MultiGrid,
    phase: u64,
    nanoseconds: u64,
) -> u32 {
    // SAFETY: forwarded.
    let multi_grid = unsafe { &mut *multi_grid };
    let token = crate::MultiGridToken::from_phase(phase);
    match timeout(nanoseconds) {
        Some(limit) => multi_grid_status(multi_grid.wait_for(token, limit)),
        None => {
            multi_grid.wait(token);
            SS_OK
        }
    }
}

/// `MultiGrid::abort`: breaks the barrier on every GPU from this block's next phase on.
///
/// # Safety
///
/// As [`ss_multi_grid_sync_for`].
#[no_mangle]
pub unsafe extern "C" fn ss_multi_grid_abort(multi_grid: *const MultiGrid) {
    // SAFETY: forwarded.
    unsafe { (*multi_grid).abort() }
}

/// This GPU's rank in the launch.
///
/// # Safety
///
/// As [`ss_multi_grid_sync_for`].
#[no_mangle]
pub unsafe extern "C" fn ss_multi_grid_rank(multi_grid: *const MultiGrid) -> u32 {
    // SAFETY: forwarded.
    unsafe { (*multi_grid).rank() }
}

/// The number of GPUs in the launch.
///
/// # Safety
///
/// As [`ss_multi_grid_sync_for`].
#[no_mangle]
pub unsafe extern "C" fn ss_multi_grid_ranks(multi_grid: *const MultiGrid) -> u32 {
    // SAFETY: forwarded.
    unsafe { (*multi_grid).ranks() }
}

sync_shared::assert_layout!(Grid, sync_shared::layout::GRID);
