"""Figures across runs: every run of an experiment with its speedup, and readable run summaries. Speedups
are the Compare page's (workbench.analysis.compare): a run over its matching baseline configuration's mean.
The code lives in the modules beside this file; this file only re-exports what other code imports from the
package."""

from workbench.analysis.run_text import alarm_kinds, run_summary, run_table

__all__ = ["alarm_kinds", "run_summary", "run_table"]
