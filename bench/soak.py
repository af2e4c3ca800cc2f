"""Soak: the desktop app runs a sweep again and again for a given time, exactly as a user would
(Experiment form -> Run, the runner a detached process, the Live page following it), and the
memory of the app and of the runner and the size of the database are sampled as it goes.

By default the sweep is a small one (baseline and ngram N=2 at concurrency 2, 8 prompts of 64
tokens: two server launches per sweep); `--demo` repeats the full demo sweep instead.

    python bench/soak.py [--seconds 600] [--every 30] [--demo] [--db FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DRAFTBENCH_CONFIG_DIR", tempfile.mkdtemp(prefix="draftbench-soak-config-"))

import psutil  # noqa: E402

from common import SMOKE_HELP, skipped, table  # noqa: E402
from workbench.host import engine  # noqa: E402

SMALL = {"methods": [{"method": "ngram", "n": [2], "options": {"prompt_lookup_min": 2, "prompt_lookup_max": 4}}],
         "workload": {"names": ["builtin"], "concurrency": [2], "num_prompts": 8, "max_tokens": 64, "warmup": 1,
                      "repeats": 1, "temperature": 0.0}}


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        return psutil.Process(pid).memory_info().rss / 2 ** 20
    except psutil.Error:
        return None


def db_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists()) / 2 ** 20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--every", type=float, default=30)
    ap.add_argument("--demo", action="store_true", help="repeat the full demo sweep")
    ap.add_argument("--db", help="results database (default: a fresh temporary file)")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    from app.widgets import theme
    from app.main import DEMO_PLAN, MainWindow, _read_plan_doc

    theme.apply()
    db_path = Path(args.db) if args.db else Path(tempfile.mkdtemp(prefix="draftbench-soak-")) / "soak.sqlite"
    window = MainWindow(db_path, engine.probe())
    window.ask_close = lambda: "stop"
    window.show()
    base = _read_plan_doc(DEMO_PLAN)
    if not args.demo:
        base.update(SMALL)
    t0 = time.time()
    state = {"sweeps": 0, "runs_done": 0, "stopping": False}
    samples: list[list[str]] = []

    def runs_done() -> int:
        import sqlite3

        if not db_path.exists():
            return 0
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT count(*) FROM runs WHERE status = 'completed'").fetchone()[0]
        except sqlite3.Error:
            return 0
        finally:
            conn.close()

    def next_sweep() -> None:
        if state["stopping"] or window.sweep is not None:
            return
        state["sweeps"] += 1
        window.experiment.set_document({**base, "name": f"soak-{state['sweeps']}"})
        window.experiment.request_run()

    def sample() -> None:
        runner_pid = window.sweep.pid if window.sweep is not None else None
        servers = 0.0
        if runner_pid is not None:
            try:
                servers = sum(c.memory_info().rss for c in psutil.Process(runner_pid).children(recursive=True)) / 2 ** 20
            except psutil.Error:
                pass
        runner = rss_mib(runner_pid)
        samples.append([f"{time.time() - t0:.0f}", str(state["sweeps"]), str(runs_done()),
                        f"{rss_mib(os.getpid()):.0f}", "-" if runner is None else f"{runner:.0f}",
                        f"{servers:.0f}", f"{db_mib(db_path):.2f}"])
        print("  ".join(samples[-1]), flush=True)
        if time.time() - t0 >= args.seconds and not state["stopping"]:
            state["stopping"] = True
            if window.sweep is not None:
                window.stop_sweep()
                window.sweep.ended.connect(app.quit)
            else:
                app.quit()

    def ended() -> None:
        QTimer.singleShot(1000, next_sweep)

    original_follow = window._follow

    def follow(sweep) -> None:
        original_follow(sweep)
        sweep.ended.connect(ended)

    window._follow = follow
    timer = QTimer(interval=int(args.every * 1000))
    timer.timeout.connect(sample)
    timer.start()
    if args.smoke:
        # The plan is put in the form as for a real sweep, but no sweep starts: it needs vLLM.
        window.experiment.set_document({**base, "name": "soak-smoke"})
        skipped("the sweeps (each starts vLLM servers)")
        args.seconds = 0
    else:
        QTimer.singleShot(0, sample)
        QTimer.singleShot(500, next_sweep)
        app.exec()
    sample()
    window.close()
    table(f"Soak: {'the demo sweep' if args.demo else 'baseline + ngram N=2'} repeated for {args.seconds:.0f} s "
          f"from the desktop app (RSS in MiB, database with its WAL)",
          ["elapsed (s)", "sweeps started", "runs completed", "app RSS", "runner RSS", "vLLM servers RSS",
           "database MiB"], samples)


if __name__ == "__main__":
    main()
