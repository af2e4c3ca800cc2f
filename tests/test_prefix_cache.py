"""The prefix cache accounted for: each run's hit rate from vLLM's counters over its window, stored
and shown, and the comparison warning where a speedup sets runs with hit rates more than 10 points
apart against each other."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.recorded import ROOT
from workbench import metrics, store
from workbench.analysis import answer, compare, prefix_cache, run_summary, run_table
from workbench.sweep.window import prefix_cache as window_prefix_cache

PAGE = """# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {q0}
vllm:prefix_cache_queries_total{{engine="1",model_name="m"}} {q1}
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {h0}
vllm:prefix_cache_hits_total{{engine="1",model_name="m"}} {h1}
"""


def _page(t, q0, h0, q1=0, h1=0) -> metrics.Snapshot:
    return metrics.parse(PAGE.format(q0=q0, h0=h0, q1=q1, h1=h1), t)


def test_the_hit_rate_is_the_windows_hits_over_its_queries_summed_over_engines():
    # Before the window the warm-up already looked up 1000 tokens (found 100); in it, the engines
    # looked up 3000 + 1000 tokens and found 2400 + 600.
    w = metrics.window(_page(0, 1000, 100), _page(10, 4000, 2500, 1000, 600))
    assert (w.prefix_cache_queries, w.prefix_cache_hits) == (4000, 3000)
    assert w.prefix_cache_hit_rate == 0.75
    assert window_prefix_cache(w) == {"prefix_cache_queries": 4000, "prefix_cache_hits": 3000,
                                      "prefix_cache_hit_rate": 0.75}
    # Nothing looked up (or a vLLM without the counters): no rate, not a rate of 0.
    assert metrics.window(metrics.Snapshot(0.0), metrics.Snapshot(1.0)).prefix_cache_hit_rate is None


def test_the_recorded_servers_cache_counters():
    # vLLM's CPU build caches blocks of 128 tokens: of the recording's 8,712 prompt tokens (98
    # prompts of 37 to 90 tokens, and a few longer), 256 were found cached, two blocks.
    meta = json.loads((ROOT / "tests" / "fixtures" / "vllm" / "draft_model_n3.json").read_text())
    w = metrics.window(metrics.parse(meta["metrics_before"]), metrics.parse(meta["metrics_after"]))
    assert (w.prefix_cache_queries, w.prefix_cache_hits) == (8712, 256) == (w.prompt_tokens, 256)
    assert w.prefix_cache_hit_rate == pytest.approx(256 / 8712)


def _row(i, method, n, tok_s, hit_rate):
    return store.run_record({
            "id": i, "experiment_id": 1, "status": "completed", "target": "t", "method": method, "draft": "d",
            "n": n, "workload": "w", "concurrency": 8, "request_rate": None, "max_tokens": 64, "temperature": 0.0,
            "top_p": 1.0, "num_prompts": 8, "output_tok_s": tok_s, "mal": None if n is None else 2.5,
            "acceptance_rate": None, "per_position": None, "prefix_cache_hit_rate": hit_rate})


def test_a_speedup_over_a_baseline_with_another_hit_rate_is_warned():
    rows = [_row(1, "baseline", None, 100.0, 0.92), _row(2, "baseline", None, 100.0, 0.94),
            _row(3, "eagle3", 3, 150.0, 0.60), _row(4, "eagle3", 3, 154.0, 0.64),
            _row(5, "draft_model", 3, 120.0, 0.88)]
    cs = compare.configs(rows)
    by_method = {c.method: c for c in cs}
    assert by_method["eagle3"].prefix_cache_hit_rate == pytest.approx(0.62)
    assert by_method["baseline"].prefix_cache_hit_rate == pytest.approx(0.93)
    warning = by_method["eagle3"].cache_warning
    assert warning.startswith("eagle3 N=3: prefix-cache hit rate 62%, the baseline's 93%: it recomputes prompt "
                              "tokens the baseline found cached")
    assert "`disable_eagle_block_drop`" in warning and "where your vLLM version has it" in warning
    # 5 points apart (88 % against 93 %): within the 10 the warning allows.
    assert by_method["draft_model"].cache_warning is None
    table = {r.method: r for r in compare.config_table(cs)}
    assert table["eagle3"].cache_warning == warning and table["draft_model"].cache_warning is None
    assert (table["eagle3"].prefix_cache_hit_rate, table["eagle3"].baseline_prefix_cache_hit_rate) == \
        pytest.approx((0.62, 0.93))
    rows_shown = {r.method: r for r in answer.answer_rows(cs)}
    assert rows_shown["eagle3"].cache_warning == warning
    assert answer.cache_warnings(cs) == [warning]


def test_a_colder_baseline_is_warned_about_too_and_unknown_rates_are_not():
    cs = compare.configs([_row(1, "baseline", None, 100.0, 0.50), _row(2, "ngram", 3, 130.0, 0.95)])
    (warning,) = answer.cache_warnings(cs)
    assert warning.startswith("ngram N=3: prefix-cache hit rate 95%, the baseline's 50%: the baseline recomputed")
    assert "`disable_eagle_block_drop`" in warning
    # Rows stored before the hit rate was recorded: nothing to warn about.
    old = [store.run_record({k: v for k, v in r.as_dict().items() if k != "prefix_cache_hit_rate"}) for r in
           (_row(1, "baseline", None, 100.0, None), _row(2, "ngram", 3, 130.0, None))]
    assert answer.cache_warnings(compare.configs(old)) == []
    assert prefix_cache.warning("x", 0.5, None) is None


def test_show_prints_each_runs_hit_rate_and_the_comparisons_warning(demo_db):
    db = store.open_db(demo_db)
    rec = store.Recorder(db)
    # The demo sweep's concurrency-4 runs: the baseline found 90 % of its prompt tokens cached,
    # n-gram N=2 the same, the draft model at N=3 only 55 %.
    for run_id, hits in ((2, 900.0), (4, 900.0), (10, 550.0)):
        rec.run_completed(run_id, {"prefix_cache_queries": 1000.0, "prefix_cache_hits": hits,
                                   "prefix_cache_hit_rate": hits / 1000})
    assert dict(run_summary(db, store.run(db, 10)))["prefix cache hit rate"] == \
        "55.0 % (550 of 1000 prompt tokens found cached)"
    assert dict(run_summary(db, store.run(db, 1)))["prefix cache hit rate"] == "not recorded"
    cells = {r.run: r.cache_hit for r in run_table(db, 1)}
    assert (cells[2], cells[10], cells[1]) == ("90", "55", "")
    db.conn.close()
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "show", "--db", str(demo_db)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    header = done.stdout.splitlines()[0].split()
    assert "cache" in header and "steady" not in header  # columns only for what some run recorded
    assert ("  draft_model N=3: prefix-cache hit rate 55%, the baseline's 90%: it recomputes prompt tokens the "
            "baseline found cached") in done.stdout
    assert "ngram N=2: prefix-cache" not in done.stdout
