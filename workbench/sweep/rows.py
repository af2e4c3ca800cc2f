"""What a measured run writes, as typed records: its summary (the figures of its runs-table row)
and each scrape's sample and per-position rows. A job sends them through the outbox
(workbench.sweep.outbox), the Recorder gets each as its columns (`messages.encode`), and a Ray
worker's are checked field by field when they reach the driver (`messages.decode`).

The field names are the store's column names. JSON columns stay as stored (text), as
`store.RunRecord` keeps them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """A completed (or partial) run's figures, as the README's Metrics section defines them
    (workbench.sweep.window). Every field without a default is written, null included, so a redo
    replaces what an earlier attempt stored; one with a default is written only once known."""
    window_s: float
    output_tokens: int
    output_tok_s: float | None
    generation_tokens: float | None
    prompt_tokens: float | None
    drafts: float | None
    draft_tokens: float | None
    accepted: float | None
    mal: float | None
    acceptance_rate: float | None
    per_position: str | None  # JSON list: the share of drafts whose first i+1 tokens were accepted
    requests_ok: int
    requests_failed: int
    ttft_mean_ms: float | None
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    itl_mean_ms: float | None
    itl_p50_ms: float | None
    itl_p99_ms: float | None
    tpot_mean_ms: float | None
    e2el_mean_ms: float | None
    spec_request_mal: float | None
    client_cpu_s: float | None
    client_processes: int | None
    app_cpu_s: float | None
    steady_s: float | None
    steady_tok_s: float | None
    prefix_cache_queries: float | None
    prefix_cache_hits: float | None
    prefix_cache_hit_rate: float | None
    alarms: str  # JSON list (workbench.analysis.alarms), empty when none was raised
    # Only where the window found something: the run's warnings so far are stored already.
    warnings: str | None = None
    # Only where the GPUs reported power, utilisation or memory (workbench.metrics.telemetry.energy).
    energy_j: float | None = None
    power_mean_w: float | None = None
    gpu_util_mean: float | None = None
    gpu_mem_peak_mib: float | None = None
    joules_per_token: float | None = None


@dataclass(frozen=True, kw_only=True)
class SampleRow:
    """One scrape during a run's window: the counters' window so far and the server's gauges."""
    run_id: int
    t: float  # seconds since the window started
    drafts: float
    draft_tokens: float
    accepted: float
    generation_tokens: float
    output_tokens: int
    mal: float | None
    acceptance_rate: float | None
    output_tok_s: float | None  # over the interval since the previous scrape
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None


@dataclass(frozen=True, kw_only=True)
class PositionRow:
    """One draft position at one scrape: drafts whose first `position` tokens were all accepted."""
    run_id: int
    t: float
    position: int
    accepted: float
    drafts: float
    acceptance: float | None
