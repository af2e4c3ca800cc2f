"""Chart and table data written to files: CSV (a list cell as its numbers separated by spaces) and JSON,
one line or object per record, its fields by name."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from workbench.report.rows import Exportable


def write_csv(rows: Sequence[Exportable], path: str | Path) -> None:
    lines = [r.as_dict() for r in rows]
    columns = list(dict.fromkeys(k for line in lines for k in line))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        # A list (an imposed curve) as its numbers separated by spaces, as `draftbench show` prints
        # a per-position curve, rather than Python's brackets.
        writer.writerows({k: " ".join(map(str, v)) if isinstance(v, list) else v for k, v in line.items()}
                         for line in lines)


def write_json(rows: Sequence[Exportable], path: str | Path) -> None:
    Path(path).write_text(json.dumps([r.as_dict() for r in rows], indent=1))
