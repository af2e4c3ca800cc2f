"""`draftbench show RUN` on a run that failed before its summary was written: the requests it
stored are counted, and a run that stored none shows a dash, never None/None."""

from __future__ import annotations

import subprocess
import sys

from workbench import store


def _show(db_path, run_id: int) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "show", str(run_id), "--db", str(db_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return {line[:34].strip(): line[34:].strip() for line in done.stdout.splitlines()}


def test_a_failed_run_shows_the_requests_it_stored(tmp_path):
    path = tmp_path / "r.sqlite"
    db = store.open_db(path)
    record = store.Recorder(db)
    exp = record.experiment("e", "h", "", "", {})
    ids = record.register_runs(exp, ["stored", "none", "done"], lambda i: {
        "experiment_id": exp, "key": ["stored", "none", "done"][i], "status": "pending", "method": "baseline",
        "target": "t", "workload": "w", "concurrency": 1})
    sweep = record.sweep_started(exp, None, 1.0, 3, 1)
    record.run_started(ids["stored"])
    record.sample(sweep, {"run_id": ids["stored"], "t": 0.5}, [], [
        {"run_id": ids["stored"], "idx": i, "ok": int(i < 3), "error": None if i < 3 else "HTTP 500"}
        for i in range(5)])
    record.run_failed(ids["stored"], "the server exited (code 1)", "")
    record.run_failed(ids["none"], "the server exited during start (code 1)", "")
    record.run_completed(ids["done"], {"requests_ok": 6, "requests_failed": 0})
    assert store.request_counts(db, ids["stored"]) == (3, 2)
    store.close(db)
    assert _show(path, ids["stored"])["requests ok/failed"] == "3/2"
    assert _show(path, ids["none"])["requests ok/failed"] == "-"
    assert _show(path, ids["done"])["requests ok/failed"] == "6/0"
