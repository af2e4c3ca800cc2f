"""Comparing runs: repeats aggregated with 95% confidence intervals, speedup against the matching
baseline, best N, efficiency and what each costs in latency (pure, no Qt). The charts' data is built
from these configurations in workbench.analysis.series."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable

from workbench import store
from workbench.analysis import basis as throughput_basis
from workbench.analysis import latency, prefix_cache

# A baseline matches a speculative run when everything but the drafting method is the same.
MATCH = ("experiment_id", "target", "workload", "concurrency", "request_rate", "max_tokens",
         "temperature", "top_p", "num_prompts")

# Two-sided 95% Student-t critical values by degrees of freedom (1..30); beyond that, ~normal.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
       2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
       2.052, 2.048, 2.045, 2.042]


def t95(df: int) -> float:
    return T95[df - 1] if 1 <= df <= len(T95) else 1.96


@dataclass
class Estimate:
    """Mean of repeated measurements with a 95% confidence half-width (None for a single run)."""
    values: list[float]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None

    @property
    def sem(self) -> float | None:
        return statistics.stdev(self.values) / math.sqrt(self.n) if self.n >= 2 else None

    @property
    def cv(self) -> float | None:
        """Coefficient of variation (sample stdev / mean), None below two values."""
        return statistics.stdev(self.values) / self.mean if self.n >= 2 and self.mean else None

    @property
    def ci95(self) -> float | None:
        sem = self.sem  # None for a single run
        return t95(self.n - 1) * sem if sem is not None else None


def estimate(values: Iterable[float | None]) -> Estimate:
    return Estimate([v for v in values if v is not None])


def per_position_summary(per_position: list[float]) -> tuple[float, float]:
    """MAL and acceptance rate implied by a per-position survival curve: every step yields one
    target token plus the accepted prefix, so MAL = 1 + sum(p), and the acceptance rate is the
    mean of p over the N drafted positions."""
    total = sum(per_position)
    return 1.0 + total, total / len(per_position)


def is_what_if(row: store.RunRecord) -> bool:
    """Served with dummy weights and imposed acceptance (workbench.plan.acceptance)."""
    return bool(row.what_if)


def imposed(row: store.RunRecord) -> dict[str, Any] | None:
    """A what-if run's imposed curve: rates, source, mal (None for a measured run or a baseline)."""
    return json.loads(row.imposed) if row.imposed else None


def marker(row: store.RunRecord) -> str:
    """How a what-if run is marked wherever runs are listed ("" for a measured run), so an imposed
    acceptance is never read as a measured one."""
    if not is_what_if(row):
        return ""
    curve = imposed(row)
    if curve is None:
        return "what-if baseline (dummy weights)"
    mal = f" (MAL {curve['mal']:.2f})" if curve.get("mal") is not None else ""
    return f"what-if, acceptance imposed: {curve.get('source') or '?'}{mal}"


# A grouping key: the record fields runs or configurations are matched on (strings, numbers,
# None and flags mixed, their number depending on the grouping).
Key = tuple[Any, ...]


def config_key(row: store.RunRecord) -> Key:
    return (row.target, row.method, row.draft, row.n, row.workload, row.concurrency,
            row.request_rate, row.max_tokens, row.temperature, row.top_p,
            row.num_prompts, row.experiment_id, is_what_if(row), row.imposed)


def baseline_key(row: store.RunRecord) -> Key:
    # A what-if run is compared with the what-if baseline (dummy weights too), never a measured one.
    return tuple(getattr(row, k) for k in MATCH) + (is_what_if(row),)


