// Compile and link check of include/scoped_sync.cuh (scripts/cxx-check.sh): never run.
//
// Instantiates every wrapper template at every scope and calls every member from one
// kernel per object type, so that every `ss_*` declaration of the header is odr-used;
// the device link with the library then makes nvlink compare each prototype with the
// library's. Cluster scope only where the header has it (sm_90 and newer). No header
// but scoped_sync.cuh, so that NVRTC compiles it too.

#include "scoped_sync.cuh"

using namespace scoped_sync;

// Every member of every wrapper template, at every scope (member classes, such as
// `arrival_token`, come with their class).
#define SS_CHECK_INSTANTIATE(S)                                   \
    template class detail::barrier_base<S, false>;                \
    template class detail::barrier_base<S, true>;                 \
    template class barrier<S>;                                    \
    template class barrier_with_completion<S>;                    \
    template class latch<S>;                                      \
    template class detail::semaphore_base<S, false>;              \
    template class detail::semaphore_base<S, true>;               \
    template class counting_semaphore<S>;                         \
    template class counting_semaphore<S, 1000>;                   \
    template class binary_semaphore<S>;                           \
    template class fair_semaphore<S>;                             \
    template class stop_source<S>;                                \
    template class stop_token<S>;                                 \
    template class stop_callback<S>;

SS_CHECK_INSTANTIATE(thread_scope_block)
#if SCOPED_SYNC_HAS_CLUSTER
SS_CHECK_INSTANTIATE(thread_scope_cluster)
#endif
SS_CHECK_INSTANTIATE(thread_scope_device)
SS_CHECK_INSTANTIATE(thread_scope_system)

// `std::move` without <utility>.
template <class T>
__device__ T&& mv(T& value) {
    return static_cast<T&&>(value);
}

__device__ void count_call(void* context) { ++*static_cast<unsigned int*>(context); }

// Storage the host would place; the kernels take pointers to it.
struct objects {
    ss_barrier barrier;
    ss_barrier_completion barrier_completion;
    ss_latch latch;
    ss_counting_semaphore counting;
    ss_counting_semaphore binary;
    ss_fair_semaphore fair;
    ss_waiter_slot slot;
    ss_stop_source stop;
    ss_stop_callback callback;
};

template <thread_scope S, class Barrier>
__device__ unsigned int use_barrier_ops(Barrier& b, stop_source<S>& stop) {
    unsigned int seen = 0;
    typename Barrier::arrival_token token = b.arrive();
    seen += token.valid() + static_cast<bool>(token) + token.parity();
    seen += b.try_wait(token) + b.try_wait_for(token, 1000) + b.try_wait_for(token, forever);
    b.wait(mv(token));
    typename Barrier::arrival_token other;
    seen += static_cast<unsigned int>(b.try_arrive(other, 2));
    other = b.arrive(1);
    seen += static_cast<unsigned int>(b.wait(mv(other), stop));
    token = b.arrive();
    seen += static_cast<unsigned int>(b.wait(mv(token), stop.get_token()));
    token = b.arrive();
    token.reset();
    b.wait_parity(true);
    seen += b.try_wait_parity(false);
    b.arrive_and_wait();
    b.block_arrive_and_wait();
    seen += static_cast<unsigned int>(b.arrive_and_wait(stop));
    seen += static_cast<unsigned int>(b.arrive_and_wait(stop_token<S>()));
    b.arrive_and_drop();
    seen += static_cast<unsigned int>(b.try_arrive_and_drop());
    seen += Barrier::max();
    b.init_in_place();
    seen += b.native() != nullptr;
    return seen;
}

template <thread_scope S>
__device__ unsigned int use_barrier(objects* o) {
    stop_source<S>& stop = stop_source<S>::from(&o->stop);
    barrier<S>& b = barrier<S>::from(&o->barrier);
    init(&b, 4);
    return use_barrier_ops<S>(b, stop);
}

template <thread_scope S>
__device__ unsigned int use_barrier_with_completion(objects* o, unsigned int* counter) {
    stop_source<S>& stop = stop_source<S>::from(&o->stop);
    barrier_with_completion<S>& b = barrier_with_completion<S>::from(&o->barrier_completion);
    init(&b, 4, count_call, counter);
    init(&b, 4, nullptr, nullptr);
    return use_barrier_ops<S>(b, stop);
}

