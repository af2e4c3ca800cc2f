"""The speedup table's columns and cells, as the Compare page, `draftbench show` and the report print them.
A column's key is the name of the field it shows (workbench.report.rows)."""

from __future__ import annotations

from workbench.report.rows import Interval, MarkedRow, TableRow, WhatIfLine

TABLE_COLUMNS = [
    ("target", "Target", "{}"), ("method", "Method", "{}"), ("workload", "Workload", "{}"),
    ("concurrency", "Conc.", "{}"), ("best_n", "Best N", "{}"), ("baseline_tok_s", "Baseline tok/s", "{:.1f}"),
    ("tok_s", "tok/s", "{:.1f}"), ("speedup", "Speedup", "{:.2f}"), ("mal", "MAL", "{:.2f}"),
    ("acceptance_rate", "Accept.", "{:.3f}"), ("efficiency", "Efficiency", "{:.2f}"), ("repeats", "Repeats", "{}"),
    ("cv", "CV", "{:.1%}"),
]
# Every configuration (compare.config_table), as the Compare page's "All figures" and `draftbench
# show` list them: N in place of best N, the best N of each method marked.
CONFIG_COLUMNS = [("n", "N", "{}") if key == "best_n" else (key, label, fmt) for key, label, fmt in TABLE_COLUMNS]
# Latency beside throughput (workbench.analysis.latency): speculation can buy tokens/s with slower
# streaming, so each cell holds the configuration's figure and, in brackets, its ratio to the
# baseline's at the same concurrency (above 1: slower than without speculation).
LATENCY_COLUMNS = [
    ("ttft_p50_ms", "TTFT p50 ms", "{:.1f}"), ("ttft_p99_ms", "TTFT p99 ms", "{:.1f}"),
    ("tpot_p50_ms", "TPOT p50 ms", "{:.1f}"), ("itl_p50_ms", "ITL p50 ms", "{:.1f}"),
    ("itl_p99_ms", "ITL p99 ms", "{:.1f}"),
]
# The MAL two ways, each named: they differ where requests accept unevenly.
MAL_COLUMNS = [("mal", "MAL pooled", "{:.2f}"), ("request_mal", "MAL req. mean", "{:.2f}")]
# The latency and MAL table of `draftbench show` and the report.
LATENCY_TABLE = [("method", "Method", "{}"), ("n", "N", "{}"), ("workload", "Workload", "{}"),
                 ("concurrency", "Conc.", "{}"), ("speedup", "Speedup", "{:.2f}"), *MAL_COLUMNS, *LATENCY_COLUMNS]
# The Compare page's "All figures": every configuration's, its MAL both ways and its latency beside.
ALL_FIGURES_COLUMNS = [c for key, label, fmt in CONFIG_COLUMNS
                       for c in (MAL_COLUMNS if key == "mal" else [(key, label, fmt)])] + LATENCY_COLUMNS
_RATIO = " (× the baseline's at the same concurrency, in brackets)"
LATENCY_TIPS = {
    "ttft_p50_ms": "Time to first token: from sending the request to its first streamed token; median over "
                   "the window's requests" + _RATIO,
    "ttft_p99_ms": "Time to first token: from sending the request to its first streamed token; 99th percentile "
                   "over the window's requests" + _RATIO,
    "tpot_p50_ms": "Time per output token: (end-to-end latency - TTFT) / (output tokens - 1) per request; median "
                   "over the window's requests (from the stored requests)" + _RATIO,
    "itl_p50_ms": "Inter-token latency: the gaps between streamed chunks (a chunk may carry several tokens when "
                  "drafts are accepted); median over every gap in the window" + _RATIO,
    "itl_p99_ms": "Inter-token latency: the gaps between streamed chunks; 99th percentile over every gap in the "
                  "window, what a reader of the stream sees as stalls" + _RATIO,
    "mal": "Mean acceptance length, pooled as vLLM reports it: 1 + accepted / drafts over the window's counters",
    "request_mal": "Mean acceptance length per request (vLLM's per-request spec-decode figures), averaged over "
                   "the requests that drafted: short requests count as much as long ones",
}


