"""Chart and table data written to files: CSV (a list cell as its numbers separated by spaces) and JSON."""

from __future__ import annotations

import csv
import json
from pathlib import Path


def write_csv(rows: list[dict], path: str | Path) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        # A list (an imposed curve) as its numbers separated by spaces, as `draftbench show` prints
        # a per-position curve, rather than Python's brackets.
        writer.writerows({k: " ".join(map(str, v)) if isinstance(v, list) else v for k, v in r.items()}
                         for r in rows)


def write_json(rows: list[dict], path: str | Path) -> None:
    Path(path).write_text(json.dumps(rows, indent=1))
