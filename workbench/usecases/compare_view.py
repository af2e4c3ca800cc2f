"""What the Compare page, `draftbench export` and `draftbench report` show of a selection of runs,
assembled once and without Qt: the answer (each with the command that serves it), the crossovers,
the trust notes, the tables, every chart's data, the what-if section, where provenance differs and
a tally of the runs; against each experiment's own baseline, or against one pinned run
(workbench.analysis.pinned_baseline), so the page, the exports and the report give the same numbers. The page builds one on the app's worker whenever its selection changes and
only renders it; the exports draw their files from one. `select` reads the runs of an experiment,
or of a choice of runs, from a results file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from workbench import store
from workbench.analysis import answer, breakeven, compare, latency, pinned_baseline, recommend, series
# The records by their own names: CompareView's and ChartData's fields are named as the modules are.
from workbench.analysis.answer import AnswerRow, Crossover
from workbench.analysis.breakeven import BreakEvenPoint, BreakEvenRow
from workbench.analysis.compare import Figures
from workbench.host import provenance
from workbench.usecases import commands
from workbench.usecases.chart_names import ALL_CHARTS, DATA_OF
from workbench.usecases.export_options import ExportError, NoExperiments


@dataclass(frozen=True)
class Tally:
    """The runs compared, counted for the page's title line."""
    experiments: tuple[int, ...]
    runs: int
    completed: int
    partial: int
    failed: int
    what_if: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ChartData:
    """Every Compare chart's points, one list per data set (chart_names.DATA_OF names the set each
    chart draws: MAL and efficiency share theirs)."""
    per_position: list[series.PositionPoint] = field(default_factory=list)
    throughput: list[series.ThroughputPoint] = field(default_factory=list)
    efficiency: list[series.EfficiencyPoint] = field(default_factory=list)
    prediction: list[recommend.PredictionPoint] = field(default_factory=list)
    concurrency: list[series.ConcurrencyPoint] = field(default_factory=list)
    by_category: list[series.CategoryPoint] = field(default_factory=list)
    by_prompt_length: list[series.LengthPoint] = field(default_factory=list)
    energy: list[series.EnergyPoint] = field(default_factory=list)
    gpus: list[series.GpuBar] = field(default_factory=list)
    breakeven: list[BreakEvenPoint] = field(default_factory=list)

    def rows(self, chart: str) -> Sequence[series.Point | series.GpuBar]:
        """The points chart `chart` draws (a name of chart_names.ALL_CHARTS)."""
        # By name: the chart names are the data sets' field names (DATA_OF).
        return getattr(self, DATA_OF[chart])

    def has(self, chart: str) -> bool:
        """Whether chart `chart` has anything to draw: MAL and efficiency need a point with that figure."""
        points = self.rows(chart)
        if chart in ("mal", "efficiency"):
            return any(getattr(p, chart) is not None for p in points)
        return bool(points)


