"""Every Compare chart's data as typed rows, one row per point of a series (pure, no Qt): a point
says which series it is on and what picks its look (method and N its colour, workload and
concurrency its context, what-if apart), then its own coordinates. The same rows are what the
CSV and JSON exports write (`as_dict`). The N model's prediction and the what-if break-even
chart add their points in workbench.analysis.recommend and workbench.analysis.breakeven."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from workbench import store
from workbench.analysis.compare import Config, Key, estimate, imposed
from workbench.metrics import telemetry


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """What every chart point carries. `config_n` is set on a series of one configuration (its N
    shades the method's colour) and None on a series that runs over N; `imposed_source` names a
    what-if point's imposed curve."""
    series: str
    method: str
    config_n: int | None = None
    workload: str | None = None
    concurrency: int | None = None
    what_if: bool = False
    imposed_source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class PositionPoint(Point):
    """Per-position acceptance: the share of drafts accepted at draft position `position`."""
    position: int
    acceptance: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ThroughputPoint(Point):
    n: int | None
    tok_s: float | None
    tok_s_ci95: float | None
    baseline_tok_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EfficiencyPoint(Point):
    """Drawn twice: efficiency (speedup / MAL) against N, and MAL against N."""
    n: int | None
    mal: float | None
    speedup: float | None
    efficiency: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConcurrencyPoint(Point):
    speedup: float | None
    speedup_ci95: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EnergyPoint(Point):
    n: int | None
    joules_per_token: float | None
    baseline_joules_per_token: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CategoryPoint(Point):
    """MAL of the requests of one prompt category; `requests_steps` the drafting steps it pools."""
    category: str
    mal: float
    acceptance_rate: float | None
    requests_steps: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LengthPoint(Point):
    """MAL of the requests whose prompt length falls in the bin starting at `prompt_tokens_from`."""
    prompt_tokens_from: int
    mal: float


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuBar:
    """One GPU's mean power and utilisation over a run's window; `gpu` "all GPUs" for the sum over
    a tensor-parallel run's GPUs (no utilisation). A what-if run's bar names its imposed curve."""
    config: str
    run: int
    gpu: str
    power_w: float | None
    util_pct: float | None
    what_if: bool
    imposed_source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


P = TypeVar("P", bound=Point)


def _point(kind: type[P], c: Config, series: str, config_n: int | None = None, **coordinates: Any) -> P:
    """A point of configuration `c`: its method (and N, for a series of one configuration) pick its
    colour; workload and concurrency its context; a what-if point is drawn apart and says its source."""
    return kind(series=series, method=c.method, config_n=config_n, workload=c.workload, concurrency=c.concurrency,
                what_if=c.what_if, imposed_source=(c.imposed or {}).get("source"), **coordinates)


def _method(c: Config) -> str:
    """A series' method, marked when what-if: a what-if line never merges with a measured one."""
    return f"{c.method} (what-if)" if c.what_if else c.method


def _speculative(cs: list[Config]) -> list[Config]:
    return [c for c in cs if c.method != "baseline"]


def _by_context(cs: list[Config]) -> list[Config]:
    """Speculative configurations in the order a line against N is drawn."""
    return sorted(_speculative(cs), key=lambda c: (c.method, c.workload, c.concurrency, c.n or 0))


def per_position(cs: list[Config]) -> list[PositionPoint]:
    return [_point(PositionPoint, c, f"{c.label} · {c.workload} · c={c.concurrency}", c.n, position=i + 1,
                   acceptance=p)
            for c in _speculative(cs) if c.per_position for i, p in enumerate(c.per_position)]


def throughput(cs: list[Config]) -> list[ThroughputPoint]:
    return [_point(ThroughputPoint, c, f"{_method(c)} · {c.workload} · c={c.concurrency}", n=c.n,
                   tok_s=c.tok_s.mean, tok_s_ci95=c.tok_s.ci95,
                   baseline_tok_s=c.baseline.tok_s.mean if c.baseline else None)
            for c in _by_context(cs)]


def efficiency(cs: list[Config]) -> list[EfficiencyPoint]:
    return [_point(EfficiencyPoint, c, f"{_method(c)} · {c.workload} · c={c.concurrency}", n=c.n,
                   mal=c.mal.mean, speedup=c.speedup, efficiency=c.efficiency)
            for c in _by_context(cs)]


def concurrency(cs: list[Config]) -> list[ConcurrencyPoint]:
    """Speedup against concurrency, for the configurations run at two or more."""
    spec = _speculative(cs)
    by_conc: dict[Key, set[int]] = {}
    for c in spec:
        by_conc.setdefault((c.method, c.n, c.workload, c.what_if), set()).add(c.concurrency)
    return [_point(ConcurrencyPoint, c, f"{c.label} · {c.workload}", c.n, speedup=c.speedup,
                   speedup_ci95=c.speedup_ci95)
            for c in sorted(spec, key=lambda c: (c.method, c.n or 0, c.workload, c.concurrency))
            if len(by_conc[(c.method, c.n, c.workload, c.what_if)]) > 1]


def _joules(c: Config | None) -> float | None:
    if c is None:
        return None
    return estimate(r.joules_per_token for r in c.rows).mean


def energy(cs: list[Config]) -> list[EnergyPoint]:
    """Energy per output token against N, where GPU power was read."""
    return [_point(EnergyPoint, c, f"{_method(c)} · {c.workload} · c={c.concurrency}", n=c.n,
                   joules_per_token=_joules(c), baseline_joules_per_token=_joules(c.baseline))
            for c in _by_context(cs) if _joules(c)]


def gpu_bars(db: store.Database, run_ids: list[int]) -> list[GpuBar]:
    """Mean power and utilisation of every GPU a run used, over its measured window, and the power
    summed over its GPUs (what a tensor-parallel configuration draws in all)."""
    out = []
    for run_id in run_ids:
        r = store.run(db, run_id)
        if r is None or r.status != "completed" or not r.finished or not r.window_s:
            continue
        t1 = r.finished
        t0 = t1 - r.window_s - 1.0
        readings = store.gpu_means(db, run_id, t0, t1)
        config = (f"{r.method}{'' if r.n is None else ' N=' + str(r.n)}"
                  f"{' (what-if)' if r.what_if else ''} · c={r.concurrency}")
        what_if, source = bool(r.what_if), (imposed(r) or {}).get("source")
        for physical, index, power, util in readings:
            out.append(GpuBar(config=config, run=run_id, gpu=telemetry.label("gpu", physical, index),
                              power_w=power, util_pct=util, what_if=what_if, imposed_source=source))
        if len(readings) > 1 and all(x[2] is not None for x in readings):
            out.append(GpuBar(config=config, run=run_id, gpu="all GPUs", power_w=sum(x[2] for x in readings),
                              util_pct=None, what_if=what_if, imposed_source=source))
    return out


def request_data(db: store.Database, run_ids: list[int],
                 bins: int = 4) -> tuple[list[CategoryPoint], list[LengthPoint]]:
    """Per-request attribution (vLLM's per-request spec-decode metrics) for the chosen runs:
    acceptance by prompt category, and MAL against prompt length in quantile bins. Totals are
    request-weighted: sums of accepted and drafts over the requests, as the counters are."""
    if not run_ids:
        return [], []
    rows = store.spec_requests(db, run_ids)
    by_cat: dict[Key, list[float]] = {}
    for method, n, conc, category, _, drafts, accepted, drafted in rows:
        if not category:
            continue  # a prompt file without categories: its requests count only in the other charts
        acc = by_cat.setdefault((method, n, conc, category), [0.0, 0.0, 0.0])
        acc[0] += drafts
        acc[1] += accepted
        acc[2] += drafted or 0  # absent from vLLM builds that report only steps and accepted tokens
    by_category = [CategoryPoint(series=f"{m} N={n} · c={conc}", method=m, config_n=n, concurrency=conc,
                                 category=c, mal=1 + a / d, acceptance_rate=a / t if t else None, requests_steps=d)
                   for (m, n, conc, c), (d, a, t) in sorted(by_cat.items(), key=lambda kv: [str(k) for k in kv[0]])]
    lengths = sorted(r[4] for r in rows if r[4])
    by_length: list[LengthPoint] = []
    if lengths:
        edges = sorted({lengths[min(len(lengths) - 1, int(len(lengths) * q / bins))] for q in range(bins)} | {lengths[-1] + 1})
        groups: dict[Key, list[float]] = {}
        for method, n, conc, _, tokens, drafts, accepted, _ in rows:
            if not tokens:
                continue
            low = max(e for e in edges if e <= tokens)
            acc = groups.setdefault((method, n, conc, low), [0.0, 0.0])
            acc[0] += drafts
            acc[1] += accepted
        by_length = [LengthPoint(series=f"{m} N={n} · c={conc}", method=m, config_n=n, concurrency=conc,
                                 prompt_tokens_from=low, mal=1 + a / d)
                     for (m, n, conc, low), (d, a) in sorted(groups.items(), key=lambda kv: [str(k) for k in kv[0]])]
    return by_category, by_length

