// A persistent worker in CUDA C++: the host feeds it work items through a
// `HandoffChannel` in mapped memory and stops it with a `BusStopSource`. This file is
// compiled twice by the example: by nvcc at build time, and by NVRTC at run time
// (`cuda-cpp-example nvrtc`).
#include <scoped_sync.cuh>

namespace ss = scoped_sync;

// The answer to work item `item` (the host checks every one).
__device__ unsigned long long answer(unsigned long long item) { return item * item + 1; }

// Thread 0 claims the channel's GPU endpoints and serves: wait for a unit (the wait
// also watches `stop`), read `items[seq % ring]`, write the answer to
// `results[seq % ring]`, hand a unit back. Other threads return: endpoints are
// exclusive.
extern "C" __global__ void persistent_worker(ss_handoff_channel* channel, ss_bus_stop_source* stop,
                                             const unsigned long long* items,
                                             unsigned long long* results, unsigned int ring) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    auto& shared = ss::handoff_channel::from(channel);
    auto inbox = shared.consumer();
    auto outbox = shared.producer();
    if (!inbox || !outbox) return;
    unsigned long long seq;
    while (inbox.acquire(seq, &ss::bus_stop_source::from(stop)) == ss::status::ok) {
        // The host wrote the slot before releasing unit `seq`; the acquire orders this
        // load after that (volatile: host-written memory, read afresh).
        const unsigned long long item = static_cast<const volatile unsigned long long*>(items)[seq % ring];
        static_cast<volatile unsigned long long*>(results)[seq % ring] = answer(item);
        outbox.release(1);
    }
}
