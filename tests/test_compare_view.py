"""Compare's one view of a selection (workbench.usecases.compare_view), without Qt: its figures
against hand calculations on made-up runs, and on stored runs what it reads from the results file."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sqlite3

import pytest

from helpers.recorded import stored_runs
from workbench import report, store
from workbench.analysis import breakeven, compare, latency
from workbench.usecases import compare_view
from workbench.usecases.chart_names import ALL_CHARTS, DATA_OF

T2 = 4.303  # Student's t, two-sided 95%, two degrees of freedom


def _row(i, method, n, tok_s, mal=None, concurrency=4, status="completed", **extra):
    return store.run_record({
            "id": i, "experiment_id": 1, "status": status, "target": "org/t", "method": method, "draft": None,
            "n": n, "workload": "w", "concurrency": concurrency, "request_rate": None, "max_tokens": 64,
            "temperature": 0.0, "top_p": 1.0, "num_prompts": 8, "output_tok_s": tok_s, "mal": mal,
            "acceptance_rate": None if mal is None else (mal - 1) / n, "per_position": None, **extra})


STORED = "vllm serve org/t --port 41234 --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":2}'"
ROWS = [
    _row(1, "baseline", None, 100.0, provenance=json.dumps({"kind": "local", "image": "a"})),
    _row(2, "baseline", None, 104.0), _row(3, "baseline", None, 96.0),
    _row(4, "ngram", 2, 120.0, 2.0, command=STORED, provenance=json.dumps({"kind": "local", "image": "b"})),
    _row(5, "ngram", 2, 126.0, 2.2), _row(6, "ngram", 2, 123.0, 2.1),
    _row(7, "ngram", 4, 101.0, 2.6), _row(8, "ngram", 4, 99.0, 2.4), _row(9, "ngram", 4, 103.0, 2.5),
    _row(10, "baseline", None, 200.0, concurrency=16), _row(11, "ngram", 2, 180.0, 2.0, concurrency=16),
    _row(12, "ngram", 2, 60.0, 2.1, status="partial"), _row(13, "ngram", 4, None, status="failed"),
]


def test_the_view_of_made_up_runs_matches_hand_figures():
    view = compare_view.build(ROWS)
    best = next(r for r in view.answer if r.concurrency == 4)
    # ngram N=2 is the faster N at c=4 (mean 123 tok/s against 101); the baseline's mean is 100.
    assert (best.config, best.run, best.fastest) == ("ngram N=2", 4, True)
    assert best.speedup == pytest.approx(123.0 / 100.0)
    # sd(120, 126, 123) = 3 and sd(100, 104, 96) = 4: relative half-widths add in quadrature.
    half = 1.23 * math.hypot(T2 * 3 / math.sqrt(3) / 123.0, T2 * 4 / math.sqrt(3) / 100.0)
    assert best.speedup_ci95 == pytest.approx(half) and best.beyond_noise is True
    # The command that serves it: the one its run stored, on port 8000; built where none was stored.
    assert best.command == view.serve_commands[4] == STORED.replace("41234", "8000")
    at16 = next(r for r in view.answer if r.concurrency == 16)
    assert at16.speedup == pytest.approx(0.9) and not at16.fastest
    assert view.serve_commands[11] == ("vllm serve org/t --port 8000 --speculative-config "
                                       "'{\"method\":\"ngram\",\"num_speculative_tokens\":2}'")
    # Pays at c=4 (1.23x), stops at c=16 (0.90x): 1.0 reached at log2 c = 2 + 2 * 0.23 / 0.33.
    [cross] = view.crossovers
    assert (cross.pays_up_to, cross.stops_at) == (4, 16)
    assert cross.estimate == pytest.approx(2 ** (2 + 2 * 0.23 / 0.33))
    assert [(r.concurrency, round(r.speedup, 3)) for r in view.data.concurrency] == [(4, 1.23), (16, 0.9)]
    # Every configuration in All figures, the best N of each concurrency marked.
    assert [(r.n, r.concurrency, r.best) for r in view.measured_table] == [(2, 4, True), (4, 4, False),
                                                                          (2, 16, True)]
    assert {"throughput", "efficiency", "mal", "concurrency"} <= set(view.drawable)
    # No file given: nothing per request or per GPU; no per-position curve, no what-if run.
    assert {"per_position", "by_category", "by_prompt_length", "energy", "gpus", "breakeven"} <= set(view.missing)
    assert set(view.drawable).isdisjoint(view.missing)
    assert (view.what_if_table, view.what_if, view.what_if_configs) == ([], [], False)
    assert view.provenance == [("image", {"a": [1], "b": [4]})]
    assert view.tally == compare_view.Tally(experiments=(1,), runs=13, completed=11, partial=1, failed=1, what_if=0)
    assert "target t · workload w · concurrency 4, 16" in view.caption
    assert "throughput: whole window: no steady state recorded" in view.trust
    # At c=16 a step of MAL 2.0 costs 2.0 / 0.9 = 2.22 baseline steps: nothing pays there.
    [why] = view.none_pays
    assert "at c=16" in why and "accepts 2.00 tokens a step, but its step costs 2.22 baseline steps" in why


def test_partial_runs_count_only_when_asked():
    left_out = compare_view.build(ROWS)
    counted = compare_view.build(ROWS, include_partial=True)
    assert not left_out.include_partial and counted.include_partial
    speedup = {v.include_partial: next(r.speedup for r in v.answer if r.concurrency == 4 and r.n == 2)
               for v in (left_out, counted)}
    assert speedup[False] == pytest.approx(1.23)
    assert speedup[True] == pytest.approx((120 + 126 + 123 + 60) / 4 / 100)


def test_no_runs_make_an_empty_view():
    view = compare_view.build([])
    assert view.answer == [] and view.crossovers == [] and view.drawable == () and view.caption == ""
    assert view.tally.runs == 0 and view.provenance == [] and view.db_path is None


def test_the_view_of_stored_runs_reads_the_results_file(demo_db):
    rows = compare_view.select(demo_db)
    assert rows == stored_runs(demo_db)  # the demo file holds one experiment
    view = compare_view.build(rows, demo_db)
    with sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True) as conn:
        counts = dict(conn.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
        stored = dict(conn.execute("SELECT id, command FROM runs").fetchall())
    assert (view.tally.runs, view.tally.completed) == (sum(counts.values()), counts["completed"])
    assert view.answer and all(r.command == view.serve_commands[r.run] for r in view.answer)
    for r in view.answer:  # the command its run stored, on the port the answer serves it at
        assert stored[r.run] and r.command == re.sub(r"--port \d+", "--port 8000", stored[r.run])
    # The per-request figures come from the file: without it, none.
    assert "by_prompt_length" in view.drawable and "by_prompt_length" in compare_view.build(rows).missing
    assert view.db_path == demo_db


def _fields(record: type) -> set[str]:
    return {f.name for f in dataclasses.fields(record)}


def test_every_column_and_chart_names_a_field_of_what_it_shows():
    """Tables read a cell by its column's key and charts their points by the chart's data set: each
    names a field of the record shown, so a renamed field fails here, not on the page."""
    figures = _fields(compare.Figures)
    for columns in (report.TABLE_COLUMNS, report.ALL_FIGURES_COLUMNS, report.LATENCY_TABLE):
        assert {key for key, _, _ in columns} <= figures
    assert {latency.ratio_key(key) for key, _, _ in report.LATENCY_COLUMNS} <= figures
    assert {key for key, _, _ in report.WHAT_IF_COLUMNS} <= _fields(breakeven.BreakEvenRow)
    assert {DATA_OF[name] for name in ALL_CHARTS} == _fields(compare_view.ChartData)
