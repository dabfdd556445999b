#!/usr/bin/env bash
# A user's host-only program (CPU primitives only) builds on stable with no nightly
# toolchain installed, depends on nothing of CUDA (no cudarc: the facade's `cuda`
# feature is off), runs no nested nvptx build, and carries no PTX.
#
# Builds a fresh crate (in target/host-only-check) that depends on this repository's
# facade and uses a CPU Barrier, under a RUSTUP_HOME that holds the stable toolchain
# alone (links to the real one), so any `cargo +nightly` would fail. Then checks that
# no `sync-build` directory appeared, that the binary runs, and that it contains no PTX
# module (`.version` lines).
#
#   bash scripts/host-only-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
work="$root/target/host-only-check"
rustup_home="${RUSTUP_HOME:-$HOME/.rustup}"
stable="$(rustc +stable --print sysroot)"

mkdir -p "$work/app/src" "$work/rustup/toolchains"
ln -sfn "$stable" "$work/rustup/toolchains/$(basename "$stable")"
[[ -f "$rustup_home/settings.toml" ]] && cp "$rustup_home/settings.toml" "$work/rustup/"
cat > "$work/app/Cargo.toml" <<TOML
[package]
name = "host-only-app"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
scoped-sync = { path = "$root" }

[workspace]
TOML
cat > "$work/app/src/main.rs" <<'RS'
fn main() {
    let barrier = scoped_sync::Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| barrier.arrive_and_wait());
        barrier.arrive_and_wait();
    });
    println!("host-only-app: barrier passed");
}
RS
cp "$root/Cargo.lock" "$work/app/Cargo.lock"

export RUSTUP_HOME="$work/rustup" RUSTUP_TOOLCHAIN="$(basename "$stable")"
if cargo +nightly --version >/dev/null 2>&1; then
    echo "host-only-check: nightly is still visible; the check would prove nothing" >&2
    exit 1
fi
rm -rf "$work/target/sync-build"
# Without the facade's `cuda` feature nothing of CUDA is built.
tree="$(cd "$work/app" && cargo tree --edges normal --prefix none)"
if grep -E '^(cudarc|libloading) ' <<<"$tree"; then
    echo "host-only-check: a CPU-only program depends on the CUDA runtime" >&2
    exit 1
fi
echo "host-only-check: $(sort -u <<<"$tree" | grep -c .) crates in the dependency tree, no cudarc"
start=$(date +%s)
(cd "$work/app" && cargo build --release --quiet --target-dir "$work/target")
echo "host-only-check: release build on $(basename "$stable") without nightly: $(( $(date +%s) - start )) s"
if [[ -e "$work/target/sync-build" ]]; then
    echo "host-only-check: a nested kernel build ran" >&2
    exit 1
fi
binary="$work/target/release/host-only-app"
"$binary"
modules=$(strings "$binary" | grep -c '^\.version' || true)
echo "host-only-check: $(stat -c %s "$binary") bytes, $modules PTX modules"
[[ "$modules" -eq 0 ]]
