#!/usr/bin/env bash
# The whole test suite: formatting, lints, host tests (unit, integration, doc,
# compile-fail, PTX codegen + ptxas, the CUDA C++ kernels built with nvcc), the C++
# header checked against the device library, loom models, Miri on a host subset, and
# a smoke run of the report.
# Installs what it needs (idempotently). Used by .ci/run and named in README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain components (stable: rustfmt, clippy; nightly: rust-src for the PTX build)"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component add rust-src --toolchain nightly

step "ptxas (PyPI nvidia-cuda-nvcc-cu12) for assembling the PTX without a GPU"
PTXAS="$(bash scripts/ptxas.sh)"
export PTXAS
# A missing PTX is a failure here, not a silently skipped GPU section.
export SYNC_BUILD_REQUIRED=1

step "the CUDA C++ baselines compile (nvcc from PyPI; they run only on a GPU host)"
NVCC="$(bash scripts/nvcc.sh)"
# sync-build compiles the CUDA C++ test kernels with it (harness/build.rs).
export NVCC
mkdir -p target/baselines
for source in baselines/gpu_baselines.cu baselines/multi_gpu_baselines.cu scripts/gpu-mapped-line.cu; do
    "$NVCC" -O3 -std=c++20 -arch=sm_90 "$source" -o "target/baselines/$(basename "$source" .cu)"
done

step "NVSHMEM (PyPI nvidia-nvshmem-cu13): its anchor compiles, its host library binds"
# The host tests load the library that sync_host::cuda::Nvshmem binds at run time.
NVSHMEM_HOME="$(bash scripts/nvshmem.sh)"
export NVSHMEM_HOME
"$NVCC" -O3 -std=c++17 -arch=sm_90 -rdc=true -I"$NVSHMEM_HOME/include" baselines/nvshmem_barriers.cu \
    -L"$NVSHMEM_HOME/lib" -l:libnvshmem_host.so.3 -lnvshmem_device -o target/baselines/nvshmem_barriers

step "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path kernels/Cargo.toml -- --check
cargo fmt --manifest-path kernels/sm80/Cargo.toml -- --check
cargo fmt --manifest-path kernels/nvshmem/Cargo.toml -- --check
cargo fmt --manifest-path examples/user-kernels/kernels/Cargo.toml -- --check
cargo fmt --manifest-path examples/doc-blocks/kernels/Cargo.toml -- --check
cargo fmt --manifest-path sync-device/library/Cargo.toml -- --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo clippy -p sync-host --tests --locked -- -D warnings

step "host tests (release; builds the kernels and the example's kernels with sync-build)"
cargo test --workspace --release --locked

step "the CUDA C++ header against the device library (compile, device-link, sm_80)"
bash scripts/cxx-check.sh "$(ls -t target/release/build/harness-*/out/scoped_sync_device.ptx | head -1)"

step "a no-op rebuild compiles nothing (the kernel crates' nested builds included)"
bash scripts/rebuild-check.sh

step "a host-only user program: stable only, no nested nvptx build, no PTX"
bash scripts/host-only-check.sh

step "docs (rustdoc -D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --locked --quiet

step "loom models"
bash scripts/loom.sh

step "Miri (host test subset)"
bash scripts/miri.sh

step "report smoke run"
cargo run --release --locked -- --quick --json > /dev/null

echo
echo "scripts/test.sh: all steps passed"
