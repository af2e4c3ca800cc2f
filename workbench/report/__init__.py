"""Exports without Qt: chart data to CSV/JSON, and a self-contained HTML report (charts passed in as SVG)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from workbench.report.html import Report, render
from workbench.report.table import TABLE_COLUMNS, cell, shown, speedup_text

__all__ = ["Report", "render", "TABLE_COLUMNS", "cell", "shown", "speedup_text", "write_csv", "write_json"]


def write_csv(rows: list[dict], path: str | Path) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def write_json(rows: list[dict], path: str | Path) -> None:
    Path(path).write_text(json.dumps(rows, indent=1))
