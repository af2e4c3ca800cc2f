"""Parallel sweeps on logical GPU slots (vLLM's CPU build), the servers being the vLLM stand-in
(tests/helpers/standins/vllm_server.py, replaying recorded real output) started exactly as vLLM would
be: two servers at once, every row as a serial sweep stores it, one writer, a failing server
failing only its own runs, Stop stopping every server, and a SIGKILLed runner resumed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from workbench import events, launch, plan, store
from helpers.plans import NGRAM, demo_plan
from helpers.standin_sweep import SCRIPT, STANDINS, VARYING, rows_by_label, standin_plan, sweep
from workbench.host.slots import Slot
from workbench.sweep import runner
from workbench.sweep.executor import ThreadExecutor

SLOTS = [Slot(0, (0,), logical=True), Slot(1, (1,), logical=True)]
@pytest.fixture
def standin_vllm(monkeypatch):
    """`vllm serve` runs the stand-in on the same arguments (no vLLM shim in the argv)."""
    monkeypatch.setattr(launch.vllm_cli, "argv", lambda python, args: [sys.executable, str(SCRIPT), *args])


@pytest.fixture(scope="module")
def both(demo_models, vllm_install, tmp_path_factory):
    """The same plan swept serially and on two logical slots, into two databases."""
    folder = tmp_path_factory.mktemp("parallel")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(launch.vllm_cli, "argv", lambda python, args: [sys.executable, str(SCRIPT), *args])
        serial = sweep(folder / "serial.sqlite", vllm_install)
        parallel = sweep(folder / "parallel.sqlite", vllm_install, SLOTS)
    return folder, serial, parallel


def test_two_slots_run_two_servers_at_once_and_store_what_a_serial_sweep_stores(both):
    folder, (serial, _), (summary, seen) = both
    assert serial["completed"] == summary["completed"] == 4 and summary["failed"] == 0
    a, b = rows_by_label(folder / "serial.sqlite"), rows_by_label(folder / "parallel.sqlite")
    assert set(a) == set(b) == {"baseline c=1", "baseline c=2", "ngram c=1", "ngram c=2"}
    for label in a:
        assert {k: v for k, v in a[label].items() if k not in VARYING} == \
               {k: v for k, v in b[label].items() if k not in VARYING}, label
        assert b[label]["counts"]["requests"] == 4 and b[label]["counts"]["samples"] > 0
        assert a[label]["gpus"] is None
    # Each configuration ran on its own slot, both at the same time.
    assert {b["baseline c=1"]["gpus"], b["ngram c=1"]["gpus"]} == {"[0]", "[1]"}
    assert b["baseline c=2"]["gpus"] == b["baseline c=1"]["gpus"]
    base = (b["baseline c=1"]["started"], b["baseline c=2"]["finished"])
    ngram = (b["ngram c=1"]["started"], b["ngram c=2"]["finished"])
    assert base[0] < ngram[1] and ngram[0] < base[1], (base, ngram)
    starting = [e for e in seen if isinstance(e, events.ServerStarting)]
    assert sorted(e.slot for e in starting) == [0, 1] and all(e.gpus == [e.slot] for e in starting)
    assert [e.KIND for e in seen].count("run_finished") == 4 and seen[-1].KIND == "sweep_finished"


def test_live_shows_a_row_per_slot_and_history_the_gpus(both, qtbot):
    from app.models.runs_model import COLUMNS
    from app.pages.history import HistoryPage
    from app.pages.live import LivePage

    folder, _, (_, seen) = both
    live = LivePage()
    qtbot.addWidget(live)
    live.follow(folder / "parallel.sqlite")
    for event in seen:
        live.on_event(event)
        if isinstance(event, events.RunStarted) and event.index == 3:
            # Mid-sweep: both servers in flight, each on its own row.
            table = live.slots
            assert table.isVisibleTo(live) and table.rowCount() == 2
            states = {table.item(r, 0).text(): table.item(r, 3).text() for r in range(2)}
            assert any(v.startswith("measuring") for v in states.values()), states
    table = live.slots
    rows = {table.item(r, 0).text(): [table.item(r, c).text() for c in range(6)] for r in range(2)}
    assert sorted(rows) == ["0", "1"] and all(r[1] == slot for slot, r in rows.items())
    assert {r[2].split(" ·")[0] for r in rows.values()} == {"baseline", "ngram N=2"}
    assert all(r[3] == "done" and float(r[4]) > 0 for r in rows.values())
    # The last run of each slot, with its final figures (the stand-in reports MAL for both servers).
    assert {r[2].split(" · ")[2] for r in rows.values()} == {"c=2"} and all(float(r[5]) > 1 for r in rows.values())
    history = HistoryPage()
    qtbot.addWidget(history)
    history.load(folder / "parallel.sqlite")
    qtbot.waitUntil(lambda: history.model.rowCount() > 0, timeout=20000)  # read off the GUI thread
    column = [key for key, _, _ in COLUMNS].index("gpus")
    shown = {history.model.data(history.model.index(r, column)) for r in range(history.model.rowCount())}
    assert shown == {"0", "1"}


def test_a_failing_server_fails_only_its_own_runs(standin_vllm, demo_models, vllm_install, tmp_path, monkeypatch):
    def argv(python, args):
        if "--speculative-config" in args:  # the ngram server dies at start-up
            return [sys.executable, "-c", "import sys; print('ValueError: no such luck', flush=True); sys.exit(3)"]
        return [sys.executable, str(SCRIPT), *args]

    monkeypatch.setattr(launch.vllm_cli, "argv", argv)
    summary, _ = sweep(tmp_path / "r.sqlite", vllm_install, SLOTS)
    rows = rows_by_label(tmp_path / "r.sqlite")
    assert summary["completed"] == 2 and summary["failed"] == 2
    assert rows["baseline c=1"]["status"] == rows["baseline c=2"]["status"] == "completed"
    assert rows["ngram c=1"]["status"] == "failed" and "ValueError: no such luck" in rows["ngram c=1"]["error"]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_stop_stops_every_server(standin_vllm, demo_models, vllm_install, tmp_path):
    holder: dict = {}
    ports: list[int] = []

    def emit(event):
        if isinstance(event, events.ServerReady):
            ports.append(event.port)
        if isinstance(event, events.RunStarted) and len(ports) == 2 and "stopped" not in holder:
            holder["stopped"] = True
            holder["runner"].stop_all()

    p = plan.loads(standin_plan())
    r = runner.Runner(p, str(tmp_path / "r.sqlite"), vllm_install, emit=emit, scrape_interval_s=0.1,
                      executor=ThreadExecutor(SLOTS))
    holder["runner"] = r
    summary = r.run()
    r.db.conn.close()
    assert summary["cancelled"] and summary["failed"] == 0
    # Nothing listens any more. (Binding the port is no test: connections the server closed
    # itself stay in TIME_WAIT on it for a minute, and a bind without SO_REUSEADDR then fails.)
    assert not any(_listening(port) for port in ports)
    statuses = {row["status"] for row in rows_by_label(tmp_path / "r.sqlite").values()}
    assert statuses <= {"completed", "cancelled", "pending"} and "cancelled" in statuses


def test_a_sigkilled_parallel_runner_resumes_only_the_unfinished_runs(demo_models, vllm_install, tmp_path):
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(standin_plan())
    db_path = tmp_path / "r.sqlite"
    env = {**os.environ, "STANDIN_REAL_PYTHON": sys.executable}
    argv = [sys.executable, "-m", "workbench.cli", "run", str(plan_file), "--db", str(db_path), "--gpus", "0,1",
            "--vllm-python", str(STANDINS / "vllm_python")]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        finished = 0
        for line in first.stdout:
            finished += '"run_finished"' in line
            if finished == 1:
                break
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    before = rows_by_label(db_path)
    completed = {k for k, r in before.items() if r["status"] == "completed"}
    assert 1 <= len(completed) < 4
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    evs = [json.loads(line) for line in done.stdout.splitlines()]
    assert evs[0]["pending"] == 4 - len(completed)
    after = rows_by_label(db_path)
    assert all(r["status"] == "completed" for r in after.values())
    # The runs completed before the kill are kept as they were; only the lossless check, made at
    # the end of a sweep over all its runs (the killed one never got there), is added to them.
    checked = {"accuracy", "graded", "lossless_baseline", "lossless_compared", "lossless_identical",
               "lossless_prefix", "lossless_turned_wrong", "lossless_turned_right"}
    for label in completed:
        assert {k: v for k, v in after[label].items() if k not in checked} == \
               {k: v for k, v in before[label].items() if k not in checked}
    assert all(r["lossless_compared"] for label, r in after.items() if label.startswith("ngram"))


TINY = demo_plan("parallel-real", methods=[NGRAM], server={"health_timeout_s": 600},
                 workload={"num_prompts": 2, "max_tokens": 8})


def _shape(row: dict) -> set[str]:
    return {k for k, v in row.items() if v is not None} - {"gpus", "error", "log_tail"}


def test_two_real_vllm_cpu_servers_run_at_once_and_store_serialrows_by_label(sweep_db, real_vllm, tmp_path):
    """Two real vLLM CPU servers on two logical slots, at the same time; every row as the serial
    sweep of the same configurations (conftest's sweep_db) stores it."""
    seen: list = []
    db_path = tmp_path / "real.sqlite"
    r = runner.Runner(plan.loads(TINY), str(db_path), real_vllm, emit=seen.append, executor=ThreadExecutor(SLOTS))
    summary = r.run()
    r.db.conn.close()
    assert summary["completed"] == 2 and summary["failed"] == 0, seen
    kinds = [e.KIND for e in seen]
    # Both servers were launched before either was ready, so both were up at once (which one
    # finishes its run first depends on how fast each starts on a busy machine).
    starts = [i for i, k in enumerate(kinds) if k == "server_starting"]
    assert len(starts) == 2 and max(starts) < kinds.index("server_ready")
    serial = {row.method: row.as_dict() for row in store.runs(store.open_db(sweep_db[0], readonly=True))}
    rows = {row.method: row.as_dict() for row in store.runs(store.open_db(db_path, readonly=True))}
    assert sorted(json.loads(row["gpus"]) for row in rows.values()) == [[0], [1]]
    for method in ("baseline", "ngram"):
        assert _shape(rows[method]) == _shape(serial[method]), method
        assert rows[method]["requests_ok"] == 2 and rows[method]["output_tokens"] > 0
        assert rows[method]["command"].startswith("vllm serve ") and "CUDA_VISIBLE_DEVICES" not in rows[method]["env"]
    assert rows["ngram"]["mal"] >= 1.0 and rows["baseline"]["mal"] is None
