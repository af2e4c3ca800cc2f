"""Remote hosts over SSH, against a real OpenSSH server started on 127.0.0.1 with throwaway keys;
the "remote" environment is this machine's Python and this checkout, with its own data folder."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers.plans import NGRAM, demo_plan
from helpers import sshd as sshd_mod
from helpers.recorded import ROOT
from workbench import remote, store

# The sshd fixture is the suite's (conftest.py); no_agent keeps whatever SSH agent this machine has out.
pytestmark = [pytest.mark.skipif(not os.path.exists(sshd_mod.SSHD), reason="needs OpenSSH's sshd (scripts/bootstrap.sh installs it)"),
              pytest.mark.usefixtures("no_agent")]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def test_check_reports_doctor_and_gpus(sshd):
    info = remote.check(sshd.host())
    doctor = dict(map(tuple, info["doctor"]))
    assert doctor["draftbench"] == info["version"]
    assert "vllm" in doctor and "gpus" in doctor
    assert info["accelerator"] in ("none", "cuda", "rocm")
    assert info["python"] == sys.executable


def test_check_from_the_cli(sshd):
    host = sshd.host()
    proc = cli("remote", "check", f"127.0.0.1:{sshd.port}", "--identity", str(sshd.key),
               "--python", sys.executable, "--data-dir", host.data_dir, "--env", f"PYTHONPATH={ROOT}",
               "--ssh-config", str(sshd.client_config),
               "-o", "StrictHostKeyChecking=accept-new", "-o", f"UserKnownHostsFile={sshd.folder / 'known_hosts'}")
    assert proc.returncode == 0, proc.stderr
    assert "reachable" in proc.stdout and "draftbench" in proc.stdout and "gpus" in proc.stdout


@pytest.mark.parametrize("case,expected", [
    ("wrong_key", "refused the key (permission denied)"),
    ("unreachable", "is unreachable: connection refused"),
    ("no_draftbench", "Draftbench is not installed on"),
    ("no_python", "no Python at"),
])
def test_failures_give_one_clear_line(sshd, case, expected):
    if case == "wrong_key":
        host = sshd.host(identity_file=str(sshd.wrong_key))
    elif case == "unreachable":
        host = sshd.host()
        host.port = sshd_mod.free_port()  # nothing listens there
    elif case == "no_draftbench":
        # A bare virtualenv of the same Python: no Draftbench in it and this checkout not on its path.
        bare = sshd.folder / "bare-venv"
        if not bare.exists():
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
        host = sshd.host(env={}, venv=str(bare))
    else:
        host = sshd.host(python="/nonexistent/bin/python3")
    with pytest.raises(remote.RemoteError) as err:
        remote.check(host, timeout=60)
    message = str(err.value)
    assert expected in message, message
    assert "\n" not in message and "Traceback" not in message
    # The CLI says the same in one line, exit status 2.
    args = ["remote", "check", host.label, "--python", host.remote_python, "--data-dir", host.data_dir,
            "--ssh-config", host.config_file, *sum((["-o", o] for o in host.options), [])]
    if host.identity_file:
        args += ["--identity", host.identity_file]
    for k, v in host.env.items():
        args += ["--env", f"{k}={v}"]
    proc = cli(*args, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and expected in proc.stderr, proc.stderr


def test_quoting_keeps_shell_words_inert(sshd, tmp_path):
    # A data dir full of shell syntax reaches the host as one literal path.
    odd = str(sshd.folder / "data dir; touch PWNED $(touch PWNED2) 'q'")
    info = remote.check(sshd.host(data_dir=odd))
    assert info["data_dir"] == odd
    assert not (Path.home() / "PWNED").exists() and not (Path.home() / "PWNED2").exists()


TINY_PLAN = demo_plan("remote-stream", methods=[{"method": "baseline"}, NGRAM],
                      workload={"num_prompts": 4, "max_tokens": 32, "warmup": 0, "concurrency": [1]},
                      server={"health_timeout_s": 600})


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _cmdline(pid: int) -> list[str]:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.vllm
@pytest.mark.timeout(1800)  # two vLLM CPU servers start on the "remote" host: slow on a loaded machine
def test_remote_sweep_streams_live_survives_a_cut_and_ends_identical(sshd, demo_models, tmp_path):
    """The real thing end to end: `draftbench run --remote` against the sshd, the SSH client killed
    mid-run, the stream picked up again, and the local database equal to the host's at the end."""
    host = sshd.host(data_dir=str(sshd.folder / "stream-data"))
    plan = tmp_path / "tiny.toml"
    plan.write_text(TINY_PLAN)
    local_db, events = tmp_path / "local.sqlite", tmp_path / "events.jsonl"
    # The local database already holds an experiment of the same plan, run here: it must stay as
    # it is, and the host's rows get ids of their own.
    from workbench import plan as plan_mod

    db = store.open_db(local_db)
    mine = store.experiment_for(db, "remote-stream", plan_mod.loads(TINY_PLAN).hash, TINY_PLAN, "here.toml", {})
    with db.conn:
        db["runs"].insert({"experiment_id": mine, "key": "local-run", "status": "completed", "mal": 1.5})
    before = list(db["runs"].rows)
    db.conn.close()
    args = [sys.executable, "-m", "workbench.cli", "run", str(plan), "--remote", host.label,
            "--identity", str(sshd.key), "--python", sys.executable, "--data-dir", host.data_dir,
            "--env", f"PYTHONPATH={ROOT}", "--ssh-config", str(sshd.client_config),
            *sum((["-o", o] for o in host.options), []), "--db", str(local_db), "--events", str(events)]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        # Live: samples arrive here while the host's runner is still going.
        deadline = time.time() + 900
        remote_pid = None
        while time.time() < deadline:
            assert proc.poll() is None, "".join(stderr)
            started = [line for line in stderr if "started on" in line]
            if started and remote_pid is None:
                remote_pid = int(started[0].split("(pid ")[1].split(")")[0])
            if local_db.exists() and _count(local_db, "samples") >= 3:
                break
            time.sleep(0.5)
        else:
            pytest.fail("no samples streamed:\n" + "".join(stderr))
        assert remote_pid and _alive(remote_pid), "the remote sweep should still be running"
        live_samples = _count(local_db, "samples")

        # Cut the connection: kill the SSH client that carries the stream.
        ssh = [c for c in _children(proc.pid) if _cmdline(c)[:1] == ["ssh"] and "follow" in " ".join(_cmdline(c))]
        assert len(ssh) == 1, [(_cmdline(c)) for c in _children(proc.pid)]
        os.kill(ssh[0], 9)
        time.sleep(1.0)
        assert _alive(remote_pid), "the host's runner must survive the dropped connection"

        assert proc.wait(1200) == 0, "".join(stderr)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(5)
    text = "".join(stderr)
    assert "connection to 127.0.0.1" in text and "reconnecting" in text, text
    lag_line = [line for line in stderr if "lag from a row's time" in line]
    assert lag_line and "over 2 connection(s)" in lag_line[0], text
    print("\n" + lag_line[0].strip())

    # The host's database, pulled whole, equals the mirror table by table, row by row (read back
    # with the host's ids; the plan hash is marked because this database had the same plan).
    pulled = store.open_db(remote.pull(host, remote.remote_db(host), tmp_path / "pulled.sqlite"), readonly=True)
    here = store.open_db(local_db, readonly=True)
    source = remote.source_of(host, remote.remote_db(host).replace("~", str(Path.home()), 1))
    counts = {}
    for table in ("experiments", "runs", "sweeps", "recommendations", "samples", "positions", "requests", "logs",
                  "telemetry"):
        there = list(pulled[table].rows_where(order_by="id"))
        mirrored = store.mirrored_rows(here, source, table)
        if table == "experiments":
            for row in mirrored:
                assert row["plan_hash"].endswith("@" + source)
                row["plan_hash"] = row["plan_hash"].split("@", 1)[0]
        assert len(there) == len(mirrored), (table, len(there), len(mirrored))
        assert there == mirrored, table
        counts[table] = len(there)
    print("rows per table:", counts)
    assert counts["samples"] > live_samples and counts["positions"] > 0 and counts["requests"] == 8
    per_position = here.execute("SELECT position, sum(accepted), sum(drafts) FROM positions GROUP BY position").fetchall()
    assert per_position == pulled.execute(
        "SELECT position, sum(accepted), sum(drafts) FROM positions GROUP BY position").fetchall()
    assert sum(row[2] for row in per_position) > 0, "the ngram run has per-position counters"
    assert [r.status for r in store.runs(pulled)] == ["completed", "completed"]
    # What was here before is untouched.
    assert [r for r in here["runs"].rows_where("id = ?", [before[0]["id"]])] == before

    # The events as the host wrote them, once each, in order.
    there = [Path(p) for p in (Path(host.data_dir) / "events").iterdir()]
    assert len(there) == 1
    to_local = {t: {rid: lid for rid, lid in here.execute(
        "SELECT remote_id, local_id FROM remote_rows WHERE source = ? AND tbl = ?", [source, t])}
        for t in ("runs", "experiments")}
    assert to_local["runs"] and all(rid != lid for rid, lid in to_local["runs"].items())
    expected = []
    for line in there[0].read_text().splitlines():
        event = json.loads(line)
        for key, table in (("run", "runs"), ("experiment", "experiments")):
            if key in event:
                event[key] = to_local[table][event[key]]
        expected.append(event)
    assert [json.loads(line) for line in events.read_text().splitlines()] == expected
    kinds = [json.loads(line)["event"] for line in events.read_text().splitlines()]
    assert kinds[0] == "sweep_started" and kinds[-1] == "sweep_finished"

    # After a closed laptop: `remote follow` fills another database from the host's latest sweep,
    # and a second follow adds nothing.
    other = tmp_path / "other.sqlite"
    follow = [*args[args.index("--identity"):args.index("--db")], "--db", str(other)]
    for _ in range(2):
        proc = cli("remote", "follow", host.label, *follow, timeout=300)
        assert proc.returncode == 0, proc.stderr
        copy = store.open_db(other, readonly=True)
        for table, n in counts.items():
            assert copy.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == n, table
    assert store.mirrored_rows(copy, source, "positions") == list(pulled["positions"].rows_where(order_by="id"))


