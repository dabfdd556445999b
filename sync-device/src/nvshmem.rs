//! NVSHMEM's device operations, through the shim `sync_build::NvshmemShim` compiles
//! (`include/scoped_sync_nvshmem.cu`): what [`MultiGrid`](crate::MultiGrid) and the bus
//! objects placed by `cuda::Nvshmem` use to reach GPUs they cannot load from or store
//! to, and the puts ([`put_u64`], [`put`]) and orderings ([`fence`], [`quiet`]) a kernel
//! uses to move its data to another PE beside them.
//!
//! NVSHMEM's device API is inline C++ in its headers; the shim gives each operation a
//! C name, and `sync_build::NvshmemShim::link` device-links it, the kernel crate and
//! NVSHMEM's `libnvshmem_device.a` into one cubin, which `cuda::Nvshmem::load` loads.
//! The crate's PTX alone does not load (the names stay unresolved).
//!
//! Each operation takes an address in this PE's part of NVSHMEM's symmetric heap and
//! the PE whose copy of it is meant, as NVSHMEM's own functions do.

extern "C" {
    fn scoped_sync_nvshmem_signal_add(signal: *mut u64, value: u64, pe: i32);
    fn scoped_sync_nvshmem_fenced_signal_set(signal: *mut u64, value: u64, pe: i32);
    fn scoped_sync_nvshmem_put_u64(destination: *mut u64, value: u64, pe: i32);
    fn scoped_sync_nvshmem_putmem(destination: *mut u8, source: *const u8, bytes: usize, pe: i32);
    fn scoped_sync_nvshmem_fence();
    fn scoped_sync_nvshmem_or(word: *mut u64, value: u64, pe: i32);
    fn scoped_sync_nvshmem_fetch(word: *mut u64, pe: i32) -> u64;
    fn scoped_sync_nvshmem_compare_swap(
        word: *mut u64,
        expected: u64,
        desired: u64,
        pe: i32,
    ) -> u64;
    fn scoped_sync_nvshmem_quiet();
}

/// Waits until every put, atomic and signal this thread issued through NVSHMEM is
/// complete at its destination. A kernel that writes another PE's memory with
/// NVSHMEM's puts (rather than plain stores through a peer address) calls it before
/// [`MultiGrid::sync`](crate::MultiGrid::sync), so that the phase carries the data
/// too: the barrier orders the thread's loads and stores, not operations still in
/// NVSHMEM's queues.
///
/// Counterpart: `nvshmem_quiet()` on the device.
#[inline]
pub fn quiet() {
    // SAFETY: the shim's function takes no arguments; the module was linked with it
    // and NVSHMEM's device library, and initialized by `cuda::Nvshmem::load`.
    unsafe { scoped_sync_nvshmem_quiet() }
}

/// Orders this thread's puts, atomics and signals to each PE: those issued before are
/// delivered to a PE before those issued after, to the same PE (not completed: see
/// [`quiet`]). A release of a handoff placed by `cuda::Nvshmem` fences itself; a kernel
/// calls this between two puts whose order the other PE relies on.
///
/// Counterpart: `nvshmem_fence()` on the device.
#[inline]
pub fn fence() {
    // SAFETY: as in `quiet`.
    unsafe { scoped_sync_nvshmem_fence() }
}

/// Writes `value` to PE `pe`'s copy of `destination` (`nvshmem_uint64_p`): the payload
/// of a unit that a handoff placed by `cuda::Nvshmem` then releases to that PE (the
/// release is delivered after it).
///
/// # Safety
///
/// `destination` is a live, aligned `u64` of this PE's symmetric heap (its address in
/// this PE, as NVSHMEM's calls take it) that PE `pe` does not access while the put
/// may land; `pe` is a PE of the job.
///
/// # Examples
///
/// The project's `kernels/nvshmem` crate (`nvshmem_handoff_produce`) puts unit `k`'s
/// payload into the consumer's ring with it inside `release_with(1, |k| …)`, so that
/// the release delivers the unit after its payload.
#[inline]
pub unsafe fn put_u64(destination: *mut u64, value: u64, pe: u32) {
    // SAFETY: the caller's contract.
    unsafe { scoped_sync_nvshmem_put_u64(destination, value, pe as i32) }
}

/// Copies `bytes` bytes from `source` (any memory this thread reads) to PE `pe`'s
/// copy of `destination` (`nvshmem_putmem`), as [`put_u64`] does one word.
///
/// # Safety
///
/// As [`put_u64`], for `bytes` bytes at `destination`; `source` holds `bytes` readable
/// bytes.
#[inline]
pub unsafe fn put(destination: *mut u8, source: *const u8, bytes: usize, pe: u32) {
    // SAFETY: the caller's contract.
    unsafe { scoped_sync_nvshmem_putmem(destination, source, bytes, pe as i32) }
}

/// Stores `value` to PE `pe`'s copy of `signal` once this thread's earlier operations
/// to that PE are delivered (`nvshmem_fence`, then `nvshmemx_signal_op` with
/// `NVSHMEM_SIGNAL_SET`): a bus word's publication to the PE that polls it.
///
/// # Safety
///
/// As [`signal_add`].
#[inline(always)]
pub(crate) unsafe fn fenced_signal_set(signal: *mut u64, value: u64, pe: u32) {
    // SAFETY: the caller's contract.
    unsafe { scoped_sync_nvshmem_fenced_signal_set(signal, value, pe as i32) }
}

/// Adds `value` to PE `pe`'s copy of `signal` (`nvshmemx_signal_op`, `NVSHMEM_SIGNAL_ADD`).
///
/// # Safety
///
/// `signal` is a live `u64` of this PE's symmetric heap; `pe` is a PE of the job.
#[inline(always)]
pub(crate) unsafe fn signal_add(signal: *mut u64, value: u64, pe: u32) {
    // SAFETY: the caller's contract; a PE index below 8 fits an int.
    unsafe { scoped_sync_nvshmem_signal_add(signal, value, pe as i32) }
}

/// Ors `value` into PE `pe`'s copy of `word` (`nvshmem_uint64_atomic_or`).
///
/// # Safety
///
/// As [`signal_add`].
pub(crate) unsafe fn or(word: *mut u64, value: u64, pe: u32) {
    // SAFETY: the caller's contract.
    unsafe { scoped_sync_nvshmem_or(word, value, pe as i32) }
}

/// PE `pe`'s copy of `word`, read atomically (`nvshmem_uint64_atomic_fetch`).
///
/// # Safety
///
/// As [`signal_add`].
pub(crate) unsafe fn fetch(word: *mut u64, pe: u32) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { scoped_sync_nvshmem_fetch(word, pe as i32) }
}

/// Compare-and-swap on PE `pe`'s copy of `word`: the value it held
/// (`nvshmem_uint64_atomic_compare_swap`).
///
/// # Safety
///
/// As [`signal_add`].
pub(crate) unsafe fn compare_swap(word: *mut u64, expected: u64, desired: u64, pe: u32) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { scoped_sync_nvshmem_compare_swap(word, expected, desired, pe as i32) }
}
