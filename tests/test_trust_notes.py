"""Before trusting a speedup: Compare and the report say which throughput it rests on and list the
runs' acceptance alarms — here the EOS over-count of the recorded demo sweep's draft_model N=3
runs (real CPU runs, stored before alarms were, so raised from their stored counters) — and a
speedup across prefix caches that differ is flagged."""

from __future__ import annotations

from dataclasses import replace

from app.exports import write_report
from app.pages.compare_page import ComparePage
from helpers.recorded import stored_runs
from workbench.analysis import answer, compare
from workbench.usecases import compare_view


def test_compare_and_the_report_list_the_alarms(qtbot, demo_db, tmp_path):
    rows = stored_runs(demo_db)
    notes = answer.trust_notes(compare.configs(rows))
    over = [n for n in notes if "vllm issue 56101" in n]
    assert [n.split(" (")[0] for n in over] == ["run 9", "run 10"]
    assert "2.7 % apart" in over[0] and notes[0].startswith("throughput: whole window")
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, demo_db)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    shown = page.crossover.text()
    assert "Before trusting these figures" in shown and "run 9 (draft_model N=3, c=1)" in shown
    report = write_report(compare_view.build(rows, demo_db), tmp_path / "r.html", "demo").read_text()
    section = report.split("<h3>Before trusting these figures</h3>")[1].split("</ul>")[0]
    assert section.count("<li>") == len(notes) and "run 10 (draft_model N=3, c=4)" in section


def test_a_healthy_run_set_says_only_its_basis(demo_db):
    rows = [r for r in stored_runs(demo_db) if r.method != "draft_model"]
    assert [n for n in answer.trust_notes(compare.configs(rows)) if not n.startswith("throughput")] == []


def test_differing_prefix_caches_are_flagged_beside_the_speedup(demo_db):
    # The baseline hit its cache far more often than the speculative runs did.
    rows = [replace(r, prefix_cache_queries=1000.0, prefix_cache_hits=600.0 if r.method == "baseline" else 100.0,
                    prefix_cache_hit_rate=0.6 if r.method == "baseline" else 0.1) for r in stored_runs(demo_db)]
    notes = answer.trust_notes(compare.configs(rows))
    assert any("disable_eagle_block_drop" in n for n in notes)