@dataclass(frozen=True)
class CompareView:
    rows: list[store.RunRecord]       # the runs compared, as stored
    db_path: Path | None              # where they were read (per-request and GPU charts), None if unknown
    include_partial: bool             # partial runs counted in every figure
    caption: str                      # the run conditions in one line, "" without runs
    data: ChartData                   # each chart's points
    drawable: tuple[str, ...]         # the charts with data, in ALL_CHARTS order
    answer: list[AnswerRow]           # each method's best configuration per target x workload x concurrency
    serve_commands: dict[int, str]    # the exact command serving each answer row's run, by run id
    crossovers: list[Crossover]       # where speculation stops paying
    none_pays: list[str]              # why no method pays, where none does
    no_baseline: str                  # why there is no answer when no baseline completed, "" otherwise
    trust: list[str]                  # what to know before trusting the measured speedups
    speedups: list[Figures]           # the measured best-N table (speedup_table files, the report)
    measured_table: list[Figures]     # every measured configuration (All figures)
    what_if_table: list[Figures]      # every what-if configuration, shown there only on request
    what_if_configs: bool             # any what-if configuration, baselines included
    what_if: list[BreakEvenRow]       # the what-if table: step cost and break-even (files of its own)
    what_if_sentences: list[str]      # where each what-if configuration pays, in words
    what_if_source: str               # the imposed curves' sources, "?" where no what-if row names one
    provenance: list[tuple[str, dict[str, list[int]]]]  # fields that differ: (label, {value: run ids})
    tally: Tally
    pinned_row: store.RunRecord | None = None  # the pinned baseline run, None: each experiment's own baseline
    pinned_note: str = ""             # which run is the pinned baseline and where it came from, in one sentence
    pinned_missing: str = ""          # the concurrencies the pinned run lacks, in one sentence ("" for none)

    @property
    def baseline_sentences(self) -> list[str]:
        """What the page's baseline note and the report say of a pinned baseline ([] without one)."""
        return [s for s in (self.pinned_note, self.pinned_missing) if s]

    @property
    def missing(self) -> tuple[str, ...]:
        """The charts without data, in ALL_CHARTS order."""
        return tuple(name for name in ALL_CHARTS if name not in self.drawable)


def chart_data(rows: list[store.RunRecord], cs: list[compare.Config], db_path: str | Path | None,
               include_partial: bool = False) -> ChartData:
    """Every chart's points, per-request attribution and GPU power included when the database is known."""
    by_category: list[series.CategoryPoint] = []
    by_prompt_length: list[series.LengthPoint] = []
    gpus: list[series.GpuBar] = []
    if db_path is not None and Path(db_path).exists():
        db = store.open_db(db_path, readonly=True)
        try:
            counted = compare.WITH_PARTIAL if include_partial else compare.COUNTED
            # An imposed acceptance does not depend on the prompt: what-if runs say nothing per category.
            by_category, by_prompt_length = series.request_data(
                db, [r.id for r in rows if r.status in counted and not compare.is_what_if(r)])
            gpus = series.gpu_bars(db, [r.id for r in rows if r.status in counted])
        finally:
            store.close(db)
    return ChartData(per_position=series.per_position(cs), throughput=series.throughput(cs),
                     efficiency=series.efficiency(cs), prediction=recommend.chart_rows(cs),
                     concurrency=series.concurrency(cs), by_category=by_category, by_prompt_length=by_prompt_length,
                     energy=series.energy(cs), gpus=gpus, breakeven=breakeven.chart_data(cs))


def with_requests(rows: list[store.RunRecord], db_path: str | Path) -> list[store.RunRecord]:
    """The runs with the figures only their requests hold (TPOT percentiles, the per-request MAL):
    workbench.analysis.latency."""
    db = store.open_db(db_path, readonly=True)
    try:
        return latency.with_requests(db, rows)
    finally:
        store.close(db)


def provenance_differences(rows: list[store.RunRecord]) -> list[tuple[str, dict[str, list[int]]]]:
    """The fields on which the runs' recorded provenance differs (runs without one left out)."""
    return provenance.differences({r.id: json.loads(r.provenance) if r.provenance else None for r in rows})


def tally(rows: list[store.RunRecord]) -> Tally:
    def count(status: str) -> int:
        return sum(1 for r in rows if r.status == status)

    return Tally(experiments=tuple(sorted({r.experiment_id for r in rows})), runs=len(rows),
                 completed=count("completed"), partial=count("partial"), failed=count("failed"),
                 what_if=sum(1 for r in rows if compare.is_what_if(r)))


def pinned_run(run_id: int, rows: list[store.RunRecord], db_path: str | Path | None,
               include_partial: bool = False) -> tuple[store.RunRecord, str | None]:
    """The pinned run and its experiment's name, read from the results file (it may belong to an
    experiment not among `rows`), or found among `rows` when there is no file; PinnedBaselineError,
    in one line, when it cannot be the baseline."""
    if db_path is not None and Path(db_path).exists():
        db = store.open_db(db_path, readonly=True)
        try:
            return pinned_baseline.read(db, run_id, include_partial)
        finally:
            store.close(db)
    row = next((r for r in rows if r.id == run_id), None)
    why = pinned_baseline.refusal(run_id, row, include_partial)
    if why:
        raise pinned_baseline.PinnedBaselineError(why)
    assert row is not None  # refusal answers for a missing run
    return row, None


