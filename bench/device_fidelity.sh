#!/usr/bin/env bash
# The fidelity cells on a GPU host within a time budget: bench/gpu_fidelity.py, whose server can be
# kept for the next command (--keep-server), so that one configuration's concurrencies may span
# commands shorter than its whole work without paying for a second start.
#   usage: bash bench/device_fidelity.sh SECONDS [bench/gpu_fidelity.py arguments ...]
# Run from the repository root with vLLM importable by `python3`. Results go to $OUT/fid (default
# /tmp/out/fid): fidelity.json (rewritten after every round), the server's and the clients' logs.
set -u
budget=$1; shift
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/fid"
start=$(date +%s)
server=/tmp/draftbench-fidelity-server.json
# A server left by an earlier command that was killed from outside holds its GPU memory: end it
# first, unless it is the one an earlier command kept on purpose (gpu_fidelity.py ends that one
# itself when the configuration differs).
if [ ! -f "$server" ]; then
  for pid in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
fi
left=$(( budget - $(date +%s) + start ))
PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} python3 bench/gpu_fidelity.py --server-file "$server" \
  --seconds "$left" "$@" --out "$OUT/fid"
