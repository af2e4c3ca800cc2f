"""Stored rows as typed records: a run (what the store's reads of the runs table return, so no
caller indexes a row by a column's name or decodes its JSON itself), an experiment as History
groups runs under it, a sweep in progress, a reader's notes on a run, a stored answer, and what
the Live page reads of a run since its last poll."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, Mapping, TypeAlias

from workbench.store.errors import StoreError


class RunStatus(StrEnum):
    """Where a run is. A StrEnum, so a status still compares equal to the text stored for it."""
    PENDING = "pending"        # registered, not started (or reset for a redo)
    RUNNING = "running"
    COMPLETED = "completed"
    PARTIAL = "partial"        # finished with some requests failed: figures kept, left out of speedups
    FAILED = "failed"
    SKIPPED = "skipped"        # a repeat `repeats = "auto"` did not need
    CANCELLED = "cancelled"    # in flight when the sweep was interrupted


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One row of the runs table, its fields in the table's order. The schema makes no column but the
    id NOT NULL, so every other field may be None, as is a column a migration added in a row read
    from a file that predates it. JSON columns other than `per_position` stay as stored (text)."""
    id: int
    experiment_id: int
    status: RunStatus
    key: str | None = None
    seq: int | None = None
    server_key: str | None = None
    target: str | None = None
    method: str | None = None
    draft: str | None = None
    n: int | None = None
    options: str | None = None
    workload: str | None = None
    concurrency: int | None = None
    request_rate: float | None = None
    repeat: int | None = None
    num_prompts: int | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    warmup: int | None = None
    error: str | None = None
    log_tail: str | None = None
    command: str | None = None
    argv: str | None = None
    env: str | None = None
    vllm_version: str | None = None
    torch_version: str | None = None
    host: str | None = None
    started: float | None = None
    finished: float | None = None
    prompts_seen_before: int | None = None
    window_s: float | None = None
    output_tokens: int | None = None
    output_tok_s: float | None = None
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    drafts: float | None = None
    draft_tokens: float | None = None
    accepted: float | None = None
    mal: float | None = None
    acceptance_rate: float | None = None
    per_position: tuple[float, ...] | None = None
    requests_ok: int | None = None
    requests_failed: int | None = None
    ttft_mean_ms: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    itl_mean_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    tpot_mean_ms: float | None = None
    e2el_mean_ms: float | None = None
    spec_request_mal: float | None = None
    # Schema 3
    prompt_template: str | None = None
    ignore_eos: int | None = None
    warnings: str | None = None
    # Schema 4
    profile: str | None = None
    environment: str | None = None
    energy_j: float | None = None
    joules_per_token: float | None = None
    power_mean_w: float | None = None
    gpu_util_mean: float | None = None
    gpu_mem_peak_mib: float | None = None
    # Schema 7, 8, 9, 10, 11
    client_cpu_s: float | None = None
    client_processes: int | None = None
    provenance: str | None = None
    gpus: str | None = None
    what_if: int | None = None
    imposed: str | None = None
    app_cpu_s: float | None = None
    # Schema 12
    steady_s: float | None = None
    steady_tok_s: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    prefix_cache_hit_rate: float | None = None
    alarms: str | None = None
    # Schema 13
    accuracy: float | None = None
    graded: int | None = None
    lossless_baseline: int | None = None
    lossless_compared: int | None = None
    lossless_identical: int | None = None
    lossless_prefix: float | None = None
    lossless_turned_wrong: int | None = None
    lossless_turned_right: int | None = None
    # Schema 14, 15
    transformers_version: str | None = None
    draft_sample_method: str | None = None
    redone_by: int | None = None
    # Not columns: what the run's requests add (workbench.analysis.latency.with_requests), None as
    # read. TPOT is stored as a mean only, its percentiles come from the requests table.
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    request_mal: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The row as stored (per_position as JSON text, the status as its text), for the places
        that hand a run on as a mapping: JSON files, tables keyed by column."""
        out = {name: getattr(self, name) for name in RUN_FIELDS}  # the columns, not what was added
        out["status"] = str(self.status)
        out["per_position"] = None if self.per_position is None else json.dumps(list(self.per_position))
        return out


DERIVED = ("tpot_p50_ms", "tpot_p99_ms", "request_mal")
RUN_FIELDS = tuple(f.name for f in fields(RunRecord) if f.name not in DERIVED)
# Every row has these from the moment it is registered (or imported); the schema enforces none of
# them, so a row without one is refused here rather than typed as something it is not.
_REQUIRED = ("id", "experiment_id", "status")


def _curve(value: Any) -> tuple[float, ...] | None:
    # Stored as JSON text; a row built in memory may already hold the list.
    if value is None or value == "":
        return None
    return tuple(float(p) for p in (json.loads(value) if isinstance(value, str) else value))


def run_status(text: str, whose: str) -> RunStatus:
    """A status as stored (`whose`: the run it is of, as an error names it); one no version wrote
    is refused rather than typed as something else."""
    try:
        return RunStatus(text)
    except ValueError:
        raise StoreError(f"{whose} has an unknown status {text!r}") from None


def run_record(row: Mapping[str, Any]) -> RunRecord:
    """The record of a runs-table row (a mapping by column name). Columns the row lacks (an older
    file) are None; keys that are not columns (another table's, a caller's additions) are ignored."""
    missing = [name for name in _REQUIRED if row.get(name) is None]
    if missing:
        raise StoreError(f"run {row.get('id', '?')} has no {missing[0]}")
    values = {name: row[name] for name in RUN_FIELDS if name in row}
    values["status"] = run_status(values["status"], f"run {values['id']}")
    values["per_position"] = _curve(row.get("per_position"))
    return RunRecord(**values)


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRecord:
    """One row of the sweeps table: an invocation of the runner, so the app can find a sweep still in
    progress (its pid and events file) and follow it again."""
    id: int
    experiment_id: int | None = None
    pid: int | None = None
    host: str | None = None
    events_path: str | None = None
    started: float | None = None
    heartbeat: float | None = None
    finished: float | None = None
    status: str | None = None
    runs_total: int | None = None
    runs_pending: int | None = None


SWEEP_FIELDS = tuple(f.name for f in fields(SweepRecord))


def sweep_record(row: Mapping[str, Any]) -> SweepRecord:
    """The record of a sweeps-table row; keys that are not its columns are ignored."""
    return SweepRecord(**{name: row[name] for name in SWEEP_FIELDS if name in row})


@dataclass(frozen=True, slots=True)
class ExperimentRecord:
    """What History shows of an experiment: its id, name and when it was created (epoch seconds;
    None for the bare parent of runs whose experiment row is missing)."""
    id: int
    name: str = ""
    created: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Annotation:
    """A reader's tags (cleaned: each once, joined by ", ") and notes on one run."""
    run_id: int
    tags: str = ""
    notes: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """One answered request of a run: its text, and whether the task's grader found it right (None
    where the workload grades nothing). `idx` and `prompt_id` name the request across runs."""
    idx: int
    prompt_id: str
    text: str
    correct: bool | None


@dataclass(frozen=True, slots=True)
class FeedRows:
    """What the Live page reads of a run since its last poll: per table, the new rows (the table's
    FEED_COLUMNS as plain tuples, which turn into one numpy array without a Python object per
    field), and per table the highest id read, where the next poll starts."""
    rows: dict[str, list[tuple[Any, ...]]]
    after: dict[str, int]


# A row of any table by column name, as the remote mirror copies it between databases: the mirror
# moves rows of ten tables alike, so it reads no column but the id and the parent's. The tables
# read by meaning have records above (run_record, sweep_record).
TableRow: TypeAlias = dict[str, Any]
