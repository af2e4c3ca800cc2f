"""Latency beside throughput: per configuration TTFT p50/p99, TPOT p50, ITL p50/p99 with each one's
ratio to the baseline's at the same concurrency, the MAL both ways (pooled and the mean over
requests), shown on Compare, in `draftbench show` and the report, and a bound on ITL p99 for the
recommended N. Read from the recorded sweeps (tests/helpers/recorded.py)."""

from __future__ import annotations

import pytest

from helpers.recorded import DEMO_DB, GPU_DB, copy_db, stored_runs
from workbench import store
from workbench.analysis import latency
from workbench.usecases import compare_view


@pytest.fixture
def demo(tmp_path):
    return copy_db(DEMO_DB, tmp_path / "demo.sqlite")


def _config(view, method: str, n: int, concurrency: int) -> dict:
    return next(r for r in view.measured_table
                if (r["method"], r["n"], r["concurrency"]) == (method, n, concurrency))


def test_compare_has_latency_percentiles_and_their_ratios_to_the_baseline(demo):
    rows = stored_runs(demo)
    view = compare_view.build(rows, demo)
    base = next(r for r in rows if r["method"] == "baseline" and r["concurrency"] == 4)
    run = next(r for r in rows if (r["method"], r["n"], r["concurrency"]) == ("ngram", 4, 4))
    row = _config(view, "ngram", 4, 4)
    for key in ("ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms"):
        assert row[key] == pytest.approx(run[key])  # one repeat: its own stored percentile
        assert row[latency.ratio_key(key)] == pytest.approx(row[key] / base[key])
    # TPOT p50 is not stored: it comes from the run's requests, (latency - TTFT) / (tokens - 1) each.
    db = store.open_db(demo, readonly=True)
    try:
        tpots = [(lat - ttft) / (tok - 1) for _, ttft, lat, tok, _, _ in store.request_timings(db, [run["id"]])
                 if tok > 1]
    finally:
        store.close(db)
    assert len(tpots) == 8
    assert row["tpot_p50_ms"] == pytest.approx(latency.percentile(tpots, 0.5))
    # Its mean over those requests is the stored TPOT mean: the same requests, the same definition.
    assert sum(tpots) / len(tpots) == pytest.approx(run["tpot_mean_ms"])
    assert row["tpot_p50_ratio"] is not None and row["tpot_p50_ratio"] > 1  # N=4 at c=4 costs latency


def test_mal_both_ways_pooled_and_mean_over_requests(demo, tmp_path):
    view = compare_view.build(stored_runs(demo), demo)
    row = _config(view, "ngram", 2, 1)
    # Pooled over the window (vLLM's: 1 + accepted / drafts) and the mean of each request's: they differ.
    assert row["mal"] == pytest.approx(2.325, abs=1e-3)
    assert row["request_mal"] == pytest.approx(2.255, abs=1e-3)
    # A build of vLLM that reported no per-request acceptance: no per-request MAL, never the pooled one.
    gpu = copy_db(GPU_DB, tmp_path / "gpu.sqlite")
    gpu_view = compare_view.build(stored_runs(gpu), gpu)
    assert all(r["request_mal"] is None and r["mal"] for r in gpu_view.measured_table)
    assert all(r["tpot_p50_ms"] for r in gpu_view.measured_table)
