"""The plan fanned out over Ray's local cluster (two declared GPUs): the same rows as a serial
sweep, written by the driver alone; a worker SIGKILLed mid-run has its unfinished runs redone on
another. The servers are the vLLM stand-in, started through tests/helpers/standins/vllm_python."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys

import psutil
import pytest

from helpers.standin_sweep import SCRIPT, STANDINS, VARYING, rows_by_label, standin_plan, sweep
from workbench import events, launch, plan
from workbench.sweep import cluster, runner

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_cluster():
    os.environ["STANDIN_REAL_PYTHON"] = sys.executable  # the workers inherit it
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield cluster.connect("auto")
    finally:
        ray.shutdown()


@pytest.fixture
def standin_install(vllm_install):
    return dataclasses.replace(vllm_install, python=str(STANDINS / "vllm_python"))


def _on_cluster(found, db_path, install, emit):
    p = plan.loads(standin_plan())
    r = runner.Runner(p, str(db_path), install, emit=emit, scrape_interval_s=0.1,
                      executor=cluster.RayExecutor(found, p.parallel))
    summary = r.run()
    r.db.conn.close()
    return summary


def test_the_cluster_stores_the_rows_a_serial_sweep_stores(local_cluster, standin_install, vllm_install,
                                                          demo_models, tmp_path, monkeypatch):
    assert local_cluster.gpus == 2 and local_cluster.nodes == 1
    seen: list = []
    summary = _on_cluster(local_cluster, tmp_path / "ray.sqlite", standin_install, seen.append)
    monkeypatch.setattr(launch.vllm_cli, "argv", lambda python, args: [sys.executable, str(SCRIPT), *args])
    serial, _ = sweep(tmp_path / "serial.sqlite", vllm_install)
    assert summary["completed"] == serial["completed"] == 4 and summary["failed"] == 0
    a, b = rows_by_label(tmp_path / "serial.sqlite"), rows_by_label(tmp_path / "ray.sqlite")
    for label in a:
        assert {k: v for k, v in a[label].items() if k not in VARYING} == \
               {k: v for k, v in b[label].items() if k not in VARYING}, label
        assert b[label]["counts"]["requests"] == 4 and b[label]["counts"]["logs"] > 0
    # Each server ran on the GPU Ray gave its task; the two tasks had one each.
    assert {b["baseline c=1"]["gpus"], b["ngram c=1"]["gpus"]} == {"[0]", "[1]"}
    assert sorted(e.slot for e in seen if isinstance(e, events.ServerStarting)) == [0, 1]


def test_a_lost_worker_has_its_runs_redone_on_another(local_cluster, standin_install, demo_models, tmp_path, capfd):
    killed: dict = {}

    def emit(event):
        # The first server to be measured loses its worker (and with it the server) mid-run.
        if isinstance(event, events.RunStarted) and not killed:
            # This cluster's stand-in server: under pytest-xdist another worker's tests run
            # stand-ins too, and killing their parent would kill that worker.
            server = next(p for p in psutil.process_iter(["cmdline"]) if str(SCRIPT) in (p.info["cmdline"] or [])
                          and os.getpid() in {q.pid for q in p.parents()})
            killed["worker"] = server.parent().pid
            killed["server"] = server
            killed["run"] = event.run
            os.kill(killed["worker"], signal.SIGKILL)

    summary = _on_cluster(local_cluster, tmp_path / "ray.sqlite", standin_install, emit)
    assert killed and summary["completed"] == 4 and summary["failed"] == 0
    killed["server"].wait(30)  # the worker's server went with it
    rows = rows_by_label(tmp_path / "ray.sqlite")
    assert all(r["status"] == "completed" and r["counts"]["requests"] == 4 for r in rows.values())
    assert "was lost" in capfd.readouterr().err
