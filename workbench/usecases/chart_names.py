"""The Compare charts by name, and which data set each draws: what the page offers, `draftbench
export --chart` accepts and the report lays out. Light on purpose: the command line's parser reads
it on every start."""

from __future__ import annotations

CHART_NAMES = ("per_position", "throughput", "efficiency", "mal", "prediction", "concurrency", "by_category",
               "by_prompt_length", "energy", "gpus")
# Charts of what-if runs alone (acceptance imposed), apart from the measured ones above.
WHAT_IF_CHART_NAMES = ("breakeven",)
ALL_CHARTS = CHART_NAMES + WHAT_IF_CHART_NAMES
# Which data set each chart draws (two charts share the efficiency points): a field of
# workbench.usecases.compare_view.ChartData.
DATA_OF = {name: ("efficiency" if name == "mal" else name) for name in ALL_CHARTS}

