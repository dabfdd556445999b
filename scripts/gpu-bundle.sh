#!/usr/bin/env bash
# Builds a self-contained bundle of the GPU suite for a GPU host that has no Rust
# toolchain: the GPU test executables and the report binary (the project's kernels,
# built with sync-build, are embedded in them), the user-kernels example (its own
# kernels embedded), a runner, and the CUDA C++ anchor with its comparison script.
#
#   bash scripts/gpu-bundle.sh [DIR]      # default DIR: bundle/
#   # copy DIR to the GPU host, then there:
#   bash DIR/run.sh                       # the GPU tests and the example below
#   bash DIR/checked.sh                   # the GPU tests on the checked kernels
#   bash DIR/sanitize.sh [TOOL...]        # the GPU tests under compute-sanitizer, each
#                                         # test in its own process (see the script)
#   bash DIR/compare.sh                   # per-scope costs beside CUDA C++ (needs nvcc;
#                                         # the same-address table also needs cupy)
#   bash DIR/host.sh                      # CPU scaling of this host beside libstdc++ and
#                                         # Rust std (needs g++): records and charts
#   bash DIR/gate.sh KIND [--calibrate]   # regression gate: re-measure, check every ratio
#                                         # against ratios.json for machine KIND
#   DIR/bench-gpu --bench                 # the criterion GPU benches
#   DIR/bench-cuda-cpp                    # CUDA C++ kernels through the device library
#                                         # beside Rust kernels, libcu++ and cg
#   DIR/persistent_kernel                 # the host-fed persistent kernel example
#   DIR/cuda-cpp-example [PART]           # CUDA C++ kernels on scoped-sync's objects
#                                         # (worker, jacobi, nvrtc, all)
#   DIR/user-kernels-example [PART]       # the user's-workspace example (jacobi, cluster,
#                                         # worker, all; `bench DIR/kernels.ptx` compares
#                                         # its grid barrier with the project's)
#   nvcc ... DIR/mapped-line.cu           # why round trips share one mapped line (see
#                                         # the file)
#   bash DIR/multi-compare.sh [ROUNDS] [GPUS]
#                                         # MultiGrid (one process, and one process per
#                                         # GPU) and the GpuToGpu handoff beside CUDA C++
#                                         # (multi_gpu_baselines.cu; nvcc), NCCL's
#                                         # device-API barrier (nccl_barriers.cu, where
#                                         # NCCL >= 2.28 is installed) and NVSHMEM's
#                                         # (nvshmem_barriers.cu, where NVSHMEM 3 is)
#   python3 DIR/mbarrier-loop.py          # what Barrier<Block> pays per phase over the
#                                         # bare mbarrier loop (needs nvcc and cupy)
#
# The runner runs every test, and the persistent-kernel example, twice: as is, and
# serialized under CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1 (the check of
# forward progress that the CUDA execution model suggests: a launch there returns only
# when its kernel ends, so a kernel that the host feeds must be launched from another
# thread, as `sync_host::cuda::beside::launch_beside` does).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bundle}"

export SYNC_BUILD_REQUIRED=1
# sync-build compiles the CUDA C++ test kernels with it (harness/build.rs).
NVCC="${NVCC:-$(bash scripts/nvcc.sh)}"
export NVCC
# The NVSHMEM headers the shim is compiled against (harness/build.rs): the release the
# GPU hosts' PyTorch installs, whose host and device libraries the tests load there (a
# shim of another release is refused at load time; the host library of this one,
# 48 MB, is too large to bundle).
NVSHMEM_HOME="${NVSHMEM_HOME:-$(NVSHMEM_RELEASE=3.4.5 bash scripts/nvshmem.sh)}"
export NVSHMEM_HOME
rm -rf "$out"
mkdir -p "$out"
cargo test --release --locked --no-run --test 'gpu*' --message-format=json 2>/dev/null \
    | python3 -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable") and message["profile"]["test"]:
        print(message["target"]["name"], message["executable"])
' | while read -r name executable; do
    cp "$executable" "$out/$name"
    strip "$out/$name"
done

for bench in gpu cuda_cpp; do
    cargo bench --locked --no-run --bench "$bench" --message-format=json 2>/dev/null \
        | python3 -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable") and message["target"]["kind"] == ["bench"]:
        print(message["executable"])
