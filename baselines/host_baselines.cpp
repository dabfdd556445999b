// The host peers of scoped-sync's CPU primitives: libstdc++'s C++20 std::barrier,
// std::latch, std::counting_semaphore and std::stop_token, timed the way the report
// times ours (scripts/compare-host.sh runs both, alternating, and prints the ratios).
//
// Build: g++ -O2 -std=c++20 -pthread baselines/host_baselines.cpp -o host_baselines
//
// Each line is "<what>: <ns> <unit>"; compare-host.sh keys on the text before the colon.
#include <barrier>
#include <chrono>
#include <cstdio>
#include <latch>
#include <semaphore>
#include <stop_token>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Nanoseconds per operation of `ops` operations that `body` performs.
template <class Body>
double ns_per_op(long ops, Body body) {
    const auto start = Clock::now();
    body();
    const std::chrono::duration<double, std::nano> elapsed = Clock::now() - start;
    return elapsed.count() / static_cast<double>(ops);
}

// Every one of `threads` threads arrives at one std::barrier `phases` times.
double barrier_phase(int threads, long phases) {
    std::barrier<> barrier(threads);
    return ns_per_op(phases, [&] {
        std::vector<std::jthread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&] {
                for (long p = 0; p < phases; ++p) barrier.arrive_and_wait();
            });
        }
    });
}

// Two threads hand one unit back and forth through two semaphores.
double semaphore_round_trip(long trips) {
    std::counting_semaphore<> ping(0), pong(0);
    return ns_per_op(trips, [&] {
        std::jthread partner([&] {
            for (long i = 0; i < trips; ++i) {
                ping.acquire();
                pong.release();
            }
        });
        for (long i = 0; i < trips; ++i) {
            ping.release();
            pong.acquire();
        }
    });
}

}  // namespace

int main() {
    std::printf("hardware threads: %u\n", std::thread::hardware_concurrency());
    for (int threads : {2, 4}) {
        std::printf("std::barrier arrive_and_wait, %d threads: %8.1f ns/phase\n", threads,
                    barrier_phase(threads, 200000));
    }
    std::printf("std::counting_semaphore ping-pong 2 threads: %8.1f ns/round trip\n",
                semaphore_round_trip(200000));

    std::counting_semaphore<> lock(1);
    const long uncontended = 10000000;
    std::printf("std::counting_semaphore uncontended acquire+release: %6.2f ns\n",
                ns_per_op(uncontended, [&] {
                    for (long i = 0; i < uncontended; ++i) {
                        lock.acquire();
                        lock.release();
                    }
                }));

    const long latches = 100000;
    std::printf("std::latch count_down+wait uncontended: %6.2f ns\n", ns_per_op(latches, [&] {
                    for (long i = 0; i < latches; ++i) {
                        std::latch once(1);
                        once.count_down();
                        once.wait();
                    }
                }));

    std::stop_source source;
    const std::stop_token token = source.get_token();
    const long polls = 1000000;
    long stopped = 0;
    const double poll = ns_per_op(polls, [&] {
        for (long i = 0; i < polls; ++i) stopped += token.stop_requested() ? 1 : 0;
    });
    // `stopped` is printed so that the polls cannot be optimized away.
    std::printf("std::stop_token stop_requested poll: %6.2f ns (%ld)\n", poll, stopped);
    const long callbacks = 100000;
    std::printf("std::stop_callback register+deregister: %6.2f ns\n", ns_per_op(callbacks, [&] {
                    for (long i = 0; i < callbacks; ++i) {
                        std::stop_callback registered(token, [] {});
                    }
                }));
}
