"""Published per-position acceptance tables, to impose in what-if runs (resources/curves/).

Each table is one (target, method, dataset) of a publication, with a measured curve at each N it
reports. A what-if run at N takes that N's own curve when the publication has it, else the first N
positions of the longest one (a survival curve truncated is the curve of the smaller N).

Shipped: the reference study's Gemma 4 MTP tables (vLLM 0.23 on 8x AMD Instinct MI300X, ROCm 7.2,
GSM8K / MATH500 / HumanEval / MBPP, N = 1..5; file `reference_study_mtp.csv`).
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass

from workbench import paths

REFERENCE_STUDY = "reference study: vLLM speculative decoding on 8x AMD Instinct MI300X, ROCm 7.2, vLLM 0.23 (2026)"
FILES = {"reference_study_mtp.csv": ("reference-study", REFERENCE_STUDY)}
METHOD_NAMES = {"Gemma 4 MTP": "mtp", "EAGLE-3": "eagle3", "DFlash": "dflash", "DSpark": "dspark"}


@dataclass(frozen=True)
class Table:
    key: str                                   # reference-study/gemma-4-26b-a4b-it/mtp/gsm8k
    target: str                                # the Hub repo the curve was measured on
    method: str
    dataset: str
    citation: str
    by_n: dict[int, tuple[float, ...]]

    @property
    def longest(self) -> tuple[float, ...]:
        return self.by_n[max(self.by_n)]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


@functools.cache
def tables() -> dict[str, Table]:
    found: dict[str, dict] = {}
    for name, (publication, citation) in FILES.items():
        with open(paths.resources_dir() / "curves" / name, newline="") as f:
            for row in csv.DictReader(f):
                method = METHOD_NAMES.get(row["method"], _slug(row["method"]))
                key = "/".join((publication, _slug(row["target"].split("/")[-1]), method, _slug(row["dataset"])))
                t = found.setdefault(key, {"target": row["target"], "method": method, "dataset": row["dataset"],
                                           "citation": citation, "by_n": {}})
                t["by_n"][int(row["N"])] = tuple(float(p) for p in row["per_position"].split())
    return {k: Table(k, **v) for k, v in sorted(found.items())}


def keys() -> list[str]:
    return list(tables())


def get(key: str) -> Table | None:
    return tables().get(key)


def at_n(key: str, n: int) -> tuple[float, ...] | None:
    t = get(key)
    return t.by_n.get(n) if t else None


def for_target(repo: str, method: str | None = None) -> list[Table]:
    """The published tables measured on this target (a Hub repo id), optionally for one method."""
    return [t for t in tables().values()
            if t.target.lower() == repo.lower() and (method is None or t.method == method)]
