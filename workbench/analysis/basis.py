"""Which throughput a comparison rests on: each run's steady state (the stretch of its window with at
least 90 % of its concurrency in flight, workbench.metrics.steady_state) where every run compared
has one long enough, else the whole window, as `vllm bench serve` reports it (pure, no I/O).

One basis serves every run a speedup compares (a configuration, the others sharing its baseline,
and that baseline): a ratio of a steady figure to a whole-window one would measure the ramps."""

from __future__ import annotations

from workbench import store
from workbench.metrics import steady_state

STEADY = "steady state"
WINDOW = "whole window"


def usable(row: store.RunRecord) -> bool:
    """Whether a stored run has a steady segment long enough to compare on."""
    return steady_state.usable(row.steady_tok_s, row.steady_s)


def choose(rows: list[store.RunRecord]) -> str:
    """STEADY when every run has a steady segment of at least MIN_STEADY_S, else WINDOW."""
    return STEADY if rows and all(usable(r) for r in rows) else WINDOW


def tok_s(row: store.RunRecord, basis: str) -> float | None:
    """A run's output tok/s on the basis."""
    return row.steady_tok_s if basis == STEADY else row.output_tok_s


def why(rows: list[store.RunRecord], basis: str) -> str:
    """The basis in words, with what decided it."""
    if basis == STEADY:
        return (f"steady state: every compared run held ≥ {steady_state.STEADY_SHARE:.0%} of its concurrency "
                f"for ≥ {steady_state.MIN_STEADY_S:.0f} s")
    short = [r for r in rows if not usable(r)]
    if not short or all(r.steady_s is None for r in short):
        return "whole window: no steady state recorded"
    worst = min(short, key=lambda r: r.steady_s or 0.0)
    return (f"whole window: run {worst.id} held ≥ {steady_state.STEADY_SHARE:.0%} of its concurrency "
            f"for {worst.steady_s or 0.0:.1f} s only (steady state needs {steady_state.MIN_STEADY_S:.0f} s)")
