"""The text of `draftbench show` for runs: every run of an experiment with its speedup as a table, and one
run's readable summary. Speedups are the Compare page's (workbench.analysis.compare): a run over its
matching baseline configuration's mean, or over a pinned baseline run (workbench.analysis.pinned_baseline)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from workbench import store
from workbench.host import provenance
from workbench.analysis import alarms, compare, latency, lossless, pinned_baseline
from workbench.analysis import basis as throughput_basis
from workbench.metrics import steady_state


def _f(value: object, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def _speedup(r: store.RunRecord, baselines: dict[compare.Key, compare.Config], pinned: pinned_baseline.Pinned | None) -> float | None:
    """A run's speedup over its own baseline, or over the pinned run where the pin is of its kind."""
    if pinned is not None and pinned.applies_to(r):
        return pinned.run_speedup(r)
    return compare.run_speedup(r, baselines)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunLine:
    """One run as `draftbench show` prints it: every figure already formatted (an empty cell where
    the run has none), its field names the keys of `show --json`."""
    run: int
    method: str | None
    n: str
    workload: str | None
    concurrency: str
    status: str
    mal: str
    acceptance_rate: str
    output_tok_s: str
    speedup: str
    per_position: str
    joules_per_token: str
    gpu_util_mean: str
    what_if: str
    steady: str
    cache_hit: str
    alarms: str
    lossless: str


def run_table(db: store.Database, experiment_id: int,
              pinned: tuple[store.RunRecord, str | None] | None = None) -> list[RunLine]:
    """Every run of the experiment in plan order, its figures formatted for printing; `pinned`, the
    pinned baseline run and its experiment's name (pinned_baseline.read), takes the speedups."""
    rows = store.runs_in_plan_order(db, experiment_id)
    cs = compare.configs(rows)
    baselines = compare.baselines(cs)
    pin = pinned_baseline.apply(cs, *pinned) if pinned is not None else None
    table = []
    for r in rows:
        pp = r.per_position
        table.append(RunLine(
            run=r.id, method=r.method, n="" if r.n is None else str(r.n),
            workload=r.workload, concurrency=str(r.concurrency), status=str(r.status),
            mal=_f(r.mal, ".2f"), acceptance_rate=_f(r.acceptance_rate, ".3f"),
            output_tok_s=_f(r.output_tok_s, ".1f"), speedup=_f(_speedup(r, baselines, pin), ".2f"),
            per_position=" ".join(f"{p:.3f}" for p in pp) if pp else "",
            joules_per_token=_f(r.joules_per_token, ".3f"),
            gpu_util_mean=_f(r.gpu_util_mean, ".0f"),
            what_if=compare.marker(r),
            steady=_steady_cell(r), cache_hit=_f(_pct(r.prefix_cache_hit_rate), ".0f"),
            alarms=alarm_kinds(db, r),
            lossless=_lossless_cell(r),
        ))
    return table


def _lossless_cell(r: store.RunRecord) -> str:
    """Identical answers and accuracy, '!' in front where the lossless check failed."""
    cell = lossless.summary(r)
    return "" if cell == "-" else ("! " if lossless.verdict(r) else "") + cell


def _lossless(r: store.RunRecord) -> list[tuple[str, str]]:
    out = []
    if r.graded:
        out.append(("task accuracy", f"{100 * (r.accuracy or 0.0):.1f} % of {r.graded} graded answers"))
    if r.lossless_compared:
        prefix = r.lossless_prefix
        out.append(("answers vs baseline", f"{r.lossless_identical or 0} of {r.lossless_compared} identical to "
                    f"run {r.lossless_baseline}" + ("" if prefix is None else
                                                        f", median common prefix {100 * prefix:.0f} %")
                    + (f"; {r.lossless_turned_wrong} turned wrong, {r.lossless_turned_right} turned right"
                       if (r.lossless_turned_wrong or r.lossless_turned_right) else "")))
    why = lossless.verdict(r)
    if why:
        out.append(("LOSSLESS CHECK", why))
    return out