template <thread_scope S>
__device__ unsigned int use_latch(objects* o) {
    stop_source<S>& stop = stop_source<S>::from(&o->stop);
    latch<S>& l = latch<S>::from(&o->latch);
    init(&l, 8);
    unsigned int seen = latch<S>::max();
    l.count_down();
    l.count_down(2);
    seen += static_cast<unsigned int>(l.try_count_down(1));
    seen += l.try_wait() + l.try_wait_for(100) + l.native()->opaque[0];
    l.wait();
    seen += static_cast<unsigned int>(l.wait(stop)) + static_cast<unsigned int>(l.wait(stop.get_token()));
    l.arrive_and_wait();
    l.arrive_and_wait(2);
    l.block_arrive_and_wait();
    return seen;
}

template <thread_scope S, class Semaphore>
__device__ unsigned int use_semaphore_ops(Semaphore& s, stop_source<S>& stop) {
    unsigned int seen = Semaphore::max();
    s.release();
    s.release(1);
    seen += static_cast<unsigned int>(s.try_release(1));
    s.acquire();
    seen += static_cast<unsigned int>(s.acquire(stop)) + static_cast<unsigned int>(s.acquire(stop.get_token()));
    seen += s.try_acquire() + s.try_acquire_for(10) + (s.native() != nullptr);
    return seen;
}

template <thread_scope S>
__device__ unsigned int use_semaphores(objects* o) {
    stop_source<S>& stop = stop_source<S>::from(&o->stop);
    counting_semaphore<S>& counting = counting_semaphore<S>::from(&o->counting);
    init(&counting, 3);
    counting_semaphore<S, 1000>& small = counting_semaphore<S, 1000>::from(&o->counting);
    init(&small, 3);
    binary_semaphore<S>& binary = binary_semaphore<S>::from(&o->binary);
    init(&binary, 1);
    return use_semaphore_ops<S>(counting, stop) + use_semaphore_ops<S>(small, stop) +
           use_semaphore_ops<S>(binary, stop);
}

template <thread_scope S>
__device__ unsigned int use_fair_semaphore(objects* o) {
    stop_source<S>& stop = stop_source<S>::from(&o->stop);
    fair_semaphore<S>& s = fair_semaphore<S>::from(&o->fair);
    waiter_slot& slot = waiter_slot::from(&o->slot);
    init(&s, 2);
    init(&slot);
    unsigned int seen = fair_semaphore<S>::max();
    s.release();
    s.release(2);
    seen += static_cast<unsigned int>(s.try_release(1));
    seen += s.try_acquire();
    s.acquire(slot);
    seen += s.try_acquire_for(slot, 50) + s.try_acquire_for(slot, forever);
    seen += static_cast<unsigned int>(s.acquire(slot, stop)) + static_cast<unsigned int>(s.acquire(slot, stop.get_token()));
    seen += (s.native() != nullptr) + (slot.native() != nullptr);
    return seen;
}

template <thread_scope S>
__device__ unsigned int use_stop(objects* o, unsigned int* counter) {
    stop_source<S>& source = stop_source<S>::from(&o->stop);
    init(&source);
    unsigned int seen = source.stop_possible() + source.stop_requested();
    stop_token<S> token = source.get_token();
    stop_token<S> copy = token;
    seen += copy.stop_possible() + copy.stop_requested() + (copy.native() == source.native());
    seen += stop_token<S>().stop_possible();
    {
        stop_callback<S> local(source, count_call, counter);
        stop_callback<S> from_token(token, count_call, counter);
        seen += source.request_stop();
    }
    stop_callback<S>* placed = stop_callback<S>::attach(&o->callback, source, count_call, counter);
    stop_callback<S>::detach(placed);
    return seen;
}

// ---- one kernel per object type, every scope ----

#if SCOPED_SYNC_HAS_CLUSTER
#define SS_CHECK_ALL_SCOPES(F, ...) \
    (F<thread_scope_block>(__VA_ARGS__) + F<thread_scope_cluster>(__VA_ARGS__) + F<thread_scope_device>(__VA_ARGS__) + F<thread_scope_system>(__VA_ARGS__))
#else
#define SS_CHECK_ALL_SCOPES(F, ...) \
    (F<thread_scope_block>(__VA_ARGS__) + F<thread_scope_device>(__VA_ARGS__) + F<thread_scope_system>(__VA_ARGS__))
#endif

extern "C" __global__ void check_barrier(objects* o, unsigned int* out) { *out = SS_CHECK_ALL_SCOPES(use_barrier, o); }

extern "C" __global__ void check_barrier_with_completion(objects* o, unsigned int* out) {
    *out = SS_CHECK_ALL_SCOPES(use_barrier_with_completion, o, out);
}

extern "C" __global__ void check_latch(objects* o, unsigned int* out) { *out = SS_CHECK_ALL_SCOPES(use_latch, o); }

extern "C" __global__ void check_semaphores(objects* o, unsigned int* out) {
    // The library's count limit is the header's constant (the wrappers use the constant).
    *out = SS_CHECK_ALL_SCOPES(use_semaphores, o) + (ss_counting_semaphore_max() == SS_SEMAPHORE_MAX);
}

