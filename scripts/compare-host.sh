#!/usr/bin/env bash
# Puts scoped-sync's host figures beside libstdc++'s C++20 primitives on this machine.
#
# Builds baselines/host_baselines.cpp (g++ -O2 -std=c++20 -pthread), then runs it
# and `cargo run --release -- --json` in turns (anchor, ours, anchor, ours, ...), so
# that both sides see the same machine state, and prints the best (minimum) of each
# side's runs, op by op, with the ratio ours / libstdc++ (below 1: ours is faster).
#
# Usage: scripts/compare-host.sh [--rounds N] [--quick]
#   --rounds N  anchor+ours pairs to run (default 2)
#   --quick     pass --quick to the report (a smoke run: its figures are rough)
set -euo pipefail

usage() { sed -n '2,12s/^# \{0,1\}//p' "$0"; }

rounds=2
report_args=(--json)
while (($#)); do
    case "$1" in
        --rounds)
            [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || { echo "compare-host.sh: --rounds needs a positive count" >&2; exit 2; }
            rounds=$2
            shift 2
            ;;
        --quick) report_args+=(--quick); shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "compare-host.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
anchor_src="$repo/baselines/host_baselines.cpp"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "building the anchor and the report..." >&2
g++ -O2 -std=c++20 -pthread "$anchor_src" -o "$work/host_baselines"
# Build once up front, so that no compilation runs between the measured turns.
(cd "$repo" && cargo build --release --quiet)

for ((round = 1; round <= rounds; round++)); do
    echo "round $round/$rounds: libstdc++ anchor" >&2
    "$work/host_baselines" >>"$work/anchor.txt"
    echo "round $round/$rounds: scoped-sync" >&2
    (cd "$repo" && cargo run --release --quiet -- "${report_args[@]}") >>"$work/ours.jsonl"
done

# Both outputs become "key ns" lines; the keys name the ops compared.
awk '
    { n = split($0, parts, /: */); split(parts[n], value, " ") }
    /^std::barrier arrive_and_wait, 2 threads:/      { print "barrier_2", value[1] }
    /^std::barrier arrive_and_wait, 4 threads:/      { print "barrier_4", value[1] }
    /^std::counting_semaphore ping-pong/             { print "ping_pong", value[1] }
    /^std::counting_semaphore uncontended/           { print "uncontended", value[1] }
    /^std::latch count_down\+wait/                   { print "latch", value[1] }
    /^std::stop_token stop_requested/                { print "stop_poll", value[1] }
    /^std::stop_callback register/                   { print "stop_callback", value[1] }
' "$work/anchor.txt" >"$work/anchor.keyed"

# The report writes its JSON fields in a fixed order, so sed can read them.
sed -n 's/.*"primitive":"\([^"]*\)","op":"\([^"]*\)","threads":\([0-9]*\),"ns_per_op":\([0-9.]*\).*/\1 \2 \3 \4/p' \
    "$work/ours.jsonl" | awk '
    $1 == "barrier" && $2 == "arrive_and_wait" && $3 == 2     { print "barrier_2", $4 }
    $1 == "barrier" && $2 == "arrive_and_wait" && $3 == 4     { print "barrier_4", $4 }
    $1 == "semaphore" && $2 == "ping_pong"                    { print "ping_pong", $4 }
    $1 == "semaphore" && $2 == "acquire_release_uncontended"  { print "uncontended", $4 }
    $1 == "latch" && $2 == "count_down_wait"                  { print "latch", $4 }
    $1 == "stop_token" && $2 == "stop_requested"              { print "stop_poll", $4 }
    $1 == "stop_callback" && $2 == "register_drop"            { print "stop_callback", $4 }
' >"$work/ours.keyed"

echo
echo "libstdc++ (g++ -O2) vs scoped-sync on $(nproc) hardware threads: best of $rounds run(s) each, alternating"
awk '
    { side = (FILENAME == ARGV[1]) ? 1 : 2 }
    { if (!(($1, side) in best) || $2 + 0 < best[$1, side]) best[$1, side] = $2 + 0 }
    END {
        split("barrier_2 barrier_4 ping_pong uncontended latch stop_poll stop_callback", keys, " ")
        label["barrier_2"]     = "barrier arrive_and_wait, 2 threads (per phase)"
        label["barrier_4"]     = "barrier arrive_and_wait, 4 threads (per phase)"
        label["ping_pong"]     = "semaphore ping-pong, 2 threads (per round trip)"
        label["uncontended"]   = "semaphore acquire+release, uncontended"
        label["latch"]         = "latch count_down+wait (fresh latch)"
        label["stop_poll"]     = "stop_token stop_requested poll"
        label["stop_callback"] = "stop_callback register+drop"
        fmt = "%-48s %14s %14s %8s\n"
        printf fmt, "op", "libstdc++ ns", "ours ns", "ratio"
        missing = 0
        for (i = 1; i <= 7; i++) {
            k = keys[i]
            theirs = ((k, 1) in best) ? sprintf("%.2f", best[k, 1]) : "missing"
            ours = ((k, 2) in best) ? sprintf("%.2f", best[k, 2]) : "missing"
            ratio = ((k, 1) in best && (k, 2) in best && best[k, 1] > 0) ? sprintf("%.2f", best[k, 2] / best[k, 1]) : "-"
            if (theirs == "missing" || ours == "missing") missing = 1
            printf fmt, label[k], theirs, ours, ratio
        }
        print "ratio = ours / libstdc++ (below 1: ours is faster)"
        exit missing
    }
' "$work/anchor.keyed" "$work/ours.keyed"
