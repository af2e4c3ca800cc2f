"""The N model: its algebra on curves with a known answer, its noise handling, and its accuracy
on the reference study's published Gemma 4 MTP rows (bench/recommend_reference.py prints them)."""

import json
import math

import pytest

from helpers.recorded import bench_module
from workbench import store
from workbench.analysis import compare, recommend
from workbench.analysis.recommend import Point, Survival

reference = bench_module("recommend_reference")


def _points(survival, alpha, beta, ns, rel_se=0.02):
    return [Point(n, survival.tokens_per_step(n) / (1 + alpha + beta * n), survival.tokens_per_step(n), rel_se)
            for n in ns]


def test_two_runs_determine_the_cost_line_and_the_curve_follows_by_hand():
    survival = Survival((0.8, 0.6, 0.45, 0.3, 0.2))
    assert survival.tokens_per_step(3) == pytest.approx(1 + 0.8 + 0.6 + 0.45)
    rec = recommend.recommend("draft_model", survival, _points(survival, 0.1, 0.15, [1, 5]))
    assert rec.line.alpha == pytest.approx(0.1) and rec.line.beta == pytest.approx(0.15)
    expected = {n: survival.tokens_per_step(n) / (1.1 + 0.15 * n) for n in range(1, 6)}
    assert [p.speedup for p in rec.curve] == pytest.approx([expected[n] for n in range(1, 6)])
    assert rec.best_n == max(expected, key=expected.get) == 4
    assert rec.family == "sequential" and rec.at(1).measured == pytest.approx(expected[1])
    assert rec.at(3).measured is None


def test_intervals_follow_the_noise_and_collapse_without_it():
    survival = Survival((0.9, 0.7, 0.5))
    quiet = recommend.recommend("mtp", survival, _points(survival, 0.05, 0.2, [1, 3], rel_se=1e-6))
    noisy = recommend.recommend("mtp", survival, _points(survival, 0.05, 0.2, [1, 3], rel_se=0.05))
    assert quiet.at(2).half_width < 1e-4
    # Interpolating halfway between two points each with 5% noise: c(2) = (c1 + c3) / 2, so its
    # relative sd is 5% * sqrt(c1^2 + c3^2) / (c1 + c3); the 95% half-width is 1.96 of that.
    c1, c3 = 1.25, 1.65
    rel = 0.05 * math.hypot(c1, c3) / (c1 + c3)
    assert noisy.at(2).half_width == pytest.approx(1.96 * noisy.at(2).speedup * rel, rel=1e-6)
    with_base = recommend.recommend("mtp", survival, _points(survival, 0.05, 0.2, [1, 3], rel_se=0.05),
                                    baseline_rel_se=0.05)
    assert with_base.at(2).half_width == pytest.approx(1.96 * with_base.at(2).speedup * math.hypot(rel, 0.05))


def test_close_rivals_are_uncertain_and_clear_winners_are_not():
    flat = Survival((0.7, 0.6, 0.55, 0.5))
    close = recommend.recommend("ngram", flat, _points(flat, 0.0, 0.3, [1, 4], rel_se=0.05))
    assert close.family == "lookup" and close.uncertain
    assert {close.best_n, close.runner_up} <= {1, 2, 3, 4}
    clear = recommend.recommend("ngram", flat, _points(flat, 0.0, 0.02, [1, 4], rel_se=0.005))
    assert clear.best_n == 4 and not clear.uncertain


def test_next_runs_stop_once_the_best_is_measured_and_its_rival_too_when_close():
    assert recommend.probes([3, 1, 5, 2, 4]) == [5, 1]
    flat = Survival((0.7, 0.6, 0.55, 0.5, 0.45))
    # beta 0.4: speedups 1.214 1.278 1.295 1.288 1.267, best N=3 with N=4 within noise: run both.
    rec = recommend.recommend("ngram", flat, _points(flat, 0.0, 0.4, [1, 5], rel_se=0.05))
    assert (rec.best_n, rec.runner_up, rec.uncertain) == (3, 4, True)
    assert recommend.next_to_measure(rec, {1, 5}) == [3, 4]
    assert recommend.next_to_measure(rec, {1, 3, 4, 5}) == []
    # beta 0.3: best N=4, N=5 (measured) a close second: only N=4 is left to run.
    rec = recommend.recommend("ngram", flat, _points(flat, 0.0, 0.3, [1, 5], rel_se=0.05))
    assert (rec.best_n, rec.runner_up, rec.uncertain) == (4, 5, True)
    assert recommend.next_to_measure(rec, {1, 5}) == [4]
    # Cheap verification: N_max is best by far, and it is measured: nothing more to run.
    rec = recommend.recommend("ngram", flat, _points(flat, 0.0, 0.02, [1, 5], rel_se=0.005))
    assert rec.best_n == 5 and not rec.uncertain and recommend.next_to_measure(rec, {1, 5}) == []


def test_more_points_than_parameters_widen_the_interval_by_their_scatter():
    survival = Survival((0.8, 0.6, 0.4))
    exact = _points(survival, 0.1, 0.2, [1, 2, 3], rel_se=0.01)
    line = recommend.fit_cost(exact)
    assert (line.alpha, line.beta) == pytest.approx((0.1, 0.2))
    scattered = [Point(p.n, p.speedup * f, p.tokens_per_step, p.rel_se) for p, f in zip(exact, (1.0, 1.1, 1.0))]
    wide = recommend.fit_cost(scattered)
    plain = recommend.fit_cost(scattered[:1] + scattered[2:])
    assert wide.cost_var(2) > 10 * plain.cost_var(2)
    with pytest.raises(recommend.RecommendError, match="two or more"):
        recommend.fit_cost(exact[:1])


