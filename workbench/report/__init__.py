"""Exports without Qt: chart data to CSV/JSON, and a self-contained HTML report (charts passed in as SVG).
The code lives in the modules beside this file; this file only re-exports what other code imports from the
package."""

from workbench.report.data_export import write_csv, write_json
from workbench.report.html import Report, render
from workbench.report.table import (ALL_FIGURES_COLUMNS, CONFIG_COLUMNS, LATENCY_COLUMNS, LATENCY_TABLE, LATENCY_TIPS,
                                    MAL_COLUMNS, TABLE_COLUMNS, WHAT_IF_COLUMNS, WHAT_IF_ERROR, WHAT_IF_TIPS, cell, shown, speedup_text, what_if_cell)

__all__ = ["Report", "render", "ALL_FIGURES_COLUMNS", "CONFIG_COLUMNS", "LATENCY_COLUMNS", "LATENCY_TABLE", "LATENCY_TIPS",
           "MAL_COLUMNS", "TABLE_COLUMNS", "WHAT_IF_COLUMNS", "WHAT_IF_ERROR", "WHAT_IF_TIPS", "cell", "shown", "speedup_text",
           "what_if_cell", "write_csv", "write_json"]
