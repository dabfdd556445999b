// A CUDA C++ kernel that uses every device primitive of `scoped_sync.cuh` on one
// cooperative grid; `tests/gpu_cuda_cpp.rs` checks the words it fills on the CPU.
#include <scoped_sync.cuh>

namespace ss = scoped_sync;

namespace {

// The result words (the test's `every` module names the same).
enum Word : unsigned int {
    COMPLETIONS = 0,
    BARRIER_MISSES = 1,
    LATCH_MISSES = 2,
    SEMAPHORE_MOST_INSIDE = 3,
    SEMAPHORE_ENTRIES = 4,
    FAIR_ENTRIES = 5,
    CALLBACK_RUNS = 6,
    FIRST_REQUESTS = 7,
    STOP_MISSES = 8,
    GRID_PHASES = 9,
    TRY_FAILURES = 10,
    BLOCK_BARRIER_MISSES = 11,
    BINARY_MOST_INSIDE = 12,
    SEMAPHORE_INSIDE_NOW = 13,
    BINARY_INSIDE_NOW = 14,
};

// Where each object lies in the kernel's `objects` buffer (zeroed by the host).
constexpr unsigned int BARRIER_AT = 0, LATCH_AT = 64, SEMAPHORE_AT = 128, FAIR_AT = 192,
                       STOP_AT = 256, CALLBACK_AT = 320, BINARY_AT = 448, EMPTY_AT = 512,
                       SLOTS_AT = 576;

template <class T>
__device__ T* at(unsigned char* objects, unsigned int offset) {
    return reinterpret_cast<T*>(objects + offset);
}

// The barrier's completion: counts phases.
__device__ void count_phase(void* counter) {
    unsigned int* word = static_cast<unsigned int*>(counter);
    *word += 1;  // one completing thread at a time
}

// The stop callback: counts its runs.
__device__ void count_run(void* counter) { atomicAdd(static_cast<unsigned int*>(counter), 1u); }

__device__ void miss(unsigned int* results, Word word) { atomicAdd(results + word, 1u); }

// Enters a semaphore's critical section: tracks how many are inside at once.
__device__ void inside(unsigned int* results, Word now, Word most) {
    unsigned int count = atomicAdd(results + now, 1u) + 1;
    atomicMax(results + most, count);
    atomicSub(results + now, 1u);
}

}  // namespace

