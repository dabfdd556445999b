// docs/cpp.md's example, as written there.
#include <scoped_sync.cuh>
namespace ss = scoped_sync;

extern "C" __global__ void worker(ss_handoff_channel* channel, ss_bus_stop_source* stop,
                                  const unsigned long long* items, unsigned long long* out,
                                  unsigned int ring) {
    if (threadIdx.x != 0) return;
    auto inbox = ss::handoff_channel::from(channel).consumer();   // RAII endpoints
    auto outbox = ss::handoff_channel::from(channel).producer();
    unsigned long long seq;
    while (inbox.acquire(seq, &ss::bus_stop_source::from(stop)) == ss::status::ok) {
        out[seq % ring] = items[seq % ring] * 2;
        outbox.release(1);
    }
}

extern "C" __global__ void phases(ss::grid grid, ss_barrier* device_barrier) {
    __shared__ ss_barrier storage;
    auto& block = ss::barrier<ss::thread_scope_block>::from(&storage);
    if (threadIdx.x == 0) init(&block, blockDim.x);                 // as libcu++
    __syncthreads();
    auto& all = ss::barrier<ss::thread_scope_device>::from(device_barrier);  // placed by the host
    block.arrive_and_wait();
    auto token = all.arrive();
    all.wait(static_cast<decltype(token)&&>(token));
    grid.sync();
}
