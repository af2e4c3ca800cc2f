"""A plan run again: a run resumes the plan's latest experiment (its completed runs are skipped),
so a finished plan has nothing left to run. That is said in one line, with the way to run it again
as a new experiment (`draftbench run PLAN --again`, the app's Run again): a later attempt of the
same plan, told apart from the earlier ones by a salted plan hash (Plan.attempt)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from workbench import store
from workbench.plan import Plan

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
    status = {r["key"]: r["status"] for r in store.runs_of_experiment(db, experiment)}
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
            f"nothing to run; to run it again as a new experiment: draftbench run {plan_path} --again")