@dataclass
class Config:
    """One configuration (everything but the repeat), its runs and their aggregated figures.
    `tok_s` is on the comparison's `basis` (steady state or the whole window, set by `configs`);
    `window_tok_s` is always the whole window."""
    rows: list[store.RunRecord]
    baseline: "Config | None" = None
    basis: str = throughput_basis.WINDOW
    tok_s: Estimate = field(init=False)
    window_tok_s: Estimate = field(init=False)
    mal: Estimate = field(init=False)
    acceptance_rate: Estimate = field(init=False)

    def __post_init__(self) -> None:
        self.window_tok_s = estimate(r.output_tok_s for r in self.rows)
        self.on_basis(self.basis)
        self.mal = estimate(r.mal for r in self.rows)
        self.acceptance_rate = estimate(r.acceptance_rate for r in self.rows)

    def on_basis(self, basis: str) -> None:
        self.basis = basis
        self.tok_s = estimate(throughput_basis.tok_s(r, basis) for r in self.rows)

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        return prefix_cache.hit_rate(self.rows)

    @property
    def cache_warning(self) -> str | None:
        """Said where this configuration's prefix-cache hit rate and its baseline's differ by more
        than prefix_cache.GAP_POINTS."""
        if self.baseline is None or self.method == "baseline":
            return None
        return prefix_cache.warning(self.label, self.prefix_cache_hit_rate, self.baseline.prefix_cache_hit_rate)

    def __getattr__(self, name: str) -> Any:
        if name in ("target", "method", "draft", "n", "workload", "concurrency", "temperature", "max_tokens"):
            return getattr(self.rows[0], name)
        raise AttributeError(name)

    @property
    def label(self) -> str:
        base = self.method if self.n is None else f"{self.method} N={self.n}"
        return f"{base} (what-if)" if self.what_if else base

    @property
    def what_if(self) -> bool:
        return is_what_if(self.rows[0])

    @property
    def imposed(self) -> dict[str, Any] | None:
        return imposed(self.rows[0])

    @property
    def per_position(self) -> list[float] | None:
        curves = [r.per_position for r in self.rows if r.per_position]
        if not curves:
            return None
        return [statistics.fmean(c[i] for c in curves) for i in range(min(len(c) for c in curves))]

    @property
    def speedup(self) -> float | None:
        if not self.baseline or not self.baseline.tok_s.mean or self.tok_s.mean is None:
            return None
        return self.tok_s.mean / self.baseline.tok_s.mean

    @property
    def speedup_ci95(self) -> float | None:
        """Half-width by the delta method: relative errors of the two means add in quadrature."""
        s, b = self.tok_s, self.baseline.tok_s if self.baseline else None
        speedup = self.speedup
        if speedup is None or b is None or s.ci95 is None or b.ci95 is None:
            return None
        s_mean, b_mean = s.mean, b.mean  # neither is None where there is a speedup
        if s_mean is None or b_mean is None:
            return None
        return speedup * math.hypot(s.ci95 / s_mean, b.ci95 / b_mean)

    @property
    def beyond_noise(self) -> bool | None:
        """True when the 95% interval of the speedup excludes 1.0; None without repeats."""
        ci, speedup = self.speedup_ci95, self.speedup
        if ci is None or speedup is None:  # the speedup is never None where the interval is not
            return None
        return abs(speedup - 1.0) > ci

    @property
    def efficiency(self) -> float | None:
        """Speedup / MAL: the share of the ideal gain (one target pass per MAL tokens) realised."""
        if self.speedup is None or not self.mal.mean:
            return None
        return self.speedup / self.mal.mean


# A partial run (some requests failed in its window) is left out unless the user counts it.
COUNTED = ("completed",)
WITH_PARTIAL = ("completed", "partial")


def configs(rows: list[store.RunRecord], include_partial: bool = False) -> list[Config]:
    """Completed runs (and partial ones, if asked) grouped into configurations, each linked to
    its matching baseline."""
    counted = WITH_PARTIAL if include_partial else COUNTED
    groups: dict[Key, list[store.RunRecord]] = {}
    for r in rows:
        if r.status in counted and r.output_tok_s:
            groups.setdefault(config_key(r), []).append(r)
    out = [Config(g) for g in groups.values()]
    by_key = baselines(out)
    compared: dict[Key, list[Config]] = {}
    for c in out:
        c.baseline = by_key.get(baseline_key(c.rows[0]))
        compared.setdefault(baseline_key(c.rows[0]), []).append(c)
    for group in compared.values():
        chosen = throughput_basis.choose([r for c in group for r in c.rows])
        for c in group:
            c.on_basis(chosen)
    return out


def baselines(cs: list[Config]) -> dict[Key, Config]:
    """The baseline configurations by the key a speculative run matches them on."""
    return {baseline_key(c.rows[0]): c for c in cs if c.method == "baseline"}


def run_speedup(row: store.RunRecord, by_key: dict[Key, Config]) -> float | None:
    """One run's output tok/s over its matching baseline's mean: the denominator of its
    configuration's speedup, so a run and its configuration agree."""
    base = by_key.get(baseline_key(row))
    mine = throughput_basis.tok_s(row, base.basis) if base is not None else None
    if base is None or not base.tok_s.mean or not mine:
        return None
    return mine / base.tok_s.mean


def _fmt(v: float | None, spec: str) -> float | None:
    return None if v is None else float(format(v, spec))


