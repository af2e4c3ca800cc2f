"""The recorded results databases the tests read, the two ways they read them safely, and the bench
scripts that turn recorded GPU output into the docs' tables."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path
from types import ModuleType

from workbench import store

ROOT = Path(__file__).resolve().parents[2]
# The demo sweep recorded on one H200 GPU (docs/gpu/README.md): baseline, ngram N=2 and 4,
# draft_model N=1 and 3, each at concurrency 1 and 8, with GPU telemetry and server logs.
GPU_DB = ROOT / "docs" / "gpu" / "h200-tp1.sqlite"
# The demo sweep recorded on 2 CPU cores: a baseline, n-gram and a draft model, with their rows.
DEMO_DB = ROOT / "tests" / "fixtures" / "demo" / "demo-sweep.sqlite"


def bench_module(name: str) -> ModuleType:
    """bench/NAME.py imported as a module (bench/ is scripts, not a package); registered under its
    name first, as an import would, so the dataclasses it defines can resolve their own module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_db(src: Path, dst: Path) -> Path:
    """A consistent copy through SQLite's backup API; the source is opened immutable, so not even
    a -shm file appears beside it."""
    a, b = sqlite3.connect(f"file:{src}?immutable=1", uri=True), sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()
    return dst


def stored_runs(path: Path) -> list[store.RunRecord]:
    """Every run of a results file, read through the store and closed again."""
    db = store.open_db(path, readonly=True)
    try:
        return store.runs(db)
    finally:
        store.close(db)

