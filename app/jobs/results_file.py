"""What the main window reads from the results file on a worker's thread (never the GUI thread: a
large or damaged file can take seconds to check)."""

from __future__ import annotations

from pathlib import Path

from app.exports import select
from workbench import store
from workbench.usecases.export_options import NoExperiments


def check_database(path: Path) -> None:
    """Raises StoreError when the file is no usable results database."""
    db = store.open_db(path)
    try:
        store.check_integrity(db, path)
    finally:
        store.close(db)


def latest_runs(path: Path) -> list[store.RunRecord]:
    """The runs of the file's latest experiment, none before the file exists."""
    try:
        return select(path) if path.exists() else []
    except NoExperiments:  # a new, empty results file: nothing to show yet, nothing wrong
        return []