extern "C" __global__ void cpp_every_primitive(ss_grid grid_parameter, unsigned char* objects,
                                               unsigned int* data, unsigned int phases,
                                               unsigned int* results) {
    using device_barrier = ss::barrier_with_completion<ss::thread_scope_device>;
    using device_latch = ss::latch<ss::thread_scope_device>;
    using device_semaphore = ss::counting_semaphore<ss::thread_scope_device>;
    using device_binary = ss::binary_semaphore<ss::thread_scope_device>;
    using device_fair = ss::fair_semaphore<ss::thread_scope_device>;
    using device_stop = ss::stop_source<ss::thread_scope_device>;
    using block_barrier = ss::barrier<ss::thread_scope_block>;

    auto& grid = ss::grid::from(grid_parameter);
    const unsigned int total = gridDim.x * blockDim.x;
    const unsigned int thread = blockIdx.x * blockDim.x + threadIdx.x;
    volatile unsigned int* shared_data = data;

    ss_barrier_completion* barrier_storage = at<ss_barrier_completion>(objects, BARRIER_AT);
    ss_latch* latch_storage = at<ss_latch>(objects, LATCH_AT);
    ss_counting_semaphore* semaphore_storage = at<ss_counting_semaphore>(objects, SEMAPHORE_AT);
    ss_counting_semaphore* binary_storage = at<ss_counting_semaphore>(objects, BINARY_AT);
    ss_counting_semaphore* empty_storage = at<ss_counting_semaphore>(objects, EMPTY_AT);
    ss_fair_semaphore* fair_storage = at<ss_fair_semaphore>(objects, FAIR_AT);
    ss_stop_source* stop_storage = at<ss_stop_source>(objects, STOP_AT);

    auto& barrier = device_barrier::from(barrier_storage);
    auto& latch = device_latch::from(latch_storage);
    auto& semaphore = device_semaphore::from(semaphore_storage);
    auto& binary = device_binary::from(binary_storage);
    auto& empty = device_binary::from(empty_storage);
    auto& fair = device_fair::from(fair_storage);
    auto& stop = device_stop::from(stop_storage);
    auto& slot = ss::waiter_slot::from(at<ss_waiter_slot>(objects, SLOTS_AT) + blockIdx.x);

    if (thread == 0) {
        // libcu++'s `init(&object, ...)`, found by argument-dependent lookup.
        init(&barrier, total, count_phase, results + COMPLETIONS);
        init(&latch, total);
        init(&semaphore, 4);
        init(&binary, 1);
        init(&empty, 0);
        init(&fair, 1);
        init(&stop);
        // The `try_` forms refuse broken preconditions instead of trapping.
        if (latch.try_count_down(total + 1) != ss::status::usage_error) miss(results, TRY_FAILURES);
        if (semaphore.try_release(device_semaphore::max()) != ss::status::usage_error)
            miss(results, TRY_FAILURES);
    }
    if (threadIdx.x == 0) init(&slot);
    grid.sync();

    // A device barrier with tokens and a completion: every thread sees its neighbour's
    // write of the phase after the phase.
    for (unsigned int phase = 1; phase <= phases; ++phase) {
        shared_data[thread] = phase;
        auto token = barrier.arrive();
        barrier.wait(static_cast<decltype(token)&&>(token));
        if (shared_data[(thread + 1) % total] != phase) miss(results, BARRIER_MISSES);
        barrier.arrive_and_wait();
    }

    // A block barrier in shared memory (the hardware form).
    __shared__ ss_barrier block_storage;
    __shared__ unsigned int block_data[1024];
    auto& in_block = block_barrier::from(&block_storage);
    if (threadIdx.x == 0) init(&in_block, blockDim.x);
    __syncthreads();
    for (unsigned int phase = 1; phase <= phases; ++phase) {
        block_data[threadIdx.x] = phase;
        in_block.arrive_and_wait();
        if (block_data[(threadIdx.x + 1) % blockDim.x] != phase) miss(results, BLOCK_BARRIER_MISSES);
        in_block.arrive_and_wait();
    }

    // A latch: every thread's write before its count-down is seen after the wait.
    shared_data[thread] = 7777u;
    latch.count_down(1);
    latch.wait();
    if (shared_data[(thread + 1) % total] != 7777u || !latch.try_wait()) miss(results, LATCH_MISSES);

    // A counting semaphore of 4 units: never more than 4 holders.
    semaphore.acquire();
    inside(results, SEMAPHORE_INSIDE_NOW, SEMAPHORE_MOST_INSIDE);
    atomicAdd(results + SEMAPHORE_ENTRIES, 1u);
    semaphore.release(1);

    if (threadIdx.x == 0) {
        // A binary semaphore: one holder at a time.
        binary.acquire();
        inside(results, BINARY_INSIDE_NOW, BINARY_MOST_INSIDE);
        binary.release(1);
        // The fair semaphore as a lock: a plain increment under it never loses one.
        fair.acquire(slot);
        volatile unsigned int* entries = results + FAIR_ENTRIES;
        *entries = *entries + 1;
        fair.release(1);
    }
    grid.sync();

    // Stop: a callback registered in global memory runs once, on the first request.
    using callback = ss::stop_callback<ss::thread_scope_device>;
    callback* registered = nullptr;  // thread 0's
    if (thread == 0) {
        registered = callback::attach(at<ss_stop_callback>(objects, CALLBACK_AT), stop, count_run,
                                      results + CALLBACK_RUNS);
    }
    grid.sync();
    if (threadIdx.x == 0 && stop.request_stop()) miss(results, FIRST_REQUESTS);
    grid.sync();
    if (!stop.stop_requested() || !stop.get_token().stop_requested()) miss(results, STOP_MISSES);
    grid.sync();
    if (thread == 0) {
        callback::detach(registered);
        // A stoppable wait on a semaphore with no unit returns `stopped`.
        if (empty.acquire(stop) != ss::status::stopped)
            miss(results, STOP_MISSES);
        results[GRID_PHASES] = grid.phase();
    }
}
