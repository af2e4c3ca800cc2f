#!/usr/bin/env bash
# A what-if run against the real one it imitates, alternated over rounds on one GPU host.
#   usage: bash bench/device_demo_pair.sh SECONDS DB ROUND [ROUND ...]
# Each round: the demo target with its noisy-copy draft, measured with real weights
# (docs/gpu/what-if/demo-pair.toml, named per round), then every concurrency of it served again with
# dummy weights and that run's own measured curve imposed (`draftbench what-if --from-run`, no
# baseline). Resumable: a finished round or run is skipped. Needs a CUDA or ROCm build of vLLM as
# `python3` and the demo model (built here with `draftbench demo-model` if missing).
# Results go to $OUT (default /tmp/out): a consistent copy of the database and the runner's log.
set -u
budget=$1; db=$2; shift 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
log=$OUT/pair.log
end=$(( $(date +%s) + budget ))
template=${PAIR_PLAN:-docs/gpu/what-if/demo-pair.toml}
work=${PAIR_WORK:-/tmp/demo-pair}; mkdir -p "$work"

# A server left by an earlier command killed from outside holds its GPU memory: end it first.
for pid in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
python3 -m workbench.cli demo-model >> "$log" 2>&1 || { echo "demo model: failed" >> "$log"; exit 1; }

run_plan() {  # run_plan PLAN: within what is left of the budget; 1 when the budget is spent
  local left=$(( end - $(date +%s) ))
  [ "$left" -gt 90 ] || { echo "not started (${left} s left): $1" >> "$log"; return 1; }
  echo "== $1 ($left s left)" >> "$log"
  timeout -s INT -k 40 "$left" python3 -m workbench.cli run "$1" --db "$db" --vllm-python python3 \
    --events "$OUT/events.jsonl" >> "$log" 2>&1
  echo "rc=$? $1" >> "$log"
}

measured_runs() {  # the completed speculative runs of the experiment named $1
  python3 - "$db" "$1" <<'PY'
import sys
from workbench import store
db = store.open_db(sys.argv[1], readonly=True)
name = f'name = "{sys.argv[2]}"'
for r in store.runs(db):
    if (r["method"] != "baseline" and r["status"] == "completed" and not r.get("what_if")
            and name in (store.experiment_plan(db, r["experiment_id"]) or "")):
        print(r["id"])
PY
}

for r in "$@"; do
  name="demo-pair-real-r$r"
  plan=$work/$name.toml
  sed "s/^name = \"demo-pair-real\"/name = \"$name\"/" "$template" > "$plan"
  # The first round measures the baseline; later rounds re-measure the pair only.
  [ "$r" = 1 ] || printf '[sweep]\nbaseline = false\n' >> "$plan"
  run_plan "$plan" || break
  for id in $(measured_runs "$name"); do
    imposed=$work/imposed-of-run-$id.toml
    [ -f "$imposed" ] || python3 -m workbench.cli what-if --from-run "$id" --db "$db" --no-baseline \
      --out "$imposed" >> "$log" 2>&1
    run_plan "$imposed" || break 2
  done
done
# A consistent copy of the database, through the store (SQLite's online backup).
python3 - "$db" "$OUT/$(basename "$db")" <<'PY'
import sys
from workbench import store
with open(sys.argv[2], "wb") as out:
    store.backup(sys.argv[1], out)
PY
python3 -m workbench.cli runs --db "$db" > "$OUT/runs.txt" 2>&1
