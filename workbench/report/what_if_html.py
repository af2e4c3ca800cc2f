"""The report's what-if section: runs served with dummy weights and an imposed acceptance curve, kept
apart from the measured answer (a dashed, hatched box of its own), with what a speculative step
costs, where it pays, and the break-even chart captioned with the imposed curve's source."""

from __future__ import annotations

import html
from collections.abc import Sequence

from workbench.report import palette
from workbench.report.rows import WhatIfLine
from workbench.report.table import WHAT_IF_COLUMNS, WHAT_IF_ERROR, WHAT_IF_TIPS, speedup_text, what_if_cell

STYLE = """
section.what-if { border: 2px dashed #8c6d00; padding: 0 1em 0.6em; margin: 1.5em 0;
  background: repeating-linear-gradient(45deg, #fffdf4, #fffdf4 12px, #faf4e0 12px, #faf4e0 24px); }
section.what-if h2::before { content: "\\2691  "; color: #8c6d00; }
section.what-if table { background: #fff; }
tr.what-if td { font-style: italic; color: #5a4a00; }
"""
DEFINITIONS = ("Served with dummy weights and an imposed per-position acceptance: these runs measure what "
               "a speculative step costs at these shapes, N and concurrency, not what a real draft achieves. "
               "None of them is in the answer above. Step cost = MAL read back / speedup, in baseline decode "
               "steps; speculation pays once MAL exceeds it (the break-even MAL); break-even p1 is the "
               "acceptance at draft position 1 from which it pays, for a curve of the imposed shape.")


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def table_html(rows: Sequence[WhatIfLine]) -> str:
    head = "".join(f'<th class="{"l" if key in ("target", "config", "workload", "imposed_source") else ""}" '
                   f'title="{_e(WHAT_IF_TIPS.get(key, ""))}">{_e(label)}</th>' for key, label, _ in WHAT_IF_COLUMNS)
    body = []
    for r in rows:
        cells = []
        for key, _, fmt in WHAT_IF_COLUMNS:
            if key == "speedup":
                text = _e(speedup_text(r))
            elif key == "config":
                chip = f'<span class="chip" style="background:{palette.colour(r.method, r.n)}"></span>'
                text = chip + _e(r.config)
            else:
                text = _e(what_if_cell(r, key, fmt))
            left = key in ("target", "config", "workload", "imposed_source")
            cells.append(f'<td class="{"l" if left else ""}">{text}</td>')
        body.append(f'<tr class="what-if">{"".join(cells)}</tr>')
    return f'<table class="what-if"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def section(rows: Sequence[WhatIfLine], sentences: list[str], source: str, figures: str) -> str:
    """The whole section; empty when no what-if configuration has a what-if baseline."""
    if not rows:
        return ""
    said = "".join(f"<li>{_e(s)}</li>" for s in sentences)
    return (f'<section class="what-if" id="what-if"><h2>What-if (acceptance imposed: {_e(source)})</h2>'
            f'<p class="note">{_e(DEFINITIONS)} {_e(WHAT_IF_ERROR)}</p>{table_html(rows)}'
            f"<h3>Where it pays</h3><ul>{said}</ul>"
            f'<div class="charts">{figures}</div></section>')
