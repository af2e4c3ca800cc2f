"""What the Live page computes from the events and rows it follows: the sweep's remaining-time
clock (pure arithmetic over the run events) and the GPU and host telemetry series."""

from __future__ import annotations

from workbench.metrics import telemetry
from workbench.sweep.eta import SweepClock

__all__ = ["SweepClock", "telemetry_series"]


def telemetry_series(rows: list[telemetry.ReadingRow]) -> dict[str, telemetry.Series]:
    """Readings as one series per device, plus "all GPUs" whose power is the sum over GPUs at each tick."""
    return telemetry.series(rows)
