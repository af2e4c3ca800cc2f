"""What `draftbench export` and `draftbench report` are asked for: parsed and checked once, by the
command line (workbench.cli.export), into one ExportOptions, which app.exports draws from, in this
process or in a child that gets it as JSON. Light on purpose: the command line's parser imports it
on every start; the runs are chosen by workbench.usecases.compare_view.select."""

from __future__ import annotations

import json
from typing import Any
from dataclasses import asdict, dataclass, fields

from workbench.errors import DraftbenchError
from workbench.usecases.chart_names import ALL_CHARTS

FORMATS = ("png", "svg", "pdf", "csv", "json")


class ExportError(DraftbenchError):
    """A selection or option that cannot be exported, in one line."""


class NoExperiments(ExportError):  # noqa: N818 - a signal, not an error
    """A results file with nothing in it yet: an error for `export`, a normal start for the app."""


@dataclass(frozen=True)
class ExportOptions:
    """The defaults are the command line's own."""
    verb: str                           # "export" (chart and data files) or "report" (one HTML file)
    db: str
    out: str                            # the folder (export) or the HTML file (report) to write
    experiment: int | None = None       # None: the latest, unless runs are chosen
    runs: tuple[int, ...] = ()          # chosen runs instead of an experiment
    formats: tuple[str, ...] = FORMATS
    charts: tuple[str, ...] = ALL_CHARTS
    every_chart: bool = True            # `--chart all`: a what-if chart is missed only where there are what-if runs
    width: int = 1200
    height: int = 800
    dpi: int = 150
    title: str | None = None            # the report's; None: one naming how many runs
    baseline: int | None = None         # a pinned baseline run for every speedup; None: each experiment's own

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ExportOptions":
        """The options `to_json` wrote; ExportError when `text` is not them."""
        try:
            given = json.loads(text)
            names = {f.name for f in fields(cls)}
            if not isinstance(given, dict) or not set(given) <= names:
                raise TypeError
            # JSON has no tuples: the sequences come back as lists.
            values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
            return cls(**values)
        except (ValueError, TypeError):
            raise ExportError("the export options are not ExportOptions.to_json's") from None