def _count(db_path: Path, table: str) -> int:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def test_app_menu_checks_the_host_and_refuses_in_one_line(qtbot, sshd, tmp_path, monkeypatch, vllm_install):
    """Sweep > Run on remote host…: a saved host whose key the server refuses gives one warning
    line and starts nothing."""
    from PySide6.QtWidgets import QInputDialog, QMessageBox

    from app.main import MainWindow
    from workbench.usecases.children import runner_args

    remote.save("refused-box", sshd.host(identity_file=str(sshd.wrong_key)))
    w = MainWindow(tmp_path / "app.sqlite", vllm_install)
    w.ask_close = lambda: "stop"
    qtbot.addWidget(w)
    asked, warned = [], []
    monkeypatch.setattr(QInputDialog, "getItem", lambda *a, **k: (asked.append(a[3]) or ("refused-box", True)))
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: warned.append(text))
    action = next(a for a in w.findChildren(type(w.menuBar().actions()[0])) if a.text() == "Run on &remote host…")
    action.trigger()
    assert "refused-box" in asked[0]
    qtbot.waitUntil(lambda: bool(warned), timeout=120_000)  # the host is checked off the GUI thread
    assert len(warned) == 1 and "refused the key (permission denied)" in warned[0] and "\n" not in warned[0]
    assert w.sweep is None
    # The runner the app starts for a remote host is the same `run`, pointed at it.
    args = runner_args("p.toml", "db.sqlite", "ev.jsonl", "log.txt", remote="refused-box")
    assert args[-2:] == ["--remote", "refused-box"]


