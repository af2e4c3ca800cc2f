"""bench/what_if_table.py on the H200 what-if database shipped in docs/gpu: the table the docs quote
comes from the stored runs, and the N model's held-out predictions are computed, not copied."""

from __future__ import annotations

import shutil

from helpers.recorded import ROOT, bench_module


def _bench():
    return bench_module("what_if_table")


def test_table_and_predictions_from_the_stored_runs(tmp_path, capsys):
    db = tmp_path / "what-if.sqlite"
    shutil.copy(ROOT / "docs" / "gpu" / "what-if-h200.sqlite", db)  # opening may migrate: never the shipped file
    bench = _bench()
    assert bench.main(["--db", str(db)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| qwen3-8b") or line.startswith("| mimo-7b-rl")]
    methods = {line.split("|")[2].strip() for line in rows}
    assert methods >= {"eagle3", "dflash", "dspark", "mtp"}
    assert "not served: gemma-4-26b-a4b-it mtp N=1" in out
    # Held-out predictions: EAGLE-3 ran at N = 1, 3, 5, so three predictions per concurrency.
    from workbench import store

    preds = bench.predictions(bench.what_if_rows(store.open_db(db, readonly=True)))
    assert {(p["concurrency"], p["n"]) for p in preds} == {(c, n) for c in (1, 16, 64) for n in (1, 3, 5)}
    middle = [p for p in preds if p["kind"] == "interpolated"]
    assert len(middle) == 3 and all(abs(p["error_pct"]) < 10 for p in middle)
    for p in preds:  # the prediction is T / c(N) with the line through the other two points
        assert abs(p["predicted"] - p["measured"] * p["cost_measured"] / p["cost_predicted"]) < 0.05 * p["measured"]
