"""The results database: one SQLite file (WAL), a schema version and forward-only migrations.

The only door to it: everything else reads and writes through the names exported here, and
no SQL is written anywhere but in this package."""

from __future__ import annotations

# BUSY_TIMEOUT_S stays in workbench.store.connection, where open_db reads it (a test shortens it there).
from workbench.store.annotations import annotated_runs, clean_tags, experiment, experiments, set_annotation
from workbench.store.connection import Database, check_integrity, close, open_db, tables
from workbench.store.errors import DatabaseError, StoreError, explain
from workbench.store.mirror import Mirror, MirrorState, mirrored_rows
from workbench.store.queries import (FEED_COLUMNS, active_sweeps, answers, completed_run_keys, completed_siblings, counter_samples,
                                     experiment_of_plan, experiment_plan, experiment_source, failed_runs_of_sweep, first_run_of_experiment, gpu_means, latest_experiment,
                                     recommendation_summaries, request_counts, request_timings, run, run_feed, runs, runs_in_plan_order,
                                     runs_of_experiment, sampling_of_completed, spec_requests, status_counts)
from workbench.store.records import (RUN_FIELDS, Annotation, Answer, ExperimentRecord, FeedRows, RunRecord, RunStatus,
                                     SweepRecord, TableRow, run_record, sweep_record)
from workbench.store.recorder import Recorder, add_imported_run, delete_run, experiment_for, sweep_exited
from workbench.store.schema import (MIGRATIONS, MUTABLE_TABLES, RUN_COLUMNS, RUN_TABLES, SCHEMA_VERSION,
                                    schema_version)
from workbench.store.source import RunSignature, Source, backup, latest_sweep

__all__ = [
    "annotated_runs", "clean_tags", "experiment", "experiments", "set_annotation",
    "Database", "check_integrity", "close", "open_db", "tables",
    "DatabaseError", "StoreError", "explain", "Mirror", "MirrorState", "mirrored_rows",
    "FEED_COLUMNS", "active_sweeps", "answers", "completed_run_keys", "completed_siblings", "counter_samples", "experiment_of_plan", "experiment_plan", "experiment_source", "failed_runs_of_sweep",
    "first_run_of_experiment", "gpu_means", "latest_experiment", "recommendation_summaries", "request_counts", "request_timings", "run", "run_feed",
    "runs", "runs_in_plan_order", "runs_of_experiment", "sampling_of_completed", "spec_requests",
    "status_counts",
    "RUN_FIELDS", "Annotation", "Answer", "ExperimentRecord", "FeedRows", "RunRecord", "RunStatus", "SweepRecord",
    "TableRow", "run_record", "sweep_record",
    "Recorder", "add_imported_run", "delete_run", "experiment_for", "sweep_exited",
    "MIGRATIONS", "MUTABLE_TABLES", "RUN_COLUMNS", "RUN_TABLES", "SCHEMA_VERSION", "schema_version",
    "RunSignature", "Source", "backup", "latest_sweep",
]