extern "C" __global__ void check_fair_semaphore(objects* o, unsigned int* out) {
    *out = SS_CHECK_ALL_SCOPES(use_fair_semaphore, o);
}

extern "C" __global__ void check_stop(objects* o, unsigned int* out) { *out = SS_CHECK_ALL_SCOPES(use_stop, o, out); }

// Wrappers as `__shared__` and `__device__` variables (trivial construction), placed
// with `init` by one thread as with libcu++.
__device__ barrier<thread_scope_device> global_barrier;
__device__ stop_source<thread_scope_device> global_stop;

extern "C" __global__ void check_shared_placement(unsigned int* out) {
    __shared__ barrier<thread_scope_block> bar;
    __shared__ barrier_with_completion<thread_scope_block> bar_completion;
    __shared__ latch<thread_scope_block> done;
    __shared__ counting_semaphore<thread_scope_block> counting;
    __shared__ binary_semaphore<thread_scope_block> binary;
    __shared__ fair_semaphore<thread_scope_block> fair;
    __shared__ waiter_slot slots[32];
    __shared__ stop_source<thread_scope_block> stop;
    __shared__ ss_stop_callback callback_storage;
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
        init(&bar_completion, blockDim.x, count_call, out);
        init(&done, blockDim.x);
        init(&counting, 1);
        init(&binary, 1);
        init(&fair, 1);
        init(&stop);
        init(&global_barrier, gridDim.x);
        init(&global_stop);
    }
    init(&slots[threadIdx.x % 32]);
    __syncthreads();
    auto* callback = stop_callback<thread_scope_block>::attach(&callback_storage, stop, count_call, out);
    bar.arrive_and_wait();
    bar_completion.arrive_and_wait();
    done.arrive_and_wait();
    counting.acquire();
    counting.release();
    binary.acquire();
    binary.release();
    fair.acquire(slots[threadIdx.x % 32]);
    fair.release();
    global_barrier.arrive_and_wait(global_stop);
    stop_callback<thread_scope_block>::detach(callback);
}

extern "C" __global__ void check_grid(grid g, ss_grid raw, unsigned int* out) {
    g.sync();
    grid& from_raw = grid::from(raw);
    from_raw.sync();
    // The library's own phase, which the wrapper's inline `sync` mirrors.
    ss_grid_sync(&raw);
    *out = g.phase() + from_raw.phase() + (g.native() != nullptr) + raw.phase + ss_grid_phase(&raw);
}

extern "C" __global__ void check_multi_grid(multi_grid m, ss_multi_grid raw, unsigned int* out) {
    m.sync();
    unsigned int seen = static_cast<unsigned int>(m.sync_for(1000000));
    u64 phase = m.arrive();
    m.wait(phase);
    phase = m.arrive();
    seen += static_cast<unsigned int>(m.wait_for(phase, 1000));
    seen += m.rank() + m.ranks() + (m.native() != nullptr);
    multi_grid& from_raw = multi_grid::from(raw);
    from_raw.sync();
    if (seen == 12345) {
        m.abort();
    }
    *out = seen;
}

extern "C" __global__ void check_bus_stop_source(ss_bus_stop_source* raw, unsigned int* out) {
    bus_stop_source& stop = bus_stop_source::from(raw);
    unsigned int seen = stop.request_stop() + stop.stop_requested() + stop.requested_by_host();
    seen += static_cast<unsigned int>(stop.wait()) + static_cast<unsigned int>(stop.wait(100));
    *out = seen + (stop.native() != nullptr);
}

extern "C" __global__ void check_bus_barrier(ss_bus_barrier* raw, ss_bus_stop_source* raw_stop, unsigned int* out) {
    bus_barrier& b = bus_barrier::from(raw);
    const bus_stop_source* stop = &bus_stop_source::from(raw_stop);
    bus_arrival_token token = b.arrive();
    bus_arrival_token copy = token;
    unsigned int seen = b.try_wait(copy);
    seen += static_cast<unsigned int>(b.wait(token)) + static_cast<unsigned int>(b.wait(b.arrive(2), stop, 100));
    seen += static_cast<unsigned int>(b.arrive_and_wait()) + static_cast<unsigned int>(b.arrive_and_wait(stop, 100));
    *out = seen + (b.native() != nullptr) + (token.native() != nullptr);
}

