"""The speedup table's columns and cells, as the Compare page, `draftbench show` and the report print them."""

from __future__ import annotations

TABLE_COLUMNS = [
    ("target", "Target", "{}"), ("method", "Method", "{}"), ("workload", "Workload", "{}"),
    ("concurrency", "Conc.", "{}"), ("best_n", "Best N", "{}"), ("baseline_tok_s", "Baseline tok/s", "{:.1f}"),
    ("tok_s", "tok/s", "{:.1f}"), ("speedup", "Speedup", "{:.2f}"), ("mal", "MAL", "{:.2f}"),
    ("acceptance_rate", "Accept.", "{:.3f}"), ("efficiency", "Efficiency", "{:.2f}"), ("repeats", "Repeats", "{}"),
]


def cell(row: dict, key: str, fmt: str) -> str:
    value = row.get(key)
    if value is None:
        return "–"
    if key == "speedup" and row.get("speedup_ci95") is not None:
        mark = "" if row.get("beyond_noise") else " (within noise)"
        return f"{value:.2f} ± {row['speedup_ci95']:.2f}{mark}"
    return fmt.format(value)


def shown(row: dict, key: str, fmt: str) -> str:
    """A cell with the target by its folder or repo name (full paths go in the report's details)."""
    value = cell(row, key, fmt)
    return value.rstrip("/").rsplit("/", 1)[-1] if key == "target" else value


def speedup_text(row: dict) -> str:
    """`1.55 ± 0.04x`, or `1.55x` without repeats."""
    if row.get("speedup") is None:
        return "–"
    if row.get("speedup_ci95") is None:
        return f"{row['speedup']:.2f}x"
    return f"{row['speedup']:.2f} ± {row['speedup_ci95']:.2f}x"
