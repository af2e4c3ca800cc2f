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
from typing import Iterator, Mapping

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Curve:
    """One line of a publication's CSV: the per-position acceptance it measured for one target,
    method (as the publication names it), dataset and N. Its other columns are not read."""
    target: str
    method: str
    dataset: str
    n: int
    per_position: tuple[float, ...]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def _curve(line: Mapping[str, str]) -> Curve:
    """A CSV line (by its header's names) as a Curve; the per-position figures are space-separated."""
    return Curve(target=line["target"], method=line["method"], dataset=line["dataset"], n=int(line["N"]),
                 per_position=tuple(float(p) for p in line["per_position"].split()))


def _curves(name: str) -> Iterator[Curve]:
    with open(paths.resources_dir() / "curves" / name, newline="") as f:
        yield from map(_curve, csv.DictReader(f))


@functools.cache
def tables() -> dict[str, Table]:
    found: dict[str, Table] = {}
    for name, (publication, citation) in FILES.items():
        for curve in _curves(name):
            method = METHOD_NAMES.get(curve.method, _slug(curve.method))
            key = "/".join((publication, _slug(curve.target.split("/")[-1]), method, _slug(curve.dataset)))
            # The table's first line makes it; each line adds its N's curve to it.
            table = found.setdefault(key, Table(key, curve.target, method, curve.dataset, citation, {}))
            table.by_n[curve.n] = curve.per_position
    return dict(sorted(found.items()))


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
