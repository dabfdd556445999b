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
#   bash DIR/sanitize.sh [TOOL...]        # the GPU tests under compute-sanitizer
#   bash DIR/compare.sh                   # per-scope costs beside CUDA C++ (needs nvcc;
#                                         # the same-address table also needs cupy)
#   bash DIR/host.sh                      # CPU scaling of this host beside libstdc++ and
#                                         # Rust std (needs g++): records and charts
#   bash DIR/gate.sh KIND [--calibrate]   # regression gate: re-measure, check every ratio
#                                         # against ratios.json for machine KIND
#   DIR/bench-gpu --bench                 # the criterion GPU benches
#   DIR/persistent_kernel                 # the host-fed persistent kernel example
#   DIR/user-kernels-example [PART]       # the user's-workspace example (jacobi, cluster,
#                                         # worker, all; `bench DIR/kernels.ptx` compares
#                                         # its grid barrier with the project's)
#   nvcc ... DIR/mapped-line.cu           # why round trips share one mapped line (see
#                                         # the file)
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

cargo bench --locked --no-run --bench gpu --message-format=json 2>/dev/null \
    | python3 -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable") and message["target"]["kind"] == ["bench"]:
        print(message["executable"])
' | while read -r executable; do
    cp "$executable" "$out/bench-gpu"
    strip "$out/bench-gpu"
done
cargo build --release --locked -p scoped-sync-report --bin scoped-sync
cargo build --release --locked -p scoped-sync --example persistent_kernel
cargo build --release --locked -p user-kernels-example
cp target/release/scoped-sync "$out/scoped-sync"
cp target/release/examples/persistent_kernel "$out/persistent_kernel"
cp target/release/user-kernels-example "$out/user-kernels-example"
strip "$out/scoped-sync" "$out/persistent_kernel" "$out/user-kernels-example"
cp scripts/gpu-compare.sh "$out/compare.sh"
cp scripts/gpu-placement.py "$out/placement.py"
cp scripts/gpu-mapped-line.cu "$out/mapped-line.cu"
# The PTX the binaries embed, for placement.py (which loads it beside the anchor's) and
# for the example's `bench` (which loads it beside its own module).
cp "$(ls -t target/release/build/harness-*/out/kernels.ptx | head -1)" "$out/kernels.ptx"
# The CUDA C++ peers compare.sh builds and runs beside the report, and the C++20 host
# peers host.sh and gate.sh build (the project's own); the stored ratios gate.sh checks.
cp baselines/gpu_baselines.cu baselines/host_baselines.cpp "$out/"
cp benches/ratios.json "$out/ratios.json"

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled GPU tests; exits non-zero if any run fails.
set -uo pipefail
cd "$(dirname "$0")"
status=0
for test in ./*; do
    case "$test" in *.sh | ./scoped-sync | ./bench-gpu | ./persistent_kernel | ./user-kernels-example | ./host_baselines | *.cu | *.cpp | *.py | *.ptx | *.json) continue ;; esac
    [[ -x "$test" ]] || continue
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
# Runs the bundled GPU tests under compute-sanitizer: each TOOL given (default: all
# four) over every test executable, failing on any error the tool reports. The litmus
# tests run fewer instances (SCOPED_SYNC_LITMUS_INSTANCES), as a sanitizer slows
# kernels a hundredfold. Not run: gpu_fault and gpu_device_checks, whose kernels trap
# on purpose (a sanitizer reports the trap, rightly).
set -uo pipefail
cd "$(dirname "$0")"
tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(memcheck racecheck synccheck initcheck)
export SCOPED_SYNC_LITMUS_INSTANCES="${SCOPED_SYNC_LITMUS_INSTANCES:-100000}"
status=0
for tool in "${tools[@]}"; do
    for test in ./gpu*; do
        case "$test" in ./gpu_fault | ./gpu_device_checks) continue ;; esac
        [[ -x "$test" ]] || continue
        # gpu_runtime provokes failed API calls on purpose (broken PTX, a missing
        # kernel): memcheck would count each as an error.
        api=()
        [[ "$test" == ./gpu_runtime ]] && api=(--report-api-errors no)
        echo "== compute-sanitizer --tool $tool ${api[*]} $test"
        compute-sanitizer --tool "$tool" "${api[@]}" --error-exitcode 99 --print-limit 20 \
            "$test" --test-threads=1 2>&1 | tail -n 25
        code=${PIPESTATUS[0]}
        echo "== exit $code"
        [[ $code -eq 0 ]] || status=1
    done
done
exit $status
RUN
chmod +x "$out/sanitize.sh"
cat > "$out/host.sh" <<'RUN'
#!/usr/bin/env bash
# CPU scaling on this host: barrier, semaphore (ping-pong pairs, contended) and latch at
# 1, 2, 4, ... threads up to twice the hardware threads, ours beside Rust std's and
# libstdc++'s (built here with g++), in one run; then the charts.
#   bash host.sh [OUT_DIR]     # default: host-scaling/ beside this script
set -euo pipefail
cd "$(dirname "$0")"
out="${1:-host-scaling}"
mkdir -p "$out"
g++ -O2 -std=c++20 -pthread host_baselines.cpp -o host_baselines
g++ --version | head -1 > "$out/compiler.txt"
./scoped-sync --host-only --scaling --anchor ./host_baselines --json > "$out/host-scaling.jsonl" 2> "$out/host-scaling.log"
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
