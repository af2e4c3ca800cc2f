"""What the report reads of the analysis' records, as protocols. The report sits beside
workbench.analysis in the layers, not above it, so it names the fields it reads instead of
importing the records: compare.Figures and answer.AnswerRow in the tables, answer.Crossover,
breakeven.BreakEvenRow in the what-if section, and every chart point in the exports. A table's
column keys are its rows' field names (workbench.report.table)."""

from __future__ import annotations

from typing import Any, Protocol


class Exportable(Protocol):
    """A record written as a CSV line or a JSON object: its fields by name, in order."""

    def as_dict(self) -> dict[str, Any]: ...


class Interval(Protocol):
    """A speedup with its 95% interval (None without repeats)."""

    @property
    def speedup(self) -> float | None: ...

    @property
    def speedup_ci95(self) -> float | None: ...


class TableRow(Interval, Protocol):
    """A row of a table of speedups: its cells are its fields, the speedup's marked within noise."""

    @property
    def beyond_noise(self) -> bool | None: ...


class MarkedRow(TableRow, Protocol):
    """A row that may be a what-if one, its method marked so."""

    @property
    def what_if(self) -> bool: ...


class WhatIfLine(MarkedRow, Protocol):
    """A row of the what-if table: a configuration's step cost and where it pays."""

    @property
    def method(self) -> str: ...

    @property
    def n(self) -> int | None: ...

    @property
    def config(self) -> str: ...

    @property
    def break_even_p1(self) -> float | None: ...

    @property
    def pays_ever(self) -> bool: ...


class AnswerLine(TableRow, Protocol):
    """A row of the answer: one method's best configuration, the fastest marked, with its command."""

    @property
    def target_short(self) -> str: ...

    @property
    def workload(self) -> str | None: ...

    @property
    def concurrency(self) -> int: ...

    @property
    def method(self) -> str: ...

    @property
    def n(self) -> int | None: ...

    @property
    def verdict(self) -> str: ...

    @property
    def fastest(self) -> bool: ...

    @property
    def fastest_note(self) -> str | None: ...

    @property
    def fastest_sure(self) -> bool: ...

    @property
    def repeats(self) -> int: ...

    @property
    def command(self) -> str | None: ...


class CrossoverLine(Protocol):
    """Where one method stops paying, in a sentence."""

    @property
    def target_short(self) -> str: ...

    @property
    def workload(self) -> str | None: ...

    @property
    def text(self) -> str: ...
