"""Compare: figures across runs checked against independent SQL and hand calculations, the
reference study's table recovered, and `vllm bench serve` results imported."""

import csv
import json
import math
import sqlite3

import pytest

from helpers.recorded import ROOT
from workbench import store
from workbench.analysis import compare, series


def test_reference_study_mal_and_acceptance_rate_recovered():
    rows = list(csv.DictReader(open(ROOT / "tests" / "fixtures" / "reference_study_mtp.csv")))
    assert len(rows) == 25
    for r in rows:
        per_position = [float(x) for x in r["per_position"].split()]
        assert len(per_position) == int(r["N"])
        mal, rate = compare.per_position_summary(per_position)
        # To the printed precision: within half a unit of the last printed digit.
        mal_digits = len(r["mal"].split(".")[1])
        rate_digits = len(r["acceptance_rate_pct"].split(".")[1])
        assert abs(mal - float(r["mal"])) <= 0.5 * 10 ** -mal_digits + 1e-9, r
        assert abs(100 * rate - float(r["acceptance_rate_pct"])) <= 0.5 * 10 ** -rate_digits + 1e-9, r


def _row(i, method, n, tok_s, mal=None, concurrency=4, per_position=None):
    return store.run_record({
            "id": i, "experiment_id": 1, "status": "completed", "target": "t", "method": method, "draft": None,
            "n": n, "workload": "w", "concurrency": concurrency, "request_rate": None, "max_tokens": 64,
            "temperature": 0.0, "top_p": 1.0, "num_prompts": 8, "output_tok_s": tok_s, "mal": mal,
            "acceptance_rate": None if mal is None else (mal - 1) / n,
            "per_position": None if per_position is None else json.dumps(per_position)})


def test_repeats_give_mean_ci_and_noise_verdicts_computed_by_hand():
    rows = [_row(1, "baseline", None, 100.0), _row(2, "baseline", None, 104.0), _row(3, "baseline", None, 96.0),
            _row(4, "ngram", 2, 120.0, 2.0), _row(5, "ngram", 2, 126.0, 2.2), _row(6, "ngram", 2, 123.0, 2.1),
            _row(7, "ngram", 4, 101.0, 2.6), _row(8, "ngram", 4, 99.0, 2.4), _row(9, "ngram", 4, 103.0, 2.5)]
    table = compare.speedup_table(compare.configs(rows))
    assert len(table) == 1
    best = table[0]
    assert best.best_n == 2 and best.repeats == 3 and best.baseline_tok_s == 100.0
    assert best.tok_s == pytest.approx(123.0)
    # By hand: sd of (120,126,123) = 3, sem = 3/sqrt(3), t(2) = 4.303.
    assert best.tok_s_ci95 == pytest.approx(4.303 * 3 / math.sqrt(3))
    assert best.speedup == pytest.approx(1.23)
    # Baseline sd of (100,104,96) = 4 -> ci 4.303*4/sqrt(3); relative errors add in quadrature.
    rel = math.hypot(4.303 * 3 / math.sqrt(3) / 123.0, 4.303 * 4 / math.sqrt(3) / 100.0)
    assert best.speedup_ci95 == pytest.approx(1.23 * rel)
    assert best.beyond_noise is True
    assert best.mal == pytest.approx(2.1) and best.efficiency == pytest.approx(1.23 / 2.1)
    n4 = next(c for c in compare.configs(rows) if c.n == 4)
    assert n4.speedup == pytest.approx(1.01) and n4.beyond_noise is False
    single = compare.configs([_row(1, "baseline", None, 100.0), _row(2, "ngram", 2, 130.0, 2.0)])
    assert next(c for c in single if c.n == 2).beyond_noise is None


def test_speedup_against_concurrency_only_where_several_were_run():
    rows = [_row(1, "baseline", None, 20.0, concurrency=1), _row(2, "baseline", None, 70.0),
            _row(3, "ngram", 3, 24.0, 2.4, concurrency=1), _row(4, "ngram", 3, 56.0, 2.4),
            _row(5, "ngram", 5, 50.0, 2.7)]
    points = series.concurrency(compare.configs(rows))
    assert [(r.concurrency, round(r.speedup, 3)) for r in points] == [(1, 1.2), (4, 0.8)]


