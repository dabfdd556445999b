#!/usr/bin/env bash
# Prints the path of a `ptxas` that runs on this CPU-only machine, installing it first
# if needed: PyPI's nvidia-cuda-nvcc-cu12 ships a static `ptxas` (about 40 MB wheel),
# installed into target/ptxas-venv (idempotent). `PTXAS` in the environment wins.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${PTXAS:-}" ]]; then
    echo "$PTXAS"
    exit 0
fi
venv=target/ptxas-venv
if [[ ! -x "$venv/bin/python3" ]]; then
    python3 -m venv "$venv" >&2
fi
ptxas="$("$venv/bin/python3" - <<'PY' 2>/dev/null || true
import pathlib, nvidia.cuda_nvcc as n
print(pathlib.Path(list(n.__path__)[0]) / "bin" / "ptxas")
PY
)"
if [[ -z "$ptxas" || ! -x "$ptxas" ]]; then
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check 'nvidia-cuda-nvcc-cu12>=12.4,<13' >&2
    ptxas="$("$venv/bin/python3" -c 'import pathlib, nvidia.cuda_nvcc as n; print(pathlib.Path(list(n.__path__)[0]) / "bin" / "ptxas")')"
fi
echo "$(cd "$(dirname "$ptxas")" && pwd)/ptxas"
