#!/usr/bin/env bash
# The whole test suite: formatting, lints, host tests (unit, integration, doc,
# compile-fail), loom models, Miri on a host subset, and a smoke run of the report.
# Installs what it needs (idempotently). Used by .ci/run and named in README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain components"
rustup component add rustfmt clippy >/dev/null 2>&1 || true

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo clippy -p sync-host --tests --locked -- -D warnings

step "host tests (release)"
cargo test --workspace --release --locked

step "loom models"
bash scripts/loom.sh

step "Miri (host test subset)"
bash scripts/miri.sh

step "report smoke run"
cargo run --release --locked -- --quick --json > /dev/null

echo
echo "scripts/test.sh: all steps passed"
