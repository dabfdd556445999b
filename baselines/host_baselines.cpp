// The host peers of scoped-sync's CPU primitives: libstdc++'s C++20 std::barrier,
// std::latch, std::counting_semaphore and std::stop_token, in the workload shapes of
// report/src/report/workloads.rs. The report runs this program once per measurement,
// alternating with its own (`scoped-sync --anchor PATH`), and files what it prints as
// the `libstdcxx` implementation of the same workload.
//
// Build: g++ -O2 -std=c++20 -pthread baselines/host_baselines.cpp -o host_baselines
// Run:   host_baselines WORKLOAD THREADS ITERATIONS
//        prints one line: nanoseconds per operation (per phase, per round trip, per
//        acquire+release, per latch, per poll, per registration).
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <memory>
#include <semaphore>
#include <stop_token>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Wall time of `body` in nanoseconds, divided by `ops`.
template <class Body>
double ns_per_op(long ops, Body body) {
    const auto start = Clock::now();
    body();
    const std::chrono::duration<double, std::nano> elapsed = Clock::now() - start;
    return elapsed.count() / static_cast<double>(ops);
}

// Runs `body(t)` on `threads` threads and joins them (jthread joins on destruction).
template <class Body>
void on_threads(int threads, Body body) {
    std::vector<std::jthread> workers;
    workers.reserve(threads);
    for (int t = 0; t < threads; ++t) workers.emplace_back([&body, t] { body(t); });
}

// Every thread arrives at one std::barrier `phases` times. Per phase.
double barrier_phase(int threads, long phases) {
    std::barrier<> barrier(threads);
    return ns_per_op(phases, [&] {
        on_threads(threads, [&](int) {
            for (long p = 0; p < phases; ++p) barrier.arrive_and_wait();
        });
    });
}

// threads / 2 independent pairs, each handing one unit back and forth through its own
// two semaphores `trips` times. Per round trip of one pair.
double ping_pong(int threads, long trips) {
    const int pairs = threads / 2;
    std::vector<std::unique_ptr<std::counting_semaphore<>>> ping, pong;
    for (int p = 0; p < pairs; ++p) {
        ping.push_back(std::make_unique<std::counting_semaphore<>>(0));
        pong.push_back(std::make_unique<std::counting_semaphore<>>(0));
    }
    return ns_per_op(trips, [&] {
        on_threads(2 * pairs, [&](int t) {
            auto& mine = t % 2 == 0 ? *ping[t / 2] : *pong[t / 2];
            auto& theirs = t % 2 == 0 ? *pong[t / 2] : *ping[t / 2];
            for (long i = 0; i < trips; ++i) {
                if (t % 2 == 0) {
                    theirs.release();
                    mine.acquire();
                } else {
                    mine.acquire();
                    theirs.release();
                }
            }
        });
    });
}

// Every thread acquires and releases one semaphore of 4 units `pairs` times. Per
// acquire+release of one thread.
double contended(int threads, long pairs) {
    std::counting_semaphore<> units(4);
    return ns_per_op(pairs, [&] {
        on_threads(threads, [&](int) {
            for (long i = 0; i < pairs; ++i) {
                units.acquire();
                units.release();
            }
        });
    });
}

// One thread: acquire+release of a semaphore that always has a unit.
double uncontended(long pairs) {
    std::counting_semaphore<> lock(1);
    return ns_per_op(pairs, [&] {
        for (long i = 0; i < pairs; ++i) {
            lock.acquire();
            lock.release();
        }
    });
}

// `rounds` fresh latches of `threads`; every thread counts each down and waits on it,
// in turn. Per latch. With one thread: construction plus the fast paths.
double latch_rounds(int threads, long rounds) {
    if (threads == 1) {
        return ns_per_op(rounds, [&] {
            for (long i = 0; i < rounds; ++i) {
                std::latch once(1);
                once.count_down();
                once.wait();
            }
        });
    }
    std::vector<std::unique_ptr<std::latch>> latches;
    latches.reserve(rounds);
    for (long i = 0; i < rounds; ++i) latches.push_back(std::make_unique<std::latch>(threads));
    return ns_per_op(rounds, [&] {
        on_threads(threads, [&](int) {
            for (long i = 0; i < rounds; ++i) latches[i]->arrive_and_wait();
        });
    });
}

double stop_requested(long polls) {
    std::stop_source source;
    const std::stop_token token = source.get_token();
    long stopped = 0;
    const double ns = ns_per_op(polls, [&] {
        for (long i = 0; i < polls; ++i) stopped += token.stop_requested() ? 1 : 0;
    });
    // Printed to stderr so that the polls cannot be optimized away.
    if (stopped != 0) std::fprintf(stderr, "stopped %ld times\n", stopped);
    return ns;
}

double stop_callback(long registrations) {
    std::stop_source source;
    const std::stop_token token = source.get_token();
    return ns_per_op(registrations, [&] {
        for (long i = 0; i < registrations; ++i) {
            std::stop_callback registered(token, [] {});
        }
    });
}

int usage() {
    std::fprintf(stderr,
                 "usage: host_baselines WORKLOAD THREADS ITERATIONS\n"
                 "workloads: barrier ping_pong contended uncontended latch stop_requested "
                 "stop_callback\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) return usage();
    const char* workload = argv[1];
    const int threads = std::atoi(argv[2]);
    const long iterations = std::atol(argv[3]);
    if (threads < 1 || iterations < 1) return usage();
    double ns;
    if (std::strcmp(workload, "barrier") == 0) {
        ns = barrier_phase(threads, iterations);
    } else if (std::strcmp(workload, "ping_pong") == 0 && threads % 2 == 0) {
        ns = ping_pong(threads, iterations);
    } else if (std::strcmp(workload, "contended") == 0) {
        ns = contended(threads, iterations);
    } else if (std::strcmp(workload, "uncontended") == 0 && threads == 1) {
        ns = uncontended(iterations);
    } else if (std::strcmp(workload, "latch") == 0) {
        ns = latch_rounds(threads, iterations);
    } else if (std::strcmp(workload, "stop_requested") == 0 && threads == 1) {
        ns = stop_requested(iterations);
    } else if (std::strcmp(workload, "stop_callback") == 0 && threads == 1) {
        ns = stop_callback(iterations);
    } else {
        return usage();
    }
    std::printf("%.3f\n", ns);
    return 0;
}
