#!/usr/bin/env bash
# Checks the CUDA C++ header include/scoped_sync.cuh against the device library, on a
# machine without a GPU (PyPI's nvcc, scripts/nvcc.sh; `NVCC` in the environment wins):
#
#   (a) compiles tests/cxx/header_check.cu (every wrapper at every scope, every
#       `ss_*` declaration odr-used) for sm_90 as relocatable device code, with
#       SCOPED_SYNC_CHECKED (every wrapper calls the library) and without (the
#       header's inline paths, linked too);
#   (b) device-links it with the library's PTX: nvlink compares every prototype of the
#       header with the library's, so a wrong C type fails here; then compares the
#       names: the library's exports, the header's declarations and the functions the
#       check file calls must be the same set, and a deliberately wrong prototype must
#       fail the link (the check is real);
#   (c) compiles the header alone, and the check file, for sm_80: the cluster-scope
#       functions must be gone, and a cluster-scope wrapper must not compile there;
#   (d) where an NVRTC library is found, compiles the check file with NVRTC too
#       (skipped otherwise; nothing is installed for it);
#   (e) compiles and device-links every ```cpp block of README.md and docs/cpp.md.
#
# Usage: scripts/cxx-check.sh LIBRARY.ptx
#   LIBRARY.ptx: the device library (`sync_build::DeviceLibrary`, sm_90), e.g.
#   <target>/nvptx64-nvidia-cuda/release/deps/scoped_sync_device.s of its nested build.
set -euo pipefail

say() { echo "cxx-check: $*" >&2; }
fail() {
    echo "cxx-check: FAILED: $*" >&2
    exit 1
}

