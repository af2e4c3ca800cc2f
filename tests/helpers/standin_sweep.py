"""A small sweep on the vLLM stand-in (helpers/standins/vllm_server.py), and its rows read back by
label, for the tests that compare a serial sweep's rows with a parallel or a cluster one's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.cpu_tuning import seeded
from helpers.plans import demo_plan
from workbench import plan, store
from workbench.sweep import runner
from workbench.sweep.executor import ThreadExecutor

STANDINS = Path(__file__).parent / "standins"
SCRIPT = STANDINS / "vllm_server.py"
# Columns that differ between any two sweeps (times, ids, ports, measured figures).
VARYING = {"counts", "id", "experiment_id", "started", "finished", "command", "argv", "env", "host", "environment",
           "gpus", "window_s", "output_tok_s", "ttft_mean_ms", "ttft_p50_ms", "ttft_p99_ms", "itl_mean_ms",
           "itl_p50_ms", "itl_p99_ms", "tpot_mean_ms", "e2el_mean_ms", "client_cpu_s", "energy_j",
           "power_mean_w", "gpu_util_mean", "gpu_mem_peak_mib", "joules_per_token", "log_tail", "steady_s",
           "steady_tok_s"}


def run_plan(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`draftbench run plan.toml` in tmp_path as a user runs it, its servers the vLLM stand-in, its
    results in tmp_path/r.sqlite (the rerun and add-repeats tests)."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "DRAFTBENCH_CACHE_DIR": str(seeded(tmp_path / "cache")),
           "STANDIN_REAL_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-m", "workbench.cli", "run", "plan.toml", "--db", str(tmp_path / "r.sqlite"),
                           "--vllm-python", str(STANDINS / "vllm_python"), *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def standin_plan(sweep: dict | None = None) -> str:
    return demo_plan("parallel", methods=[{"method": "ngram", "n": 2}], sweep=sweep,
                     workload={"num_prompts": 4, "max_tokens": 32, "concurrency": [1, 2]})


def sweep(db_path: Path, vllm_install, slots=None, emit=None, sweep: dict | None = None) -> tuple[dict, list]:
    """standin_plan swept into db_path, every event kept (and passed to emit)."""
    seen: list = []

    def record(event):
        seen.append(event)
        if emit:
            emit(event)

    p = plan.loads(standin_plan(sweep))
    r = runner.Runner(p, str(db_path), vllm_install, emit=record, scrape_interval_s=0.1,
                      executor=ThreadExecutor(slots))
    summary = r.run()
    r.db.conn.close()
    return summary, seen


def rows_by_label(db_path: Path) -> dict[str, dict]:
    db = store.open_db(db_path, readonly=True)
    try:
        out = {}
        for row in store.runs(db):
            if row.redone_by:
                continue  # a failed attempt kept beside its redo: the label is the redo's
            counts = {t: db.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [row.id]).fetchone()[0]
                      for t in ("requests", "samples", "logs")}
            out[f"{row.method} c={row.concurrency}"] = {**row.as_dict(), "counts": counts}
        return out
    finally:
        store.close(db)
