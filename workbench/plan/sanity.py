"""Sanity warnings: workload settings that make acceptance or speedup figures misleading, said
before a sweep starts and stored with each run they concern."""

from __future__ import annotations

from workbench import store
from workbench.load import workloads
from workbench.plan import Plan

RANDOM = ("workload 'random' is random words: acceptance on text with no task says little about real "
          "serving; prefer gsm8k, math500, humaneval, mbpp or the built-in set")
IGNORE_EOS = ("ignore_eos forces generation past the end of each answer, and drafting padding text "
              "distorts acceptance; use it only to fix output lengths")
SUFFIX_REUSE = ("suffix decoding caches earlier outputs: this run's prompts were already sent to the same "
                "server, so its acceptance is inflated")

ATTACHED = ("attached server: its counters include any other traffic it serves, so acceptance comes "
            "from vLLM's per-request figures for Draftbench's own requests where the server reports "
            "them (--per-request-spec-decode-metrics); throughput and per-position figures still "
            "include foreign traffic")


def _mismatch(plan: Plan, db: store.Database | None) -> list[str]:
    """Runs already in the database for the same target under other sampling settings."""
    if db is None or not plan.runs:
        return []
    target = plan.runs[0].server.target
    temps = {r.temperature for r in plan.runs}
    maxes = {r.max_tokens for r in plan.runs}
    out = []
    rows = store.sampling_of_completed(db, target)
    other_t = sorted({t for t, _ in rows if t is not None and t not in temps})
    other_m = sorted({m for _, m in rows if m is not None and m not in maxes})
    if other_t:
        out.append(f"the database holds runs of this target at temperature {', '.join(map(str, other_t))}; "
                   f"comparing them with this sweep's {', '.join(map(str, sorted(temps)))} is not like for like")
    if other_m:
        out.append(f"the database holds runs of this target with max tokens {', '.join(map(str, other_m))}; "
                   f"comparing them with this sweep's {', '.join(map(str, sorted(maxes)))} is not like for like")
    return out


def for_runs(plan: Plan, db: store.Database | None = None) -> dict[str, list[str]]:
    """Warnings per run key."""
    shared = _mismatch(plan, db)
    out: dict[str, list[str]] = {}
    for server, runs in plan.servers():
        for i, r in enumerate(runs):
            w = list(shared)
            if r.workload == workloads.RANDOM:
                w.append(RANDOM)
            if r.ignore_eos:
                w.append(IGNORE_EOS)
            if server.profile.kind == "attach":
                w.append(ATTACHED)
            if server.method == "suffix" and any(o.workload == r.workload for o in runs[:i]):
                w.append(SUFFIX_REUSE)
            out[r.key] = w
    return out


def for_plan(plan: Plan, db: store.Database | None = None) -> list[str]:
    """The distinct warnings of a plan, in a stable order, for showing before it runs."""
    seen: list[str] = []
    for warnings in for_runs(plan, db).values():
        for w in warnings:
            if w not in seen:
                seen.append(w)
    return seen
