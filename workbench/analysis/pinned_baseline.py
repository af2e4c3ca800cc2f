"""A pinned baseline: one stored no-speculation run, of these runs' sweep or of another, that a
comparison takes every speedup and latency ratio against instead of each experiment's own baseline
(History's "Pin as baseline", `draftbench show --baseline RUN`), as a results browser compares
runs against the one a reader chose.

A run is measured at one load, and throughput at one concurrency says nothing of another, so only
configurations at the pinned run's concurrency (and request rate) are compared with it: elsewhere no
speedup is given and one sentence says so. The pin replaces the baseline of configurations of its
own kind only: a measured run is never the baseline of a what-if run (dummy weights), nor the other
way round."""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench import store
from workbench.analysis import basis as throughput_basis
from workbench.analysis import compare, latency
from workbench.analysis.answer import short_model
from workbench.errors import DraftbenchError

# The conditions besides the load a baseline normally shares with what it is compared with
# (compare.MATCH): a pin from another sweep may differ in them, which a reader must be told.
CONDITIONS = (("target", "target"), ("workload", "workload"), ("max_tokens", "max tokens"),
              ("temperature", "temperature"), ("top_p", "top-p"), ("num_prompts", "prompts"))


class PinnedBaselineError(DraftbenchError, ValueError):
    """A run that cannot be the baseline, in one line."""


def refusal(run_id: int, row: store.RunRecord | None, include_partial: bool = False) -> str:
    """Why run `run_id` (its stored `row`, None when there is none) cannot be the baseline, in one
    line; "" when it can: a finished run without speculation that measured a throughput."""
    if row is None:
        return f"no run {run_id} in the database to pin as the baseline"
    why = f"run {run_id} cannot be the baseline"
    if row.method != "baseline":
        n = "" if row.n is None else f" N={row.n}"
        return f"{why}: it is speculative ({row.method}{n}); pin a run without speculation"
    if row.status == "failed":
        return f"{why}: it failed"
    if row.status == "partial" and not include_partial:
        # A partial run is left out of every figure unless partial runs are counted: so is a pin.
        return f"{why}: some of its requests failed (count partial runs to use it)"
    if row.status not in compare.WITH_PARTIAL:
        return f"{why}: it has not finished ({row.status})"
    if not row.output_tok_s:
        return f"{why}: it measured no throughput"
    return ""


def read(db: store.Database, run_id: int, include_partial: bool = False) -> tuple[store.RunRecord, str | None]:
    """The pinned run with what its requests add (TPOT percentiles, as every compared run has), and
    its experiment's name; PinnedBaselineError when it cannot be the baseline."""
    row = store.run(db, run_id)
    why = refusal(run_id, row, include_partial)
    if why:
        raise PinnedBaselineError(why)
    assert row is not None  # refusal answers for a missing run
    found = store.experiment(db, row.experiment_id)
    name = found.name if found is not None else None
    return latency.with_requests(db, [row])[0], name


def _load(row: store.RunRecord) -> tuple[int | None, float | None]:  # (concurrency, request rate)
    return row.concurrency, row.request_rate


def _load_text(load: tuple[int | None, float | None]) -> str:
    concurrency, rate = load
    return f"c={concurrency}" + ("" if rate is None else f" at {rate:g} req/s")


@dataclass
class Pinned:
    """The pinned run as a one-run configuration (its throughput on the basis of what it is compared
    with), and what the reader is told of it."""
    row: store.RunRecord
    config: compare.Config
    sentence: str                # which run is the pinned baseline and where it came from
    missing: str                 # the loads it was not measured at, "" when it covers every one compared
    differs: list[str] = field(default_factory=list)  # conditions it does not share with what it is compared with

    def applies_to(self, row: store.RunRecord) -> bool:
        """Whether `row` is of the pin's kind (measured, or what-if), so compared with it."""
        return compare.is_what_if(row) == compare.is_what_if(self.row)

    def at_its_load(self, row: store.RunRecord) -> bool:
        """Whether `row` ran at the pinned run's concurrency and request rate."""
        return _load(row) == _load(self.row)

    def run_speedup(self, row: store.RunRecord) -> float | None:
        """One run's throughput over the pinned run's, on the same basis as its configuration's
        speedup; None at another load than the pin's."""
        base = self.config.tok_s.mean
        mine = throughput_basis.tok_s(row, self.config.basis)
        if not self.at_its_load(row) or not base or not mine:
            return None
        return mine / base


def apply(cs: list[compare.Config], row: store.RunRecord, experiment_name: str | None = None) -> Pinned:
    """Links every speculative configuration of the pin's kind to the pinned run (`row`, checked by
    `refusal`): those at its load compare with it, the others with nothing. The throughput basis is
    chosen again over the pinned run and the configurations compared with it, as `compare.configs`
    chooses it over a baseline and its configurations."""
    pin = compare.Config([row])
    mine = [c for c in cs if c.method != "baseline" and compare.is_what_if(c.rows[0]) == compare.is_what_if(row)]
    compared = [c for c in mine if _load(c.rows[0]) == _load(row)]
    at_load = {id(c) for c in compared}  # by identity: configurations compare equal field by field
    for c in mine:
        c.baseline = pin if id(c) in at_load else None
    chosen = throughput_basis.choose([row] + [r for c in compared for r in c.rows])
    for c in [pin, *compared]:
        c.on_basis(chosen)
    others = sorted({_load(c.rows[0]) for c in mine} - {_load(row)}, key=lambda x: [str(v) for v in x])
    missing = (f"The pinned baseline ran at {_load_text(_load(row))} only, so nothing at "
               f"{', '.join(_load_text(x) for x in others)} has a speedup here.") if others else ""
    experiments = {r.experiment_id for c in cs for r in c.rows}
    return Pinned(row=row, config=pin, sentence=_sentence(pin, experiment_name, experiments), missing=missing,
                  differs=_differs(row, compared))


def _sentence(pin: compare.Config, experiment_name: str | None, experiments: set[int]) -> str:
    row = pin.rows[0]
    name = f" “{experiment_name}”" if experiment_name else ""
    whose = ("one of the experiments compared" if row.experiment_id in experiments
             else "another experiment than the runs compared")
    tok_s = "" if pin.tok_s.mean is None else f", {pin.tok_s.mean:.1f} tok/s"
    return (f"Speedups and latency ratios are against the pinned baseline, run {row.id} "
            f"({short_model(row.target)} on {row.workload} at {_load_text(_load(row))}{tok_s}), "
            f"from experiment {row.experiment_id}{name}, {whose}.")


def _differs(row: store.RunRecord, compared: list[compare.Config]) -> list[str]:
    """One line naming the conditions the pinned run does not share with the runs compared with it
    (a pin from another sweep may have served another target or workload): [] when it shares all."""
    def shown(key: str, value: object) -> str:
        return short_model(str(value)) if key == "target" and value is not None else str(value)

    parts = []
    for key, label in CONDITIONS:
        theirs = {getattr(r, key) for c in compared for r in c.rows}
        if theirs and theirs != {getattr(row, key)}:
            values = ", ".join(sorted(shown(key, v) for v in theirs))
            parts.append(f"{label} ({shown(key, getattr(row, key))} against {values})")
    if not parts:
        return []
    return [f"the pinned baseline, run {row.id}, differs from the runs compared with it in " + "; ".join(parts)]
