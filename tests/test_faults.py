"""Faults, caused for real against the real runner and real vLLM CPU servers: a server SIGKILLed
mid-run, its port taken, the database locked by another writer, a full disk while the database is
written and while a benchmark downloads, a newer or damaged database, an unreachable Hub and a
gated dataset without a token. After each: `PRAGMA integrity_check` is ok and no completed run
lost a row. A database refused before any server starts is a copy of the one recorded on a GPU
(docs/gpu/), so those tests need no server.

Covered elsewhere, not repeated here: the runner SIGKILLed mid-sweep and resumed
(tests/test_runner.py), the app closed mid-run and reopened, reattaching (tests/test_gui_sweep.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from helpers.hub import Repo, StandInHub
from helpers.plans import NGRAM, attach_plan, demo_plan
from workbench import launch, plan, store
from workbench.sweep import runner

ROOT = Path(__file__).resolve().parent.parent
CHILD_TABLES = ("samples", "positions", "requests", "logs")



def fault_plan(name: str = "faults", methods=({**NGRAM, "n": [2, 3]},), **workload) -> str:
    return demo_plan(name, methods=methods, server={"health_timeout_s": 300},
                     workload={"num_prompts": 4, "max_tokens": 48, "concurrency": [1, 2], **workload})


FAULT_PLAN = fault_plan()

# Another program writing to the results database: it takes the write lock, writes, holds it.
LOCKER = ("import sqlite3, sys, time\n"
          "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
          "c.execute('BEGIN IMMEDIATE')\n"
          "c.execute(\"INSERT OR REPLACE INTO meta VALUES ('another-writer', 'was here')\")\n"
          "print('locked', flush=True)\n"
          # "stdin": held until a line comes on stdin (the test lets go when it has seen what it waits
          # for); otherwise held for that many seconds.
          "sys.stdin.readline() if sys.argv[2] == 'stdin' else time.sleep(float(sys.argv[2]))\n"
          "c.execute('COMMIT')\n")


LOSSLESS_COLUMNS = {"accuracy", "graded", "lossless_baseline", "lossless_compared", "lossless_identical",
                    "lossless_prefix", "lossless_turned_wrong", "lossless_turned_right"}


def completed_rows(db_path: Path) -> dict[int, tuple]:
    """Every completed run: its row and a digest of each of its child tables' rows."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        out = {}
        # The lossless check's columns are written at the end of a sweep over all its runs, the
        # completed ones included: not a change to what they measured.
        columns = [c[1] for c in conn.execute("PRAGMA table_info(runs)").fetchall()
                   if c[1] not in LOSSLESS_COLUMNS]
        for row in conn.execute(f"SELECT {', '.join(columns)} FROM runs WHERE status = 'completed' ORDER BY id").fetchall():
            digests = []
            for table in CHILD_TABLES:
                rows = conn.execute(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY id", [row[0]]).fetchall()
                digests.append((len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()))
            out[row[0]] = (row, tuple(digests))
        return out
    finally:
        conn.close()


def assert_intact(db_path: Path, before: dict[int, tuple]) -> None:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    after = completed_rows(db_path)
    for run_id, value in before.items():
        assert after.get(run_id) == value, f"completed run {run_id} changed or lost rows"


def copy_db(src: Path, dst: Path) -> Path:
    """A consistent copy through SQLite's backup API (the WAL's content included)."""
    a, b = sqlite3.connect(f"file:{src}?mode=ro", uri=True), sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()
    return dst


def _port(command: str) -> int:
    return int(command.split("--port ")[1].split()[0])


def _listening(port: int) -> bool:
    """Whether a server still accepts on the port. (A bind test would trip over a killed server's
    connections lingering in TIME_WAIT, which hold the port for a minute with no listener.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _group_alive(pgid: int) -> list[int]:
    alive = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return alive


@pytest.fixture(scope="module")
def fault_sweep(demo_models, real_vllm, tmp_path_factory):
    """One sweep on three server configurations with faults injected as it goes: the baseline's port
    is taken (its retry gets another); the ngram N=2 server is SIGKILLed in the middle of its second run. (Another writer
    holding the lock is a fault of our own writer, not of vLLM: it runs against the stand-in
    below, whose scrapes answer at once, so their timing shows what the writer did.)"""
    folder = tmp_path_factory.mktemp("faults")
    db_path = folder / "results.sqlite"
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    ports = [busy.getsockname()[1]]
    real_free_port = launch.free_port
    events: list = []
    record: dict = {"label": ""}

    def emit(event) -> None:
        events.append(event)
        kind = event.KIND
        if kind == "server_starting":
            record["port"] = _port(event.command)
        elif kind == "run_started":
            record["label"] = event.label
        elif kind == "progress" and event.done < event.total:
            label = record["label"]
            if label.startswith("ngram N=2") and "c=2" in label and "killed" not in record:
                record["before_kill"] = completed_rows(db_path)
                server = next(c for c in psutil.Process().children() if f"--port {record['port']}" in _cmdline(c))
                record["killed"] = server.pid
                os.kill(server.pid, signal.SIGKILL)

    p = plan.loads(FAULT_PLAN)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(launch, "free_port", lambda: ports.pop() if ports else real_free_port())
        r = runner.Runner(p, str(db_path), real_vllm, emit=emit)
        summary = r.run()
        r.db.conn.close()
    busy.close()
    return db_path, summary, events, record


def _cmdline(process: psutil.Process) -> str:
    # Another test's finished child may still be an unreaped zombie here, whose command line
    # cannot be read: it is not the server looked for.
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _runs(db_path: Path) -> dict[str, dict]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        # A failed attempt kept beside its redo (redone_by) is not the run its label names.
        rows = conn.execute("SELECT * FROM runs WHERE redone_by IS NULL ORDER BY id").fetchall()
        return {f"{r['method']} N={r['n']} c={r['concurrency']}": dict(r) for r in rows}
    finally:
        conn.close()


def test_port_in_use_fails_the_baseline_which_is_retried_before_the_sweep_goes_on(fault_sweep):
    db_path, summary, events, _ = fault_sweep
    runs = _runs(db_path)
    # The first attempt failed both baseline runs; the retry, on a port of its own, measured them.
    failed = {e.run: e.error for e in events if e.KIND == "run_failed" and "is already in use" in e.error}
    for c in (1, 2):
        base = runs[f"baseline N=None c={c}"]
        assert base["id"] in failed and base["status"] == "completed" and base["error"] is None
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    kept = conn.execute("SELECT redone_by, status, error FROM runs WHERE redone_by IS NOT NULL ORDER BY id").fetchall()
    conn.close()
    # Each failed first attempt is kept beside its redo, with the error it failed with.
    assert [(r[0], r[1]) for r in kept] == [(i, "failed") for i in sorted(failed)]
    assert all("is already in use" in r[2] for r in kept)
    # No server was started on the taken port; the baseline's retry and the other two configurations were.
    assert [e.KIND for e in events].count("server_starting") == 4
    assert [e.KIND for e in events].count("server_ready") == 3
    assert summary["completed"] == 5 and summary["failed"] == 1
    assert_intact(db_path, {})


def test_vllm_sigkilled_mid_run_fails_that_run_with_its_log_and_the_sweep_goes_on(fault_sweep):
    db_path, _, events, record = fault_sweep
    assert "killed" in record, "the ngram N=2 run finished before it could be killed"
    runs = _runs(db_path)
    killed = runs["ngram N=2 c=2"]
    assert killed["status"] == "failed"
    assert killed["error"].startswith("vLLM server died during the run"), killed["error"]
    assert killed["finished"] is not None
    # Its log tail is kept: the server's own lines up to the kill.
    assert len(killed["log_tail"].splitlines()) >= 10 and "POST /v1/chat/completions" in killed["log_tail"]
    assert any(e.KIND == "run_failed" and e.run == killed["id"] for e in events)
    # The run before it on the same server, and both runs on the next server, completed.
    for label in ("ngram N=2 c=1", "ngram N=3 c=1", "ngram N=3 c=2"):
        assert runs[label]["status"] == "completed" and runs[label]["requests_ok"] == 4, label
    # Nothing of the killed server's process group outlived it (its engine process included).
    assert _group_alive(record["killed"]) == []
    assert not _listening(_port(killed["command"]))
    assert_intact(db_path, record["before_kill"])
    assert record["before_kill"], "a completed run existed when the server was killed"


# Scrapes the sampler must make while another writer holds the lock before the lock is let go.
SCRAPES_WHILE_LOCKED = 3


def test_another_writer_holding_the_lock_delays_but_loses_nothing(demo_models, vllm_install, tmp_path, monkeypatch):
    """Another program takes the results database's write lock in the middle of a run and holds it
    until the sampler has scraped the server SCRAPES_WHILE_LOCKED more times. The run's writes queue
    for the sweep's one writer thread, which waits out the lock; the measurement does not: had the
    sampler waited for the lock, no scrape would reach the server while it is held and the lock
    would never be let go. The run then completes with every row, the samples scraped under the
    lock included, in the order they were taken. Nothing here is timed: the checks are of order and
    counts, which hold however slowly a loaded machine runs. The server is the vLLM stand-in,
    replaying a recorded CPU run (at 3% of its pace), one request at a time so the run outlasts
    the scrapes."""
    from helpers.standins.vllm_server import StandinVllm
    from workbench.checkpoints import demo

    db_path = tmp_path / "results.sqlite"
    record: dict = {}

    def stored_samples(run: int) -> int:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)  # readers are not blocked (WAL)
        try:
            return conn.execute("SELECT count(*) FROM samples WHERE run_id = ?", [run]).fetchone()[0]
        finally:
            conn.close()

    def release_after_scrapes(server, locker) -> None:
        deadline = time.monotonic() + 120  # generous: only a sampler that waits for the lock exceeds it
        while server.scrapes < record["scrapes_at_lock"] + SCRAPES_WHILE_LOCKED and time.monotonic() < deadline:
            time.sleep(0.05)
        record["scrapes_while_locked"] = server.scrapes - record["scrapes_at_lock"]
        record["stored_while_locked"] = stored_samples(record["run"])
        locker.stdin.write("release\n")
        locker.stdin.close()

    with StandinVllm("draft_model_n3", api_key="standin-lock-key-0123456789abcdef", pace=0.03) as server:

        def emit(event) -> None:
            # Events come from the sweep's writer thread, once the rows before them are committed.
            if event.KIND != "progress" or "locker" in record or event.done == 0 or event.done >= event.total:
                return
            locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(db_path), "stdin"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert locker.stdout.readline().strip() == "locked"
            record.update(locker=locker, run=event.run, scrapes_at_lock=server.scrapes)
            record["stored_at_lock"] = stored_samples(event.run)
            threading.Thread(target=release_after_scrapes, args=(server, locker), daemon=True).start()

        monkeypatch.setenv("STANDIN_KEY", server.api_key)
        p = plan.loads(attach_plan(server.base_url, demo_models[demo.DRAFT_NOISY.name], workload={"concurrency": [1]}))
        r = runner.Runner(p, str(db_path), vllm_install, emit=emit, scrape_interval_s=0.25)
        summary = r.run()
        r.db.conn.close()
    assert "locker" in record, "the run ended before a request of it completed"
    assert record["locker"].wait(30) == 0
    # The sampler went on scraping while the lock was held, and nothing it scraped then was stored
    # before the lock was let go.
    assert record["scrapes_while_locked"] >= SCRAPES_WHILE_LOCKED, record
    assert record["stored_while_locked"] == record["stored_at_lock"], record
    assert summary["completed"] == 1 and summary["failed"] == 0
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'another-writer'").fetchone() == ("was here",)
        run = conn.execute("SELECT status, requests_ok FROM runs WHERE id = ?", [record["run"]]).fetchone()
        times = [t for (t,) in conn.execute("SELECT t FROM samples WHERE run_id = ? ORDER BY id", [record["run"]])]
        requests = conn.execute("SELECT count(*) FROM requests WHERE run_id = ?", [record["run"]]).fetchone()[0]
    finally:
        conn.close()
    assert run == ("completed", 6) and requests == 6
    # Every sample scraped under the lock reached the database once it was let go (a scrape stores
    # one sample; the last scrape before the lock may have been in the writer's queue already),
    # and the samples are stored in the order they were taken.
    assert len(times) - record["stored_at_lock"] >= SCRAPES_WHILE_LOCKED - 1, (times, record)
    assert times == sorted(times) and len(times) == len(set(times))


def _cli(args: list[str], env: dict | None = None, preexec=None, timeout: float = 120) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_DISABLE_PROGRESS_BARS": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, env=full,
                          preexec_fn=preexec, timeout=timeout)


def _one_line(done: subprocess.CompletedProcess, message: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stdout + done.stderr
    # Progress lines ("[100%] demo model ready") may come first; the answer is one line.
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("[")]
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_a_database_locked_by_another_writer_at_start_is_refused_in_one_line(recorded_db, tmp_path):
    db = tmp_path / "locked.sqlite"
    copy_db(recorded_db, db)
    before = completed_rows(db)
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(fault_plan("while-locked"))
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(db), "20"], stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout.readline().strip() == "locked"
        # Readers are not blocked (WAL): the runs can still be listed while the lock is held.
        assert _cli(["runs", "--db", str(db)]).returncode == 0
        # The runner waits BUSY_TIMEOUT_S for the lock; 2 s here instead of 30.
        code = ("import sys; from workbench.store import connection; connection.BUSY_TIMEOUT_S = 2\n"
                "from app.entry import main; sys.exit(main(sys.argv[1:]))")
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-c", code, "run", str(plan_file), "--db", str(db)],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
        assert time.monotonic() - t0 < 60
    finally:
        locker.kill()
        locker.wait()
    _one_line(done, "database is locked (another program is writing to it; close it or wait)")
    assert "server_starting" not in done.stdout
    assert_intact(db, before)


def test_newer_schema_and_damaged_databases_are_refused_untouched(recorded_db, tmp_path):
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(FAULT_PLAN)
    newer = tmp_path / "newer.sqlite"
    copy_db(recorded_db, newer)
    conn = sqlite3.connect(newer)
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(store.SCHEMA_VERSION + 1),))
    conn.close()
    before = completed_rows(newer)
    data = newer.read_bytes()
    _one_line(_cli(["run", str(plan_file), "--db", str(newer)]), f"was written by a newer Draftbench (schema {store.SCHEMA_VERSION + 1}")
    assert newer.read_bytes() == data
    assert_intact(newer, before)

    damaged = tmp_path / "damaged.sqlite"
    raw = bytearray(copy_db(recorded_db, tmp_path / "copy.sqlite").read_bytes())
    raw[len(raw) // 2: len(raw) // 2 + 8192] = b"\x00\xff" * 4096
    damaged.write_bytes(bytes(raw))
    done = _cli(["run", str(plan_file), "--db", str(damaged)])
    _one_line(done, "draftbench: ")
    assert "damaged" in done.stderr or "malformed" in done.stderr
    assert damaged.read_bytes() == bytes(raw)


# A runner whose file-size limit drops to the database's current size once the first run is in:
# the kernel refuses every write that would grow a file (EFBIG, as on a full disk). The server was
# started before, so vLLM itself runs without the limit.
DISK_FULL = r"""
import os, resource, signal, sqlite3, sys
from workbench import events
from app.entry import main
db = sys.argv[sys.argv.index("--db") + 1]
write = events.Writer.__call__
# Events are written from the sweep's database writer thread; a signal handler can only be set
# from the main thread, so before the sweep.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
def limited(self, event):
    write(self, event)
    if event.KIND == "run_finished" and not os.environ.get("LIMITED"):
        os.environ["LIMITED"] = "1"
        size = max(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
        write(self, events.Other("disk_full", {"limit": size}))
events.Writer.__call__ = limited
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.vllm
def test_disk_full_while_writing_the_database(demo_models, tmp_path):
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(fault_plan("disk-full", methods=()))
    db = tmp_path / "results.sqlite"
    done = subprocess.run([sys.executable, "-c", DISK_FULL, "run", str(plan_file), "--db", str(db)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    # The limit is set when the first run finishes. Writes go through the sweep's one writer
    # thread, and SQLite reuses a checkpointed WAL's space, so which later write first needs the
    # file to grow (the next run's samples, or only the sweep's end) depends on timing.
    assert kinds.count("run_finished") >= 1 and "disk_full" in kinds, done.stderr[-3000:]
    _one_line(done, "draftbench: the results database cannot be used: ")
    assert "free some disk space, then run the same plan again to resume" in done.stderr
    # The sweep's end event carries the same line, for the app that follows the events.
    assert kinds[-1] == "sweep_finished" and f"draftbench: {events[-1]['error']}" in done.stderr.splitlines()
    runs = _runs(db)
    assert runs["baseline N=None c=1"]["status"] == "completed"
    # The run finished before the limit is stored whole; nothing stored was damaged; and every run
    # announced as finished is stored as completed (once a write fails, no event follows it).
    before = completed_rows(db)
    finished = [e["run"] for e in events if e["event"] == "run_finished"]
    assert finished[0] in before and before[finished[0]][1][2][0] == 4  # its 4 requests
    assert set(finished) <= set(before), (finished, sorted(before))
    assert_intact(db, before)
    # The server did not outlive the runner.
    assert not _listening(_port(runs["baseline N=None c=1"]["command"]))


# --- the Hub -------------------------------------------------------------------------------------------
MATH500_ROWS = "".join(json.dumps({"problem": f"Compute {i} + {i}. " + "Show every step. " * 60,
                                   "unique_id": f"test/{i}.json"}) + "\n" for i in range(300)).encode()


def _math500_hub(gated: bool = False) -> StandInHub:
    hub = StandInHub()
    hub.add(Repo("HuggingFaceH4/MATH-500", {"test.jsonl": MATH500_ROWS}, gated=gated, kind="dataset"))
    return hub


def _hub_env(tmp_path: Path, endpoint: str) -> dict:
    env = {"HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_XET": "1"}
    return env


def _no_token():
    return {k: "" for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}


def test_disk_full_while_downloading_a_benchmark(tmp_path):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))

    with _math500_hub() as hub:
        env = _hub_env(tmp_path, hub.url)
        done = _cli(["workloads", "show", "math500", "--limit", "1"], env, preexec=limit)
        _one_line(done, "could not fetch HuggingFaceH4/MATH-500 into the Hugging Face cache: File too large")
        assert hub.gets("/datasets/HuggingFaceH4/MATH-500/resolve/")
        # With space again, the same command completes from the partial download left behind.
        again = _cli(["workloads", "show", "math500", "--limit", "1"], env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("300 prompts in math500")


def test_hub_unreachable(tmp_path):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: connections are refused, as when the Hub is unreachable
    done = _cli(["workloads", "show", "gsm8k"], _hub_env(tmp_path, f"http://127.0.0.1:{port}"))
    _one_line(done, "openai/gsm8k is not in the Hugging Face cache and the Hub cannot be reached")


def test_hub_offline_run_is_refused_before_any_server_starts(recorded_db, tmp_path):
    db = tmp_path / "results.sqlite"
    copy_db(recorded_db, db)
    before = completed_rows(db)
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(fault_plan(names=["gsm8k"]))
    done = _cli(["run", str(plan_file), "--db", str(db)], {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")})
    _one_line(done, "openai/gsm8k is not in the Hugging Face cache and the Hub cannot be reached (offline)")
    assert done.stdout == ""
    assert_intact(db, before)


def test_gated_dataset_without_a_token(tmp_path):
    with _math500_hub(gated=True) as hub:
        done = _cli(["workloads", "show", "math500"], {**_hub_env(tmp_path, hub.url), **_no_token()})
        _one_line(done, "HuggingFaceH4/MATH-500 is gated: accept its terms on its Hub page and set HF_TOKEN")
        assert hub.requests and not hub.gets("/resolve/")