def _write_sweep(db, run_id: int, n: int, base: float) -> None:
    with db.conn:
        db["samples"].insert_all([{"run_id": run_id, "t": base + i, "mal": 1.0 + i / 10} for i in range(n)])
        db["positions"].insert_all([{"run_id": run_id, "t": base + i, "position": p, "accepted": i * p, "drafts": i}
                                    for i in range(n) for p in (1, 2, 3)])


def test_follow_and_pull_resume_and_repair_a_rerun(sshd, tmp_path):
    """Rows written on the host by the store itself (no vLLM needed): `remote follow` copies them,
    a second follow adds nothing, a rerun on the host (rows deleted, ids handed out again) is
    repaired, and `remote pull` gives the same rows."""
    host = sshd.host(data_dir=str(sshd.folder / "follow-data"))
    there = store.open_db(Path(host.data_dir) / "results.sqlite")
    exp = store.experiment_for(there, "synthetic", "hash-1", "name = 'synthetic'", "p.toml", {})
    with there.conn:
        runs = [there["runs"].insert({"experiment_id": exp, "key": k, "status": "completed"}).last_pk for k in "ab"]
        there["sweeps"].insert({"experiment_id": exp, "pid": 0, "events_path": "", "started": 1.0,
                                "finished": 2.0, "status": "finished"})
    _write_sweep(there, runs[0], 5, 100.0)
    _write_sweep(there, runs[1], 4, 200.0)
    local = tmp_path / "local.sqlite"
    opts = ["--identity", str(sshd.key), "--python", sys.executable, "--data-dir", host.data_dir,
            "--env", f"PYTHONPATH={ROOT}", "--ssh-config", str(sshd.client_config),
            *sum((["-o", o] for o in host.options), [])]
    source = remote.source_of(host, str(Path(host.data_dir) / "results.sqlite"))

    def same() -> None:
        here = store.open_db(local, readonly=True)
        for table in ("experiments", "runs", "sweeps", "samples", "positions"):
            assert store.mirrored_rows(here, source, table) == list(there[table].rows_where(order_by="id")), table

    for _ in range(2):
        proc = cli("remote", "follow", host.label, "--db", str(local), *opts, timeout=120)
        assert proc.returncode == 0, proc.stderr
        same()
    # The second run is redone on the host: its rows go, and the new ones reuse the freed ids.
    with there.conn:
        for table in ("samples", "positions"):
            there.execute(f"DELETE FROM {table} WHERE run_id = ?", [runs[1]])
    _write_sweep(there, runs[1], 6, 300.0)
    proc = cli("remote", "follow", host.label, "--db", str(local), *opts, timeout=120)
    assert proc.returncode == 0, proc.stderr
    same()

    pulled = tmp_path / "pulled.sqlite"
    proc = cli("remote", "pull", host.label, "--out", str(pulled), *opts, timeout=120)
    assert proc.returncode == 0, proc.stderr
    copy = store.open_db(pulled, readonly=True)
    for table in ("runs", "samples", "positions"):
        assert list(copy[table].rows_where(order_by="id")) == list(there[table].rows_where(order_by="id"))


