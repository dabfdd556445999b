#!/usr/bin/env bash
# Builds baselines/host_baselines.cpp against libc++ (LLVM's C++ standard library) into
# the path given, the peer the host report runs with --anchor-libcxx:
#   bash scripts/libcxx.sh OUT
# With `clang++ -stdlib=libc++` where it works; otherwise with PyPI's `ziglang`, whose
# `zig c++` is clang with libc++ linked in statically (installed into target/zig-venv,
# idempotent, about 50 MB), so the program also runs on a host without libc++ (the GPU
# bundle carries it). Prints the compiler's version line on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/libcxx.sh OUT}"
flags=(-O2 -std=c++20 -pthread baselines/host_baselines.cpp -o "$out")

if command -v clang++ >/dev/null && clang++ -stdlib=libc++ "${flags[@]}" 2>/dev/null; then
    clang++ --version | head -1 >&2
    exit 0
fi
venv=target/zig-venv
if [[ ! -x "$venv/bin/python3" ]]; then
    python3 -m venv "$venv" >&2
fi
if ! "$venv/bin/python3" -m ziglang version >/dev/null 2>&1; then
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check 'ziglang>=0.13' >&2
fi
"$venv/bin/python3" -m ziglang c++ "${flags[@]}"
echo "zig $("$venv/bin/python3" -m ziglang version) c++ (clang, libc++)" >&2