' | while read -r executable; do
        cp "$executable" "$out/bench-${bench//_/-}"
        strip "$out/bench-${bench//_/-}"
    done
done
cargo build --release --locked -p scoped-sync-report --bin scoped-sync
cargo build --release --locked -p scoped-sync --example persistent_kernel
cargo build --release --locked -p user-kernels-example
cargo build --release --locked -p cuda-cpp-example
cargo build --release --locked -p scoped-sync-run
cp target/release/cuda-cpp-example "$out/cuda-cpp-example"
strip "$out/cuda-cpp-example"
cp target/release/scoped-sync "$out/scoped-sync"
cp target/release/scoped-sync-run "$out/scoped-sync-run"
cp target/release/examples/persistent_kernel "$out/persistent_kernel"
cp target/release/user-kernels-example "$out/user-kernels-example"
strip "$out/scoped-sync" "$out/scoped-sync-run" "$out/persistent_kernel" "$out/user-kernels-example"
cp scripts/gpu-compare.sh "$out/compare.sh"
cp scripts/gpu-multi-compare.sh "$out/multi-compare.sh"
cp scripts/gpu-placement.py "$out/placement.py"
cp scripts/gpu-mapped-line.cu "$out/mapped-line.cu"
cp scripts/gpu-mbarrier-loop.py "$out/mbarrier-loop.py"
# The PTX the binaries embed, for placement.py (which loads it beside the anchor's) and
# for the example's `bench` (which loads it beside its own module).
cp "$(ls -t target/release/build/harness-*/out/kernels.ptx | head -1)" "$out/kernels.ptx"
# The CUDA C++ peers compare.sh builds and runs beside the report, and the C++20 host
# peers host.sh and gate.sh build (the project's own); the stored ratios gate.sh checks.
cp baselines/gpu_baselines.cu baselines/multi_gpu_baselines.cu baselines/nccl_barriers.cu baselines/nvshmem_barriers.cu baselines/process_rank.h \
    baselines/host_baselines.cpp "$out/"
cp benches/ratios.json "$out/ratios.json"
# The libc++ host peer, built here (a GPU host has g++ but seldom clang with libc++):
# zig's c++ links libc++ in, so the program runs there as it is. Without it host.sh
# says so and measures the rest.
if ! bash scripts/libcxx.sh "$out/host_baselines_libcxx"; then
    echo "gpu-bundle: no libc++ anchor in the bundle (scripts/libcxx.sh failed)" >&2
