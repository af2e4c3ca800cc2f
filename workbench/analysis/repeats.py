"""Repeats that stop when the answer is known (pure: no I/O).

With `repeats = "auto"` a configuration is measured again until the 95 % confidence half-width of
its mean output throughput is within `target` of the mean (default 2 %), or `maximum` repeats
(default 5) have run. A quiet configuration stops after two or three; a noisy one runs to the
maximum, and its interval then says how noisy it was. The coefficient of variation (stdev / mean)
is shown for every configuration with two or more repeats, whether its repeats were fixed or auto.
"""

from __future__ import annotations

from workbench.analysis.compare import Estimate

TARGET = 0.02
MAXIMUM = 5
# Two values give an interval, but with one degree of freedom t is 12.7: two repeats stop only
# when they agree within about 0.2 %, so in practice the third decides.
MINIMUM = 2


def half_width(values: list[float]) -> float | None:
    """The 95 % half-width relative to the mean, or None with fewer than two values."""
    e = Estimate([v for v in values if v is not None])
    return e.ci95 / e.mean if e.ci95 is not None and e.mean else None


def enough(values: list[float], target: float = TARGET, maximum: int = MAXIMUM) -> bool:
    """Whether a configuration measured `values` (one per repeat so far) needs no more repeats."""
    if len(values) >= maximum:
        return True
    if len(values) < MINIMUM:
        return False
    hw = half_width(values)
    return hw is not None and hw <= target


def cv(values: list[float]) -> float | None:
    """Coefficient of variation: sample standard deviation over the mean."""
    return Estimate([v for v in values if v is not None]).cv


def reason(values: list[float], target: float = TARGET, maximum: int = MAXIMUM) -> str:
    """Why repeating stopped, for the run list."""
    hw = half_width(values)
    if hw is not None and hw <= target:
        return f"stopped after {len(values)} repeats: 95 % interval ±{hw:.1%} (target ±{target:.0%})"
    return (f"stopped at the maximum of {maximum} repeats: 95 % interval "
            + ("unknown" if hw is None else f"±{hw:.1%}") + f" (target ±{target:.0%})")
