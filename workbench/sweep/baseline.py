"""The baseline first: every speculative run's speedup is measured against the baseline at its
workload and concurrency, so a sweep runs the baseline before them, retries a failed baseline
run (`[sweep] baseline_retries`), and holds back the speculative runs that would still have
nothing to be compared with (`[sweep] without_baseline = "skip"`, the default) instead of
spending their servers' time on figures no speedup can come from."""

from __future__ import annotations

from workbench import store
from workbench.plan import Plan, Run


def is_baseline(r: Run) -> bool:
    return r.server.method == "baseline"


def _where(r: Run | store.RunRecord) -> tuple[str | None, int | None]:
    return (r.workload, r.concurrency)


def failed(plan: Plan, rows: list[store.RunRecord]) -> list[Run]:
    """The plan's baseline runs whose stored row failed (or ended partial): those a retry redoes."""
    status = {row.key: row.status for row in rows}
    return [r for r in plan.runs if is_baseline(r) and status.get(r.key) in ("failed", "partial")]


def missing(plan: Plan, rows: list[store.RunRecord]) -> set[tuple[str | None, int | None]]:
    """Each workload and concurrency of the plan whose baseline has no completed run."""
    if not any(is_baseline(r) for r in plan.runs):
        return set()  # `baseline = false`: the plan says its baseline is measured elsewhere
    done = {_where(row) for row in rows if row.method == "baseline" and row.status == "completed"}
    return {_where(r) for r in plan.runs if not is_baseline(r)} - done


def held(runs: list[Run], missing_at: set[tuple[str | None, int | None]]) -> list[Run]:
    """The speculative runs among `runs` that have no baseline to be compared with."""
    return [r for r in runs if not is_baseline(r) and _where(r) in missing_at]


def reason(missing_at: set[tuple[str | None, int | None]], tries: int) -> str:
    """Why speculative runs were not started, in one line (stored with each of them)."""
    where = ", ".join(f"{w} c={c}" for w, c in sorted(missing_at))
    times = "once" if tries == 1 else f"{tries} times"
    return (f"not started: the baseline failed {times} at {where}, so these runs would have no baseline to be "
            "compared with; run the plan again to retry the baseline (or set [sweep] without_baseline = \"run\")")


def note(count: int, missing_at: set[tuple[str | None, int | None]], tries: int) -> str:
    """The sweep's one line about it."""
    where = ", ".join(f"{w} c={c}" for w, c in sorted(missing_at))
    times = "once" if tries == 1 else f"{tries} times"
    return (f"the baseline failed {times} at {where}: {count} speculative run(s) not started (they would have no "
            "baseline to be compared with); run the plan again to retry the baseline")
