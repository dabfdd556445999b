#!/usr/bin/env bash
# Prints the path of an `nvcc` that runs on this CPU-only machine, installing it first
# if needed: PyPI's CUDA 13 packages (the compiler driver, NVVM's `cicc`, the CRT and
# runtime headers, CCCL) into target/nvcc-venv (idempotent). It compiles the CUDA C++
# baseline programs here, so that CI catches one that no longer builds; they run only
# on a GPU host, whose own nvcc builds them there. `NVCC` in the environment wins.
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
nvcc="$(where)"
if [[ -z "$nvcc" || ! -x "$nvcc" ]]; then
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
        'nvidia-cuda-nvcc>=13,<14' 'nvidia-nvvm>=13,<14' 'nvidia-cuda-crt>=13,<14' \
        'nvidia-cuda-runtime>=13,<14' 'nvidia-cuda-cccl>=13,<14' >&2
    nvcc="$(where)"
fi
echo "$(cd "$(dirname "$nvcc")" && pwd)/nvcc"
