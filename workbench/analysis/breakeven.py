"""What a what-if run tells: the cost of a speculative step, and the acceptance at which it pays.

Acceptance depends on the weights and the data; the cost of a step depends on the shapes, the
kernels, N and the batch. A what-if run (dummy weights, acceptance imposed) measures the second
with the first fixed, so the two separate:

- Every speculative step yields MAL tokens per sequence where a baseline step yields one, so
  speedup S = MAL / c, where c is the step cost: the time of a speculative step (draft + verify)
  in baseline steps. From a what-if run, c = MAL read back / S measured.
- With c known, the speedup at any acceptance follows: S(MAL) = MAL / c, and it pays (S >= 1)
  once MAL >= c. For a curve of the imposed shape scaled to its first position (p_i = p1 * r_i,
  r_i = imposed p_i / imposed p_1, the conditional acceptances kept), MAL = 1 + p1 * sum(r), so it
  pays once p1 >= (c - 1) / sum(r); above 1, it never does at that N and concurrency.

The step cost is taken at the imposed acceptance; it moves little with acceptance (the verify pass
scores N+1 positions whatever is accepted), which is what makes the extrapolation fair near the
imposed point. Pure, no Qt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from workbench.analysis import series
from workbench.analysis.compare import Config, Key

GRID = [i / 20 for i in range(21)]  # p1 from 0 to 1, for the chart


def shape(rates: list[float]) -> list[float]:
    """The imposed curve relative to its first position (r_1 = 1)."""
    if not rates or rates[0] <= 0:
        return [1.0] + [0.0] * (len(rates) - 1) if rates else []
    return [p / rates[0] for p in rates]


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakEvenRow:
    """One what-if speculative configuration with a what-if baseline (the what-if table): the
    speedup measured, MAL read back against the imposed, the step cost, and the break-even MAL and
    p1 (`pays_ever`: p1 <= 1). `what_if` is always true: a file of these rows says so itself."""
    what_if: bool = True
    target: str | None
    method: str
    draft: str | None
    n: int | None
    workload: str | None
    concurrency: int
    config: str
    speedup: float
    speedup_ci95: float | None
    beyond_noise: bool | None
    tok_s: float | None
    baseline_tok_s: float | None
    mal: float
    imposed_mal: float | None
    imposed_rates: list[float]
    imposed_source: str | None
    per_position: list[float] | None
    step_cost: float
    break_even_mal: float
    break_even_p1: float | None
    pays_ever: bool
    repeats: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class CurvePoint:
    """Where a configuration would be at position-1 acceptance `p1` (the imposed shape scaled)."""
    p1: float
    mal: float
    speedup: float


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakEvenPoint(series.Point):
    """A point of the break-even chart: speedup against p1 for one configuration x concurrency,
    with the run's own point (measured_p1, speedup_measured) and its step cost."""
    p1: float
    mal: float
    speedup: float
    step_cost: float
    break_even_p1: float | None
    measured_p1: float | None
    speedup_measured: float


def rows(cs: list[Config]) -> list[BreakEvenRow]:
    """One row per what-if speculative configuration with a what-if baseline: the speedup
    measured, MAL read back against the imposed, the step cost, and the break-even MAL and p1."""
    out = []
    for c in cs:
        speedup, mal = c.speedup, c.mal.mean
        if not c.what_if or c.method == "baseline" or speedup is None or not mal:
            continue
        imposed = c.imposed or {}
        rates = imposed.get("rates") or []
        cost = mal / speedup
        r = shape(rates)
        p1 = (cost - 1.0) / sum(r) if sum(r) > 0 else None
        out.append(BreakEvenRow(
            target=c.target, method=c.method, draft=c.draft, n=c.n, workload=c.workload,
            concurrency=c.concurrency, config=c.label, speedup=speedup, speedup_ci95=c.speedup_ci95,
            beyond_noise=c.beyond_noise, tok_s=c.tok_s.mean,
            baseline_tok_s=c.baseline.tok_s.mean if c.baseline else None,
            mal=mal, imposed_mal=imposed.get("mal"), imposed_rates=rates, imposed_source=imposed.get("source"),
            per_position=c.per_position, step_cost=cost, break_even_mal=cost,
            break_even_p1=p1, pays_ever=p1 is not None and p1 <= 1.0, repeats=c.tok_s.n,
        ))
    out.sort(key=lambda x: (str(x.target), x.method, x.n or 0, x.concurrency))
    return out


def curve(row: BreakEvenRow) -> list[CurvePoint]:
    """Speedup against p1 (the imposed shape scaled), for the break-even chart."""
    total = sum(shape(row.imposed_rates))
    return [CurvePoint(p1=p, mal=1.0 + p * total, speedup=(1.0 + p * total) / row.step_cost) for p in GRID]


def measured_p1(row: BreakEvenRow) -> float | None:
    """Where the run itself sits on its curve: the p1 whose scaled shape gives the MAL read back
    (close to the imposed p1; on the curve by construction, as the step cost came from it)."""
    total = sum(shape(row.imposed_rates))
    return (row.mal - 1.0) / total if total > 0 else None


def chart_data(cs: list[Config]) -> list[BreakEvenPoint]:
    """The break-even chart's points: per configuration x concurrency, speedup against p1, with the
    run's own point (measured_p1, speedup_measured) and the source of its imposed curve, so a file
    of these points says it is not measured acceptance."""
    return [BreakEvenPoint(series=f"{row.config} · c={row.concurrency}", method=row.method, config_n=row.n,
                           workload=row.workload, concurrency=row.concurrency, what_if=True,
                           imposed_source=row.imposed_source, p1=point.p1, mal=point.mal, speedup=point.speedup,
                           step_cost=row.step_cost, break_even_p1=row.break_even_p1, measured_p1=measured_p1(row),
                           speedup_measured=row.speedup)
            for row in rows(cs) for point in curve(row)]


def source_text(items: Iterable[BreakEvenRow | series.Point | series.GpuBar]) -> str:
    """The imposed curves' sources, once each ("typed", "published: ..."), for a title that says
    what acceptance was imposed."""
    found: list[str] = []
    for item in items:
        if item.imposed_source and item.imposed_source not in found:
            found.append(item.imposed_source)
    return "; ".join(found) or "?"


def sentence(group: list[BreakEvenRow]) -> str:
    """One method x N over its concurrencies, in words: where it pays and from what acceptance."""
    first = group[0]
    pays = [g for g in group if g.pays_ever]
    label = first.config.replace(" (what-if)", "")
    if not pays:
        return (f"{label} does not pay at any measured concurrency, even if every draft were accepted "
                f"(step cost {max(g.step_cost for g in group):.2f} baseline steps > MAL {1 + len(first.imposed_rates)})")
    top = max(g.concurrency for g in pays)
    # Every row that pays has a break-even p1 (pays_ever needs one).
    need = max(g.break_even_p1 or 0.0 for g in pays)
    at = "c = " + str(top) if len(group) == 1 else f"c <= {top}"
    tail = "" if len(pays) == len(group) else f"; not at c = {', '.join(str(g.concurrency) for g in group if not g.pays_ever)}"
    return f"{label} pays at {at} once position 1 accepts >= {max(need, 0.0):.2f}{tail}"


def sentences(cs: list[Config]) -> list[str]:
    groups: dict[Key, list[BreakEvenRow]] = {}
    for row in rows(cs):
        groups.setdefault((row.target, row.method, row.draft, row.n, row.workload), []).append(row)
    return [sentence(g) for g in groups.values()]