def alarm_kinds(db: store.Database, r: store.RunRecord) -> str:
    """A finished run's alarms by kind, comma-separated ("" for none)."""
    if r.status not in ("completed", "partial"):
        return ""
    return ", ".join(a.kind for a in alarms.of_row(r, store.counter_samples(db, r.id)))


def _pct(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _steady_cell(r: store.RunRecord) -> str:
    """Steady-state tok/s and its length, compactly: `45.6/12s`; `-` where the load never held."""
    if r.steady_s is None:
        return ""
    if not r.steady_tok_s:
        return "-"
    return f"{r.steady_tok_s:.1f}/{r.steady_s:.0f}s"


def _steady(r: store.RunRecord) -> str:
    if r.steady_s is None:
        return "not recorded"
    share = f"≥ {steady_state.STEADY_SHARE:.0%} of concurrency {r.concurrency}"
    if not r.steady_tok_s:
        return f"none: in-flight requests never held {share}"
    short = "" if throughput_basis.usable(r) else f" (under {steady_state.MIN_STEADY_S:.0f} s: comparisons use the whole window)"
    return f"{r.steady_tok_s:.1f} tok/s over {r.steady_s:.2f} s at {share}{short}"


def _prefix_cache(r: store.RunRecord) -> str:
    rate, hits, queries = r.prefix_cache_hit_rate, r.prefix_cache_hits, r.prefix_cache_queries
    if rate is None:
        return "not recorded" if queries is None else "no prompt tokens looked up"
    return f"{100 * rate:.1f} % ({hits:.0f} of {queries:.0f} prompt tokens found cached)"


def _alarms(db: store.Database, r: store.RunRecord) -> list[tuple[str, str]]:
    if r.status not in ("completed", "partial"):
        return []
    found = alarms.of_row(r, store.counter_samples(db, r.id))
    late = "" if r.alarms is not None else " (from its stored figures)"
    return [("alarm" + late, a.message) for a in found] or [("alarms", "none")]


def _client_cost(r: store.RunRecord) -> str:
    cpu, wall, tokens = r.client_cpu_s, r.window_s, r.output_tokens
    if cpu is None or not wall or not tokens:
        return "-"
    return (f"{cpu:.2f} s in {r.client_processes or 1} process(es): {cpu / wall:.2f} cores, "
            f"{cpu / tokens * 1e4:.3f} per 10k tok/s")


def _app_cost(r: store.RunRecord) -> str:
    """The desktop app's CPU over the window (measured only where the app started the sweep)."""
    cpu, wall = r.app_cpu_s, r.window_s
    if cpu is None or not wall:
        return "-"
    return f"{cpu:.2f} s: {100 * cpu / wall:.1f} % of one core"


def _requests(db: store.Database, r: store.RunRecord) -> str:
    """ok/failed from the run's summary; a run that failed before its summary was written counts its
    stored request rows instead, and one that stored none says so with a dash."""
    if r.requests_ok is not None and r.requests_failed is not None:
        return f"{r.requests_ok}/{r.requests_failed}"
    ok, failed = store.request_counts(db, r.id)
    return f"{ok}/{failed}" if ok or failed else "-"


def _latency(r: store.RunRecord) -> list[tuple[str, str]]:
    """TTFT, ITL and TPOT as `vllm bench serve` defines them; TPOT's percentiles from the requests."""
    def three(kind: str) -> str:
        return " / ".join(_f(getattr(r, f"{kind}_{q}_ms"), ".1f") or "-" for q in ("mean", "p50", "p99"))
    return [("TTFT mean/p50/p99 (ms)", three("ttft")), ("ITL mean/p50/p99 (ms)", three("itl")),
            ("TPOT mean/p50/p99 (ms)", three("tpot"))]


def run_summary(db: store.Database, record: store.RunRecord,
                pinned: tuple[store.RunRecord, str | None] | None = None) -> list[tuple[str, str]]:
    """One run's every figure, a line each; `pinned` as run_table's."""
    # With what only its requests hold (TPOT percentiles, request MAL).
    r = latency.with_requests(db, [record])[0]
    siblings = store.runs_of_experiment(db, r.experiment_id)
    cs = compare.configs(siblings)
    baselines = compare.baselines(cs)
    pin = pinned_baseline.apply(cs, *pinned) if pinned is not None else None
    s = _speedup(r, baselines, pin)
    pp = r.per_position
    return [
        ("run", str(r.id)), *_what_if(r), ("status", r.status + (f": {r.error}" if r.error else "")),
        ("target", r.target), ("method", r.method), ("draft", r.draft or "-"),
        ("N", "-" if r.n is None else str(r.n)), ("workload", r.workload),
        ("concurrency", str(r.concurrency)), ("temperature", str(r.temperature)),
        ("max tokens", str(r.max_tokens)), ("requests ok/failed", _requests(db, r)),
        ("window (s)", _f(r.window_s, ".2f")), ("load generator CPU", _client_cost(r)),
        ("app CPU", _app_cost(r)), ("output tokens", str(r.output_tokens)),
        ("output tok/s (whole window)", _f(r.output_tok_s, ".1f")), ("steady state", _steady(r)),
        _speedup_line(r, s, pin), ("prefix cache hit rate", _prefix_cache(r)),
        ("MAL pooled (1 + accepted / drafts)", _f(r.mal, ".3f")),
        ("MAL mean over requests", _f(r.request_mal, ".3f") or "not recorded"), ("acceptance rate", _f(r.acceptance_rate, ".3f")),
        ("per-position", " ".join(f"{p:.3f}" for p in pp) if pp else "-"), *_alarms(db, r), *_lossless(r),
        ("drafts / drafted / accepted", f"{_f(r.drafts, '.0f')} / {_f(r.draft_tokens, '.0f')} / {_f(r.accepted, '.0f')}"),
        *_latency(r),
        ("prompts seen before", "yes" if r.prompts_seen_before else "no"),
        *[("warning", w) for w in json.loads(r.warnings or "[]")],
        ("vLLM", f"{r.vllm_version}" + (f" (torch {r.torch_version})" if r.torch_version else "")),
        ("transformers", r.transformers_version or "not recorded"),
        ("draft sampling", r.draft_sample_method or "-"),
        ("energy (J) / J per token", f"{_f(r.energy_j, '.0f')} / {_f(r.joules_per_token, '.3f')}"),
        ("GPU power mean (W), util mean (%)", f"{_f(r.power_mean_w, '.0f')}, {_f(r.gpu_util_mean, '.0f')}"),
        ("GPU memory peak (MiB)", _f(r.gpu_mem_peak_mib, ".0f")),
        ("environment", _environment(r.environment)),
        ("command", r.command or ""),
        *_provenance(r.provenance),
    ]


def _speedup_line(r: store.RunRecord, s: float | None, pin: pinned_baseline.Pinned | None) -> tuple[str, str]:
    if pin is None or not pin.applies_to(r):
        return "speedup vs baseline", _f(s, ".2f")
    # Said rather than left blank: the run may well have a speedup over its own baseline.
    return f"speedup vs pinned run {pin.row.id}", _f(s, ".2f") or (
        "" if pin.at_its_load(r) else f"- (the pinned run ran at c={pin.row.concurrency})")


def _what_if(r: store.RunRecord) -> list[tuple[str, str]]:
    """A what-if run's marker and curve, said before its figures (nothing for a measured run)."""
    if not compare.is_what_if(r):
        return []
    curve = compare.imposed(r)
    lines = [("what-if", compare.marker(r) + "; served with dummy weights, not measured acceptance")]
    if curve and curve.get("rates"):
        lines.append(("imposed per-position", " ".join(f"{p:.3f}" for p in curve["rates"])))
    return lines


def _provenance(text: str | None) -> list[tuple[str, str]]:
    """The run's provenance, one field a line (docs/amd-instinct.md says what each means)."""
    rows = provenance.rows(json.loads(text) if text else None)
    return [(f"provenance: {label}", value) for label, value in rows] or [("provenance", "not recorded")]


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
