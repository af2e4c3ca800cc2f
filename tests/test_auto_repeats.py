"""repeats = "auto": the stopping rule by hand, and sweeps against the vLLM stand-in (replaying
recorded real answers): a quiet server stops repeating early, a noisy one (each run paced by a
different factor) runs to the maximum; the coefficient of variation is shown for both."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

from helpers.recorded import stored_runs
from workbench import launch, plan
from workbench.analysis import compare, repeats
from workbench.sweep import runner

from helpers.standin_sweep import SCRIPT  # noqa: E402
PLAN = """
name = "auto-repeats"
[target]
model = "demo:smollm2-135m"
served_name = "smollm2"
enforce_eager = true
[workload]
names = ["builtin:math_word"]
num_prompts = 4
max_tokens = 32
warmup = 0
concurrency = [1]
temperature = 0.0
repeats = "auto"
repeats_target = 0.5
repeats_max = 4
"""


def test_the_stopping_rule_by_hand():
    # Two values: t(1) = 12.706, half-width = t * sd / sqrt(2) = 12.706 * |a - b| / 2.
    assert repeats.half_width([100.0, 102.0]) == pytest.approx(12.706 * 1.0 / 101.0, rel=1e-3)
    assert repeats.enough([100.0, 100.1], target=0.02)          # 0.6 %: stop
    assert not repeats.enough([100.0, 102.0], target=0.02)      # 12.6 %: go on
    assert not repeats.enough([100.0], target=0.5)              # one value gives no interval
    assert repeats.enough([100.0, 150.0, 60.0, 120.0, 90.0], target=0.02, maximum=5)  # the maximum
    values = [100.0, 110.0, 90.0]
    assert repeats.cv(values) == pytest.approx(statistics.stdev(values) / 100.0)
    assert "stopped after 2 repeats" in repeats.reason([100.0, 100.1])
    assert "maximum of 5" in repeats.reason([100.0, 150.0, 60.0, 120.0, 90.0])


def test_auto_repeats_read_from_a_plan_and_refused_with_relaunch():
    p = plan.loads(PLAN)
    assert p.auto_repeats == plan.AutoRepeats(0.5, 4) and sorted(r.repeat for r in p.runs) == [1, 2, 3, 4]
    assert plan.loads(PLAN.replace("repeats_target = 0.5\nrepeats_max = 4\n", "")).auto_repeats == plan.AutoRepeats()
    with pytest.raises(plan.PlanError, match="relaunch"):
        plan.loads(PLAN + "[sweep]\nrelaunch = true\n")


NOISY_CV = 0.3  # the paced stand-in's windows vary ×1, ×3, ×0.4, ×2: far above this


def _sweep(db_path: Path, vllm_install, monkeypatch, factors: str | None, pace: float) -> list[dict]:
    monkeypatch.setattr(launch.vllm_cli, "argv",
                        lambda python, args: [sys.executable, str(SCRIPT), *args, "--pace", str(pace)])
    if factors:
        monkeypatch.setenv("STANDIN_PACE_FACTORS", factors)
        monkeypatch.setenv("STANDIN_PACE_BLOCK", "4")  # one factor per run of 4 requests
    else:
        monkeypatch.delenv("STANDIN_PACE_FACTORS", raising=False)
    r = runner.Runner(plan.loads(PLAN), str(db_path), vllm_install, emit=lambda e: None, scrape_interval_s=0.1)
    r.run()
    r.db.conn.close()
    return sorted(stored_runs(db_path), key=lambda row: row.repeat)


# Two tests, not one: each sweep takes about 20 s, and apart they run on two workers at once.
def test_a_quiet_server_stops_early(demo_models, vllm_install, tmp_path, monkeypatch):
    # Windows of about 4 s: long enough that a loaded machine's jitter stays well inside the target.
    quiet = _sweep(tmp_path / "quiet.sqlite", vllm_install, monkeypatch, None, pace=0.03)
    done = [r for r in quiet if r.status == "completed"]
    assert 2 <= len(done) < 4, [(r.repeat, r.status, r.output_tok_s) for r in quiet]
    skipped = [r for r in quiet if r.status == "skipped"]
    assert len(done) + len(skipped) == 4 and "stopped after" in skipped[0].error
    # A resumed sweep leaves the skipped repeats alone.
    assert runner.Runner(plan.loads(PLAN), str(tmp_path / "quiet.sqlite"), vllm_install,
                         emit=lambda e: None).register(plan.loads(PLAN)) == []
    quiet_cv = compare.configs(quiet)[0].tok_s.cv
    assert quiet_cv is not None and quiet_cv < NOISY_CV


def test_a_noisy_server_repeats_to_the_maximum(demo_models, vllm_install, tmp_path, monkeypatch):
    # A third of the quiet pace: the factors, not the window's length, make this one noisy.
    noisy = _sweep(tmp_path / "noisy.sqlite", vllm_install, monkeypatch, "1,3,0.4,2", pace=0.01)
    assert [r.status for r in noisy] == ["completed"] * 4
    tok_s = [r.output_tok_s for r in noisy]
    assert max(tok_s) / min(tok_s) > 2  # the factors did reach the windows
    (config,) = compare.configs(noisy)
    assert config.tok_s.n == 4 and config.tok_s.cv > NOISY_CV
