"""Steady-state throughput: the stretch of a window with at least 90 % of the concurrency in flight,
found on per-request times as the load generator records them (sent, first token, last token) and
checked against answers worked out by hand; the comparison's choice between it and the whole
window; and the stored columns and `show` lines."""

import json

import pytest

from helpers.recorded import ROOT
from workbench import store
from workbench.analysis import answer, basis, compare, run_summary, run_table
from workbench.load import RequestResult
from workbench.metrics import steady_state
from workbench.metrics.steady_state import Span
from workbench.sweep.window import spans


# Concurrency 2, five requests. B is sent half a second after A (the ramp); C follows A after a
# 2 ms client turnaround; D follows B and E follows C at once; E runs on alone after D ends (the
# drain). In flight: 1 on [0, 0.5), 2 on [0.5, 20) but for the 2 ms dip at 5.0, then 1 to 23.
TWO = [Span(0.0, 1.0, 5.0, 40), Span(0.5, 1.0, 11.0, 100), Span(5.002, 6.0, 16.0, 100),
       Span(11.0, 12.0, 20.0, 80), Span(16.0, 17.0, 23.0, 60)]


def test_the_steady_segment_of_a_recorded_window_is_the_one_worked_out_by_hand():
    seg = steady_state.segment(TWO, 2)
    assert (seg.start, seg.end) == (0.5, 20.0)
    # A, B, C and D emit every token inside [0.5, 20]; E emits 60 tokens evenly over 17..23, half
    # of them by 20. 350 tokens in 19.5 s.
    assert seg.tokens == pytest.approx(40 + 100 + 100 + 80 + 30)
    assert seg.tok_s == pytest.approx(350 / 19.5)
    # The whole window (first sent to last token: 23 s, 380 tokens) is slower: ramp and drain.
    assert 380 / 23 < seg.tok_s
    assert steady_state.figures(TWO, 2, window_s=23.0) == {"steady_s": 19.5, "steady_tok_s": pytest.approx(350 / 19.5)}


def test_concurrency_one_is_steady_from_the_first_request_to_the_last():
    # Back to back, a millisecond of turnaround between them: one segment, the whole window.
    runs = [Span(0.0, 1.0, 4.0, 30), Span(4.001, 5.0, 9.0, 40), Span(9.001, 10.0, 12.0, 20)]
    seg = steady_state.segment(runs, 1)
    assert (seg.start, seg.end, seg.tokens) == (0.0, 12.0, pytest.approx(90))
    # A pause longer than a turnaround (0.5 s before the third request) ends the segment; the
    # longer stretch is kept: 70 tokens in 9 s.
    paused = runs[:2] + [Span(9.5, 10.0, 12.0, 20)]
    seg = steady_state.segment(paused, 1)
    assert (seg.start, seg.end, seg.tokens) == (0.0, 9.0, pytest.approx(70))


def test_no_segment_when_the_load_never_reaches_ninety_percent():
    # Concurrency 4 but three prompts: at most three in flight, under 3.6.
    three = [Span(0.0, 1.0, 30.0, 100), Span(0.0, 1.0, 30.0, 100), Span(0.0, 1.0, 30.0, 100)]
    assert steady_state.segment(three, 4) is None
    assert steady_state.figures(three, 4) == {"steady_s": 0.0, "steady_tok_s": None}
    # At concurrency 10 nine in flight is 90 %: steady.
    nine = [Span(0.0, 1.0, 30.0, 100)] * 9
    assert steady_state.segment(nine, 10).seconds == 30.0
    assert steady_state.segment([], 2) is None


def test_the_runners_request_results_become_spans_on_one_clock():
    ok = RequestResult(0, "p0", 100.0, ok=True, output_tokens=12, ttft_ms=250.0, latency_ms=2000.0)
    failed = RequestResult(1, "p1", 100.5, ok=False, error="boom", output_tokens=3, ttft_ms=None, latency_ms=500.0)
    never = RequestResult(2, "p2", 101.0, ok=False, error="refused")
    assert spans([ok, failed, never]) == [Span(100.0, 100.25, 102.0, 12), Span(100.5, 100.5, 101.0, 0)]


def _row(i, method, n, tok_s, steady_s, steady_tok_s, concurrency=4):
    return store.run_record({
            "id": i, "experiment_id": 1, "status": "completed", "target": "t", "method": method, "draft": None,
            "n": n, "workload": "w", "concurrency": concurrency, "request_rate": None, "max_tokens": 64,
            "temperature": 0.0, "top_p": 1.0, "num_prompts": 8, "output_tok_s": tok_s, "mal": None if n is None else 2.0,
            "acceptance_rate": None, "per_position": None, "steady_s": steady_s, "steady_tok_s": steady_tok_s})


