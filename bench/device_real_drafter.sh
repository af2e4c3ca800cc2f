#!/usr/bin/env bash
# The real-drafter check on a GPU host within a time budget: the seeded pair written once
# (bench/seeded_pair.py; reused while /tmp/pair lasts), then bench/real_vs_whatif.py for each N
# given, and the baseline when `baseline` is among them.
#   usage: bash bench/device_real_drafter.sh SECONDS N [N ...] [baseline]
# Run from the repository root with vLLM, torch and safetensors importable by `python3`. Results
# go to $OUT (default /tmp/out): pair.json, and rvw/ with the rows, the log and the database.
set -u
budget=$1; shift
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/rvw"
start=$(date +%s)
# A server left by an earlier command killed from outside holds its GPU memory: end it first.
for pid in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
python3 bench/seeded_pair.py --out /tmp/pair > "$OUT/pair.log" 2>&1 || { tail -20 "$OUT/pair.log"; exit 1; }
cp /tmp/pair/pair.json "$OUT/"
args=()
for a in "$@"; do
  if [ "$a" = baseline ]; then args+=(--baseline); else args+=(--n "$a"); fi
done
left=$(( budget - $(date +%s) + start ))
python3 bench/real_vs_whatif.py --pair /tmp/pair "${args[@]}" --seconds "$left" --out "$OUT/rvw"
