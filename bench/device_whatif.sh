#!/usr/bin/env bash
# What-if plans on a GPU host, one after another into one database, within a time budget.
#   usage: bash bench/device_whatif.sh SECONDS DB PLAN [PLAN ...]
# Run from the repository root with vLLM importable by `python3` (a CUDA or ROCm build). With
# STOP_ON_FAIL=1 the first failed run interrupts its plan: a server that cannot start fails every
# retry the same way, and on a GPU lent by the minute one failure's log tail is all that is needed. A plan
# cut short by the budget is interrupted (SIGINT: the runner stops its server and marks the run in
# flight); running the same command again resumes it, skipping completed runs. Results go to
# $OUT (default /tmp/out): a consistent copy of the database, the runner's log and events, and
# `draftbench show` of each experiment.
set -u
budget=$1; db=$2; shift 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# A server left by an earlier command killed from outside holds its GPU memory: end it first.
for pid in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
end=$(( $(date +%s) + budget ))
for plan in "$@"; do
  left=$(( end - $(date +%s) ))
  [ "$left" -gt 180 ] || { echo "not started (${left} s left): $plan" >> "$OUT/run.log"; continue; }
  echo "== $plan ($left s left)" >> "$OUT/run.log"
  timeout -s INT -k 40 "$left" python3 -m workbench.cli run "$plan" --db "$db" --vllm-python python3 \
    --events "$OUT/events.jsonl" >> "$OUT/run.log" 2>&1 &
  runner=$!
  while kill -0 "$runner" 2>/dev/null; do
    if [ "${STOP_ON_FAIL:-0}" = 1 ] && grep -q '"event": *"run_failed"' "$OUT/events.jsonl" 2>/dev/null; then
      echo "a run failed: interrupting $plan" >> "$OUT/run.log"; pkill -INT -P "$runner"; break
    fi
    sleep 2
  done
  wait "$runner"; echo "rc=$?" >> "$OUT/run.log"
done
# A consistent copy of the database, through the store (SQLite's online backup).
python3 - "$db" "$OUT/$(basename "$db")" <<'PY'
import sys
from workbench import store
with open(sys.argv[2], "wb") as out:
    store.backup(sys.argv[1], out)
PY
python3 -m workbench.cli runs --db "$db" > "$OUT/runs.txt" 2>&1
# The server log's last lines of every failed run, read through the store.
python3 - "$db" > "$OUT/failed-logs.txt" 2>&1 <<'PY'
import sys
from workbench import store
from workbench.store import queries
db = store.open_db(sys.argv[1], readonly=True)
for run in store.runs(db):
    if run.status != "failed":
        continue
    print(f"== run {run.id} {run.key}: {run.error}")
    feed = queries.run_feed(db, run.id, {"logs": 0}).rows
    for (line,) in feed.get("logs", [])[-60:]:
        print("  ", line)
PY
