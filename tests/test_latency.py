"""Latency beside throughput: per configuration TTFT p50/p99, TPOT p50, ITL p50/p99 with each one's
ratio to the baseline's at the same concurrency, the MAL both ways (pooled and the mean over
requests), shown on Compare, in `draftbench show` and the report, and a bound on ITL p99 for the
recommended N. Read from the recorded sweeps (tests/helpers/recorded.py)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from PySide6.QtCore import Qt

from helpers.cli_table import shown_table
from helpers.recorded import DEMO_DB, GPU_DB, copy_db, stored_runs
from workbench import report, store
from workbench.analysis import answer, compare, latency
from workbench.usecases import compare_view


@pytest.fixture
def demo(tmp_path):
    return copy_db(DEMO_DB, tmp_path / "demo.sqlite")


def _config(view, method: str, n: int, concurrency: int) -> compare.Figures:
    return next(r for r in view.measured_table
                if (r.method, r.n, r.concurrency) == (method, n, concurrency))


def test_compare_has_latency_percentiles_and_their_ratios_to_the_baseline(demo):
    rows = stored_runs(demo)
    view = compare_view.build(rows, demo)
    base = next(r for r in rows if r.method == "baseline" and r.concurrency == 4)
    run = next(r for r in rows if (r.method, r.n, r.concurrency) == ("ngram", 4, 4))
    row = _config(view, "ngram", 4, 4)
    for key in ("ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms"):
        assert getattr(row, key) == pytest.approx(getattr(run, key))  # one repeat: its own stored percentile
        assert getattr(row, latency.ratio_key(key)) == pytest.approx(getattr(row, key) / getattr(base, key))
    # TPOT p50 is not stored: it comes from the run's requests, (latency - TTFT) / (tokens - 1) each.
    db = store.open_db(demo, readonly=True)
    try:
        tpots = [(lat - ttft) / (tok - 1) for _, ttft, lat, tok, _, _ in store.request_timings(db, [run.id])
                 if tok > 1]
    finally:
        store.close(db)
    assert len(tpots) == 8
    assert row.tpot_p50_ms == pytest.approx(latency.percentile(tpots, 0.5))
    # Its mean over those requests is the stored TPOT mean: the same requests, the same definition.
    assert sum(tpots) / len(tpots) == pytest.approx(run.tpot_mean_ms)
    assert row.tpot_p50_ratio is not None and row.tpot_p50_ratio > 1  # N=4 at c=4 costs latency


def test_mal_both_ways_pooled_and_mean_over_requests(demo, tmp_path):
    view = compare_view.build(stored_runs(demo), demo)
    row = _config(view, "ngram", 2, 1)
    # Pooled over the window (vLLM's: 1 + accepted / drafts) and the mean of each request's: they differ.
    assert row.mal == pytest.approx(2.325, abs=1e-3)
    assert row.request_mal == pytest.approx(2.255, abs=1e-3)
    # A build of vLLM that reported no per-request acceptance: no per-request MAL, never the pooled one.
    gpu = copy_db(GPU_DB, tmp_path / "gpu.sqlite")
    gpu_view = compare_view.build(stored_runs(gpu), gpu)
    assert all(r.request_mal is None and r.mal for r in gpu_view.measured_table)
    assert all(r.tpot_p50_ms for r in gpu_view.measured_table)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True, timeout=120)


def test_show_prints_latency_beside_throughput_and_both_mals_by_name(demo):
    done = _cli("show", "--db", str(demo))
    assert done.returncode == 0, done.stderr
    table = shown_table(done.stdout)  # the Compare page's All figures, as that page shows it
    header = table[0]
    for label in ("MAL pooled", "MAL req. mean", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "ITL p50 ms", "ITL p99 ms"):
        assert label in header
    ngram = dict(zip(header, next(r for r in table if r[1:5] == ["ngram", "builtin", "4", "4"])))
    assert (ngram["MAL pooled"], ngram["MAL req. mean"], ngram["ITL p99 ms"]) == ("2.89", "2.85", "650.0 (×3.45)")
    assert "MAL pooled = 1 + accepted / drafts over the window" in done.stdout
    one = {line[:34].strip(): line[34:].strip() for line in _cli("show", "3", "--db", str(demo)).stdout.splitlines()}
    assert one["MAL pooled (1 + accepted / drafts)"] == "2.325"
    assert one["MAL mean over requests"] == "2.255"
    assert one["TPOT mean/p50/p99 (ms)"] == "68.0 / 63.7 / 110.5"


def test_the_best_n_under_an_itl_p99_bound(tmp_path):
    rows = stored_runs(copy_db(GPU_DB, tmp_path / "gpu.sqlite"))
    cs = compare.configs(rows)
    by = {(r.method, r.concurrency): r for r in answer.within_itl(cs, 30.0)}
    # At c=8 n-gram N=2 is both the fastest (578 tok/s) and the smoother (ITL p99 23.9 ms): chosen.
    assert by[("ngram", 8)].n == 2 and "c=8 · ngram: N=2, 1.80x, ITL p99 23.9 ms (baseline 29.6 ms)" in \
        by[("ngram", 8)].text
    # Were N=2 the one that stalls (its ITL p99 at 60 ms), the bound of 50 ms would pick the slower N=4.
    stalling = [dataclasses.replace(r, itl_p99_ms=60.0) if (r.method, r.n, r.concurrency) == ("ngram", 2, 8) else r
                for r in rows]
    bound = {(r.method, r.concurrency): r for r in answer.within_itl(compare.configs(stalling), 50.0)}
    assert bound[("ngram", 8)].n == 4 and bound[("ngram", 8)].unbounded_n == 2
    assert "N=4, 1.15x, ITL p99 41.7 ms" in bound[("ngram", 8)].text
    assert "the fastest, N=2 (1.80x), has ITL p99 60.0 ms" in bound[("ngram", 8)].text
    # No draft-model N streams within 30 ms at c=1 (38.8 and 48.2 ms): said, with the lowest.
    none = by[("draft_model", 1)]
    assert none.n is None and "no N has ITL p99 <= 30 ms; the lowest is N=1 at 38.8 ms" in none.text
    with pytest.raises(ValueError, match="ITL p99 bound"):
        answer.within_itl(cs, -1.0)


def test_show_max_itl_p99_and_a_bad_bound_in_one_line(demo):
    done = _cli("show", "--db", str(demo), "--max-itl-p99", "300")
    assert done.returncode == 0, done.stderr
    bounded = done.stdout.split("best N with ITL p99 <= 300 ms", 1)[1]
    assert "c=1 · ngram: N=2, 2.79x, ITL p99 245.5 ms" in bounded
    assert "c=4 · draft_model: no N has ITL p99 <= 300 ms" in bounded
    bad = _cli("show", "--db", str(demo), "--max-itl-p99", "-5")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == ["draftbench: --max-itl-p99 must be a number of milliseconds >= 0, not -5"]


def test_the_report_shows_latency_beside_each_best_n_with_definitions(demo):
    view = compare_view.build(stored_runs(demo), demo)
    page = report.render(report.Report(title="t", conditions="c", answer=view.answer, crossovers=view.crossovers,
                                       speedups=view.speedups))
    section = page.split('id="latency"', 1)[1].split("</table>", 1)[0]
    assert "TPOT: (end-to-end latency - TTFT) / (output tokens - 1) per request" in section
    for label in ("MAL pooled", "MAL req. mean", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "ITL p50 ms", "ITL p99 ms"):
        assert f">{label}</th>" in section
    assert 'title="Inter-token latency: the gaps between streamed chunks; 99th percentile' in section
    # n-gram's best N at c=4 (N=2): its ITL p99 and the ratio to the baseline's (188.5 ms).
    assert "<td>216.0 (×1.15)</td>" in section and "<td>2.34</td><td>2.28</td>" in section


def test_compare_all_figures_has_latency_columns_with_their_definitions(qtbot, demo):
    from app.pages.compare_page import ALL_COLUMNS, ComparePage

    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(stored_runs(demo), demo)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    model, keys = page.table_model, [key for key, _, _ in ALL_COLUMNS]
    header = {key: (model.headerData(i, Qt.Horizontal), model.headerData(i, Qt.Horizontal, Qt.ToolTipRole))
              for i, key in enumerate(keys)}
    assert header["mal"][0] == "MAL pooled" and "1 + accepted / drafts" in header["mal"][1]
    assert header["request_mal"][0] == "MAL req. mean" and "per request" in header["request_mal"][1]
    assert header["ttft_p50_ms"][1].startswith("Time to first token")
    assert "(end-to-end latency - TTFT) / (output tokens - 1) per request" in header["tpot_p50_ms"][1]
    assert "gaps between streamed chunks" in header["itl_p99_ms"][1]
    row = next(i for i in range(model.rowCount())
               if (model.data(model.index(i, keys.index("method"))), model.data(model.index(i, keys.index("n"))),
                   model.data(model.index(i, keys.index("concurrency")))) == ("ngram", "4", "4"))
    assert model.data(model.index(row, keys.index("itl_p99_ms"))) == "650.0 (×3.45)"
    assert model.data(model.index(row, keys.index("request_mal"))) == "2.85"