[[ $# -eq 1 ]] || fail "usage: scripts/cxx-check.sh LIBRARY.ptx (the device library's PTX, built for sm_90)"
[[ -f "$1" ]] || fail "no device library at $1"
library="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "$(dirname "$0")/.."
grep -q '^\.target sm_90' "$library" || fail "$1 is not a PTX module for sm_90 (no '.target sm_90' line)"

NVCC="$(bash scripts/nvcc.sh)" || fail "no nvcc (scripts/nvcc.sh)"
header=include/scoped_sync.cuh
check=tests/cxx/header_check.cu
work="$(mktemp -d "${TMPDIR:-/tmp}/cxx-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
common=(-std=c++17 -Iinclude --Werror all-warnings)

# The `ss_*` functions of a PTX file's `.visible .func` / `.extern .func` lines.
functions() { grep -E "^\.$1 \.func" "$2" | grep -oE '\bss_[A-Za-z0-9_]+' | sort -u || true; }
# The `ss_*` functions the header declares (its `extern "C"` block).
declared() {
    sed -n '/^extern "C" {$/,/^}  \/\/ extern "C"$/p' "$header" | grep -v '^ *//' |
        grep -oE '\bss_[A-Za-z0-9_]+ *\(' | tr -d ' (' | sort -u || true
}
# Fails with the two sides of a set difference.
same_set() {
    local what="$1" left="$2" right="$3"
    if ! diff -q "$left" "$right" >/dev/null; then
        say "$what differ:"
        diff "$left" "$right" | sed -n 's/^< /  only in the first: /p; s/^> /  only in the second: /p' >&2
        fail "$what differ"
    fi
}

say "nvcc: $NVCC"
say "library: $library ($(functions visible "$library" | wc -l) ss_* functions)"

say "(a) compile $check for sm_90 (-rdc=true -dc), as the checked flavour (every wrapper"
say "    calls the library) and as the release one (the header's inline paths)"
checked=(-DSCOPED_SYNC_CHECKED=1)
"$NVCC" "${common[@]}" "${checked[@]}" -arch=sm_90 -rdc=true -dc "$check" -o "$work/header_check.o" ||
    fail "$check does not compile for sm_90"
"$NVCC" "${common[@]}" "${checked[@]}" -arch=sm_90 -rdc=true -ptx "$check" -o "$work/header_check.ptx" ||
    fail "$check does not compile to PTX for sm_90"
"$NVCC" "${common[@]}" -arch=sm_90 -rdc=true -dc "$check" -o "$work/header_check_inline.o" ||
    fail "$check does not compile for sm_90 with the inline paths"
"$NVCC" -arch=sm_90 -dlink -cubin -Xnvlink --suppress-stack-size-warning \
    "$work/header_check_inline.o" "$library" -o "$work/header_check_inline.cubin" ||
    fail "the release flavour of $check does not link with the library (above)"

say "(b) device-link with the library (nvlink checks every prototype)"
"$NVCC" -arch=sm_90 -dlink -cubin -Xnvlink --suppress-stack-size-warning \
    "$work/header_check.o" "$library" -o "$work/header_check.cubin" ||
    fail "the device link failed (above): 'Prototype doesn't match' is a declaration of $header whose C types differ from the library's function; 'Undefined reference' is a function the library lacks (a stale library, or one the header should not declare)"
functions visible "$library" >"$work/library.txt"
declared >"$work/declared.txt"
functions extern "$work/header_check.ptx" >"$work/used.txt"
same_set "the library's exports (first) and the header's declarations (second)" "$work/library.txt" "$work/declared.txt"
same_set "the library's exports (first) and the functions $check calls (second)" "$work/library.txt" "$work/used.txt"
say "    $(wc -l <"$work/declared.txt") functions declared, called and linked"
cat >"$work/wrong.cu" <<'EOF'
// The library's `ss_bus_latch_count_down` takes a u64 count: this prototype is wrong.
extern "C" __device__ void ss_bus_latch_count_down(const void* latch, unsigned int n);
extern "C" __global__ void wrong(const void* latch) { ss_bus_latch_count_down(latch, 1); }
EOF
"$NVCC" -std=c++17 -arch=sm_90 -rdc=true -dc "$work/wrong.cu" -o "$work/wrong.o"
if "$NVCC" -arch=sm_90 -dlink -cubin "$work/wrong.o" "$library" -o "$work/wrong.cubin" 2>"$work/wrong.log"; then
    fail "a wrong prototype linked: this nvlink does not check prototypes, so (b) proves nothing"
fi
grep -q "Prototype doesn't match" "$work/wrong.log" ||
    fail "a wrong prototype failed to link, but not for its prototype: $(cat "$work/wrong.log")"
say "    a wrong prototype fails the link, as it should"

say "(c) compile for sm_80: no cluster scope"
printf '#include "scoped_sync.cuh"\n' >"$work/header_only.cu"
"$NVCC" "${common[@]}" -arch=sm_80 -rdc=true -dc "$work/header_only.cu" -o "$work/header_only.o" ||
    fail "$header alone does not compile for sm_80"
"$NVCC" "${common[@]}" "${checked[@]}" -arch=sm_80 -rdc=true -ptx "$check" -o "$work/header_check_sm80.ptx" ||
    fail "$check does not compile for sm_80"
"$NVCC" "${common[@]}" -arch=sm_80 -rdc=true -dc "$check" -o "$work/header_check_sm80.o" ||
    fail "$check does not assemble for sm_80 with the inline paths (above)"
functions extern "$work/header_check_sm80.ptx" >"$work/used_sm80.txt"
grep -v '_cluster_' "$work/library.txt" >"$work/library_sm80.txt" || true
same_set "the library's exports but cluster scope (first) and the functions $check calls for sm_80 (second)" \
    "$work/library_sm80.txt" "$work/used_sm80.txt"
cat >"$work/cluster_sm80.cu" <<'EOF'
#include "scoped_sync.cuh"
__global__ void k(scoped_sync::latch<scoped_sync::thread_scope_cluster>* l) { l->wait(); }
EOF
if "$NVCC" -std=c++17 -Iinclude -arch=sm_80 -rdc=true -dc "$work/cluster_sm80.cu" -o "$work/cluster_sm80.o" 2>"$work/cluster_sm80.log"; then
    fail "a cluster-scope latch compiled for sm_80"
fi
grep -q "cluster scope needs sm_90" "$work/cluster_sm80.log" ||
    fail "a cluster-scope latch failed for sm_80, but not with the header's message: $(cat "$work/cluster_sm80.log")"
say "    $(wc -l <"$work/used_sm80.txt") functions for sm_80, none of cluster scope; a cluster-scope latch is refused"

say "(d) NVRTC"
nvrtc=""
nvcc_root="$(cd "$(dirname "$NVCC")/.." && pwd)"
for candidate in "$nvcc_root"/lib/libnvrtc.so* "$nvcc_root"/lib64/libnvrtc.so* "$nvcc_root"/../cuda_nvrtc/lib/libnvrtc.so* \
    "${CUDA_HOME:-/usr/local/cuda}"/lib64/libnvrtc.so* /usr/local/cuda/lib64/libnvrtc.so*; do
    if [[ -f "$candidate" ]]; then
        nvrtc="$candidate"
        break
    fi
done
if [[ -z "$nvrtc" ]]; then
    nvrtc="$( (ldconfig -p 2>/dev/null || true) | grep -oE '/[^ ]*libnvrtc\.so[.0-9]*$' | head -n 1 || true)"
fi
if [[ -z "$nvrtc" ]]; then
    say "    skipped: no libnvrtc.so found (next to nvcc, in CUDA_HOME, or by ldconfig)"
else
    say "    $nvrtc"
    python3 - "$nvrtc" "$check" <<'PY' || fail "NVRTC does not compile $check (log above)"
import ctypes, sys
nvrtc = ctypes.CDLL(sys.argv[1])
source = open(sys.argv[2], "rb").read()
program = ctypes.c_void_p()
if nvrtc.nvrtcCreateProgram(ctypes.byref(program), source, b"header_check.cu", 0, None, None) != 0:
    sys.exit("nvrtcCreateProgram failed")
options = [b"-std=c++17", b"-arch=compute_90", b"-rdc=true", b"--include-path=include"]
result = nvrtc.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
size = ctypes.c_size_t()
nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetProgramLog(program, log)
text = log.value.decode(errors="replace").strip()
if text:
    print(text, file=sys.stderr)
sys.exit(0 if result == 0 else 1)
PY
    say "    NVRTC compiles $check"
fi

say "(e) the C++ blocks of README.md and docs/cpp.md compile and link with the library"
blocks=0
for doc in README.md docs/cpp.md; do
    python3 - "$doc" "$work" <<'PY'
import pathlib, re, sys
doc, work = sys.argv[1], pathlib.Path(sys.argv[2])
text = pathlib.Path(doc).read_text()
for index, block in enumerate(re.findall(r"^```cpp\n(.*?)^```", text, re.S | re.M)):
    (work / f"{pathlib.Path(doc).stem}-{index}.cu").write_text(block)
PY
done
for block in "$work"/*-[0-9]*.cu; do
    [[ -f "$block" ]] || continue
    "$NVCC" "${common[@]}" -arch=sm_90 -rdc=true -dc "$block" -o "${block%.cu}.o" ||
        fail "a C++ block of the docs does not compile: $(basename "$block") (above)"
    "$NVCC" -arch=sm_90 -dlink -cubin "${block%.cu}.o" "$library" -o "${block%.cu}.cubin" ||
        fail "a C++ block of the docs does not link: $(basename "$block") (above)"
    blocks=$((blocks + 1))
done
say "    $blocks blocks"

say "OK"
