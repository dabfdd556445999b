#!/usr/bin/env bash
# Prints the path of an `nvcc` that runs on this CPU-only machine, installing it first
# if needed: PyPI's CUDA 13 packages (the compiler driver, NVVM's `cicc`, the CRT and
# runtime headers, NVRTC, CCCL) into target/nvcc-venv (idempotent). It compiles the
# CUDA C++ baseline programs here, so that CI catches one that no longer builds (they
# run only on a GPU host, whose own nvcc builds them there), and scripts/cxx-check.sh
# compiles the header with it and with its NVRTC. `NVCC` in the environment wins.
#
# The compiler is pinned to CUDA 13.2.86, CCCL (libcu++, the anchors' library) is the
# newest of CUDA 13 (its headers are not tied to the compiler's release). Why 13.2
# (docs/cpp.md, docs/measurements.md): nvcc 13.5's ptxas keeps a warp shuffle and a
# divergence check in every poll of the device barrier's inline warp phase, 1.13x the
# Rust kernel from the same PTX; 13.0 folds them, but its NVVM and 13.1's abort on
# `__isShared` of a pointer it cannot place; 13.2 does neither, and its machine code
# for the cost kernels is 13.0's, the release a CUDA 13.0 driver JIT-compiles the Rust
# kernels with. The cubins it links load on every CUDA 13 driver.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${NVCC:-}" ]]; then
    echo "$NVCC"
    exit 0
fi
venv=target/nvcc-venv
if [[ ! -x "$venv/bin/python3" ]]; then
    python3 -m venv "$venv" >&2
fi
where() {
    "$venv/bin/python3" - <<'PY' 2>/dev/null || true
import pathlib, nvidia
for root in nvidia.__path__:
    nvcc = pathlib.Path(root) / "cu13" / "bin" / "nvcc"
    if nvcc.exists():
        print(nvcc)
        break
PY
}
release=13.2.86
nvcc="$(where)"
if [[ -z "$nvcc" || ! -x "$nvcc" ]] || ! "$nvcc" --version | grep -q "V$release\$" ||
    [[ ! -f "$(dirname "$nvcc")/../lib/libnvrtc.so.13" ]]; then
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
        "nvidia-cuda-nvcc==$release" "nvidia-nvvm==$release" "nvidia-cuda-crt==$release" \
        "nvidia-cuda-runtime==$release" "nvidia-cuda-nvrtc==$release" 'nvidia-cuda-cccl>=13,<14' >&2
    nvcc="$(where)"
fi
echo "$(cd "$(dirname "$nvcc")" && pwd)/nvcc"
