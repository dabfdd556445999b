// The NVSHMEM shim: NVSHMEM's device operations that scoped-sync's kernels use, as
// plain `extern "C"` device functions a Rust kernel can call.
//
// NVSHMEM's device API is inline functions in its headers, reading the device state
// that `nvshmemx_cumodule_init` fills in; a Rust kernel cannot include a header, so
// this file, compiled by `sync_build::NvshmemShim` against the NVSHMEM the program will
// load (nvcc -rdc=true -ptx), gives each operation a C name. `Nvshmem::load` links it
// with the kernels and NVSHMEM's `libnvshmem_device.a` by the driver's JIT linker.
//
// Every function takes an address of this PE's symmetric heap and the PE whose copy
// of it is meant, as NVSHMEM's own calls do.

#include <nvshmem.h>
#include <nvshmemx.h>

// The NVSHMEM release the shim was compiled against, which `Nvshmem::load` compares
// with the loaded host library's: the inlined code reads the device state by the
// layout of this release.
extern "C" __device__ const int scoped_sync_nvshmem_release[3] = {
    NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION};

// An empty kernel, by which the host finds the linked module's handle to give
// `nvshmemx_cumodule_init` (the driver names a module by its functions).
extern "C" __global__ void scoped_sync_nvshmem_shim() {}

// Adds `value` to PE `pe`'s copy of the signal word `signal`, after every earlier put
// of this thread to that PE (nvshmemx_signal_op with NVSHMEM_SIGNAL_ADD).
extern "C" __device__ void scoped_sync_nvshmem_signal_add(uint64_t *signal, uint64_t value,
                                                          int pe) {
    nvshmemx_signal_op(signal, value, NVSHMEM_SIGNAL_ADD, pe);
}

// Stores `value` to PE `pe`'s copy of the signal word `signal`, delivered after every
// earlier operation of this thread to that PE (a bus word's publication).
extern "C" __device__ void scoped_sync_nvshmem_fenced_signal_set(uint64_t *signal,
                                                                 uint64_t value, int pe) {
    nvshmem_fence();
    nvshmemx_signal_op(signal, value, NVSHMEM_SIGNAL_SET, pe);
}

// Writes `value` to PE `pe`'s copy of `destination`.
extern "C" __device__ void scoped_sync_nvshmem_put_u64(uint64_t *destination, uint64_t value,
                                                       int pe) {
    nvshmem_uint64_p(destination, value, pe);
}

// Copies `bytes` bytes from `source` to PE `pe`'s copy of `destination`.
extern "C" __device__ void scoped_sync_nvshmem_putmem(void *destination, const void *source,
                                                      size_t bytes, int pe) {
    nvshmem_putmem(destination, source, bytes, pe);
}

// Orders this thread's operations to each PE (nvshmem_fence).
extern "C" __device__ void scoped_sync_nvshmem_fence() { nvshmem_fence(); }

// Ors `value` into PE `pe`'s copy of `word` (an atomic without a fetch).
extern "C" __device__ void scoped_sync_nvshmem_or(uint64_t *word, uint64_t value, int pe) {
    nvshmem_uint64_atomic_or(word, value, pe);
}

// PE `pe`'s copy of `word`, read atomically.
extern "C" __device__ uint64_t scoped_sync_nvshmem_fetch(uint64_t *word, int pe) {
    return nvshmem_uint64_atomic_fetch(word, pe);
}

// Compare-and-swap on PE `pe`'s copy of `word`: the value it held.
extern "C" __device__ uint64_t scoped_sync_nvshmem_compare_swap(uint64_t *word,
                                                                uint64_t expected,
                                                                uint64_t desired, int pe) {
    return nvshmem_uint64_atomic_compare_swap(word, expected, desired, pe);
}

// Waits until every put, atomic and signal this thread issued is complete
// (nvshmem_quiet).
extern "C" __device__ void scoped_sync_nvshmem_quiet() { nvshmem_quiet(); }
