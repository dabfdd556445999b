#!/usr/bin/env bash
# Prints the path of an NVSHMEM 3 installation (the folder whose include/ and lib/ hold
# its headers, `libnvshmem_host.so.3` and `libnvshmem_device.a`), installing it first if
# needed: PyPI's `nvidia-nvshmem-cu13` wheel into target/nvshmem-venv (idempotent), the
# package PyTorch installs on the GPU hosts. CI uses it to compile the NVSHMEM anchor
# (baselines/nvshmem_barriers.cu) and to bind the host library that `sync_host::cuda::
# Nvshmem` loads at run time (every symbol it calls must resolve), without a GPU.
# `NVSHMEM_HOME` in the environment wins.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${NVSHMEM_HOME:-}" ]]; then
    echo "$NVSHMEM_HOME"
    exit 0
fi
# NVSHMEM_RELEASE picks another release (scripts/gpu-bundle.sh: the GPU hosts').
release="${NVSHMEM_RELEASE:-3.8.0}"
venv=target/nvshmem-venv
if [[ "$release" != 3.8.0 ]]; then
    venv="target/nvshmem-venv-$release"
fi
home="$venv/nvidia/nvshmem"
if [[ ! -f "$home/lib/libnvshmem_host.so.3" || ! -f "$home/.release-$release" ]]; then
    rm -rf "$venv"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$venv" \
        "nvidia-nvshmem-cu13==$release" >&2
    touch "$home/.release-$release"
fi
echo "$(cd "$home" && pwd)"