def test_chart_data_matches_independent_sql(recorded_db):
    db = store.open_db(recorded_db, readonly=True)
    cs = compare.configs(store.runs(db))
    conn = sqlite3.connect(f"file:{recorded_db}?mode=ro", uri=True)
    sql = conn.execute("SELECT method, n, concurrency, per_position, output_tok_s, mal FROM runs "
                       "WHERE status='completed' AND method != 'baseline'").fetchall()
    base = dict(conn.execute("SELECT concurrency, avg(output_tok_s) FROM runs WHERE method='baseline' "
                             "GROUP BY concurrency").fetchall())
    assert len(sql) == 8 and sorted(base) == [1, 8]
    for method, n, conc, pp, tok, mal in sql:
        curve = [r for r in series.per_position(cs) if r.series == f"{method} N={n} · builtin · c={conc}"]
        assert [r.position for r in curve] == list(range(1, n + 1))
        assert [r.acceptance for r in curve] == pytest.approx(json.loads(pp))
        (thr,) = [r for r in series.throughput(cs) if r.series == f"{method} · builtin · c={conc}" and r.n == n]
        assert thr.tok_s == pytest.approx(tok) and thr.baseline_tok_s == pytest.approx(base[conc])
        (eff,) = [r for r in series.efficiency(cs) if r.series == f"{method} · builtin · c={conc}" and r.n == n]
        assert eff.mal == pytest.approx(mal) and eff.efficiency == pytest.approx(tok / base[conc] / mal)
    # Every configuration ran at concurrency 1 and 8: both of its points, with their speedups.
    by_conc = {(r.series, r.concurrency): r.speedup for r in series.concurrency(cs)}
    assert by_conc == pytest.approx({(f"{m} N={n} · builtin", c): tok / base[c] for m, n, c, _, tok, _ in sql})


def test_vllm_bench_serve_result_imported_as_a_run(tmp_path):
    from workbench.report import benchjson

    # Saved by `vllm bench serve` against the demo draft server (tests/fixtures/vllm/SOURCES.md).
    result = ROOT / "tests" / "fixtures" / "vllm" / "bench_serve_draft_model_n3.json"
    data = json.loads(result.read_text())
    assert data["completed"] == 6 and data["spec_decode_num_drafts"] > 0
    db = store.open_db(tmp_path / "r.sqlite")
    run_id = benchjson.import_file(db, result, method="draft_model", n=3, draft="noisy", workload="builtin")
    row = store.run(db, run_id)
    assert row.acceptance_rate == pytest.approx(data["spec_decode_acceptance_rate"] / 100)
    assert row.mal == pytest.approx(data["spec_decode_acceptance_length"])
    assert list(row.per_position) == pytest.approx(data["spec_decode_per_position_acceptance_rates"])
    assert row.output_tok_s == pytest.approx(data["output_throughput"])
    assert row.drafts == data["spec_decode_num_drafts"] and row.status == "completed"
    # Importing the same file again does not duplicate it; exporting gives the same figures back.
    assert benchjson.import_file(db, result, method="draft_model", n=3) == run_id
    back = benchjson.export_run(row)
    for key in ("spec_decode_acceptance_rate", "spec_decode_acceptance_length", "output_throughput",
                "spec_decode_per_position_acceptance_rates", "total_output_tokens", "duration"):
        assert back[key] == pytest.approx(data[key]), key


def test_bad_bench_files_are_refused(tmp_path):
    from workbench.report import benchjson

    (tmp_path / "a.json").write_text("[1, 2]")
    (tmp_path / "b.json").write_text('{"duration": 1}')
    (tmp_path / "c.json").write_text("{not json")
    for name, message in (("a.json", "not a JSON object"), ("b.json", "no 'completed'"), ("c.json", "not a JSON file")):
        with pytest.raises(benchjson.BenchJsonError, match=message):
            benchjson.read(tmp_path / name)