def _best(cs: list[Config], what_if: bool) -> dict[Key, Config]:
    """(target, method, draft, workload, concurrency) -> its configuration with the highest mean
    throughput (the best N there), over measured configurations or, with `what_if`, what-if ones."""
    best: dict[Key, Config] = {}
    for c in cs:
        if c.method == "baseline" or c.what_if != what_if:
            continue
        key = (c.target, c.method, c.draft, c.workload, c.concurrency)
        if key not in best or (c.tok_s.mean or 0) > (best[key].tok_s.mean or 0):
            best[key] = c
    return best


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures(latency.LatencyFigures):
    """One configuration's figures, as the speedup table and All figures list them (a column is a
    field's name): what it is, its throughput and speedup against its baseline, MAL, efficiency,
    what backs them, and its latency (the base's fields). `best` marks the best N of its method x
    workload x concurrency; in the speedup table every row is one, `best_n` its N."""
    target: str | None
    method: str
    draft: str | None
    workload: str | None
    concurrency: int
    best_n: int | None
    baseline_tok_s: float | None
    tok_s: float | None
    tok_s_ci95: float | None
    speedup: float | None
    speedup_ci95: float | None
    beyond_noise: bool | None
    mal: float | None
    acceptance_rate: float | None
    efficiency: float | None
    repeats: int
    cv: float | None
    what_if: bool
    imposed_source: str | None
    throughput_basis: str
    window_tok_s: float | None
    prefix_cache_hit_rate: float | None
    baseline_prefix_cache_hit_rate: float | None
    cache_warning: str | None
    n: int | None
    best: bool

    def as_dict(self) -> dict[str, Any]:
        """The row as the speedup_table files write it: what and how fast first, latency after."""
        every = asdict(self)
        later = [f.name for f in fields(latency.LatencyFigures)]
        return {k: v for k, v in every.items() if k not in later} | {k: every[k] for k in later}


def _figures(c: Config, best: bool) -> Figures:
    base = c.baseline
    return Figures(
        target=c.target, method=c.method, draft=c.draft, workload=c.workload, concurrency=c.concurrency,
        best_n=c.n, baseline_tok_s=base.tok_s.mean if base else None, tok_s=c.tok_s.mean,
        tok_s_ci95=c.tok_s.ci95, speedup=c.speedup, speedup_ci95=c.speedup_ci95, beyond_noise=c.beyond_noise,
        mal=c.mal.mean, acceptance_rate=c.acceptance_rate.mean, efficiency=c.efficiency, repeats=c.tok_s.n,
        cv=c.tok_s.cv, what_if=c.what_if, imposed_source=(c.imposed or {}).get("source"),
        throughput_basis=c.basis, window_tok_s=c.window_tok_s.mean, prefix_cache_hit_rate=c.prefix_cache_hit_rate,
        baseline_prefix_cache_hit_rate=base.prefix_cache_hit_rate if base else None,
        cache_warning=c.cache_warning, n=c.n, best=best,
        **asdict(latency.figures(c.rows, base.rows if base else None)))


def speedup_table(cs: list[Config], what_if: bool = False) -> list[Figures]:
    """Per target x method x workload x concurrency: the best N by mean throughput, shaped like
    the reference study's table. Measured runs only, unless `what_if` (then what-if runs only:
    an imposed acceptance is never mixed into a measured table)."""
    best = _best(cs, what_if)
    return [_figures(c, True) for _, c in sorted(best.items(), key=lambda kv: [str(k) for k in kv[0]])]


def config_table(cs: list[Config], what_if: bool = False) -> list[Figures]:
    """Every configuration's figures (the Compare page's "All figures"), each N on its own row,
    `best` marking the best N of its method x workload x concurrency."""
    chosen = {id(c) for c in _best(cs, what_if).values()}
    rows = [_figures(c, id(c) in chosen) for c in cs if c.method != "baseline" and c.what_if == what_if]
    return sorted(rows, key=lambda f: [str(v) for v in (f.target, f.method, f.draft, f.workload)]
                  + [f.concurrency, f.n or 0])


def survival_from_histogram(histogram: list[int]) -> list[float] | None:
    """A request's per-position acceptance from vLLM's acceptance histogram (hist[k] = steps that
    accepted exactly k draft tokens): p[i] = steps that accepted more than i / all steps."""
    steps = sum(histogram)
    if not steps:
        return None
    return [sum(histogram[i + 1:]) / steps for i in range(len(histogram) - 1)]