fi

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled GPU tests; exits non-zero if any run fails.
set -uo pipefail
cd "$(dirname "$0")"
status=0
for test in ./*; do
    case "$test" in *.sh | ./scoped-sync | ./scoped-sync-run | ./bench-gpu | ./bench-cuda-cpp | ./persistent_kernel | ./user-kernels-example | ./cuda-cpp-example | ./host_baselines | ./host_baselines_libcxx | *.cu | *.cpp | *.py | *.ptx | *.json) continue ;; esac
    # Plain executables only: sanitize.sh leaves its logs in a folder here.
    [[ -f "$test" && -x "$test" ]] || continue
    echo "== $test"
    "$test" --test-threads=1 || status=1
    echo "== $test (CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1)"
    CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1 "$test" --test-threads=1 || status=1
done
# The host-fed persistent kernel and the round trips, with fewer items than its default.
echo "== ./persistent_kernel 20000"
./persistent_kernel 20000 || status=1
echo "== ./persistent_kernel 20000 (CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1)"
CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1 ./persistent_kernel 20000 || status=1
# The user's-workspace example: its own kernels, loaded as any user's.
echo "== ./user-kernels-example"
./user-kernels-example || status=1
echo "== ./user-kernels-example (CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1)"
CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1 ./user-kernels-example || status=1
# The CUDA C++ example: nvcc-built kernels and the NVRTC path.
echo "== ./cuda-cpp-example"
./cuda-cpp-example || status=1
echo "== ./cuda-cpp-example (CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1)"
CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_LAUNCH_BLOCKING=1 ./cuda-cpp-example || status=1
exit $status
RUN
chmod +x "$out/run.sh"

cat > "$out/checked.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled GPU tests on the checked build of the kernels (debug assertions:
# scope-misuse traps, printed precondition messages): a legal program must not trap.
set -uo pipefail
cd "$(dirname "$0")"
status=0
for test in ./gpu*; do
    [[ -x "$test" ]] || continue
    echo "== $test (SCOPED_SYNC_KERNELS=checked)"
    SCOPED_SYNC_KERNELS=checked "$test" --test-threads=1 || status=1
done
echo "== ./user-kernels-example (SCOPED_SYNC_KERNELS=checked)"
SCOPED_SYNC_KERNELS=checked ./user-kernels-example || status=1
exit $status
RUN
chmod +x "$out/checked.sh"

cat > "$out/sanitize.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled GPU tests under compute-sanitizer, every test in a process of its
# own: a tool that reports an error ends that kernel and the process's CUDA context is
# lost, so a shared process would fail every later test of the executable too.
#
#   bash sanitize.sh [TOOL...]     # default: memcheck racecheck synccheck initcheck
#
# For each TOOL, each test of each gpu* executable (listed with --list, run with
# --exact) runs as `compute-sanitizer --tool TOOL --error-exitcode 99 EXE --exact TEST`.
# A test passes when it ran and passed and the tool reported nothing, unless the table
# in `expectation` says otherwise: that every error the tool reports is of one kind
# (initcheck, the uninitialised latch of gpu_sanitize; memcheck, the deliberate traps
# of gpu_fault and of each trapping case of gpu_device_checks, and the hardware's own
# fault on the unplaced block barrier; synccheck, that barrier's missing init), or
# that the tool does not run the test, and why (docs/sanitizers.md).
# gpu_device_checks has no libtest harness but the same --list and --exact: each case
# and build runs alone (its kernel in a child process, which the tool follows), named
# `traps::BUILD::CASE` or `runs::BUILD::CASE`, so a new error in any case fails. The
# summary says per tool which tests passed, failed and were not run, and why; the exit
# status is 1 if any failed.
#
# The runner tells the tests which tool runs them (SCOPED_SYNC_SANITIZER: under any
# tool the conformance kernels' timed waits get 60 s instead of 2 s; under racecheck
# the stress tests of gpu_conformance run a fiftieth of their phases and a 64th of
# their acquisitions; under synccheck the barrier matrices meet with arrive_and_wait
# where they would meet with a whole-block arrival) and asks for fewer instances per litmus case
# (SCOPED_SYNC_LITMUS_INSTANCES: 1e5, 1e4 under racecheck), as a sanitizer slows
# kernels a hundredfold and racecheck contended atomics far more.
#
# Environment: SANITIZE_JOBS=N runs N executables at once, of any tool (default 1;
# they share the GPU); SANITIZE_TIMEOUT=S ends a test after S seconds, as a failure
# (default 1800); SANITIZE_ONLY=REGEX runs only the tests whose EXE::TEST matches
# (grep -E); SANITIZE_LOGS=DIR keeps each test's full output (default sanitize-logs/);
# SCOPED_SYNC_LITMUS_INSTANCES, if set, applies to every tool.
set -uo pipefail
cd "$(dirname "$0")"
tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(memcheck racecheck synccheck initcheck)
litmus_instances="${SCOPED_SYNC_LITMUS_INSTANCES:-}"
jobs="${SANITIZE_JOBS:-1}"
limit="${SANITIZE_TIMEOUT:-1800}"
only="${SANITIZE_ONLY:-}"
logs="${SANITIZE_LOGS:-sanitize-logs}"
whole_skip='(^|[.]{3} )skipped: '

# What TOOL must make of EXE's TEST: `clean` (nothing reported, the test passes),
# `flag PATTERN` (the tool reports an error whose report holds PATTERN, and the test
# itself passes), or `skip REASON` (not run under this tool).
expectation() {
    local tool="$1" exe="$2" test="$3"
    case "$tool:$exe:$test" in
        initcheck:gpu_sanitize:initcheck_reports_a_latch_used_before_it_was_initialised)
            echo "flag Uninitialized __global__ memory read of size 4 bytes" ;;
        # The release kernels leave an unplaced Barrier<Block> to the hardware, whose
        # mbarrier faults on its uninitialised word (FAULTS_ON_UNPLACED): memcheck
        # names no kind for that fault, synccheck sees the barrier used before init.
        memcheck:gpu_device_checks:traps::release::block_barrier_not_placed)
            echo "flag Unknown Error" ;;
        synccheck:gpu_device_checks:traps::release::block_barrier_not_placed)
            echo "flag Barrier error detected. Missing init." ;;
        memcheck:gpu_fault:* | memcheck:gpu_peer_fault:* | memcheck:gpu_device_checks:traps::*)
            echo "flag Trace/breakpoint trap" ;;
        # Rank 1's kernel traps on purpose (the tool follows the test's child processes).
        memcheck:gpu_process:a_trapped_kernel_in_one_process_ends_the_others_waits_within_a_second)
            echo "flag Trace/breakpoint trap" ;;
        # NVSHMEM's own start (nvshmemx_hostlib_init_attr, NVSHMEM 3.4.5) copies words of
        # its teams it has not initialised (nvshmemi_team_init_nccl_comm): every error
        # counted must have that frame, so none comes from scoped-sync's calls.
        initcheck:gpu_process:*nvshmem*)
            echo "flag Host Frame: nvshmemi_team_init_nccl_comm" ;;
        racecheck:gpu_conformance:semaphore_conformance_matrix_and_stress)
            echo "skip racecheck does not model the order that an atomics-based acquire and release give, and reports the plain read and write of the counter that a semaphore in shared memory guards as a mutex; judged through semaphore_in_shared_memory_guarding_a_global_counter (docs/sanitizers.md)" ;;
        racecheck:gpu_conformance:barrier_conformance_matrix)
            echo "skip racecheck counts the release stores with which a barrier in shared memory opens the next phase after its completion (and, measured when a barrier became an mbarrier at its first use, that conversion) as plain writes racing with the other threads' loads (the PTX memory model says otherwise); judged through barrier_in_block_shared_memory_with_its_form_settled_first, the completion's store not judged (docs/sanitizers.md)" ;;
        racecheck:gpu_conformance:barrier_without_completion_conformance_matrix)
            echo "skip racecheck counted the release store with which the Block-scope barrier in shared memory turned into an mbarrier at its first use (placing in init_block has replaced it; not re-run since) as a plain write racing with the other threads' loads, and with clusters of 8 reports accesses to the barrier in rank 0's shared memory as made to a block that might have already exited; judged through barrier_in_block_shared_memory_with_its_form_settled_first and barrier_without_completion_in_shared_memory_at_wider_scopes (docs/sanitizers.md)" ;;
        # Not a test of its own: the body of the ranks the other gpu_process tests start
        # (as child processes, which the tool follows and judges there); alone it makes
        # no CUDA call, and the tool ends such a process with status 255.
        *:gpu_process:rank)
            echo "skip the ranks' body; judged inside the other gpu_process tests, which run it as child processes" ;;
        *) echo clean ;;
    esac
}

# Extra compute-sanitizer options for EXE.
tool_options() {
    # gpu_runtime provokes failed API calls on purpose (broken PTX, a missing kernel),
    # and after the deliberate traps of gpu_fault, gpu_peer_fault, gpu_device_checks and
    # gpu_process (and gpu_process's killed rank)
    # every call on the lost context fails: not errors of the program.
    case "$1" in gpu_runtime | gpu_fault | gpu_peer_fault | gpu_device_checks | gpu_process) echo "--report-api-errors no" ;; esac
    return 0
}

# The tests of EXE, one per line.
tests_of() {
    "./$1" --list --format terse 2>/dev/null | sed -n 's/: test$//p'
}

# The errors the tool counted in LOG (the sum of its summary lines: one per process).
errors_in() {
    grep -aoE '(ERROR|RACECHECK) SUMMARY: [0-9]+ (error|hazard)' "$1" \
        | awk '{ n += $3 } END { print n + 0 }'
}

# Runs the tests of EXE under TOOL; writes `passed|failed|not-run EXE::TEST (why)`
# lines to $logs/TOOL/EXE.results.
run_exe() {
    local tool="$1" exe="$2" test name log code verdict why expect start took ran print_limit
    local results="$logs/$tool/$exe.results"
    local args
    : > "$results"
    export SCOPED_SYNC_SANITIZER="$tool"
    if [[ -n "$litmus_instances" ]]; then
        export SCOPED_SYNC_LITMUS_INSTANCES="$litmus_instances"
    elif [[ "$tool" == racecheck ]]; then
        export SCOPED_SYNC_LITMUS_INSTANCES=10000
    else
        export SCOPED_SYNC_LITMUS_INSTANCES=100000
    fi
    while read -r test; do
        [[ -n "$test" ]] || continue
        name="$exe::$test"
        args=(--exact "$test" --test-threads=1)
        if [[ -n "$only" ]] && ! grep -Eq -- "$only" <<<"$name"; then continue; fi
        expect="$(expectation "$tool" "$exe" "$test")"
        if [[ "$expect" == skip\ * ]]; then
            echo "not-run $name (${expect#skip })" >> "$results"
            echo "[$tool] $name: not run"
            continue
        fi
        log="$logs/$tool/$(tr -c 'A-Za-z0-9_.\n-' _ <<<"$name").log"
        start=$SECONDS
        # Every error printed where some are expected: each must be matched.
        if [[ "$expect" == clean ]]; then print_limit=20; else print_limit=100000; fi
        # shellcheck disable=SC2046
        timeout -k 10 "$limit" compute-sanitizer --tool "$tool" $(tool_options "$exe") \
            --error-exitcode 99 --print-limit "$print_limit" "./$exe" "${args[@]}" \
            < /dev/null > "$log" 2>&1
        code=$?
        took=$((SECONDS - start))
        # Whether the test ran and passed by its own account: libtest's count, or
        # gpu_device_checks' closing line.
        ran=0
        # A whole-test skip (tests/common/mod.rs `skip`): at the start of a line, or
        # after libtest's "test NAME ... " (a partial skip reads "PART skipped").
        if grep -aqE "$whole_skip" "$log"; then
            ran=-1
        elif grep -aq "Target application returned an error" "$log"; then
            ran=0
        elif grep -aqE "test result: ok. 1 passed|^device checks: [0-9]+ passed, 0 failed" "$log"; then
            ran=1
        fi
        verdict=failed
        why=""
        if [[ $code -eq 124 || $code -eq 137 ]]; then
            why="timed out after ${limit} s"
        elif [[ $ran -eq -1 ]]; then
            verdict=not-run
            why="$(grep -aoE -m1 "$whole_skip.*" "$log" | sed 's/^.*skipped: /skipped: /')"
        elif [[ "$expect" == clean ]]; then
            if [[ $code -eq 0 && $ran -eq 1 ]]; then
                verdict=passed
            elif [[ $code -eq 99 ]]; then
                why="$(grep -a -m1 -E '^========= [A-Z][a-z]' "$log" | grep -av 'COMPUTE-SANITIZER' | tr -cd '[:print:]' | cut -c11-180)"
                why="${tool} reported: ${why:-$(grep -a -m1 'SUMMARY' "$log" | cut -c11-)}"
            else
                why="the test failed (exit $code)"
            fi
        else
            # Every error the tool counted must be of the expected kind.
            local pattern="${expect#flag }" errors matched
            errors=$(errors_in "$log")
            # The tool's own lines only (the test's output may quote anything); one may
            # follow libtest's "test NAME ... " on its line.
            matched=$(grep -aoE '========= .*' "$log" | grep -cF -- "$pattern")
            if [[ $code -eq 99 && $ran -eq 1 && $matched -ge 1 && $matched -eq $errors ]]; then
                verdict=passed
                why="reported as expected: $matched × $pattern"
            else
                why="expected $tool to report \"$pattern\" and nothing else: $matched of $errors errors (exit $code, test ran: $ran)"
            fi
        fi
        echo "$verdict $name${why:+ ($why)} [${took} s]" >> "$results"
        echo "[$tool] $name: $verdict${why:+ ($why)} [${took} s]"
    done < <(tests_of "$exe")
}

command -v compute-sanitizer > /dev/null || { echo "compute-sanitizer not found" >&2; exit 2; }
# The multi-GPU executables run last and alone, one test at a time: their grids fill
# every SM of each GPU and wait for each other, and beside another job's kernels a
# wait timed out (the cross-GPU handoff, under all four tools at once).
multi_gpu=(gpu_peer gpu_peer_fault)
# The longest executables first, so that parallel jobs end together.
exes=()
for exe in gpu_conformance gpu_litmus gpu_bus gpu*; do
    [[ -x "$exe" && -f "$exe" ]] || continue
    [[ " ${multi_gpu[*]} " == *" $exe "* ]] && continue
    [[ " ${exes[*]} " == *" $exe "* ]] || exes+=("$exe")
done
running=0
for tool in "${tools[@]}"; do
    mkdir -p "$logs/$tool"
    for exe in "${exes[@]}"; do
        if [[ "$jobs" -gt 1 ]]; then
            run_exe "$tool" "$exe" &
            running=$((running + 1))
            if [[ $running -ge $jobs ]]; then
                wait -n
                running=$((running - 1))
            fi
        else
            run_exe "$tool" "$exe"
        fi
    done
done
wait
for tool in "${tools[@]}"; do
    for exe in "${multi_gpu[@]}"; do
        [[ -x "$exe" && -f "$exe" ]] && run_exe "$tool" "$exe"
    done
done
status=0
echo
echo "== summary (each test's output in $logs/TOOL/)"
for tool in "${tools[@]}"; do
    results="$(cat "$logs/$tool/"*.results)"
    passed=$(grep -c '^passed ' <<<"$results")
    failed=$(grep -c '^failed ' <<<"$results")
    skipped=$(grep -c '^not-run ' <<<"$results")
    echo "$tool: $passed passed, $failed failed, $skipped not run"
    grep -v '^passed ' <<<"$results" | sed 's/^/  /'
    grep '^passed .*(reported as expected' <<<"$results" | sed 's/^/  /'
    [[ $failed -eq 0 ]] || status=1
done
exit $status
RUN
chmod +x "$out/sanitize.sh"
cat > "$out/host.sh" <<'RUN'
#!/usr/bin/env bash
# CPU scaling on this host: barrier, semaphore (ping-pong pairs, contended) and latch at
# 1, 2, 4, ... threads up to twice the hardware threads, ours beside Rust std's,
# crossbeam's, libstdc++'s (built here with g++) and libc++'s (built with the bundle),
# in one run; then the charts.
#   bash host.sh [OUT_DIR]     # default: host-scaling/ beside this script
set -euo pipefail
cd "$(dirname "$0")"
out="${1:-host-scaling}"
mkdir -p "$out"
g++ -O2 -std=c++20 -pthread host_baselines.cpp -o host_baselines
g++ --version | head -1 > "$out/compiler.txt"
libcxx=()
if [[ -x host_baselines_libcxx ]]; then
    libcxx=(--anchor-libcxx ./host_baselines_libcxx)
else
    echo "libc++ anchor: skipped: the bundle has no host_baselines_libcxx" | tee -a "$out/compiler.txt" >&2
fi
./scoped-sync --host-only --scaling --anchor ./host_baselines "${libcxx[@]}" --json > "$out/host-scaling.jsonl" 2> "$out/host-scaling.log"
./scoped-sync --from "$out/host-scaling.jsonl" --plot "$out"
RUN
chmod +x "$out/host.sh"

cat > "$out/gate.sh" <<'RUN'
#!/usr/bin/env bash
# Regression gate on a GPU host: three runs, each the GPU primitives beside CUDA C++
# (compare.sh's records) and the host section beside Rust std and libstdc++, then every
# ratio ours / peer checked against ratios.json for machine KIND (exit 1 when one is
# worse than its band). With --calibrate, the runs' ratios and bands are stored in
# ratios.json for KIND instead (copy the file back to benches/ratios.json).
#   bash gate.sh KIND [--calibrate] [RECORDS_DIR]
set -euo pipefail
cd "$(dirname "$0")"
kind="${1:?usage: gate.sh KIND [--calibrate] [RECORDS_DIR]}"
shift
mode=()
if [[ "${1:-}" == --calibrate ]]; then mode=(--calibrate); shift; fi
records="${1:-gate-records}"
runs=3
mkdir -p "$records"
g++ -O2 -std=c++20 -pthread host_baselines.cpp -o host_baselines
COMPARE_PLACEMENT=0 bash compare.sh "$runs" "$records" > "$records/compare.txt"
from=()
for run in $(seq "$runs"); do
    echo "run $run: host section beside libstdc++" >&2
    ./scoped-sync --host-only --anchor ./host_baselines --json > "$records/host.$run.jsonl" 2>/dev/null
    from+=(--from "$records/ours.$run.jsonl+$records/anchor.$run.jsonl+$records/host.$run.jsonl")
done
./scoped-sync "${from[@]}" --gate ratios.json --machine "$kind" "${mode[@]}"
RUN
chmod +x "$out/gate.sh"
ls -la "$out"
