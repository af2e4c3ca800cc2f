"""The desktop app's CPU over a measurement window: the runner reads the process the app names
(DRAFTBENCH_APP_PID) at the window's start and end, stores it as app_cpu_s beside the client's,
and warns on a run where the app took more than 5 % of one core."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from helpers.plans import demo_plan
from workbench.usecases import children
from workbench import launch, plan, store
from workbench.analysis import run_summary
from workbench.sweep import app_cpu, runner
from workbench.sweep.measure import window_warnings


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_window_reads_the_named_process_cpu():
    app = app_cpu.from_env({app_cpu.APP_PID_ENV: str(os.getpid())})
    assert app is not None and app.pid == os.getpid() and app.host == platform.node()
    window = app_cpu.Window(app)
    _burn(0.2)
    used = window.stop()
    assert used is not None and 0.15 <= used < 2.0


def test_a_window_reads_only_our_process_and_only_here():
    assert app_cpu.from_env({}) is None
    assert app_cpu.from_env({app_cpu.APP_PID_ENV: "not a pid"}) is None
    assert app_cpu.from_env({app_cpu.APP_PID_ENV: "0"}) is None
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert app_cpu.from_env({app_cpu.APP_PID_ENV: str(gone.pid)}) is None
    app = app_cpu.from_env({app_cpu.APP_PID_ENV: str(os.getpid())})
    # A job on another host (a Ray worker), or a pid the kernel gave to another process since.
    assert app_cpu.cpu_seconds(replace(app, host=app.host + "-elsewhere")) is None
    assert app_cpu.cpu_seconds(replace(app, started=app.started - 60)) is None
    assert app_cpu.Window(None).stop() is None


def test_the_app_names_itself_to_the_runner_it_starts():
    assert children.runner_env() == {app_cpu.APP_PID_ENV: str(os.getpid())}


def test_more_than_five_percent_of_a_core_is_a_warning():
    assert app_cpu.warning(0.5, 10.0) is None  # exactly 5 %
    assert app_cpu.warning(None, 10.0) is None and app_cpu.warning(1.0, 0.0) is None
    text = app_cpu.warning(1.2, 10.0)
    assert text.startswith("the Draftbench app used 12.0 % of one CPU core during the window (more than 5 %)")
    # Beside the load generator's own warning, each said once.
    both = window_warnings(client_cpu_s=8.0, app_cpu_s=1.2, wall_s=10.0)
    assert len(both) == 2 and "load generator" in both[0] and both[1] == text
    assert window_warnings(client_cpu_s=1.0, app_cpu_s=0.1, wall_s=10.0) == []


def test_app_cpu_s_is_a_run_column_shown_with_the_run(tmp_path):
    db = store.open_db(tmp_path / "r.sqlite")
    assert store.SCHEMA_VERSION >= 11 and "app_cpu_s" in db["runs"].columns_dict
    exp = store.experiment_for(db, "e", "h", "", "", {})
    run = db["runs"].insert({"experiment_id": exp, "key": "k", "seq": 0, "method": "baseline", "workload": "w",
                             "concurrency": 1, "status": "running"}).last_pk
    store.Recorder(db).run_completed(run, {"window_s": 20.0, "app_cpu_s": 0.4, "client_cpu_s": 1.0})
    row = store.run(db, run)
    assert row.app_cpu_s == 0.4
    assert dict(run_summary(db, row))["app CPU"] == "0.40 s: 2.0 % of one core"
    store.close(db)


STANDIN = Path(__file__).parent / "helpers" / "standins" / "vllm_server.py"
PLAN = demo_plan("app-cpu", workload={"num_prompts": 2, "max_tokens": 16, "warmup": 0, "concurrency": [1]})


def test_the_runner_stores_the_named_apps_cpu_with_each_run(tmp_path, monkeypatch, demo_models, vllm_install):
    """A sweep on the vLLM stand-in, the test process named as the app (it is also the runner here)."""
    monkeypatch.setattr(launch.vllm_cli, "argv", lambda python, args: [sys.executable, str(STANDIN), *args])
    monkeypatch.setenv(app_cpu.APP_PID_ENV, str(os.getpid()))
    r = runner.Runner(plan.loads(PLAN), str(tmp_path / "r.sqlite"), vllm_install, emit=lambda e: None,
                      scrape_interval_s=0.1)
    assert r.run()["completed"] == 1
    (row,) = store.runs(r.db)
    r.db.conn.close()
    assert row.app_cpu_s is not None and 0 <= row.app_cpu_s <= 2 * row.window_s + 1
    assert row.client_cpu_s is not None
