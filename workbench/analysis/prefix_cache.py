"""Prefix-cache hit rates in a comparison (pure, no I/O). A speculative server whose prefix cache
hits less often than its baseline's recomputes prompt tokens the baseline skipped, so part of the
speedup (or slowdown) is the cache, not the drafter. EAGLE-style methods drop the last cached block
of every prefix hit, which is one common cause; vLLM's `disable_eagle_block_drop` keeps it."""

from __future__ import annotations

import statistics

from workbench import store

# Hit rates further apart than this (in percentage points) make a speedup compare caches too.
GAP_POINTS = 10.0


def hit_rate(rows: list[store.RunRecord]) -> float | None:
    """Mean prefix-cache hit rate of runs (0..1), over those that recorded one."""
    rates = [r.prefix_cache_hit_rate for r in rows if r.prefix_cache_hit_rate is not None]
    return statistics.fmean(rates) if rates else None


def warning(label: str, rate: float | None, baseline_rate: float | None) -> str | None:
    """The warning a speedup of `label` over its baseline needs when their hit rates differ by
    more than GAP_POINTS; None when they are close or either is unknown."""
    if rate is None or baseline_rate is None or abs(rate - baseline_rate) * 100 <= GAP_POINTS:
        return None
    option = "`disable_eagle_block_drop` in the speculative config, where your vLLM version has it"
    if rate < baseline_rate:
        cause = ("it recomputes prompt tokens the baseline found cached, so part of the gap is the cache, not "
                 f"the drafter. EAGLE-style drafters drop the last cached block of every prefix hit; {option}, "
                 "keeps it")
    else:
        cause = ("the baseline recomputed prompt tokens this configuration found cached, so part of the speedup "
                 f"is the cache, not the drafter ({option}, acts only on the speculative side)")
    return f"{label}: prefix-cache hit rate {rate:.0%}, the baseline's {baseline_rate:.0%}: {cause}"