def build(rows: list[store.RunRecord], db_path: str | Path | None = None, include_partial: bool = False,
          pinned: int | None = None) -> CompareView:
    """The view of `rows`; reads the database at `db_path` (per-request and GPU figures) when it exists.
    With `pinned` (a run id), every speedup and latency ratio is against that run; PinnedBaselineError
    when it cannot be the baseline."""
    pin_row, pin_name = pinned_run(pinned, rows, db_path, include_partial) if pinned is not None else (None, None)
    if db_path is not None and Path(db_path).exists():
        rows = with_requests(rows, db_path)
    cs = compare.configs(rows, include_partial)
    pin = pinned_baseline.apply(cs, pin_row, pin_name) if pin_row is not None else None
    data = chart_data(rows, cs, db_path, include_partial)
    by_id = {r.id: r for r in rows}
    best = answer.answer_rows(cs)
    commands_of = {a.run: commands.serve_command(by_id[a.run]) for a in best}
    table = [replace(a, command=commands_of[a.run]) for a in best]
    what_if = breakeven.rows(cs)
    return CompareView(
        rows=rows, db_path=Path(db_path) if db_path is not None else None, include_partial=include_partial,
        caption=answer.conditions(rows) if rows else "", data=data,
        drawable=tuple(name for name in ALL_CHARTS if data.has(name)),
        answer=table, serve_commands=commands_of, crossovers=answer.crossovers(cs),
        none_pays=answer.none_pays(table),
        # A pinned baseline is said by its own sentences, whether or not this experiment's completed.
        no_baseline="" if pin else answer.no_baseline(rows, table),
        trust=answer.trust_notes(cs) + (pin.differs if pin else []),
        speedups=compare.speedup_table(cs), measured_table=compare.config_table(cs),
        what_if_table=compare.config_table(cs, what_if=True), what_if_configs=any(c.what_if for c in cs),
        what_if=what_if,
        what_if_sentences=breakeven.sentences(cs), what_if_source=breakeven.source_text(what_if),
        # The pinned run's provenance counts: it is one of the runs every speedup rests on.
        provenance=provenance_differences(rows + ([pin.row] if pin and pin.row.id not in by_id else [])),
        tally=tally(rows), pinned_row=pin.row if pin else None, pinned_note=pin.sentence if pin else "",
        pinned_missing=pin.missing if pin else "")


def select(db_path: str | Path, experiment: int | None = None,
           run_ids: list[int] | None = None) -> list[store.RunRecord]:
    """The runs of `experiment` (the latest by default), or the chosen runs with the baselines of
    their experiments; ExportError, in one line, when there are none or the file cannot be read."""
    try:
        db = store.open_db(db_path, readonly=True)
    except store.StoreError as exc:
        raise ExportError(str(exc)) from None
    try:
        if run_ids:
            rows = [r for r in store.runs(db) if r.id in set(run_ids)]
            missing = set(run_ids) - {r.id for r in rows}
            if missing:
                raise ExportError(f"no run {min(missing)} in the database")
            # Speedups need the matching baselines even when only speculative runs were chosen.
            experiments = {r.experiment_id for r in rows}
            rows += [r for r in store.runs(db) if r.method == "baseline" and r.experiment_id in experiments
                     and r.id not in set(run_ids)]
            return rows
        if experiment is None:
            experiment = store.latest_experiment(db)
            if experiment is None:
                raise NoExperiments("the database holds no experiments yet")
        rows = store.runs_of_experiment(db, experiment)
        if not rows:
            raise ExportError(f"no experiment {experiment} in the database")
        return rows
    finally:
        store.close(db)