def test_remote_models_lists_the_hosts_cache_and_downloads_there(sshd):
    """The host's cache as its own `draftbench models` shows it; a download runs on the host, so
    its failure (here the Hub is out of reach of the host) comes back as the host's one line."""
    host = sshd.host()
    opts = ["--identity", str(sshd.key), "--python", sys.executable, "--env", f"PYTHONPATH={ROOT}",
            "--ssh-config", str(sshd.client_config), *sum((["-o", o] for o in host.options), [])]
    there = cli("remote", "models", host.label, *opts, timeout=120)
    assert there.returncode == 0, there.stderr
    # Through sshd the host's environment is the login's, not this process's.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "DRAFTBENCH_", "HUGGINGFACE"))}
    here = subprocess.run([sys.executable, "-m", "workbench.cli", "models"], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=120)
    assert there.stdout.splitlines()[0].split("token:")[0] == here.stdout.splitlines()[0].split("token:")[0]
    proc = cli("remote", "models", host.label, "--download", "nobody/nothing-here", *opts, timeout=120)
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert line.startswith(f"draftbench: {host.label}: ") and "\n" not in line, line


@pytest.mark.vllm
@pytest.mark.timeout(1800)
def test_app_runs_on_the_remote_host_live_and_stops_it_there(qtbot, sshd, tmp_path, monkeypatch, vllm_install,
                                                             demo_models):
    """Sweep > Run on remote host… with a saved host: the Live page fills from the host's rows as
    they stream in, and Stop stops the sweep on the host."""
    import numpy as np
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QInputDialog

    from app.main import MainWindow

    remote.save("good-box", sshd.host(data_dir=str(sshd.folder / "app-data")))
    w = MainWindow(tmp_path / "app.sqlite", vllm_install)
    w.ask_close = lambda: "stop"
    qtbot.addWidget(w)
    w.show()
    doc = w.experiment.document()
    doc["name"] = "gui-remote"
    doc["methods"] = [{"method": "ngram", "n": [2], "options": {"prompt_lookup_min": 2, "prompt_lookup_max": 4}}]
    # Long enough (about 10 s of decoding) for the Live page to read three samples while the
    # ngram run is in flight: a shorter run can end before the stream brings its rows, and the
    # app then leaves Live for Compare.
    doc["workload"].update({"names": ["builtin"], "concurrency": [1], "num_prompts": 8, "max_tokens": 64,
                            "warmup": 0, "repeats": 1, "temperature": 0.0})
    w.experiment.set_document(doc)
    qtbot.waitUntil(lambda: w.experiment.run_button.isEnabled(), timeout=5000)
    monkeypatch.setattr(QInputDialog, "getItem", lambda *a, **k: ("good-box", True))
    w.run_remote()
    # The host is checked first (off the GUI thread), then the sweep starts.
    qtbot.waitUntil(lambda: w.sweep is not None, timeout=120_000)
    assert w.tabs.currentWidget() is w.live
    live = w.live
    def shown() -> bool:
        return len(live.positions) == 2 and live.samples.n >= 3 and live.requests.n >= 1

    # Ends as soon as the sweep does, so that a sweep which finished first fails here in one line.
    qtbot.waitUntil(lambda: shown() or w.sweep is None, timeout=600_000)
    assert shown(), (f"the sweep ended before Live showed ngram's rows: {len(live.positions)} positions, "
                     f"{live.samples.n} samples, {live.requests.n} requests")
    qtbot.wait(500)
    x, y = live.charts.tps_curve.getData()
    assert len(x) >= 3 and np.nanmax(y) > 0
    assert "ngram N=2" in live.title.text()
    qtbot.mouseClick(live.stop_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: w.sweep is None, timeout=300000)

    there = store.open_db(Path(sshd.folder / "app-data" / "results.sqlite"), readonly=True)
    here = store.open_db(tmp_path / "app.sqlite", readonly=True)
    assert there.execute("SELECT status FROM sweeps").fetchone()[0] in ("cancelled", "finished")
    for table in ("runs", "sweeps", "samples", "positions", "requests"):
        assert here.execute(f"SELECT count(*) FROM {table}").fetchone() == \
            there.execute(f"SELECT count(*) FROM {table}").fetchone(), table
    assert [r.status for r in store.runs(here)] == [r.status for r in store.runs(there)]
