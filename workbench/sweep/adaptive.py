"""Adaptive sweeps: for each method x workload x concurrency, run the baseline, N_max and the
smallest N, predict speedup against N (workbench.analysis.recommend), run the predicted best N (and the
runner-up when the two are within noise), and stop once the best is measured and confirmed.

The runs go into the plan's one experiment through the ordinary Runner, a part of the plan at a
time; every decision is re-derived from the completed runs in the database, so a resumed sweep
takes the same path and redoes only what is missing."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench import events, store
from workbench.analysis import compare, recommend
from workbench.plan import Plan, Run
from workbench.sweep.runner import Runner


# A method as the plan names it: (method, draft, its options).
MethodKey = tuple[str, str | None, tuple[tuple[str, object], ...]]


def _method_key(r: Run) -> MethodKey:
    s = r.server
    return (s.method, s.draft, s.options)


@dataclass
class Context:
    """One method (with its draft and options) at one workload and concurrency."""
    method: MethodKey
    workload: str
    concurrency: int
    ns: list[int]
    first: recommend.Recommendation | None = None  # the prediction from the probe runs
    last: recommend.Recommendation | None = None
    error: str | None = None
    measured: set[int] = field(default_factory=set)

    @property
    def label(self) -> str:
        draft = f" ({Path(self.method[1]).name})" if self.method[1] else ""
        return f"{self.method[0]}{draft} · {self.workload} · c={self.concurrency}"

    def matches(self, r: Run) -> bool:
        return (_method_key(r) == self.method and r.workload == self.workload
                and r.concurrency == self.concurrency)

    def owns(self, c: compare.Config) -> bool:
        row = c.rows[0]
        return ((row.method, row.draft, json.dumps(dict(self.method[2]))) ==
                (self.method[0], self.method[1], row.options) and row.workload == self.workload
                and row.concurrency == self.concurrency)

    def message(self) -> str:
        rec = self.last
        if rec is None:
            return f"{self.label}: no recommendation ({self.error})"
        best = rec.best
        predicted = (self.first or rec).at(rec.best_n)
        measured = "not measured" if best.measured is None else f"{best.measured:.2f}"
        return (f"{self.label}: best N = {rec.best_n}, predicted speedup {predicted.speedup:.2f} "
                f"± {predicted.half_width:.2f}, measured {measured}, runs used {len(self.measured) + 1} "
                f"of {len(self.ns) + 1}" + (f" (N={rec.runner_up} is within noise)" if rec.uncertain else ""))


def contexts(plan: Plan) -> list[Context]:
    out: dict[tuple[MethodKey, str, int], Context] = {}
    for r in plan.runs:
        if r.server.method == "baseline":
            continue
        assert r.server.n is not None  # every speculative run has its N
        key = (_method_key(r), r.workload, r.concurrency)
        ctx = out.setdefault(key, Context(key[0], r.workload, r.concurrency, []))
        if r.server.n not in ctx.ns:
            ctx.ns.append(r.server.n)
    for ctx in out.values():
        ctx.ns.sort()
    return list(out.values())


class AdaptiveRunner(Runner):
    def run(self) -> dict[str, Any]:
        plan = self.plan
        self.contexts = contexts(plan)
        first = [r for r in plan.runs if r.server.method == "baseline"
                 or any(c.matches(r) and r.server.n in recommend.probes(c.ns) for c in self.contexts)]
        pending = self.register(plan.part(first))
        assert self.experiment_id is not None  # set by register()
        # The whole plan is the upper bound of the sweep; it ends early when the best N is confirmed.
        done = store.completed_run_keys(self.db, self.experiment_id)
        total = sum(r.key not in done for r in plan.runs)
        self.start_sweep(len(plan.runs), total)
        self.emit(events.AdaptiveStarted(contexts=len(self.contexts),
                                         probes={c.label: recommend.probes(c.ns) for c in self.contexts}))
        attempted: set[str] = set()
        while not self.cancelled:
            attempted.update(r.key for r in pending)
            self.execute(pending, total)
            if self.cancelled:
                break
            chosen = self._decide()
            todo = [r for r in plan.runs if r.key not in attempted
                    and any(c.matches(r) and r.server.n in chosen.get(id(c), ()) for c in self.contexts)]
            if not todo:
                break
            pending = self.register(plan.part(todo))
        results = [] if self.cancelled else self._conclude()
        return self.finish_sweep({"launches": self.launches, "recommendations": results})

    def _decide(self) -> dict[int, list[int]]:
        """From everything measured so far: each context's prediction and the N it needs next.
        An N counts as measured once all its repeats are; the first prediction is always the one
        from the probes alone, so a resumed sweep reports the same figures."""
        assert self.experiment_id is not None  # set by register()
        rows = store.runs_of_experiment(self.db, self.experiment_id)
        done = {r.key for r in rows if r.status == "completed"}
        cs = compare.configs(rows)
        baselines = [c for c in cs if c.method == "baseline"]
        spec: dict[int, list[compare.Config]] = {}
        for ctx in self.contexts:
            ctx.measured = {n for n in ctx.ns if all(r.key in done for r in self.plan.runs
                                                     if ctx.matches(r) and r.server.n == n)}
            spec[id(ctx)] = [c for c in cs if c.method != "baseline" and ctx.owns(c) and c.n in ctx.measured]
        probed = {id(ctx): [c for c in spec[id(ctx)] if c.n in recommend.probes(ctx.ns)] for ctx in self.contexts}
        noise_probes = recommend.noise(baselines + [c for g in probed.values() for c in g])
        noise_all = recommend.noise(baselines + [c for g in spec.values() for c in g])
        chosen: dict[int, list[int]] = {}
        for ctx in self.contexts:
            try:
                ctx.first = recommend.for_group(probed[id(ctx)], ctx.ns, *noise_probes)
                rec = recommend.for_group(spec[id(ctx)], ctx.ns, *noise_all)
            except recommend.RecommendError as exc:
                ctx.error = str(exc)
                self.emit(events.Prediction(context=ctx.label, error=ctx.error, next_n=[]))
                continue
            ctx.last = rec
            chosen[id(ctx)] = [n for n in recommend.next_to_measure(rec, ctx.measured) if n in ctx.ns]
            self.emit(events.Prediction(
                context=ctx.label, best_n=rec.best_n, uncertain=rec.uncertain, runner_up=rec.runner_up,
                measured_n=sorted(ctx.measured), next_n=chosen[id(ctx)],
                curve=[[p.n, round(p.speedup, 4), round(p.half_width, 4)] for p in rec.curve]))
        return chosen

    def _conclude(self) -> list[dict[str, Any]]:
        assert self.experiment_id is not None  # set by register()
        rows, results = [], []
        for ctx in self.contexts:
            rec = ctx.last
            message = ctx.message()
            figures: dict[str, Any] = {}
            if rec is not None:
                predicted = (ctx.first or rec).at(rec.best_n)
                figures = {"best_n": rec.best_n, "predicted_speedup": predicted.speedup,
                           "predicted_half_width": predicted.half_width, "measured_speedup": rec.best.measured,
                           "uncertain": rec.uncertain}
                rows.append({
                    "experiment_id": self.experiment_id, "target": self.plan.runs[0].server.target,
                    "method": ctx.method[0], "draft": ctx.method[1], "options": json.dumps(dict(ctx.method[2])),
                    "workload": ctx.workload, "concurrency": ctx.concurrency, "family": rec.family,
                    "best_n": rec.best_n, "predicted_speedup": predicted.speedup,
                    "predicted_half_width": predicted.half_width, "measured_speedup": rec.best.measured,
                    "uncertain": int(rec.uncertain), "runner_up": rec.runner_up,
                    "runs_used": len(ctx.measured) + 1, "runs_total": len(ctx.ns) + 1,
                    "measured_n": json.dumps(sorted(ctx.measured)), "alpha": rec.line.alpha, "beta": rec.line.beta,
                    "curve": json.dumps([{"n": p.n, "speedup": p.speedup, "half_width": p.half_width,
                                          "measured": p.measured} for p in rec.curve]),
                    "summary": message, "created": time.time()})
            event = events.Recommendation(context=ctx.label, message=message, runs_used=len(ctx.measured) + 1,
                                          runs_total=len(ctx.ns) + 1, **figures)
            self.emit(event)
            results.append(event.to_json())
        self.record.recommendations(self.experiment_id, rows)
        return results