def cell(row: TableRow, key: str, fmt: str) -> str:
    # By name: the column's key is the field it shows; a latency figure's ratio is `<metric>_ratio`.
    value = getattr(row, key)
    if value is None:
        return "–"
    ratio = getattr(row, key.removesuffix("_ms") + "_ratio") if key.endswith("_ms") else None
    if ratio is not None:
        return f"{fmt.format(value)} (×{ratio:.2f})"
    if key == "speedup" and row.speedup_ci95 is not None:
        mark = "" if row.beyond_noise else " (within noise)"
        return f"{value:.2f} ± {row.speedup_ci95:.2f}{mark}"
    return fmt.format(value)


def shown(row: MarkedRow, key: str, fmt: str) -> str:
    """A cell with the target by its folder or repo name (full paths go in the report's details);
    a what-if row's method says so, wherever such a row is let into a table."""
    value = cell(row, key, fmt)
    if key == "method" and row.what_if:
        return f"{value} (what-if)"
    return value.rstrip("/").rsplit("/", 1)[-1] if key == "target" else value


# The what-if table (workbench.analysis.breakeven.rows): what a step costs and where it pays.
WHAT_IF_COLUMNS = [
    ("target", "Target", "{}"), ("config", "Configuration", "{}"), ("workload", "Workload", "{}"),
    ("concurrency", "Conc.", "{}"), ("speedup", "Speedup", "{:.2f}"), ("mal", "MAL read back", "{:.2f}"),
    ("imposed_mal", "MAL imposed", "{:.2f}"), ("step_cost", "Step cost", "{:.2f}"),
    ("break_even_mal", "Break-even MAL", "{:.2f}"), ("break_even_p1", "Break-even p1", "{:.2f}"),
    ("imposed_source", "Acceptance imposed", "{}"), ("repeats", "Repeats", "{}"),
]
# The what-if lab's own error, measured against real drafting on a GPU-bound target (docs/gpu/README.md,
# "A real drafter against its what-if"): stated wherever what-if rows are shown, as simulators state theirs.
WHAT_IF_ERROR = ("Measured against real drafting: what-if throughput within 3 % of the real drafter's in 13 "
                 "of 14 cells and 4.1 % in the last (what-if / real 0.974-1.041, median 0.996, at N = 1 to 5 and "
                 "c = 1, 16 and 64, three alternated rounds each; an H200 and an H100, the Llama-3.1-8B shape, a "
                 "2-layer draft model, vLLM 0.26.0). Not yet measured: MoE targets, AMD GPUs.")
WHAT_IF_TIPS = {
    "speedup": "Output tokens/s over the what-if baseline's (dummy weights too), at the imposed acceptance",
    "mal": "Mean acceptance length read back from vLLM's counters: it should match the imposed MAL",
    "imposed_mal": "The MAL the imposed per-position curve implies: 1 + the sum of its rates",
    "step_cost": "The time of one speculative step (draft + verify) in baseline decode steps: MAL read back / "
                 "speedup. It depends on the shapes, kernels, N and batch, not on the acceptance",
    "break_even_mal": "The MAL at which speculation pays (speedup 1.0): equal to the step cost, since speedup = "
                      "MAL / step cost",
    "break_even_p1": "The acceptance at draft position 1 from which it pays, for a curve of the imposed shape "
                     "scaled to that p1: (step cost - 1) / the sum of the shape; 'never' when above 1",
    "imposed_source": "Where the imposed curve came from: typed in the plan, a published table, or a measured run",
}


def what_if_cell(row: WhatIfLine, key: str, fmt: str) -> str:
    """A cell of the what-if table: the target by its name, a break-even p1 above 1 as never."""
    if key == "break_even_p1" and row.break_even_p1 is not None:
        if not row.pays_ever:
            return "never (> 1)"
        return "any (0.00)" if row.break_even_p1 <= 0 else fmt.format(row.break_even_p1)
    return shown(row, key, fmt)


def speedup_text(row: Interval) -> str:
    """`1.55 ± 0.04x`, or `1.55x` without repeats."""
    if row.speedup is None:
        return "–"
    if row.speedup_ci95 is None:
        return f"{row.speedup:.2f}x"
    return f"{row.speedup:.2f} ± {row.speedup_ci95:.2f}x"
