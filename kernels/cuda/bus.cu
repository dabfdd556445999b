// The GPU side of the bus objects in CUDA C++: the kernels of `kernels/src/bus.rs`
// that the host code of `harness::bus_demo` and `tests/gpu_cuda_cpp.rs` drives, with the
// same names, parameters and work, through `scoped_sync.cuh`.
#include <scoped_sync.cuh>

namespace ss = scoped_sync;

namespace {

// How long a test kernel waits for the host before it gives up and reports it (10 s).
constexpr unsigned long long PATIENCE_NS = 10ull * 1000 * 1000 * 1000;

__device__ void count(unsigned int* failures) { atomicAdd(failures, 1u); }

}  // namespace

// One GPU thread takes a unit the host released on `channel` and answers with one,
// `rounds` times, through the exclusive endpoints.
extern "C" __global__ void bus_pingpong(ss_handoff_channel* channel, unsigned int rounds,
                                        unsigned int* failures) {
    auto& shared = ss::handoff_channel::from(channel);
    auto inbox = shared.consumer();
    auto outbox = shared.producer();
    if (!inbox || !outbox) {
        count(failures);
        return;
    }
    for (unsigned int round = 0; round < rounds; ++round) {
        unsigned long long unit;
        if (inbox.acquire(unit, nullptr, PATIENCE_NS) != ss::status::ok) {
            count(failures);
            return;
        }
        outbox.release(1);
    }
    // The inline polls and releases moved the counts the library reads back.
    if (inbox.acquired() != rounds || outbox.released() != rounds) count(failures);
}

// As `bus_pingpong`, through the shared paths (read-modify-writes on the GPU's side words).
extern "C" __global__ void bus_pingpong_shared(ss_handoff_channel* channel, unsigned int rounds,
                                               unsigned int* failures) {
    auto& shared = ss::handoff_channel::from(channel);
    for (unsigned int round = 0; round < rounds; ++round) {
        unsigned long long unit;
        if (shared.acquire(unit, nullptr, PATIENCE_NS) != ss::status::ok) {
            count(failures);
            return;
        }
        shared.release(1);
    }
}

// The persistent worker: thread 0 takes work item `k` from the host (`items[k % ring]`),
// the whole block computes on it (thread t adds `item * (t + 1)`), thread 0 hands the sum
// back (`results[k % ring]`), until the host requests stop on `stop`.
extern "C" __global__ void bus_persistent_worker(ss_handoff_channel* channel,
                                                 ss_bus_stop_source* stop,
                                                 const unsigned long long* items,
                                                 unsigned long long* results, unsigned int ring,
                                                 unsigned long long* scratch) {
    auto& shared = ss::handoff_channel::from(channel);
    ss::handoff_consumer inbox;
    ss::handoff_producer outbox;
    if (threadIdx.x == 0) {
        inbox = shared.consumer();
        outbox = shared.producer();
    }
    volatile unsigned long long* item = scratch;
    unsigned long long* sum = scratch + 1;
    for (;;) {
        if (threadIdx.x == 0) {
            unsigned long long seq;
            unsigned long long next = ~0ull;
            if (inbox && outbox &&
                inbox.acquire(seq, &ss::bus_stop_source::from(stop)) == ss::status::ok) {
                // System-scope (volatile) load: the host wrote the slot before it released
                // unit `seq`, and the acquire orders this load after that.
                next = static_cast<const volatile unsigned long long*>(items)[seq % ring];
            }
            *item = next;
            *sum = 0;
        }
        __syncthreads();
        unsigned long long value = *item;
        if (value == ~0ull) return;
        atomicAdd(sum, value * (threadIdx.x + 1ull));
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned long long seq = outbox.released();
            static_cast<volatile unsigned long long*>(results)[seq % ring] =
                *static_cast<volatile unsigned long long*>(sum);
            outbox.release(1);
        }
    }
}

// Thread 0 of each block is a participant of `barrier` for `phases` phases: before
// arriving at phase p it writes `gpu_data[block * phases + p]`; after the phase it copies
// the host's `host_data[p]` to `copied[block * phases + p]`.
extern "C" __global__ void bus_barrier_phases(ss_bus_barrier* barrier, unsigned int phases,
                                              unsigned int* gpu_data,
                                              const unsigned int* host_data,
                                              unsigned int* copied, unsigned int* failures) {
    if (threadIdx.x != 0) return;
    auto& shared = ss::bus_barrier::from(barrier);
    for (unsigned int phase = 0; phase < phases; ++phase) {
        unsigned int slot = blockIdx.x * phases + phase;
        static_cast<volatile unsigned int*>(gpu_data)[slot] = phase + 1;
        if (shared.arrive_and_wait(nullptr, PATIENCE_NS) != ss::status::ok) {
            count(failures);
            return;
        }
        copied[slot] = static_cast<const volatile unsigned int*>(host_data)[phase];
    }
}

// Every thread counts down `latch` by one and waits for it; `failures` counts waits that
// gave up.
extern "C" __global__ void bus_latch_count_down(ss_bus_latch* latch, unsigned int* failures) {
    if (ss::bus_latch::from(latch).arrive_and_wait(1, nullptr, PATIENCE_NS) != ss::status::ok) {
        count(failures);
    }
}
