"""Figures across runs: speedup against the matching baseline, and readable run summaries."""

from __future__ import annotations

import json
import statistics

import sqlite_utils

# A baseline matches a speculative run when everything but the drafting method is the same.
MATCH = ("experiment_id", "target", "workload", "concurrency", "request_rate", "max_tokens",
         "temperature", "top_p", "num_prompts")


def _match_key(row: dict) -> tuple:
    return tuple(row.get(k) for k in MATCH)


def baseline_throughput(rows: list[dict]) -> dict[tuple, float]:
    """Mean baseline output tok/s per matching key, over completed repeats."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        if r["method"] == "baseline" and r["status"] == "completed" and r["output_tok_s"]:
            groups.setdefault(_match_key(r), []).append(r["output_tok_s"])
    return {k: statistics.fmean(v) for k, v in groups.items()}


def speedup(row: dict, baselines: dict[tuple, float]) -> float | None:
    base = baselines.get(_match_key(row))
    if not base or not row.get("output_tok_s"):
        return None
    return row["output_tok_s"] / base


def _f(value, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def speedup_table(db: sqlite_utils.Database, experiment_id: int) -> list[dict]:
    rows = list(db["runs"].rows_where("experiment_id = ?", [experiment_id], order_by="seq"))
    baselines = baseline_throughput(rows)
    table = []
    for r in rows:
        pp = json.loads(r["per_position"]) if r["per_position"] else None
        table.append({
            "run": r["id"], "method": r["method"], "n": "" if r["n"] is None else str(r["n"]),
            "workload": r["workload"], "concurrency": str(r["concurrency"]), "status": r["status"],
            "mal": _f(r["mal"], ".2f"), "acceptance_rate": _f(r["acceptance_rate"], ".3f"),
            "output_tok_s": _f(r["output_tok_s"], ".1f"), "speedup": _f(speedup(r, baselines), ".2f"),
            "per_position": " ".join(f"{p:.3f}" for p in pp) if pp else "",
            "joules_per_token": _f(r.get("joules_per_token"), ".3f"),
            "gpu_util_mean": _f(r.get("gpu_util_mean"), ".0f"),
        })
    return table


def run_summary(db: sqlite_utils.Database, r: dict) -> list[tuple[str, str]]:
    siblings = list(db["runs"].rows_where("experiment_id = ?", [r["experiment_id"]]))
    s = speedup(r, baseline_throughput(siblings))
    pp = json.loads(r["per_position"]) if r["per_position"] else None
    return [
        ("run", str(r["id"])), ("status", r["status"] + (f": {r['error']}" if r["error"] else "")),
        ("target", r["target"]), ("method", r["method"]), ("draft", r["draft"] or "-"),
        ("N", "-" if r["n"] is None else str(r["n"])), ("workload", r["workload"]),
        ("concurrency", str(r["concurrency"])), ("temperature", str(r["temperature"])),
        ("max tokens", str(r["max_tokens"])), ("requests ok/failed", f"{r['requests_ok']}/{r['requests_failed']}"),
        ("window (s)", _f(r["window_s"], ".2f")), ("output tokens", str(r["output_tokens"])),
        ("output tok/s", _f(r["output_tok_s"], ".1f")), ("speedup vs baseline", _f(s, ".2f")),
        ("MAL", _f(r["mal"], ".3f")), ("acceptance rate", _f(r["acceptance_rate"], ".3f")),
        ("per-position", " ".join(f"{p:.3f}" for p in pp) if pp else "-"),
        ("drafts / drafted / accepted", f"{_f(r['drafts'], '.0f')} / {_f(r['draft_tokens'], '.0f')} / {_f(r['accepted'], '.0f')}"),
        ("TTFT mean/p99 (ms)", f"{_f(r['ttft_mean_ms'], '.1f')} / {_f(r['ttft_p99_ms'], '.1f')}"),
        ("ITL mean/p99 (ms)", f"{_f(r['itl_mean_ms'], '.1f')} / {_f(r['itl_p99_ms'], '.1f')}"),
        ("TPOT mean (ms)", _f(r["tpot_mean_ms"], ".1f")),
        ("prompts seen before", "yes" if r["prompts_seen_before"] else "no"),
        ("vLLM", f"{r['vllm_version']} (torch {r['torch_version']})"),
        ("energy (J) / J per token", f"{_f(r.get('energy_j'), '.0f')} / {_f(r.get('joules_per_token'), '.3f')}"),
        ("GPU power mean (W), util mean (%)", f"{_f(r.get('power_mean_w'), '.0f')}, {_f(r.get('gpu_util_mean'), '.0f')}"),
        ("GPU memory peak (MiB)", _f(r.get("gpu_mem_peak_mib"), ".0f")),
        ("environment", _environment(r.get("environment"))),
        ("command", r["command"] or ""),
    ]


def _environment(text: str | None) -> str:
    if not text:
        return "-"
    env = json.loads(text)
    parts = [env.get("kind", "local") + (f" profile {env['profile']}" if env.get("profile") else "")]
    if env.get("gpu_models"):
        parts.append(f"{len(env['gpu_models'])} x {env['gpu_models'][0]}")
    for key, label in (("driver", "driver"), ("cuda", "CUDA"), ("rocm", "ROCm"), ("vllm_server", "vLLM server")):
        if env.get(key):
            parts.append(f"{label} {env[key]}")
    return ", ".join(parts)
