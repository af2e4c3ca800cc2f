"""Longest event-loop stall of the Live page while a run streams into a 100,000-sample history.

A writer process appends samples, per-position rows, requests and log lines to the run at the
runner's real rates (a scrape every 0.5 s, so here 20 Hz to be harsher) while the Live page polls
and redraws; a 1 ms timer measures how long the event loop goes without serving it. The timing
starts once the page has painted the opened run and the writer has started up.

    python bench/gui_stall.py [--samples 100000] [--seconds 15]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from common import SMOKE_HELP, table  # noqa: E402

N_POS = 4


def make_history(path: Path, samples: int) -> int:
    from workbench import store

    db = store.open_db(path)
    exp = store.experiment_for(db, "bench", "bench", "", "", {})
    run_id = db["runs"].insert({"experiment_id": exp, "key": "k", "seq": 0, "method": "ngram", "n": N_POS,
                                "workload": "builtin", "concurrency": 4, "status": "running"}).last_pk
    with db.conn:
        db["samples"].insert_all(({"run_id": run_id, "t": i * 0.5, "mal": 2.4, "acceptance_rate": 0.36,
                                   "output_tok_s": 90.0 + i % 7, "drafts": i, "accepted": i}
                                  for i in range(samples)), batch_size=5000)
        db["positions"].insert_all(({"run_id": run_id, "t": (i // N_POS) * 0.5, "position": i % N_POS + 1,
                                     "accepted": 1.0, "drafts": 2.0, "acceptance": 0.6 - 0.1 * (i % N_POS)}
                                    for i in range(samples * N_POS // 10)), batch_size=5000)
    db.conn.close()
    return run_id


def writer(path: str, run_id: int, seconds: float, t0: float, ready=None, go=None) -> None:
    from workbench import store

    db = store.open_db(path)
    if ready is not None:  # started up (imports, the database open) before the clock runs, as a runner is
        ready.set()
        go.wait()
    i = 0
    end = time.time() + seconds
    while time.time() < end:
        t = t0 + i * 0.05
        with db.conn:
            db["samples"].insert({"run_id": run_id, "t": t, "mal": 2.5, "acceptance_rate": 0.4, "output_tok_s": 95.0})
            db["positions"].insert_all([{"run_id": run_id, "t": t, "position": p + 1, "accepted": 1.0,
                                         "drafts": 2.0, "acceptance": 0.7 - 0.1 * p} for p in range(N_POS)])
            db["requests"].insert({"run_id": run_id, "idx": i, "ttft_ms": 120.0, "itl_mean_ms": 30.0, "ok": 1})
            db["logs"].insert_all([{"run_id": run_id, "t": t, "stream": "stdout", "line": f"INFO line {i}.{k}"}
                                   for k in range(5)])
        i += 1
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.samples, args.seconds = min(args.samples, 500), min(args.seconds, 1.0)

    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from app.widgets import theme
    from app.pages.live import LivePage

    theme.apply()
    folder = Path(tempfile.mkdtemp())
    db_path = folder / "bench.sqlite"
    t_make = time.perf_counter()
    run_id = make_history(db_path, args.samples)
    make_s = time.perf_counter() - t_make

    page = LivePage()
    page.resize(1280, 800)
    page.show()
    t_open = time.perf_counter()
    page.show_run(db_path, run_id)
    page.redraw()
    app.processEvents()
    open_s = time.perf_counter() - t_open

    redraws: list[float] = []
    original = page.draw_some

    def timed_draw(every: bool) -> None:
        # What each draw-timer tick does: the chart(s) with new rows set to their data (the
        # paint that follows is in the event-loop gaps).
        t = time.perf_counter()
        was_dirty = page.charts.dirty
        original(every)
        if was_dirty:
            redraws.append((time.perf_counter() - t) * 1000)

    page.draw_some = timed_draw

    ctx = mp.get_context("spawn")
    ready, go = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=writer, args=(str(db_path), run_id, args.seconds, args.samples * 0.5, ready, go))
    proc.start()
    # The page finishes its first paint, and the writer its start-up, before anything is timed:
    # both happen once, when a run is opened, not while it streams.
    settle = time.time() + 0.5
    while time.time() < settle or not ready.is_set():
        app.processEvents()
        time.sleep(0.005)
    go.set()
    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.nsecsElapsed()]

    def tick() -> None:
        now = clock.nsecsElapsed()
        gaps.append((now - last[0]) / 1e6)
        last[0] = now

    probe = QTimer(interval=1)
    probe.timeout.connect(tick)
    probe.start()
    end = time.time() + args.seconds
    # The longest pass of the event loop, in wall and in CPU time: on a shared machine a stall
    # whose CPU time is small was the scheduler's, not the page's work.
    longest = (0.0, 0.0)
    while time.time() < end:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        app.processEvents()
        longest = max(longest, ((time.perf_counter() - wall0) * 1000, (time.process_time() - cpu0) * 1000))
        time.sleep(0.0005)
    probe.stop()
    proc.join()

    gaps.sort()
    rows = [
        ("history samples", f"{args.samples:,}"),
        ("building the history (s)", f"{make_s:.2f}"),
        ("opening it in Live (s)", f"{open_s:.3f}"),
        ("streamed for (s)", f"{args.seconds:.0f}"),
        ("samples drawn at the end", f"{page.samples.n:,}"),
        ("event-loop gaps measured", f"{len(gaps):,}"),
        ("longest stall (ms)", f"{gaps[-1]:.1f}"),
        ("p99 gap (ms)", f"{gaps[int(len(gaps) * 0.99)]:.1f}"),
        ("longest event-loop pass: wall / CPU (ms)", f"{longest[0]:.1f} / {longest[1]:.1f}"),
        ("redraws", f"{len(redraws)}"),
        ("redraw mean / max (ms)", f"{statistics.fmean(redraws):.1f} / {max(redraws):.1f}" if redraws else "-"),
    ]
    table("GUI: the Live page while a run streams into a 100,000-sample history", ["figure", "value"],
          [list(r) for r in rows])

if __name__ == "__main__":
    main()
