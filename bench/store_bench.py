"""Store: how fast the runner's write path ingests samples, and how long the app takes to open
History and the Compare page over 500 stored runs.

Ingest goes through the runner's own call for a scrape (store.Recorder.sample, one transaction: a
sample, N per-position rows, the requests finished since the last scrape, the heartbeat), on a real file
with the runner's settings (WAL, synchronous=NORMAL).

    python bench/store_bench.py [--scrapes 5000] [--runs 500]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from common import SMOKE_HELP, table
from workbench import store

N_POS = 4


def ingest(path: Path, scrapes: int) -> list[list[str]]:
    db = store.open_db(path)
    exp = store.experiment_for(db, "ingest", "ingest", "", "", {})
    run_id = db["runs"].insert({"experiment_id": exp, "key": "k", "seq": 0, "method": "ngram", "n": N_POS,
                                "workload": "builtin", "concurrency": 4, "status": "running"}).last_pk
    sweep = db["sweeps"].insert({"experiment_id": exp, "pid": 1, "status": "running"}).last_pk
    record = store.Recorder(db)
    t0 = time.perf_counter()
    for i in range(scrapes):
        sample = {"run_id": run_id, "t": i * 0.5, "drafts": i, "draft_tokens": 4 * i, "accepted": 2 * i,
                  "generation_tokens": 3 * i, "output_tokens": 3 * i, "mal": 2.4, "acceptance_rate": 0.36,
                  "output_tok_s": 90.0, "running": 4.0, "waiting": 0.0, "kv_cache_usage": 0.1}
        positions = [{"run_id": run_id, "t": i * 0.5, "position": p + 1, "accepted": float(i), "drafts": float(i),
                      "acceptance": 0.7 - 0.1 * p} for p in range(N_POS)]
        requests = [{"run_id": run_id, "idx": i, "prompt_id": f"p{i}", "prompt_tokens": 80, "output_tokens": 64,
                     "ttft_ms": 120.0, "itl_mean_ms": 30.0, "itl_max_ms": 60.0, "latency_ms": 2000.0, "ok": 1}]
        record.sample(sweep, sample, positions, requests)
    seconds = time.perf_counter() - t0
    db.conn.close()
    rows_per = 1 + N_POS + 1 + 1
    return [["scrapes ingested (one transaction each)", f"{scrapes:,}"],
            ["samples/s", f"{scrapes / seconds:,.0f}"],
            ["rows/s (sample + 4 positions + request + heartbeat)", f"{scrapes * rows_per / seconds:,.0f}"],
            ["ms per scrape", f"{seconds / scrapes * 1000:.2f}"],
            ["runner's need at its 0.5 s scrape interval", "2 samples/s"]]


def many_runs(path: Path, count: int) -> None:
    rng = random.Random(5)
    db = store.open_db(path)
    exp = store.experiment_for(db, "many", "many", "", "", {})
    configs = [("baseline", None)] + [(m, n) for m in ("ngram", "draft_model") for n in (1, 2, 3, 4, 5)]
    runs, requests = [], []
    for i in range(count):
        method, n = configs[i % len(configs)]
        conc = (1, 4)[(i // len(configs)) % 2]
        rep = i // (2 * len(configs)) + 1
        tok_s = 95.0 if method == "baseline" else rng.uniform(40, 110)
        pp = sorted((rng.uniform(0.1, 0.8) for _ in range(n or 0)), reverse=True)
        runs.append({"id": i + 1, "experiment_id": exp, "key": f"k{i}", "seq": i, "target": "demo", "method": method,
                     "n": n, "draft": None, "workload": "builtin", "concurrency": conc, "repeat": rep, "num_prompts": 16,
                     "max_tokens": 128, "temperature": 0.0, "top_p": 1.0, "status": "completed", "output_tok_s": tok_s,
                     "mal": 1 + sum(pp) if n else None, "acceptance_rate": sum(pp) / n if n else None,
                     "per_position": json.dumps(pp) if n else None, "window_s": 20.0, "output_tokens": 2048})
        requests += [{"run_id": i + 1, "idx": k, "prompt_id": f"p{k}", "category": ("math_word", "programming_task")[k % 2],
                      "prompt_tokens": 40 + 10 * k, "output_tokens": 128, "ttft_ms": 100.0, "latency_ms": 1500.0,
                      "ok": 1, "spec_drafts": 40 if n else None, "spec_accepted": 50 if n else None,
                      "spec_draft_tokens": 40 * n if n else None,
                      "spec_histogram": json.dumps([10, 10, 10, 10] + [0] * ((n or 3) - 3)) if n else None}
                     for k in range(16)]
    with db.conn:
        db["runs"].insert_all(runs, batch_size=200)
        db["requests"].insert_all(requests, batch_size=2000)
    db.conn.close()


def open_pages(path: Path, count: int) -> list[list[str]]:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from app.widgets import theme
    from app.pages.compare_page import ComparePage
    from app.pages.history import HistoryPage

    theme.apply()
    history, compare = HistoryPage(), ComparePage()
    for w in (history, compare):
        w.resize(1360, 880)
        w.show()
    app.processEvents()
    t0 = time.perf_counter()
    history.load(path)
    app.processEvents()
    history_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    history.load(path)
    app.processEvents()
    refresh_s = time.perf_counter() - t0
    rows = [h.run for h in history.model._rows]
    t0 = time.perf_counter()
    compare.set_runs(rows, path)
    app.processEvents()
    compare_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    compare.set_runs(rows, path)
    app.processEvents()
    again_s = time.perf_counter() - t0
    return [["runs stored", f"{count}"], ["requests stored", f"{count * 16:,}"],
            ["History: load and show every run (s)", f"{history_s:.3f}"],
            ["History: refresh with nothing new, as every 2 s during a sweep (s)", f"{refresh_s:.3f}"],
            ["Compare: open over all runs, charts and table drawn (s)", f"{compare_s:.3f}"],
            ["Compare: the same again (s)", f"{again_s:.3f}"]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    if args.smoke:
        args.scrapes, args.runs = min(args.scrapes, 50), min(args.runs, 33)
    with tempfile.TemporaryDirectory() as tmp:
        table("Store: ingest through the runner's write path", ["figure", "value"], ingest(Path(tmp) / "i.sqlite", args.scrapes))
        path = Path(tmp) / "many.sqlite"
        many_runs(path, args.runs)
        table(f"Store: History and Compare over {args.runs} stored runs", ["figure", "value"], open_pages(path, args.runs))


if __name__ == "__main__":
    main()
