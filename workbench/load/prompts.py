"""What a workload is made of, shared by the prompt files (workloads) and the benchmarks (datasets):
the prompt, the one-line error, and reading rows out of a .jsonl or .parquet file."""

from __future__ import annotations

from typing import Any
import json
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import DraftbenchError


class WorkloadError(DraftbenchError, ValueError):
    """A one-line reason a workload cannot be used."""


@dataclass(frozen=True)
class Prompt:
    id: str
    family: str
    text: str
    # The task's own answer, when the workload has one (GSM8K's number after '####', MATH500's
    # answer, the built-in math prompts'): what an answer is graded against (workbench.load.grade).
    reference: str | None = None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    raise WorkloadError(f"{path.name} line {lineno} is not valid JSON") from None
                if not isinstance(row, dict):
                    raise WorkloadError(f"{path.name} line {lineno} is not a JSON object")
                rows.append(row)
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return rows


def read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        # Deferred: pyarrow takes a while to import and only a parquet workload needs it
        import pyarrow.parquet as pq
    except ImportError:
        raise WorkloadError("reading parquet needs pyarrow: pip install pyarrow") from None
    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several unrelated types for a bad file
        raise WorkloadError(f"{path.name} is not a readable parquet file ({type(exc).__name__})") from None


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a .parquet or .jsonl/.json file."""
    if path.suffix == ".parquet":
        return read_parquet(path)
    if path.suffix in (".jsonl", ".json"):
        return read_jsonl(path)
    raise WorkloadError(f"{path.name} must be .jsonl or .parquet")
