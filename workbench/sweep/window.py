"""The figures of one measured window, as the README's Metrics section defines them (pure: no I/O): the run summary
from the client's requests and the counters' window, vLLM's per-request figures where the counters
are shared with other traffic, and what vLLM's start-up log says about how it serves.

Stored per run and shown everywhere, so `vllm bench serve`'s definitions are followed exactly:
output throughput is client-counted output tokens over the window's wall time, the window running
from the first request sent to the last response read.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from workbench import load, metrics
from workbench.metrics import steady_state
from workbench.metrics.percentiles import percentile as _pct


def summarize(results: list[load.RequestResult], win: metrics.Window, wall_s: float) -> dict[str, Any]:
    """A run's summary figures, as the README's Metrics section defines them."""
    ok = [r for r in results if r.ok]
    out_tokens = sum(r.output_tokens for r in ok)
    ttft = [r.ttft_ms for r in ok if r.ttft_ms is not None]
    gaps = [g for r in ok for g in r.chunk_gaps_ms]
    tpot = [(r.latency_ms - r.ttft_ms) / (r.output_tokens - 1)
            for r in ok if r.ttft_ms is not None and r.latency_ms is not None and r.output_tokens > 1]
    spec_mals = [r.spec["mean_acceptance_length"] for r in ok if r.spec and r.spec.get("num_spec_steps")]
    return {
        "window_s": wall_s, "output_tokens": out_tokens,
        "output_tok_s": out_tokens / wall_s if wall_s > 0 else None,
        "generation_tokens": win.generation_tokens, "prompt_tokens": win.prompt_tokens,
        "drafts": win.drafts, "draft_tokens": win.draft_tokens, "accepted": win.accepted,
        "mal": win.mean_acceptance_length, "acceptance_rate": win.acceptance_rate,
        "per_position": json.dumps(win.per_position) if win.per_position is not None else None,
        "requests_ok": len(ok), "requests_failed": len(results) - len(ok),
        "ttft_mean_ms": statistics.fmean(ttft) if ttft else None,
        "ttft_p50_ms": _pct(ttft, 0.5), "ttft_p99_ms": _pct(ttft, 0.99),
        "itl_mean_ms": statistics.fmean(gaps) if gaps else None,
        "itl_p50_ms": _pct(gaps, 0.5), "itl_p99_ms": _pct(gaps, 0.99),
        "tpot_mean_ms": statistics.fmean(tpot) if tpot else None,
        # Every finished request has its latency, failed ones included.
        "e2el_mean_ms": statistics.fmean([r.latency_ms for r in ok if r.latency_ms is not None]) if ok else None,
        "spec_request_mal": statistics.fmean(spec_mals) if spec_mals else None,
    }


def spans(results: list[load.RequestResult]) -> list[steady_state.Span]:
    """Each timed request as steady state reads it: in flight from sent to last byte, its output
    tokens (a failed request's count none) from its first token on."""
    out = []
    for r in results:
        if r.latency_ms is None:
            continue
        first = r.start + (r.ttft_ms or 0.0) / 1000
        out.append(steady_state.Span(r.start, first, r.start + r.latency_ms / 1000, r.output_tokens if r.ok else 0))
    return out


def prefix_cache(win: metrics.Window) -> dict[str, Any]:
    """The prefix cache over the window: prompt tokens looked up, found, and the share found."""
    return {"prefix_cache_queries": win.prefix_cache_queries, "prefix_cache_hits": win.prefix_cache_hits,
            "prefix_cache_hit_rate": win.prefix_cache_hit_rate}


def model_runner(lines: list[str]) -> dict[str, Any]:
    """Which model runner and scheduling vLLM chose, from its start-up log: recent releases serve
    the baseline with Model Runner V2 and async scheduling but fall back to V1 without async
    scheduling for some drafting methods, and that difference is part of any speedup."""
    out: dict[str, str | bool] = {}
    if any("using the V1 model runner" in line for line in lines):
        out["model_runner"] = "V1"
    if any("Async scheduling not supported" in line or "async scheduling will be disabled" in line.lower()
           for line in lines):
        out["async_scheduling"] = False
    return out


def per_request_window(results: list[load.RequestResult]) -> dict[str, Any]:
    """On an attached server the counters include everyone's traffic; vLLM's per-request figures
    cover Draftbench's own requests only, so they replace the counter window where every request
    has them (same definitions: MAL = 1 + accepted / drafts)."""
    ok = [r for r in results if r.ok]
    specs = [r.spec for r in ok if r.spec and r.spec.get("num_spec_steps") is not None]
    if not ok or len(specs) < len(ok):
        return {}
    drafts = sum(s["num_spec_steps"] for s in specs)
    drafted = sum(s.get("num_draft_tokens", 0) for s in specs)
    accepted = sum(s.get("num_accepted_draft_tokens", 0) for s in specs)
    out: dict[str, Any] = {"drafts": drafts, "draft_tokens": drafted, "accepted": accepted,
                           "mal": 1 + accepted / drafts if drafts else None,
                           "acceptance_rate": accepted / drafted if drafted else None}
    hists = [h for s in specs if isinstance(h := s.get("acceptance_histogram"), list)]
    if len(hists) == len(specs) and hists:
        width = max(len(h) for h in hists)
        total = [sum(h[i] for h in hists if i < len(h)) for i in range(width)]
        steps = sum(total)
        if steps:
            out["per_position"] = json.dumps([sum(total[i + 1:]) / steps for i in range(width - 1)])
    return out
