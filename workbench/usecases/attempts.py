"""A plan run again: a run resumes the plan's latest experiment (its completed runs are skipped),
so a finished plan has nothing left to run. That is said in one line, with the way to run it again
as a new experiment (`draftbench run PLAN --again`, the app's Run again): a later attempt of the
same plan, told apart from the earlier ones by a salted plan hash (Plan.attempt). Or more repeats
of every configuration, added to that same latest experiment (`draftbench run PLAN --add-repeats K`,
the app's Add repeats): only the added runs run, and the figures of all repeats are compared together."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from workbench import store
from workbench.errors import DraftbenchError
from workbench.plan import Plan, Run

DONE = ("completed", "skipped")  # what a resumed sweep does not run again


@dataclass(frozen=True)
class Latest:
    attempt: int             # the plan's latest attempt recorded (1 when none is)
    experiment: int | None   # its experiment; None when the plan was never recorded
    total: int               # the plan's runs
    done: int                # of those, completed in that experiment

    @property
    def finished(self) -> bool:
        return self.experiment is not None and self.done >= self.total > 0


def latest(p: Plan, db: store.Database | None) -> Latest:
    """The plan's latest attempt in `db` (opened; None: no database yet) and how far it got.
    Attempts are numbered without gaps: each --again starts the one after the latest."""
    attempt, experiment, k = 1, None, 1
    while db is not None and (found := store.experiment_of_plan(db, replace(p, attempt=k).hash)) is not None:
        attempt, experiment, k = k, found, k + 1
    if experiment is None or db is None:
        return Latest(attempt, None, len(p.runs), 0)
    status = {r.key: r.status for r in store.runs_of_experiment(db, experiment)}
    return Latest(attempt, experiment, len(p.runs), sum(status.get(r.key) in DONE for r in p.runs))


def latest_at(p: Plan, db_path: str | Path | None) -> Latest:
    """`latest` in the results file at `db_path` (read-only; a file not there yet holds no attempt)."""
    if db_path is None or not Path(db_path).exists():
        return latest(p, None)
    db = store.open_db(db_path, readonly=True)
    try:
        return latest(p, db)
    finally:
        store.close(db)


def choose(p: Plan, found: Latest, again: bool) -> Plan:
    """The plan as it runs: its latest attempt (resumed), or with `again` a new one after it."""
    return replace(p, attempt=found.attempt + 1 if again and found.experiment is not None else found.attempt)


def finished_line(p: Plan, found: Latest, db_path: str | Path, plan_path: str) -> str:
    """The one line that replaces a run of a finished plan doing nothing."""
    return (f"all {found.total} runs of plan {p.name!r} are complete in {db_path} (experiment {found.experiment}): "
            f"nothing to run; to run it again as a new experiment: draftbench run {plan_path} --again, or to add "
            f"repeats to it: draftbench run {plan_path} --add-repeats K")


MAX_ADDED = 100  # as many as a plan's own `repeats` may be


class AddRepeatsError(DraftbenchError):
    """Why repeats cannot be added, in one line."""


def check_count(k: int) -> int:
    """`k` itself when it is a number of repeats that may be added (1 to MAX_ADDED); else AddRepeatsError."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_ADDED:
        raise AddRepeatsError(f"the repeats to add must be a whole number from 1 to {MAX_ADDED}, not {k!r}")
    return k


def _as_repeat(r: Run, n: int) -> Run:
    # With `[sweep] relaunch = true` repeat n is served by launch n: an added repeat gets a server of its own too.
    server = replace(r.server, launch=n) if r.server.launch else r.server
    return replace(r, server=server, repeat=n)


def add_repeats(p: Plan, found: Latest, db: store.Database | None, k: int) -> Plan:
    """The plan's latest experiment with `k` more repeats of each of its configurations: only the
    added runs, numbered after the highest repeat stored for each configuration, placed after the
    experiment's runs and recorded in that same experiment (Plan.part's identity)."""
    if found.experiment is None or db is None:
        raise AddRepeatsError(f"plan {p.name!r} has never been run in this results database: nothing to add "
                              "repeats to; run it first")
    check_count(k)
    rows = store.runs_of_experiment(db, found.experiment)
    stored = {row.key for row in rows}
    numbers = sorted({row.repeat for row in rows if row.repeat is not None}, reverse=True)
    # One run stands for each configuration the experiment holds: an adaptive sweep registers only the
    # N it chose, and a configuration it never ran gets no repeats.
    configurations: dict[str, Run] = {}
    for r in p.runs:
        if r.key in stored:
            configurations.setdefault(_as_repeat(r, 0).key, r)
    added = []
    for r in configurations.values():
        highest = next(n for n in numbers if _as_repeat(r, n).key in stored)
        added += [_as_repeat(r, highest + i) for i in range(1, k + 1)]
    after = max((row.seq for row in rows if row.seq is not None), default=-1) + 1
    whole = choose(p, found, again=False)
    # The added runs are all measured: auto repeats would stop them early by the interval of these
    # alone, and an adaptive sweep would choose N again instead of repeating what it chose.
    return replace(whole, runs=added, identity=whole.hash, order={r.key: after + i for i, r in enumerate(added)},
                   auto_repeats=None, mode="exhaustive" if p.mode == "adaptive" else p.mode)


def added_line(p: Plan, experiment: int | None, k: int) -> str:
    """What a run with `k` added repeats (`add_repeats`'s plan) does, in one line."""
    configurations = len(p.runs) // k
    return (f"add repeats: {len(p.runs)} run(s) added to experiment {experiment} of plan {p.name!r}, {k} more "
            f"repeat(s) of each of its {configurations} configuration(s); only these run")
