"""Latency beside throughput. Speculation trades inter-token latency for throughput (vLLM issue
#48892: MTP at 8 tokens, +30 % throughput but +612 % median ITL), so a speedup is shown with what it
costs a user waiting on the stream: per configuration TTFT p50/p99, TPOT p50, ITL p50/p99, each
also as a ratio to its baseline's under the same conditions (the same concurrency), and the MAL
both ways vLLM's figures allow. Definitions are `vllm bench serve`'s (workbench.sweep.window).

Runs store TPOT's mean only; its percentiles come from the requests table (`with_requests`), which
holds exactly the window's requests, so nothing is added to the schema."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from workbench import store
from workbench.metrics.percentiles import percentile

# Each per-run percentile a configuration carries; a configuration's is the mean over its repeats
# (a percentile of pooled requests would let one long repeat outvote the others).
METRICS = ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "itl_p50_ms", "itl_p99_ms")


def ratio_key(key: str) -> str:
    """Where a metric's ratio to its baseline's is kept: `itl_p99_ms` -> `itl_p99_ratio`."""
    return key.removesuffix("_ms") + "_ratio"


def with_requests(db: store.Database, rows: list[store.RunRecord]) -> list[store.RunRecord]:
    """The runs, each with what its requests add: `tpot_p50_ms` and `tpot_p99_ms` (TPOT per request
    = (end-to-end latency - TTFT) / (output tokens - 1), requests of one token left out, as vLLM
    does) and `request_mal`, the mean of the per-request MALs over the requests that drafted (the
    run's stored figure where it has one). None where the run stored no requests."""
    tpots: dict[int, list[float]] = {}
    mals: dict[int, list[float]] = {}
    for run_id, ttft, latency, tokens, drafts, mal in store.request_timings(db, [r.id for r in rows]):
        if ttft is not None and latency is not None and tokens and tokens > 1:
            tpots.setdefault(run_id, []).append((latency - ttft) / (tokens - 1))
        if drafts and mal is not None:
            mals.setdefault(run_id, []).append(mal)
    out = []
    for r in rows:
        mine, stored = tpots.get(r.id, []), r.spec_request_mal
        request_mal = stored if stored is not None else (statistics.fmean(mals[r.id]) if r.id in mals else None)
        out.append(replace(r, tpot_p50_ms=percentile(mine, 0.5), tpot_p99_ms=percentile(mine, 0.99),
                           request_mal=request_mal))
    return out


def mean_of(rows: list[store.RunRecord], key: str) -> float | None:
    """The mean of a per-run figure (a field's name) over the runs that have it (None where none does)."""
    values = [getattr(r, key) for r in rows if getattr(r, key) is not None]
    return statistics.fmean(values) if values else None


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyFigures:
    """A configuration's latency: each percentile of METRICS (the mean over its repeats), its ratio
    to the baseline's (`ratio_key`: None without a baseline or where either lacks it), and the
    per-request MAL."""
    request_mal: float | None
    ttft_p50_ms: float | None
    ttft_p50_ratio: float | None
    ttft_p99_ms: float | None
    ttft_p99_ratio: float | None
    tpot_p50_ms: float | None
    tpot_p50_ratio: float | None
    tpot_p99_ms: float | None
    tpot_p99_ratio: float | None
    itl_p50_ms: float | None
    itl_p50_ratio: float | None
    itl_p99_ms: float | None
    itl_p99_ratio: float | None


def figures(rows: list[store.RunRecord], baseline: list[store.RunRecord] | None) -> LatencyFigures:
    """A configuration's latency figures from the runs of its repeats (`rows`) and its baseline's.
    Rows, not a compare.Config: compare imports this module."""
    # By name: each metric of METRICS and its ratio are the fields named after it.
    values: dict[str, float | None] = {"request_mal": mean_of(rows, "request_mal")}
    for key in METRICS:
        mine = mean_of(rows, key)
        theirs = mean_of(baseline, key) if baseline is not None else None
        values[key] = mine
        values[ratio_key(key)] = mine / theirs if mine is not None and theirs else None
    return LatencyFigures(**values)
