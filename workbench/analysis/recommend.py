"""Recommending N, the number of speculative tokens: speedup against N predicted from the
per-position acceptance measured at the largest N and a step-cost line fitted to the runs made.

Speedup is output tokens/s over the baseline's (the README's Metrics section). A baseline decode step yields one
token; a speculative step yields T(N) tokens and takes c(N) baseline steps, so
speedup(N) = T(N) / c(N). T(N) comes from the survival curve p[1..N_max] of the run at N_max
(the k-th draft token does not depend on how many follow it): T(N) = 1 + f * sum_{k<=N} p[k],
f being the share of steps that carried a draft (1 for model drafters; below 1 for n-gram lookup,
which drafts only when the context matches). c(N) = 1 + alpha + beta * N is fitted to the
measured points, c_i = T_i / speedup_i. docs/recommend-n.md explains the choices.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from workbench import methods, store
from workbench.analysis import series
from workbench.analysis.compare import Config, Key, t95
from workbench.errors import DraftbenchError

Z95 = 1.96
# Relative standard deviation of one run's output throughput, assumed only when no repeats
# measure it (the reference study publishes none); plans that rely on intervals use repeats >= 2.
DEFAULT_REL_SE = 0.02

FAMILIES = {
    "sequential": "draft tokens one after another (draft model, EAGLE, MTP): draft cost grows with N",
    "lookup": "drafts looked up, not computed (n-gram, suffix): no draft cost, verification grows with N",
    "parallel": "one draft pass serves every N (DFlash, DSpark): draft cost constant, verification grows with N",
}


class RecommendError(DraftbenchError, ValueError):
    """A one-line reason no recommendation can be made from the runs given."""


def family(method: str) -> str:
    m = methods.get(method)
    if m.parallel:
        return "parallel"
    return "lookup" if m.draft == "none" else "sequential"


@dataclass(frozen=True)
class Survival:
    """Per-position acceptance p[0..N_max-1] measured at N_max, and the share of steps drafted."""
    per_position: tuple[float, ...]
    draft_share: float = 1.0

    @property
    def n_max(self) -> int:
        return len(self.per_position)

    def tokens_per_step(self, n: int) -> float:
        if not 0 <= n <= self.n_max:
            raise RecommendError(f"N={n} is outside the measured survival curve (N_max={self.n_max})")
        return 1.0 + self.draft_share * sum(self.per_position[:n])


@dataclass(frozen=True)
class Point:
    """One measured configuration."""
    n: int
    speedup: float
    tokens_per_step: float  # measured: 1 + draft_share * (MAL - 1)
    rel_se: float           # relative standard error of its mean output throughput
    repeats: int = 2        # runs measured; one has no interval of its own (its rel_se is assumed)

    @property
    def cost(self) -> float:
        return self.tokens_per_step / self.speedup


@dataclass(frozen=True)
class CostLine:
    """c(N) = 1 + alpha + beta * N, the speculative step's time in baseline decode steps, with the
    covariance of (1 + alpha, beta) from the points' throughput noise (and the fit's residual
    when more than two N were measured)."""
    alpha: float
    beta: float
    cov: tuple[tuple[float, float], tuple[float, float]]
    points: tuple[Point, ...]

    def cost(self, n: int) -> float:
        return 1.0 + self.alpha + self.beta * n

    def cost_var(self, n: int) -> float:
        x = np.array([1.0, n])
        return float(x @ np.array(self.cov) @ x)


def fit_cost(points: list[Point]) -> CostLine:
    """Weighted least squares of c_i on N_i, weights 1 / var(c_i) with var(c_i) = (c_i * rel_se_i)^2.
    Two N determine the line; with more, the covariance is scaled up by the reduced chi-square
    when the points scatter more than their noise explains."""
    ns = {p.n for p in points}
    if len(ns) < 2:
        raise RecommendError("a step-cost fit needs runs at two or more values of N")
    x = np.array([[1.0, p.n] for p in points])
    y = np.array([p.cost for p in points])
    w = np.array([1.0 / (p.cost * max(p.rel_se, 1e-6)) ** 2 for p in points])
    cov = np.linalg.inv(x.T @ (w[:, None] * x))
    coef = cov @ x.T @ (w * y)
    dof = len(points) - 2
    if dof > 0:
        chi2 = float(np.sum(w * (y - x @ coef) ** 2)) / dof
        cov = cov * max(1.0, chi2)
    (c00, c01), (c10, c11) = cov.tolist()
    return CostLine(float(coef[0] - 1.0), float(coef[1]), ((c00, c01), (c10, c11)), tuple(points))


@dataclass(frozen=True)
class Prediction:
    n: int
    speedup: float
    half_width: float       # 95% interval, the baseline's noise included
    tokens_per_step: float
    cost: float
    measured: float | None = None
    measured_half_width: float | None = None
    # "what-if" where a what-if run of this target, method and concurrency measured the step cost at
    # this N (taken as it is), "fitted" where it comes from the cost line.
    cost_source: str = "fitted"

    @property
    def low(self) -> float:
        return self.speedup - self.half_width

    @property
    def high(self) -> float:
        return self.speedup + self.half_width


@dataclass(frozen=True)
class Recommendation:
    family: str
    survival: Survival
    line: CostLine
    curve: tuple[Prediction, ...]
    best_n: int
    runner_up: int | None
    uncertain: bool         # the runner-up is not worse than the best beyond noise

    def at(self, n: int) -> Prediction:
        return next(p for p in self.curve if p.n == n)

    @property
    def best(self) -> Prediction:
        return self.at(self.best_n)


def predict(survival: Survival, line: CostLine, ns: list[int] | None = None, baseline_rel_se: float = 0.0,
            z: float = Z95, measured: dict[int, tuple[float, float | None]] | None = None,
            method_family: str = "", costs: dict[int, float] | None = None) -> Recommendation:
    """The predicted speedup at each N (default 1..N_max), the best N, and whether the runner-up
    is within noise of it. Ranking ignores the baseline's noise, which scales every N alike.
    `costs`: step costs measured directly at some N (what-if runs), used there instead of the line."""
    ns = sorted(set(ns or range(1, survival.n_max + 1)))
    if not ns:
        raise RecommendError("no values of N to predict")
    cov = np.array(line.cov)
    measured = measured or {}
    costs = costs or {}
    curve, grads = [], {}
    for n in ns:
        tokens = survival.tokens_per_step(n)
        if n in costs:
            # A what-if run measured this cost: it carries one run's throughput noise, not the line's.
            cost = costs[n]
            s = tokens / cost
            grads[n] = np.zeros(2)
            rel_var = DEFAULT_REL_SE ** 2 + baseline_rel_se ** 2
        else:
            cost = line.cost(n)
            if cost <= 0:
                raise RecommendError(f"the fitted step cost at N={n} is not positive: the runs do not fit a cost line")
            s = tokens / cost
            grads[n] = -tokens / cost ** 2 * np.array([1.0, n])
            rel_var = float(grads[n] @ cov @ grads[n]) / s ** 2 + baseline_rel_se ** 2
        m, mh = measured.get(n, (None, None))
        curve.append(Prediction(n, s, z * s * math.sqrt(rel_var), tokens, cost, m, mh,
                                "what-if" if n in costs else "fitted"))
    ranked = sorted(curve, key=lambda p: p.speedup, reverse=True)
    best, runner = ranked[0], (ranked[1] if len(ranked) > 1 else None)
    uncertain = False
    if runner is not None:
        g = grads[best.n] - grads[runner.n]
        uncertain = best.speedup - runner.speedup <= z * math.sqrt(max(float(g @ cov @ g), 0.0))
    return Recommendation(family=method_family, survival=survival, line=line, curve=tuple(curve), best_n=best.n,
                          runner_up=runner.n if runner else None, uncertain=uncertain)


def recommend(method: str, survival: Survival, points: list[Point], ns: list[int] | None = None,
              baseline_rel_se: float = 0.0, z: float = Z95, costs: dict[int, float] | None = None) -> Recommendation:
    """Fit the step cost to `points` and predict: the whole model in one call. With what-if step
    costs (`costs`, N -> cost) at two or more N, one measured N is enough: the line is then fitted to
    those costs, and each N a what-if run measured takes its own cost."""
    # A point measured once is drawn without an interval: its rel_se is the pooled or assumed noise
    # the fit needs, not a measured spread.
    measured = {p.n: (p.speedup, z * p.speedup * math.hypot(p.rel_se, baseline_rel_se) if p.repeats >= 2 else None)
                for p in points}
    costs = costs or {}
    if len({p.n for p in points}) < 2 and len(costs) >= 2:
        # A Point whose tokens per step is its cost and whose speedup is 1 has exactly that cost.
        line = fit_cost([Point(n, 1.0, c, DEFAULT_REL_SE, 1) for n, c in costs.items()])
    else:
        line = fit_cost(points)
    return predict(survival, line, ns, baseline_rel_se, z, measured, family(method), costs)


def next_to_measure(rec: Recommendation, measured: set[int]) -> list[int]:
    """The adaptive sweep's next runs: the predicted best N if not yet measured, and the runner-up
    too when the two are within noise. Empty once the best is measured and confirmed (either
    certain, or its close rival measured as well)."""
    todo = [rec.best_n]
    if rec.uncertain and rec.runner_up is not None:
        todo.append(rec.runner_up)
    return [n for n in todo if n not in measured]


def probes(ns: list[int]) -> list[int]:
    """The first N to run: N_max (its survival curve serves every smaller N) and the smallest N,
    so every other N is predicted between two measured step costs, never beyond them."""
    ns = sorted(set(ns))
    return [ns[-1], ns[0]] if len(ns) > 1 else ns


# --- from stored runs -------------------------------------------------------------------------

def draft_share(row: store.RunRecord) -> float:
    """Drafted steps / target decode steps of a run. vLLM counts a draft only for steps that
    proposed tokens; decode steps = output tokens - accepted - one prefill token per request."""
    generated, accepted, requests, drafts = row.generation_tokens, row.accepted, row.requests_ok, row.drafts
    if generated is None or accepted is None or requests is None or drafts is None:
        return 1.0  # not recorded (an imported run): as if every step drafted
    try:
        share = drafts / (generated - accepted - requests)
    except ZeroDivisionError:
        return 1.0
    return min(1.0, share) if share > 0 else 1.0


def noise(cs: list[Config]) -> tuple[float | None, int]:
    """Pooled relative standard deviation of one run's throughput over the repeats of every
    configuration given, and its degrees of freedom (None, 0 without repeats)."""
    ss, dof = 0.0, 0
    for c in cs:
        values = c.tok_s.values
        if len(values) >= 2 and c.tok_s.mean:
            mean = statistics.fmean(values)
            ss += sum(((v - mean) / mean) ** 2 for v in values)
            dof += len(values) - 1
    return (math.sqrt(ss / dof), dof) if dof else (None, 0)


def _rel_se(c: Config, pooled: float | None, default: float) -> float:
    sd = pooled if pooled is not None else default
    return sd / math.sqrt(c.tok_s.n)


def group_key(c: Config) -> Key:
    r = c.rows[0]
    return (r.experiment_id, r.target, r.method, r.draft, r.options, r.workload,
            r.concurrency, r.temperature, r.max_tokens)


def for_group(group: list[Config], ns: list[int] | None = None, pooled: float | None = None, dof: int = 0,
              default_rel_se: float = DEFAULT_REL_SE, costs: dict[int, float] | None = None) -> Recommendation:
    """The recommendation for one method x workload x concurrency from its configurations (each
    linked to its baseline): the largest N with a survival curve gives T(N), every N up to it a
    point of the cost line. `pooled`/`dof` is the run-to-run noise measured by repeats (`noise`)."""
    group = [c for c in group if c.n and c.baseline and c.speedup and c.mal.mean]
    top = max((c for c in group if c.per_position and len(c.per_position) == c.n), key=lambda c: c.n, default=None)
    if top is None:
        raise RecommendError("no run with a per-position acceptance curve")
    curve, baseline = top.per_position, top.baseline
    assert curve is not None and baseline is not None  # top was picked for its curve, from the group
    share = statistics.fmean(draft_share(r) for r in top.rows)
    survival = Survival(tuple(curve), share)
    points = [_point(c, _rel_se(c, pooled, default_rel_se)) for c in group if c.n <= top.n]
    ns = [n for n in (ns or range(1, top.n + 1)) if n <= top.n]
    z = t95(dof) if pooled is not None else Z95
    return recommend(top.method, survival, points, ns, _rel_se(baseline, pooled, default_rel_se), z, costs)


def _point(c: Config, rel_se: float) -> Point:
    speedup, mal = c.speedup, c.mal.mean
    assert speedup is not None and mal is not None  # for_group keeps only configurations with both
    return Point(c.n, speedup, 1.0 + statistics.fmean(draft_share(r) for r in c.rows) * (mal - 1.0), rel_se, c.tok_s.n)


def what_if_costs(cs: list[Config]) -> dict[Key, dict[int, float]]:
    """Step costs measured by what-if runs (MAL read back / speedup), by target, method, draft and
    concurrency, then N. The cost depends on the shapes, N and the batch, not on the acceptance or
    the text, so it serves measured runs of the same configuration on any workload."""
    out: dict[Key, dict[int, float]] = {}
    for c in cs:
        if c.what_if and c.method != "baseline" and c.n and c.speedup and c.mal.mean:
            out.setdefault((c.target, c.method, c.draft, c.concurrency), {})[c.n] = c.mal.mean / c.speedup
    return out


def from_configs(cs: list[Config], default_rel_se: float = DEFAULT_REL_SE,
                 costs: dict[Key, dict[int, float]] | None = None) -> dict[Key, Recommendation]:
    """A recommendation for every method x workload x concurrency (within one experiment) that has
    a baseline and measured speculative runs at two or more N (or one, where what-if runs measured
    the step cost at two or more), one of them carrying the survival curve. `costs` defaults to the
    what-if step costs among `cs` (what_if_costs)."""
    costs = what_if_costs(cs) if costs is None else costs
    measured = [c for c in cs if not c.what_if]
    pooled, dof = noise(measured)
    groups: dict[Key, list[Config]] = {}
    for c in measured:
        if c.method != "baseline" and c.n and c.baseline and c.speedup and c.mal.mean:
            groups.setdefault(group_key(c), []).append(c)
    out = {}
    for key, group in groups.items():
        first = group[0]
        try:
            out[key] = for_group(group, None, pooled, dof, default_rel_se,
                                 costs.get((first.target, first.method, first.draft, first.concurrency)))
        except RecommendError:
            continue
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictionPoint(series.Point):
    """A point of the chart of speedup against N: the speedup predicted at N with its 95% interval
    (`low`, `high`), the measured one where N was run, and the recommendation it belongs to."""
    n: int
    predicted: float
    low: float
    high: float
    measured: float | None
    measured_ci95: float | None
    best_n: int
    uncertain: bool
    family: str
    cost_source: str


def chart_rows(cs: list[Config]) -> list[PredictionPoint]:
    """The Compare chart of speedup against N: per method x workload x concurrency, the predicted
    speedup with its 95% interval at every N up to N_max, and the measured speedup where run.
    Measured configurations only: a prediction is a recommendation, and none rests on an imposed
    acceptance (a what-if run's break-even chart is its own, workbench.analysis.breakeven)."""
    out = []
    for key, rec in sorted(from_configs(cs).items(), key=lambda kv: [str(k) for k in kv[0]]):
        name = f"{key[2]} · {key[5]} · c={key[6]}"
        for p in rec.curve:
            out.append(PredictionPoint(series=name, method=key[2], workload=key[5], concurrency=key[6], n=p.n,
                                       predicted=p.speedup, low=p.low, high=p.high, measured=p.measured,
                                       measured_ci95=p.measured_half_width, best_n=rec.best_n,
                                       uncertain=rec.uncertain, family=rec.family, cost_source=p.cost_source))
    return out