extern "C" __global__ void check_bus_latch(ss_bus_latch* raw, ss_bus_stop_source* raw_stop, unsigned int* out) {
    bus_latch& l = bus_latch::from(raw);
    const bus_stop_source* stop = &bus_stop_source::from(raw_stop);
    l.count_down();
    l.count_down(3);
    unsigned int seen = l.try_wait();
    seen += static_cast<unsigned int>(l.wait()) + static_cast<unsigned int>(l.wait(stop, 100));
    seen += static_cast<unsigned int>(l.arrive_and_wait()) + static_cast<unsigned int>(l.arrive_and_wait(2, stop, 100));
    *out = seen + (l.native() != nullptr);
}

__device__ unsigned int use_consumer(handoff_consumer consumer, const bus_stop_source* stop) {
    if (!consumer) {
        return 0;
    }
    u64 sequence = 0;
    unsigned int seen = consumer.valid() + consumer.try_acquire(sequence) + consumer.try_acquire();
    seen += static_cast<unsigned int>(consumer.acquire(sequence)) + static_cast<unsigned int>(consumer.acquire(sequence, stop, 100));
    seen += static_cast<unsigned int>(consumer.acquire()) + static_cast<unsigned int>(consumer.acquire(stop, 100));
    seen += static_cast<unsigned int>(consumer.acquired() + sequence);
    handoff_consumer moved = mv(consumer);
    consumer = mv(moved);
    consumer.reset();
    return seen;
}

__device__ unsigned int use_producer(handoff_producer producer) {
    if (!producer.valid()) {
        return 0;
    }
    unsigned int seen = static_cast<unsigned int>(producer.release() + producer.release(3) + producer.released());
    handoff_producer moved(mv(producer));
    producer = mv(moved);
    producer.reset();
    return seen + static_cast<bool>(producer);
}

extern "C" __global__ void check_handoff_channel(ss_handoff_channel* raw, ss_bus_stop_source* raw_stop, unsigned int* out) {
    handoff_channel& channel = handoff_channel::from(raw);
    const bus_stop_source* stop = &bus_stop_source::from(raw_stop);
    u64 sequence = channel.release() + channel.release(2);
    unsigned int seen = channel.try_acquire(sequence) + channel.try_acquire();
    seen += static_cast<unsigned int>(channel.acquire(sequence)) + static_cast<unsigned int>(channel.acquire(sequence, stop, 100));
    seen += static_cast<unsigned int>(channel.acquire()) + static_cast<unsigned int>(channel.acquire(stop, 100));
    seen += static_cast<unsigned int>(channel.sent() + channel.received() + sequence);
    seen += use_consumer(channel.consumer(), stop) + use_producer(channel.producer());
    *out = seen + (channel.native() != nullptr);
}

extern "C" __global__ void check_handoff_to_gpu(ss_handoff_semaphore* raw, ss_bus_stop_source* raw_stop, unsigned int* out) {
    handoff_to_gpu& to_gpu = handoff_to_gpu::from(raw);
    const bus_stop_source* stop = &bus_stop_source::from(raw_stop);
    u64 sequence = 0;
    unsigned int seen = to_gpu.try_acquire(sequence) + to_gpu.try_acquire();
    seen += static_cast<unsigned int>(to_gpu.acquire(sequence)) + static_cast<unsigned int>(to_gpu.acquire(sequence, stop, 100));
    seen += static_cast<unsigned int>(to_gpu.acquire()) + static_cast<unsigned int>(to_gpu.acquire(stop, 100));
    seen += use_consumer(to_gpu.consumer(), stop);
    *out = seen + static_cast<unsigned int>(sequence) + (to_gpu.native() != nullptr);
}

extern "C" __global__ void check_handoff_to_host(ss_handoff_semaphore* raw, unsigned int* out) {
    handoff_to_host& to_host = handoff_to_host::from(raw);
    unsigned int seen = static_cast<unsigned int>(to_host.release() + to_host.release(4));
    seen += use_producer(to_host.producer());
    *out = seen + (to_host.native() != nullptr);
}

extern "C" __global__ void check_handoff_gpu_to_gpu(ss_handoff_semaphore* raw, ss_bus_stop_source* raw_stop, unsigned int* out) {
    handoff_gpu_to_gpu& peer = handoff_gpu_to_gpu::from(raw);
    const bus_stop_source* stop = &bus_stop_source::from(raw_stop);
    u64 sequence = peer.release() + peer.release(2);
    unsigned int seen = peer.try_acquire(sequence) + peer.try_acquire();
    seen += static_cast<unsigned int>(peer.acquire(sequence)) + static_cast<unsigned int>(peer.acquire(sequence, stop, 100));
    seen += static_cast<unsigned int>(peer.acquire()) + static_cast<unsigned int>(peer.acquire(stop, 100));
    seen += use_consumer(peer.consumer(), stop) + use_producer(peer.producer());
    *out = seen + static_cast<unsigned int>(sequence) + (peer.native() != nullptr);
}
