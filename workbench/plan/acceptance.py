"""Imposed acceptance for what-if runs: the per-position curve a what-if server is told to accept,
where it came from, and the figures it implies (pure, no processes).

vLLM's synthetic rejection sampler (`"rejection_sample_method": "synthetic"`) takes
`synthetic_acceptance_rates = [p1, ..., pN]`: *unconditional* per-position rates, non-increasing,
of length N. p_i is the probability that the first i drafted tokens are all accepted, exactly the
per-position acceptance its counters report (accepted_pos[i] / drafts), so a curve measured by a
run can be imposed as it was read, and read back the same way. A curve measured at N_max serves
every smaller N: the first N entries of a survival curve are that N's curve.

A plan's `acceptance` (in a `[[methods]]` table of a what-if sweep) is one of:
- a list `[0.8, 0.6, 0.45]` (typed by the user);
- `{rates = [...], source = "..."}` (a curve with its origin, as the app writes a measured run's);
- `{p1 = 0.8, decay = 0.75}`: p_i = p1 * decay^(i-1) (a constant conditional acceptance);
- `{mal = 2.85}`: a mean acceptance length, resolved per N as vLLM resolves
  `synthetic_acceptance_length` (whole positions always accepted, one partly, the rest never);
- `{published = "KEY"}`: a published per-position table (workbench.plan.curves).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.errors import DraftbenchError
from workbench.plan import curves


class AcceptanceError(DraftbenchError, ValueError):
    """A one-line reason an acceptance curve cannot be imposed."""


@dataclass(frozen=True)
class Curve:
    """Where a what-if configuration's acceptance comes from, resolved for every N it serves."""
    kind: str                       # typed | decay | mal | published | measured
    source: str                     # shown with every run: "typed", "published: ...", "measured: run 12 ..."
    rates: tuple[float, ...] = ()   # the survival curve (typed, decay up to max N, published, measured)
    mal: float | None = None        # kind "mal": the mean acceptance length asked for
    key: str | None = None          # kind "published": the table's key (workbench.plan.curves)

    def for_n(self, n: int) -> tuple[float, ...]:
        if self.kind == "mal":
            assert self.mal is not None  # parse sets it for this kind
            return rates_for_length(self.mal, n)
        if self.kind == "published":
            assert self.key is not None  # parse sets it for this kind
            exact = curves.at_n(self.key, n)
            if exact is not None:
                return exact
        if n > len(self.rates):
            raise AcceptanceError(f"the curve has {len(self.rates)} positions, too few for N={n}")
        return self.rates[:n]


def mal_of(rates: Sequence[float]) -> float:
    """Mean acceptance length a curve implies: each step yields the target's own token plus the
    accepted prefix, so MAL = 1 + sum(p)."""
    return 1.0 + sum(rates)


def rates_for_length(length: float, n: int) -> tuple[float, ...]:
    """vLLM's resolution of `synthetic_acceptance_length` (the minimum-variance schedule): the
    first floor(L-1) positions always accepted, the next one with the fractional part, the rest
    never. 2.6 at N=3 -> (1, 0.6, 0)."""
    if not 1.0 <= length <= n + 1:
        raise AcceptanceError(f"a mean acceptance length of {length:g} is impossible at N={n} "
                              f"(it must lie between 1 and N+1 = {n + 1})")
    accepted = length - 1.0
    full = min(int(math.floor(accepted + 1e-12)), n)
    out = [1.0] * full
    if full < n:
        out.append(round(accepted - full, 6))
    out += [0.0] * (n - len(out))
    return tuple(out)


def check_rates(rates: Any, where: str) -> tuple[float, ...]:
    if not isinstance(rates, list) or not rates:
        raise AcceptanceError(f"{where} must be a non-empty list of per-position acceptance rates")
    for p in rates:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise AcceptanceError(f"{where}: every rate must be a number between 0 and 1, not {p!r}")
    for i in range(1, len(rates)):
        if rates[i] > rates[i - 1] + 1e-9:
            raise AcceptanceError(f"{where}: rates must not increase (position {i + 1}: {rates[i]:g} > "
                                  f"{rates[i - 1]:g}); they are unconditional: p_i is the chance that "
                                  "the first i drafted tokens are all accepted")
    return tuple(float(p) for p in rates)


def parse(value: Any, max_n: int, where: str) -> Curve:
    """The curve a plan's `acceptance` value names, checked against the largest N it must serve."""
    if isinstance(value, list):
        rates = check_rates(value, where)
        curve = Curve("typed", "typed", rates)
    elif isinstance(value, dict):
        keys = set(value)
        if keys <= {"rates", "source"} and "rates" in keys:
            rates = check_rates(value["rates"], f"{where}.rates")
            source = value.get("source", "typed")
            if not isinstance(source, str) or not source.strip():
                raise AcceptanceError(f"{where}.source must be a non-empty string")
            kind = "measured" if source.startswith("measured") else "typed"
            curve = Curve(kind, source.strip(), rates)
        elif keys == {"p1", "decay"}:
            p1, decay = value["p1"], value["decay"]
            for name, v in (("p1", p1), ("decay", decay)):
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                    raise AcceptanceError(f"{where}.{name} must be a number between 0 and 1, not {v!r}")
            rates = tuple(round(p1 * decay ** i, 6) for i in range(max_n))
            curve = Curve("decay", f"typed: p1 {p1:g}, decay {decay:g}", rates)
        elif keys == {"mal"}:
            mal = value["mal"]
            if isinstance(mal, bool) or not isinstance(mal, (int, float)):
                raise AcceptanceError(f"{where}.mal must be a number, not {mal!r}")
            curve = Curve("mal", f"typed: MAL {mal:g}", mal=float(mal))
        elif keys == {"published"}:
            key = value["published"]
            table = curves.get(key) if isinstance(key, str) else None
            if table is None:
                known = ", ".join(curves.keys()[:6])
                raise AcceptanceError(f"{where}.published: no published curve {key!r}; known: {known}, ...")
            curve = Curve("published", f"published: {key} ({table.citation})", table.longest, key=key)
        else:
            raise AcceptanceError(f"{where} must be a list of rates, or a table with rates (and source), "
                                  "p1 and decay, mal, or published")
    else:
        raise AcceptanceError(f"{where} must be a list of per-position rates or a table, not {value!r}")
    try:
        curve.for_n(max_n)
    except AcceptanceError as exc:
        raise AcceptanceError(f"{where}: {exc}") from None
    return curve
