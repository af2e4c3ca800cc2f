#!/usr/bin/env bash
# Run (or resume) a Draftbench plan on a GPU machine where vLLM is importable by `python3`, and copy
# the results out: the database, the summary table, the events and the runner's messages.
# usage: bash scripts/device/sweep.sh PLAN NAME [SECONDS]
#   NAME names the database (kept in $DRAFTBENCH_WORK, default /tmp/draftbench-gpu, so a second call
#   on the same machine resumes where the first stopped) and the files written to $OUT.
#   SECONDS bounds the runner (default 480); an interrupted sweep resumes on the next call.
set -u
plan=$1; name=$2; limit=${3:-480}
work=${DRAFTBENCH_WORK:-/tmp/draftbench-gpu}; out=${OUT:-$work/out}
mkdir -p "$work" "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export DRAFTBENCH_DATA_DIR="$work/data" DRAFTBENCH_CONFIG_DIR="$work/config"
db="$work/$name.sqlite"
# SIGINT lets the runner mark the run in flight as cancelled and stop its server cleanly.
timeout -s INT -k 60 "$limit" python3 -m workbench.cli run "$plan" --db "$db" \
  --events "$out/$name-events.jsonl" --log "$out/$name-runner.log"
rc=$?
echo "runner exit status: $rc"
python3 -m workbench.cli show --db "$db" | tee "$out/$name-summary.txt"
python3 - "$db" "$out/$name.sqlite" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1]); dst = sqlite3.connect(sys.argv[2])
src.backup(dst); dst.close()
PY
exit $rc