def test_parallel_drafters_and_bad_inputs():
    assert recommend.family("dflash") == recommend.family("dspark") == "parallel"
    assert recommend.family("eagle3") == "sequential" and recommend.family("suffix") == "lookup"
    survival = Survival((0.9, 0.8))
    with pytest.raises(recommend.RecommendError, match="outside the measured survival"):
        survival.tokens_per_step(3)
    # A cost line that turns negative inside the range is refused, not extrapolated into nonsense.
    bad = [Point(1, 0.95, 1.9, 0.02), Point(2, 10.0, 2.7, 0.02)]
    with pytest.raises(recommend.RecommendError, match="not positive"):
        recommend.recommend("mtp", Survival((0.9, 0.8, 0.7)), bad, [1, 2, 3])


def test_draft_share_from_a_runs_counters():
    # 100 output tokens over 4 requests with 30 accepted: 66 decode steps, 33 of them drafted.
    assert recommend.draft_share(store.run_record({"id": 1, "experiment_id": 1, "status": "completed",
                                                   "generation_tokens": 100, "accepted": 30, "requests_ok": 4,
                                                   "drafts": 33})) == 0.5
    assert recommend.draft_share(store.run_record({"id": 1, "experiment_id": 1, "status": "completed",
                                                   "generation_tokens": None, "accepted": 1, "requests_ok": 1,
                                                   "drafts": 1})) == 1.0


def _row(i, n, tok_s, mal=None, per_position=None, repeat=1, gen=None, accepted=None, drafts=None):
    return store.run_record({
            "id": i, "experiment_id": 1, "status": "completed", "target": "t", "method": "ngram" if n else "baseline",
            "draft": None, "options": "{}", "n": n, "workload": "w", "concurrency": 1, "request_rate": None,
            "max_tokens": 64, "temperature": 0.0, "top_p": 1.0, "num_prompts": 8, "output_tok_s": tok_s, "mal": mal,
            "acceptance_rate": None, "repeat": repeat, "generation_tokens": gen, "accepted": accepted,
            "requests_ok": 8, "drafts": drafts, "per_position": None if per_position is None else json.dumps(per_position)})


def test_stored_runs_give_the_same_answer_as_the_model_by_hand():
    pp = [0.6, 0.4, 0.3, 0.2]
    # Repeats: the baseline and N=4 twice, so run-to-run noise is measured, not assumed.
    rows = [_row(1, None, 100.0, repeat=1), _row(2, None, 104.0, repeat=2),
            _row(3, 1, 110.0, 1.5, [0.5], gen=600, accepted=100, drafts=400),
            _row(4, 4, 120.0, 2.5, pp, 1, gen=640, accepted=240, drafts=250),
            _row(5, 4, 126.0, 2.5, pp, 2, gen=640, accepted=240, drafts=250)]
    cs = compare.configs(rows)
    recs = recommend.from_configs(cs)
    assert len(recs) == 1
    rec = next(iter(recs.values()))
    # By hand: draft shares 400/492 and 250/392; pooled relative sd over the two pairs (2 dof).
    share1, share4 = 400 / 492, 250 / 392
    t1, t4 = 1 + share1 * 0.5, 1 + share4 * 1.5
    base = 102.0
    s1, s4 = 110 / base, 123 / base
    c1, c4 = t1 / s1, t4 / s4
    beta = (c4 - c1) / 3
    assert rec.survival.draft_share == pytest.approx(share4)
    assert rec.line.beta == pytest.approx(beta) and rec.line.alpha == pytest.approx(c1 - beta - 1)
    assert rec.at(2).speedup == pytest.approx((1 + share4 * 1.0) / (c1 + beta))
    pooled = math.sqrt(((2 / 102) ** 2 * 2 + (3 / 123) ** 2 * 2) / 2)
    assert recommend.noise(cs) == (pytest.approx(pooled), 2)
    assert rec.at(4).measured_half_width == pytest.approx(4.303 * s4 * math.hypot(pooled / math.sqrt(2),
                                                                                  pooled / math.sqrt(2)))


@pytest.mark.parametrize("probe", [1, 2])
def test_reference_study_rows_predicted_within_the_measured_error(probe):
    rows, groups, skipped = reference.evaluate(probe=probe)
    # 31B GSM8K has N = 1..4 and 26B four datasets N = 1..5; 31B MATH500 has only N = 1.
    assert len(rows) == 14 and len(groups) == 5 and [d for _, d in skipped] == ["MATH500"]
    errors = [abs(r.error_pct) for r in rows]
    # Measured: mean 2.74% / max 5.66% (probe N=1), mean 2.44% / max 7.23% (probe N=2).
    assert sum(errors) / len(errors) < 3.5
    assert max(errors) < 8.0
    assert all(g.identified for g in groups), groups


def test_a_model_that_ignores_how_step_cost_grows_fails_the_same_bound():
    wrong = reference.constant_cost_rows()
    assert reference.mean_abs_error(wrong) > 3.5 * 3