def test_the_comparison_uses_steady_state_only_when_every_compared_run_has_ten_seconds_of_it():
    rows = [_row(1, "baseline", None, 90.0, 12.0, 100.0), _row(2, "baseline", None, 92.0, 11.0, 104.0),
            _row(3, "ngram", 3, 100.0, 14.0, 150.0), _row(4, "ngram", 3, 104.0, 10.0, 154.0)]
    cs = compare.configs(rows)
    spec = next(c for c in cs if c.method == "ngram")
    assert spec.basis == basis.STEADY and spec.baseline.basis == basis.STEADY
    assert spec.speedup == pytest.approx(152.0 / 102.0)
    assert spec.window_tok_s.mean == pytest.approx(102.0)
    figures = compare.config_table(cs)[0]
    assert figures.throughput_basis == "steady state" and figures.window_tok_s == pytest.approx(102.0)
    assert compare.run_speedup(rows[2], compare.baselines(cs)) == pytest.approx(150.0 / 102.0)
    row = answer.answer_rows(cs)[0]
    assert row.throughput_basis == "steady state" and row.speedup == pytest.approx(152.0 / 102.0)
    assert answer.basis_notes(cs) == ["throughput: steady state: every compared run held ≥ 90% of its "
                                      "concurrency for ≥ 10 s"]

    # One run of the comparison held its concurrency for 6 s only: every figure falls back to
    # the whole window, and the note says which run decided it.
    rows[1] = _row(2, "baseline", None, 92.0, 6.0, 104.0)
    cs = compare.configs(rows)
    spec = next(c for c in cs if c.method == "ngram")
    assert spec.basis == basis.WINDOW and spec.speedup == pytest.approx(102.0 / 91.0)
    assert answer.answer_rows(cs)[0].throughput_basis == "whole window"
    assert answer.basis_notes(cs) == ["throughput: whole window: run 2 held ≥ 90% of its concurrency for 6.0 s "
                                      "only (steady state needs 10 s)"]
    # So does a run with no segment at all, and rows stored before steady state was recorded.
    rows[1] = _row(2, "baseline", None, 92.0, 0.0, None)
    assert compare.configs(rows)[0].basis == basis.WINDOW
    old = [store.run_record({k: v for k, v in r.as_dict().items() if not k.startswith("steady")}) for r in rows]
    assert {c.basis for c in compare.configs(old)} == {basis.WINDOW}
    assert answer.basis_notes(compare.configs(old)) == ["throughput: whole window: no steady state recorded"]


def test_each_context_chooses_its_own_basis():
    # At concurrency 1 every run is long enough, at 8 one is not: each speedup keeps one basis.
    rows = [_row(1, "baseline", None, 10.0, 30.0, 11.0, 1), _row(2, "ngram", 3, 15.0, 30.0, 17.0, 1),
            _row(3, "baseline", None, 50.0, 12.0, 60.0, 8), _row(4, "ngram", 3, 70.0, 3.0, 90.0, 8)]
    by_conc = {(c.method, c.concurrency): c for c in compare.configs(rows)}
    assert by_conc[("ngram", 1)].basis == basis.STEADY and by_conc[("ngram", 1)].speedup == pytest.approx(17 / 11)
    assert by_conc[("ngram", 8)].basis == basis.WINDOW and by_conc[("ngram", 8)].speedup == pytest.approx(70 / 50)
    notes = answer.basis_notes(list(by_conc.values()))
    assert notes == ["throughput, t · w · c=1: steady state: every compared run held ≥ 90% of its concurrency for ≥ 10 s",
                     "throughput, t · w · c=8: whole window: run 4 held ≥ 90% of its concurrency for 3.0 s only "
                     "(steady state needs 10 s)"]


def test_steady_state_is_stored_beside_the_whole_window_and_shown(demo_db):
    db = store.open_db(demo_db)
    assert store.schema_version(db) == store.SCHEMA_VERSION >= 12
    assert {"steady_s", "steady_tok_s"} <= set(db["runs"].columns_dict)
    rec = store.Recorder(db)
    rec.run_completed(2, {"steady_s": 6.5, "steady_tok_s": 52.25})
    rec.run_completed(4, {"steady_s": 0.0, "steady_tok_s": None})
    shown = dict(run_summary(db, store.run(db, 2)))
    assert shown["steady state"] == ("52.2 tok/s over 6.50 s at ≥ 90% of concurrency 4 (under 10 s: comparisons "
                                     "use the whole window)")
    assert shown["output tok/s (whole window)"] == "47.0"
    assert dict(run_summary(db, store.run(db, 4)))["steady state"] == ("none: in-flight requests never held ≥ 90% "
                                                                      "of concurrency 4")
    assert dict(run_summary(db, store.run(db, 1)))["steady state"] == "not recorded"
    cells = {r.run: r.steady for r in run_table(db, 1)}
    assert (cells[2], cells[4], cells[1]) == ("52.2/6s", "-", "")
    # The whole window stays what `vllm bench serve`'s format carries.
    assert store.run(db, 2).output_tok_s == pytest.approx(47.0, abs=0.05)


def test_the_stored_demo_sweep_is_unchanged_by_the_basis():
    # Runs recorded before steady state: the comparison is the whole window's, as it was.
    db = store.open_db(ROOT / "tests" / "fixtures" / "demo" / "demo-sweep.sqlite", readonly=True)
    cs = compare.configs(store.runs_of_experiment(db, 1))
    assert {c.basis for c in cs} == {basis.WINDOW}
    assert all(c.tok_s.values == c.window_tok_s.values for c in cs)
    assert json.dumps([c.speedup for c in cs])  # every speedup still computes
