// README.md, section 4, as written there.
#include <scoped_sync.cuh>
namespace ss = scoped_sync;

extern "C" __global__ void serve(ss_handoff_channel* channel, ss_bus_stop_source* stop,
                                 unsigned long long* slots, unsigned int ring) {
    if (threadIdx.x != 0) return;
    auto inbox = ss::handoff_channel::from(channel).consumer();
    auto outbox = ss::handoff_channel::from(channel).producer();
    unsigned long long seq;
    while (inbox.acquire(seq, &ss::bus_stop_source::from(stop)) == ss::status::ok) {
        slots[seq % ring] *= 3;
        outbox.release(1);
    }
}
