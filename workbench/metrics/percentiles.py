"""Percentiles of a run's latencies, one definition for every figure that names one."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default, which `vllm bench serve` uses),
    so a run's stored TTFT and ITL percentiles and the TPOT ones computed from its requests are read
    the same way. None for no values."""
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)
