"""A reader's tags and notes on runs, and the experiments runs are grouped under in History."""

from __future__ import annotations

import time

from workbench.store.connection import Database
from workbench.store.records import Annotation, ExperimentRecord


def clean_tags(text: str) -> str:
    """Tags as typed (commas or spaces between them), each once, in the order first written, joined
    by ", ": what is stored and shown, so a search for a tag finds it however it was typed."""
    seen: list[str] = []
    for tag in text.replace(",", " ").split():
        if tag not in seen:
            seen.append(tag)
    return ", ".join(seen)


def set_annotation(db: Database, run_id: int, tags: str, notes: str) -> None:
    """Stores a run's tags and notes (replacing what it had); both empty forget the run's entry."""
    tags, notes = clean_tags(tags), notes.strip()
    with db.conn:
        if not tags and not notes:
            db.execute("DELETE FROM annotations WHERE run_id = ?", [run_id])
            return
        db.execute("INSERT INTO annotations (run_id, tags, notes, updated) VALUES (?, ?, ?, ?) ON CONFLICT(run_id) "
                   "DO UPDATE SET tags = excluded.tags, notes = excluded.notes, updated = excluded.updated",
                   [run_id, tags, notes, time.time()])


def annotated_runs(db: Database) -> list[Annotation]:
    """Every annotated run's tags and notes, in run id order. A file opened read-only before it was
    migrated has no such table: none."""
    if "annotations" not in db.table_names():
        return []
    return [Annotation(run_id=run_id, tags=tags, notes=notes)
            for run_id, tags, notes in db.execute("SELECT run_id, tags, notes FROM annotations ORDER BY run_id")]


def experiments(db: Database) -> list[ExperimentRecord]:
    """Every experiment's id, name and when it was created, oldest first (History's parent rows)."""
    return [ExperimentRecord(*row) for row in db.execute("SELECT id, name, created FROM experiments ORDER BY id")]


def experiment(db: Database, experiment_id: int) -> ExperimentRecord | None:
    """One experiment's id, name and when it was created; None when there is no such row."""
    row = db.execute("SELECT id, name, created FROM experiments WHERE id = ?", [experiment_id]).fetchone()
    return ExperimentRecord(*row) if row else None
