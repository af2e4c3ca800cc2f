"""The answer Compare leads with: per target x workload x concurrency, the best configuration of
each method with its speedup, 95% interval and noise verdict; and per method the concurrency at
which speculation stops paying (the crossover). Pure, no Qt."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from workbench import store
from workbench.analysis import alarms, latency, lossless
from workbench.analysis import basis as throughput_basis
from workbench.analysis.compare import Config, Key


def short_model(name: str | None) -> str:
    """A model by its folder or repo name: `/models/Qwen3-8B/` -> `Qwen3-8B`, `demo:x` -> `x`."""
    if not name:
        return "-"
    return name.rstrip("/").rsplit("/", 1)[-1].removeprefix("demo:")


def _speedup(c: Config) -> float:
    """The speedup of a configuration that has one: best_per_method picks only those, and a
    configuration with a noise verdict has one."""
    speedup = c.speedup
    assert speedup is not None, c.label
    return speedup


def _tok_s(c: Config) -> float:
    """The mean throughput of a configuration that has a speedup (it is the speedup's numerator)."""
    tok_s = c.tok_s.mean
    assert tok_s is not None, c.label
    return tok_s


def verdict(c: Config) -> str:
    """Whether the speedup is beyond run-to-run noise, in words."""
    if c.beyond_noise is None:
        return "one run: no interval"
    if not c.beyond_noise:
        return "within noise"
    return "faster, beyond noise" if _speedup(c) > 1 else "slower, beyond noise"


def best_per_method(cs: list[Config], what_if: bool = False) -> dict[Key, Config]:
    """(target, workload, concurrency, method, draft) -> the configuration with the highest mean
    output throughput (its N is the best N there). Measured configurations only, unless `what_if`
    (then what-if ones only): a measured answer never rests on an imposed acceptance."""
    best: dict[Key, Config] = {}
    for c in cs:
        if c.method == "baseline" or c.speedup is None or c.what_if != what_if:
            continue
        key = (c.target, c.workload, c.concurrency, c.method, c.draft)
        if key not in best or _tok_s(c) > _tok_s(best[key]):
            best[key] = c
    return best


def fastest_note(group: list[Config]) -> str:
    """What may be said of the top configuration of a group (sorted fastest first): "fastest" only
    when it beats the baseline and the runner-up beyond noise (their 95% intervals apart), else
    "fastest measured" and why that is all (a single run moves by more than most speedups differ)."""
    top = group[0]
    top_ci = top.speedup_ci95
    if top_ci is None:
        return "fastest measured: one run, no interval"
    if not top.beyond_noise:
        return "fastest measured, within noise of the baseline"
    if len(group) > 1:
        second = group[1]
        second_ci = second.speedup_ci95
        if second_ci is None or _speedup(top) - top_ci <= _speedup(second) + second_ci:
            return f"fastest measured, within noise of {second.label}"
    return "fastest"


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerRow:
    """One method's best configuration at one target x workload x concurrency, as the answer shows
    it. `fastest` marks the row that beats the baseline by the most (the configuration to serve),
    `fastest_note` what can be said of it (`fastest_sure` when that is plainly "fastest"); `run` is
    a run of that configuration, `command` the exact command serving it (set by the use case that
    has the runs: workbench.usecases.compare_view)."""
    target: str | None
    target_short: str
    workload: str | None
    concurrency: int
    method: str
    n: int | None
    draft: str | None
    config: str
    speedup: float
    speedup_ci95: float | None
    beyond_noise: bool | None
    verdict: str
    fastest: bool
    tok_s: float | None
    fastest_note: str | None
    fastest_sure: bool
    baseline_tok_s: float | None
    mal: float | None
    repeats: int
    cv: float | None
    temperature: float | None
    run: int
    throughput_basis: str
    prefix_cache_hit_rate: float | None
    cache_warning: str | None
    command: str | None = None


def answer_rows(cs: list[Config], what_if: bool = False) -> list[AnswerRow]:
    """One row per target x workload x concurrency x method: its best configuration, fastest
    method first within each target x workload x concurrency."""
    best = best_per_method(cs, what_if)
    groups: dict[Key, list[Config]] = {}
    for (target, workload, concurrency, _, _), c in best.items():
        groups.setdefault((target, workload, concurrency), []).append(c)
    rows = []
    for (target, workload, concurrency), group in sorted(groups.items(), key=lambda kv: [str(k) for k in kv[0]]):
        group.sort(key=_speedup, reverse=True)
        note = fastest_note(group)
        for i, c in enumerate(group):
            fastest = i == 0 and _speedup(c) > 1
            rows.append(AnswerRow(
                target=target, target_short=short_model(target), workload=workload,
                concurrency=concurrency, method=c.method, n=c.n, draft=c.draft,
                config=c.label, speedup=_speedup(c), speedup_ci95=c.speedup_ci95,
                beyond_noise=c.beyond_noise, verdict=verdict(c),
                fastest=fastest, tok_s=c.tok_s.mean,
                fastest_note=note if fastest else None,
                fastest_sure=fastest and note == "fastest",
                baseline_tok_s=c.baseline.tok_s.mean if c.baseline else None,
                mal=c.mal.mean, repeats=c.tok_s.n, cv=c.tok_s.cv, temperature=c.temperature,
                run=c.rows[0].id, throughput_basis=c.basis,
                prefix_cache_hit_rate=c.prefix_cache_hit_rate, cache_warning=c.cache_warning,
            ))
    return rows


def no_baseline(rows: list[store.RunRecord], answer: list[AnswerRow]) -> str:
    """Why there is no answer when it is for want of a baseline, in one sentence ("" otherwise):
    speculative runs are there but no measured baseline run completed (failed, or not run yet)."""
    measured = [r for r in rows if not r.what_if]
    if answer or not any(r.method != "baseline" for r in measured):
        return ""
    base = [r for r in measured if r.method == "baseline"]
    if any(r.status == "completed" for r in base):
        return ""
    errors = [r.error for r in base if r.status in ("failed", "partial") and r.error]
    why = f"it failed: {errors[-1].strip().splitlines()[0].rstrip('.')}" if errors else (
        "it has not run yet" if base else "it is not among these runs")
    return f"No speedup can be given: the baseline has no completed run ({why}), so nothing here can be compared with it."


def basis_notes(cs: list[Config]) -> list[str]:
    """Which throughput the speedups rest on and why: one line when every comparison uses the same
    basis for the same reason, else one per target x workload x concurrency."""
    # Grouped by the baseline each configuration is linked to, not by the key that normally finds
    # it: a pinned baseline (workbench.analysis.pinned_baseline) may come from another experiment.
    groups: dict[int, list[Config]] = {}
    for c in cs:
        if c.method != "baseline" and c.baseline is not None:
            groups.setdefault(id(c.baseline), [c.baseline]).append(c)
    notes = []
    for group in groups.values():
        first = group[1]  # a compared configuration names the place: a pinned run may have another workload
        why = throughput_basis.why([r for c in group for r in c.rows], first.basis)
        notes.append((f"{short_model(first.target)} · {first.workload} · c={first.concurrency}", why))
    if not notes:
        return []
    if len({why for _, why in notes}) == 1:
        return [f"throughput: {notes[0][1]}"]
    return [f"throughput, {where}: {why}" for where, why in sorted(notes)]


def cache_warnings(cs: list[Config]) -> list[str]:
    """The speedups that compare prefix caches as well as drafters (compare.Config.cache_warning)."""
    return [c.cache_warning for c in cs if c.cache_warning]


def run_alarms(cs: list[Config]) -> list[str]:
    """The acceptance alarms of the runs behind these configurations, one line each: those stored
    with each run, or, for a run stored before alarms were, those its stored figures raise (all
    but the mid-run drop, which needs its samples: `draftbench show RUN` checks that too)."""
    out: list[str] = []
    for c in cs:
        for r in c.rows:
            out.extend(f"run {r.id} ({c.label}, c={c.concurrency}): {a.message}" for a in alarms.of_row(r, []))
    return out


def lossless_notes(cs: list[Config]) -> list[str]:
    """Speculative runs whose answers are not their baseline's (workbench.analysis.lossless)."""
    out = []
    for c in cs:
        for r in c.rows:
            why = lossless.verdict(r)
            if why:
                out.append(f"run {r.id} ({c.label}, c={c.concurrency}): {why}")
    return out


def trust_notes(cs: list[Config]) -> list[str]:
    """What a reader must know before trusting the measured speedups: runs whose speculation was
    not lossless, the throughput the speedups rest on, prefix caches that differ between the runs
    compared, and acceptance alarms."""
    measured = [c for c in cs if not c.what_if]
    return lossless_notes(measured) + basis_notes(measured) + cache_warnings(measured) + run_alarms(measured)


def _pays(c: Config) -> bool:
    return _speedup(c) > 1 and c.beyond_noise is not False


@dataclass(frozen=True, slots=True, kw_only=True)
class Crossover:
    """A method run at two or more concurrencies: (concurrency, best N, speedup) at each, the highest
    concurrency up to which it pays, the first at which it stops, the crossover estimated between
    them, and all that in one sentence (`text`)."""
    target: str | None
    target_short: str
    workload: str | None
    method: str
    draft: str | None
    points: list[tuple[int, int | None, float | None]]
    pays_up_to: int | None
    stops_at: int | None
    estimate: float | None
    text: str


def crossovers(cs: list[Config]) -> list[Crossover]:
    """Per target x workload x method run at two or more concurrencies: its best speedup at each,
    the highest concurrency up to which it pays (speedup above 1, not within noise of it), the
    first at which it stops, and an estimate of the crossover between the two (speedup
    interpolated against log2 concurrency to 1.0)."""
    by_method: dict[Key, dict[int, Config]] = {}
    for (target, workload, concurrency, method, draft), c in best_per_method(cs).items():
        by_method.setdefault((target, workload, method, draft), {})[concurrency] = c
    out = []
    for (target, workload, method, draft), at in sorted(by_method.items(), key=lambda kv: [str(k) for k in kv[0]]):
        if len(at) < 2:
            continue
        levels = sorted(at)
        stops = next((c for c in levels if not _pays(at[c])), None)
        before = [c for c in levels if stops is None or c < stops]
        estimate = None
        if stops is not None and before:
            lo, hi = before[-1], stops
            s_lo, s_hi = _speedup(at[lo]), _speedup(at[hi])
            if s_lo > 1 >= s_hi and s_lo != s_hi:
                x = math.log2(lo) + (s_lo - 1) / (s_lo - s_hi) * (math.log2(hi) - math.log2(lo))
                estimate = 2 ** x
        out.append(Crossover(target=target, target_short=short_model(target), workload=workload,
                             method=method, draft=draft, points=[(c, at[c].n, at[c].speedup) for c in levels],
                             pays_up_to=before[-1] if before else None, stops_at=stops, estimate=estimate,
                             text=_crossover_text(method, levels, at, before, stops, estimate)))
    return out


def _crossover_text(method: str, levels: list[int], at: dict[int, Config], before: list[int], stops: int | None,
                    estimate: float | None) -> str:
    first, last = levels[0], levels[-1]
    if stops is None:
        return (f"{method} pays at every concurrency run (c={first}: {at[first].speedup:.2f}x … "
                f"c={last}: {at[last].speedup:.2f}x): no crossover up to c={last}")
    if not before:
        return f"{method} does not pay even at c={first} ({at[first].speedup:.2f}x, {verdict(at[first])})"
    where = f", crossover ≈ c={estimate:.0f}" if estimate else ""
    return (f"{method} pays up to c={before[-1]} ({at[before[-1]].speedup:.2f}x) and stops at "
            f"c={stops} ({at[stops].speedup:.2f}x, {verdict(at[stops])}){where}")


def none_pays(rows: list[AnswerRow]) -> list[str]:
    """Per target x workload x concurrency where no method pays beyond noise (answer_rows' rows),
    why, in the terms that decide it: a speculative step yields MAL tokens where a baseline step
    yields one, so it pays only while it costs fewer than MAL baseline steps; the cost here is
    MAL / speedup."""
    groups: dict[Key, list[AnswerRow]] = {}
    for r in rows:
        groups.setdefault((r.target_short, r.workload, r.concurrency), []).append(r)
    out = []
    for (target, workload, concurrency), group in groups.items():
        if any(r.speedup > 1 and r.beyond_noise for r in group):
            continue
        parts = []
        for r in group:
            if not r.mal or not r.speedup:
                continue
            cost = r.mal / r.speedup
            parts.append(f"{r.config} accepts {r.mal:.2f} tokens a step, but its step costs "
                         f"{cost:.2f} baseline steps ({r.speedup:.2f}x, {r.verdict})")
        if parts:
            out.append(f"Nothing pays beyond noise for {target} on {workload} at c={concurrency}: "
                       + "; ".join(parts) + ". A step pays only while it costs fewer baseline steps "
                       "than the tokens it accepts.")
    return out


def conditions(rows: list[store.RunRecord]) -> str:
    """The run conditions in one caption line: target, workload, concurrency, temperature, vLLM."""
    counted = [r for r in rows if r.status in ("completed", "partial")] or rows

    def values(key: str, fmt: Callable[[Any], str] = str) -> str:
        found = sorted({getattr(r, key) for r in counted if getattr(r, key) is not None}, key=lambda v: (str(type(v)), v))
        return ", ".join(fmt(v) for v in found) or "?"

    targets = ", ".join(sorted({short_model(r.target) for r in counted})) or "?"
    return (f"target {targets} · workload {values('workload')} · concurrency {values('concurrency')} · "
            f"temperature {values('temperature', lambda t: f'{t:g}')} · max tokens {values('max_tokens')} · "
            f"vLLM {values('vllm_version')}")


def _ms(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:.1f} ms"


@dataclass(frozen=True, slots=True, kw_only=True)
class BestUnderItl:
    """The best N of one target x workload x concurrency x method under an ITL p99 bound: None
    where no N meets it; `unbounded_n` the best N without the bound; `text` says it in words."""
    target: str | None
    workload: str | None
    concurrency: int
    method: str
    n: int | None
    speedup: float | None
    itl_p99_ms: float | None
    unbounded_n: int | None
    text: str


def within_itl(cs: list[Config], max_itl_p99_ms: float) -> list[BestUnderItl]:
    """The best N under a latency bound: per target x workload x concurrency x method, the
    configuration with the highest mean throughput among those whose ITL p99 (the mean over its
    repeats) is at most `max_itl_p99_ms`, since a speedup bought with stalls in the stream may not
    be one a service can take. `n` is None where none qualifies; `text` says what was chosen or
    why nothing was, and the unbounded best N where the bound changed it. Measured runs only."""
    if not max_itl_p99_ms >= 0:  # also refuses NaN
        raise ValueError(f"the ITL p99 bound must be a number of milliseconds >= 0, not {max_itl_p99_ms}")
    groups: dict[Key, list[Config]] = {}
    for c in cs:
        if c.method != "baseline" and not c.what_if and c.speedup is not None:
            groups.setdefault((c.target, c.workload, c.concurrency, c.method, c.draft), []).append(c)
    out = []
    for (target, workload, concurrency, method, _), group in sorted(groups.items(), key=lambda kv: [str(k) for k in kv[0]]):
        itl = {id(c): latency.mean_of(c.rows, "itl_p99_ms") for c in group}
        # A configuration that recorded no ITL p99 cannot be shown to meet the bound: it never does.
        known = {key: value for key, value in itl.items() if value is not None}
        fits = [c for c in group if known.get(id(c), math.inf) <= max_itl_p99_ms]
        best, unbounded = (max(fits, key=_tok_s) if fits else None), max(group, key=_tok_s)
        base = group[0].baseline
        where = f"{short_model(target)} · {workload} · c={concurrency} · {method}"
        base_itl = f" (baseline {_ms(latency.mean_of(base.rows, 'itl_p99_ms'))})" if base else ""
        if best is None:
            lowest = min(group, key=lambda c: known.get(id(c), math.inf))
            text = (f"{where}: no N has ITL p99 <= {max_itl_p99_ms:g} ms; the lowest is N={lowest.n} at "
                    f"{_ms(itl[id(lowest)])}{base_itl}")
        else:
            text = (f"{where}: N={best.n}, {_speedup(best):.2f}x, ITL p99 {_ms(itl[id(best)])}{base_itl}"
                    + ("" if best is unbounded else f"; the fastest, N={unbounded.n} ({_speedup(unbounded):.2f}x), "
                       f"has ITL p99 {_ms(itl[id(unbounded)])}"))
        out.append(BestUnderItl(target=target, workload=workload, concurrency=concurrency, method=method,
                                n=best.n if best else None, speedup=best.speedup if best else None,
                                itl_p99_ms=itl[id(best)] if best else None, unbounded_n=unbounded.n, text=text))
    return out
