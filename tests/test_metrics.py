"""Parsing vLLM's real /metrics pages and log lines (recorded from vLLM 0.32 CPU servers)."""

import pytest

from helpers.recorded import ROOT
from workbench import metrics

FIXTURES = ROOT / "tests" / "fixtures"


def _snap(name: str, t: float = 0.0) -> metrics.Snapshot:
    return metrics.parse((FIXTURES / name).read_text(), t)


def test_ngram_page_gives_the_published_figures():
    w = metrics.window(metrics.Snapshot(0.0), _snap("metrics_spec_ngram_k4.txt", 10.0))
    assert (w.drafts, w.draft_tokens, w.accepted) == (262, 1048, 376)
    assert w.accepted_per_position == (180, 102, 50, 44)
    assert w.mean_acceptance_length == pytest.approx(1 + 376 / 262)
    assert round(w.mean_acceptance_length, 2) == 2.44
    assert w.acceptance_rate == pytest.approx(376 / 1048)
    assert [round(p, 3) for p in w.per_position] == [0.687, 0.389, 0.191, 0.168]
    assert w.conditional[1] == pytest.approx(102 / 180)


def test_created_twins_are_ignored_and_baseline_has_no_spec_counters():
    snap = _snap("metrics_full_baseline.txt")
    assert not snap.speculative
    assert snap.total("generation_tokens") > 0
    spec = _snap("metrics_full_draft_model_k3.txt")
    assert spec.total("drafts") == 659 and spec.num_positions == 3
    assert "kv_cache_usage" in spec.gauges


def test_window_sums_engines_and_subtracts_the_earlier_scrape():
    before = metrics.Snapshot(0.0, {("drafts", "0"): 10, ("drafts", "1"): 5, ("accepted", "0"): 4,
                                    ("accepted", "1"): 1, ("draft_tokens", "0"): 30, ("draft_tokens", "1"): 15},
                              {("0", 0): 3, ("1", 0): 1})
    after = metrics.Snapshot(2.0, {("drafts", "0"): 20, ("drafts", "1"): 15, ("accepted", "0"): 14,
                                   ("accepted", "1"): 11, ("draft_tokens", "0"): 60, ("draft_tokens", "1"): 45},
                             {("0", 0): 9, ("1", 0): 7})
    w = metrics.window(before, after)
    assert (w.drafts, w.accepted, w.draft_tokens) == (20, 20, 60)
    assert w.accepted_per_position == (12,)
    assert w.mean_acceptance_length == 2.0 and w.seconds == 2.0


def test_empty_window_has_no_ratios():
    w = metrics.window(metrics.Snapshot(0.0), metrics.Snapshot(1.0))
    assert w.mean_acceptance_length is None and w.acceptance_rate is None and w.per_position is None


def test_log_lines_parse_in_both_field_orders():
    lines = [line for line in (FIXTURES / "server_log_lines.txt").read_text().splitlines() if metrics.LOG_MARK in line]
    first = metrics.parse_log_line(lines[0])
    assert first == {"mean_acceptance_length": 2.77, "accepted": 263, "drafted": 447,
                     "acceptance_rate_pct": 58.8, "per_position": [0.765, 0.55, 0.45]}
    old = ("SpecDecoding metrics: Draft acceptance rate: 35.9%, Mean acceptance length: 2.44, "
           "Accepted: 376 tokens, Drafted: 1048 tokens, Per-position acceptance rate: 0.687, 0.389, 0.191, 0.168")
    parsed = metrics.parse_log_line(old)
    assert parsed["acceptance_rate_pct"] == 35.9 and parsed["per_position"] == [0.687, 0.389, 0.191, 0.168]
    assert metrics.parse_log_line("INFO Engine 000: Avg prompt throughput") is None
