"""The app's own CPU share while a run streams: the main window follows a sweep whose runner is
played by a writer process, at the runner's real rates (one scrape a second: a sample, the
per-position rows, the requests that finished, the server's log lines, a host telemetry reading
and a Progress event), and the app's CPU time (user + system, every thread) is read over each
run's window, from the moment the Live page shows the run to the writer's exit.

On a small host the app shares the cores with the vLLM CPU server it measures; more than 5 % of
one core is what the runner flags on a run (`app_cpu_s`).

    python bench/app_cpu.py [--seconds 30] [--requests-per-s 2] [--history 100000]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
_TMP = Path(tempfile.mkdtemp(prefix="draftbench-app-cpu-"))
# The window under test writes its settings and sweep files here, never to the user's folders.
os.environ["DRAFTBENCH_CONFIG_DIR"] = str(_TMP / "config")
os.environ["DRAFTBENCH_DATA_DIR"] = str(_TMP / "data")

from common import SMOKE_HELP, table  # noqa: E402

N_POS = 4
SIBLINGS = (("baseline", None, None), ("ngram", 2, [0.62, 0.41]), ("ngram", 4, [0.6, 0.4, 0.27, 0.18]))


def make_db(path: Path, runs: int, history: int) -> list[int]:
    """An experiment with completed runs (drawn faintly behind the current one) and `runs` runs
    left pending for the writer; the first of them carries `history` samples already."""
    import json

    from workbench import store

    db = store.open_db(path)
    exp = store.experiment_for(db, "bench", "bench", "", "", {})
    for seq, (method, n, per_position) in enumerate(SIBLINGS):
        db["runs"].insert({"experiment_id": exp, "key": f"done-{seq}", "seq": seq, "method": method, "n": n,
                           "workload": "builtin", "concurrency": 4, "status": "completed", "output_tok_s": 90.0,
                           "mal": 1 + sum(per_position or []) or None,
                           "per_position": json.dumps(per_position) if per_position else None})
    ids = [db["runs"].insert({"experiment_id": exp, "key": f"live-{i}", "seq": 10 + i, "method": "ngram", "n": N_POS,
                              "workload": "builtin", "concurrency": 4, "status": "pending"}).last_pk
           for i in range(runs)]
    with db.conn:
        db["samples"].insert_all(({"run_id": ids[0], "t": -history + i, "mal": 2.4, "acceptance_rate": 0.36,
                                   "output_tok_s": 90.0 + i % 7} for i in range(history)), batch_size=5000)
    db.conn.close()
    return ids


def runner_standin(db_path: str, events_path: str, run_id: int, index: int, total: int, seconds: float,
                   requests_per_s: float) -> None:
    """What the runner writes during one run's window, once a second."""
    from workbench import events, store

    db = store.open_db(db_path)
    emit = events.Writer.append_to(events_path)
    emit(events.RunStarted(run=run_id, label=f"ngram N={N_POS}", index=index, total=total))
    db["runs"].update(run_id, {"status": "running", "started": time.time()})
    t0 = time.time()
    done = 0
    owed = 0.0
    for tick in range(int(seconds)):
        time.sleep(max(0.0, t0 + tick + 1 - time.time()))
        t = float(tick + 1)
        owed += requests_per_s
        finished = int(owed)
        owed -= finished
        with db.conn:
            db["samples"].insert({"run_id": run_id, "t": t, "mal": 2.5, "acceptance_rate": 0.4,
                                  "output_tok_s": 95.0 + tick % 5, "drafts": tick, "accepted": tick})
            db["positions"].insert_all([{"run_id": run_id, "t": t, "position": p + 1, "accepted": 1.0,
                                         "drafts": 2.0, "acceptance": 0.7 - 0.1 * p} for p in range(N_POS)])
            db["requests"].insert_all([{"run_id": run_id, "idx": done + k, "ttft_ms": 120.0 + k, "itl_mean_ms": 30.0,
                                        "ok": 1} for k in range(finished)])
            # The scrape's own access line, one per finished request, vLLM's stats every 10 s.
            lines = ['INFO:     127.0.0.1:50000 - "GET /metrics HTTP/1.1" 200 OK']
            lines += ['INFO:     127.0.0.1:50001 - "POST /v1/completions HTTP/1.1" 200 OK'] * finished
            if tick % 10 == 9:
                lines.append("INFO [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
                             "Avg generation throughput: 95.0 tokens/s, Running: 4 reqs")
            db["logs"].insert_all([{"run_id": run_id, "t": t0 + t, "stream": "stdout", "line": line} for line in lines])
            db["telemetry"].insert({"run_id": run_id, "t": t0 + t, "device": "host", "name": "CPU and RAM",
                                    "util_pct": 60.0 + tick % 3, "mem_used_mib": 4000.0, "mem_total_mib": 16000.0})
        done += finished
        emit(events.Progress(run=run_id, done=done, total=10_000, t=t, output_tok_s=95.0, mal=2.5))
    db["runs"].update(run_id, {"status": "completed", "finished": time.time(), "output_tok_s": 95.0, "mal": 2.5,
                               "per_position": "[0.7, 0.6, 0.5, 0.4]"})
    emit(events.RunFinished(run=run_id, label=f"ngram N={N_POS}", output_tok_s=95.0, mal=2.5, acceptance_rate=0.4))
    if index == total:
        emit(events.SweepFinished(completed=total, failed=0))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0, help="each run's window")
    parser.add_argument("--requests-per-s", type=float, default=2.0)
    parser.add_argument("--history", type=int, default=100_000, help="samples the first run already has")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.history = min(args.seconds, 1.0), min(args.history, 200)

    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    app.setQuitOnLastWindowClosed(False)  # the window is closed, and the table printed after
    from app.jobs.sweep import Sweep
    from app.main import MainWindow
    from app.widgets import theme
    from workbench import events
    from workbench.host import engine

    theme.apply()
    db_path = _TMP / "bench.sqlite"
    # Where the page in view is, during each run: the user watching it, or looking elsewhere.
    scenarios = [("Live page in view", "live"), ("History page in view", "history"), ("Live page in view", "live")]
    if args.smoke:
        scenarios = scenarios[:1]
    ids = make_db(db_path, len(scenarios), args.history)
    # An install described by hand: the window asks nothing about vLLM.
    vllm = engine.VllmInstall(sys.executable, "3.11", "0.0", "vllm", str(_TMP), None, None, modules=())
    w = MainWindow(db_path, vllm)
    w.ask_close = lambda: "keep"
    w.resize(1360, 880)
    w.show()

    def spin(seconds: float, until=lambda: False) -> None:
        """The app's own event loop, as it runs (asleep between events), until `until` or a timeout:
        a loop of processEvents and sleeps would cost more than the app itself."""
        loop = QEventLoop()
        end = time.time() + seconds
        check = QTimer(interval=200)
        check.timeout.connect(lambda: (time.time() >= end or until()) and loop.quit())
        check.start()
        loop.exec()
        check.stop()

    spin(0.3 if args.smoke else 3.0)  # start-up work (GPU detection, the first History and Compare loads) done before any window
    rows = []
    ctx = mp.get_context("spawn")
    for i, ((label, tab), run_id) in enumerate(zip(scenarios, ids), 1):
        w.tabs.setCurrentWidget(getattr(w, tab))
        # A sweep of one run per scenario, as the app follows a runner it started: by pid and events file.
        events_path = _TMP / f"sweep-{i}.events.jsonl"
        events.Writer.append_to(events_path)(events.SweepStarted(experiment=1, db=str(db_path), runs=1, pending=1))
        proc = ctx.Process(target=runner_standin, args=(str(db_path), str(events_path), run_id, 1, 1,
                                                         args.seconds, args.requests_per_s))
        proc.start()
        w._follow(Sweep(proc.pid, events_path, parent=w))
        spin(30.0, lambda: w.live.feed is not None and w.live.feed.run_id == run_id)
        cpu0, t0 = time.process_time(), time.perf_counter()
        spin(args.seconds + 30.0, lambda: not proc.is_alive())
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
        proc.join()
        spin(5.0, lambda: w.sweep is None)
        pace = getattr(w.live, "pace_note", None)
        rows.append([i, label + (f" (with a {args.history:,}-sample history)" if i == 1 and args.history else ""),
                     f"{wall:.1f}", f"{cpu:.2f}", f"{100 * cpu / wall:.1f}"])
        spin(0.2 if args.smoke else 2.0)
    print(f"pace line on the Live page: {pace.text() if pace is not None else '(none)'}")
    w.close()
    shutil.rmtree(_TMP, ignore_errors=True)
    table(f"The app's CPU while a run streams ({args.requests_per_s:g} requests/s, one scrape a second, "
          f"{os.cpu_count()} cores)", ["run", "while", "window (s)", "app CPU (s)", "share of one core (%)"], rows)


if __name__ == "__main__":
    main()
