"""The HTML report, answer first: the best configuration of each method per target x workload x
concurrency with its interval and noise verdict, where speculation stops paying, the command that
serves the fastest; then the charts; then the runs; full model paths and exact commands last.
Self-contained: styles inline, charts as SVG data images, no external URL."""

from __future__ import annotations

import base64
import html
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench import __version__, store
from workbench.report.provenance_html import section as provenance_section
from workbench.report import palette, what_if_html
from workbench.report.rows import AnswerLine, CrossoverLine, TableRow, WhatIfLine
from workbench.report.table import LATENCY_TABLE, LATENCY_TIPS, cell, speedup_text

STYLE = """
body { font-family: sans-serif; margin: 2em auto; padding: 0 1.5em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
table.prov th, table.prov td { text-align: left; overflow-wrap: anywhere; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th { background: #f0f0f0; } td.l, th.l { text-align: left; }
tr.fastest td { font-weight: bold; background: #f3f8ee; }
.chip { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.4em; vertical-align: -0.05em;
        border-radius: 2px; }
.conditions { color: #555; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 1em; }
figure { margin: 0; border: 1px solid #ddd; padding: 0.5em; min-width: 0; }
figcaption { font-weight: bold; margin-bottom: 0.3em; }
figure img { width: 100%; height: auto; display: block; }
pre, code { font-size: 0.85em; white-space: pre-wrap; overflow-wrap: anywhere; }
pre { background: #f6f6f6; padding: 0.6em; border: 1px solid #e2e2e2; }
.note { color: #666; font-size: 0.9em; }
.pinned { border-left: 3px solid #7a9cc6; padding-left: 0.6em; }
"""


@dataclass
class Report:
    title: str
    conditions: str
    answer: Sequence[AnswerLine]           # workbench.analysis.answer.answer_rows, each with its `command`
    crossovers: Sequence[CrossoverLine]    # workbench.analysis.answer.crossovers
    speedups: Sequence[TableRow]           # workbench.analysis.compare.speedup_table
    why_none_pays: list[str] = field(default_factory=list)            # workbench.analysis.answer.none_pays
    trust: list[str] = field(default_factory=list)                    # workbench.analysis.answer.trust_notes
    charts: list[tuple[str, str]] = field(default_factory=list)     # (title, SVG text)
    not_drawn: list[tuple[str, str]] = field(default_factory=list)  # (title, why)
    runs: list[store.RunRecord] = field(default_factory=list)
    # What-if runs (acceptance imposed), in a section of their own, never in the answer above.
    what_if: Sequence[WhatIfLine] = field(default_factory=list)       # workbench.analysis.breakeven.rows
    what_if_sentences: list[str] = field(default_factory=list)        # workbench.analysis.breakeven.sentences
    what_if_source: str = ""                                          # the imposed curves' sources
    what_if_charts: list[tuple[str, str]] = field(default_factory=list)  # (title, SVG text)
    # A pinned baseline: which run and where it came from, and the concurrencies it lacks
    # (CompareView.baseline_sentences); empty when each experiment's own baseline is used.
    baseline_note: list[str] = field(default_factory=list)


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _chip(method: str, n: int | None) -> str:
    return f'<span class="chip" style="background:{palette.colour(method, n)}"></span>'


def answer_html(rows: Sequence[AnswerLine]) -> str:
    head = ("<tr><th class=l>Target</th><th class=l>Workload</th><th>Conc.</th><th class=l>Method</th><th>N</th>"
            "<th>Speedup ± 95%</th><th class=l>Noise</th><th>tok/s</th><th>Baseline tok/s</th><th>MAL</th>"
            "<th>Repeats</th></tr>")
    body = "".join(
        f'<tr class="{"fastest" if r.fastest_sure else ""}"><td class=l>{_e(r.target_short)}'
        f'</td><td class=l>{_e(r.workload)}</td><td>{r.concurrency}</td>'
        f'<td class=l>{_chip(r.method, r.n)}{_e(r.method)}{" (" + _e(r.fastest_note or "fastest") + ")" if r.fastest else ""}</td>'
        f'<td>{_e(r.n)}</td><td>{speedup_text(r)}</td><td class=l>{_e(r.verdict)}</td>'
        f'<td>{cell(r, "tok_s", "{:.1f}")}</td><td>{cell(r, "baseline_tok_s", "{:.1f}")}</td>'
        f'<td>{cell(r, "mal", "{:.2f}")}</td><td>{r.repeats}</td></tr>' for r in rows)
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


def latency_html(rows: Sequence[TableRow]) -> str:
    """Each method's best N beside what it costs in latency, and its MAL both ways: a speedup can be
    bought with slower streaming, which the answer above does not show."""
    if not rows:
        return ""
    columns = [("best_n", "Best N", "{}") if key == "n" else (key, label, fmt) for key, label, fmt in LATENCY_TABLE]
    head = "".join(f'<th title="{_e(LATENCY_TIPS.get(key, ""))}">{_e(label)}</th>' for key, label, _ in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(cell(r, key, fmt))}</td>" for key, _, fmt in columns) + "</tr>"
                   for r in rows)
    return ('<h3 id="latency">What each speedup costs in latency</h3><p class="note">TTFT: time to first token. '
            "TPOT: (end-to-end latency - TTFT) / (output tokens - 1) per request. ITL: the gaps between streamed "
            "chunks. p50/p99 over the window's requests (gaps for ITL); × in brackets: the ratio to the baseline's "
            "at the same concurrency. MAL pooled = 1 + accepted / drafts over the window (vLLM's); MAL req. mean = "
            f"the mean of each request's.</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def serve_html(rows: Sequence[AnswerLine], why_none_pays: Sequence[str] = ()) -> str:
    """The command serving the fastest configuration, once per distinct command."""
    where: dict[str | None, list[str]] = {}
    for r in rows:
        if r.fastest:
            where.setdefault(r.command, []).append(f"{r.target_short} · {r.workload} · c={r.concurrency}")
    if not where:
        why = "".join(f"<p>{_e(line)}</p>" for line in why_none_pays)
        return "<p>No configuration beat the baseline: serve the target without speculation.</p>" + why
    return "".join(f"<p>Fastest for {_e(', '.join(at))}:</p><pre><code>{_e(command)}</code></pre>"
                   for command, at in where.items())


def trust_html(lines: list[str]) -> str:
    """Which throughput the speedups rest on, differing prefix caches and acceptance alarms."""
    if not lines:
        return ""
    return "<h3>Before trusting these figures</h3><ul>" + "".join(f"<li>{_e(x)}</li>" for x in lines) + "</ul>"


def baseline_html(sentences: list[str]) -> str:
    """The pinned baseline, said beside the answer it changes ("" without one)."""
    if not sentences:
        return ""
    return f'<p class="pinned"><b>Pinned baseline.</b> {_e(" ".join(sentences))}</p>'


def _image(title: str, svg: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<figure><figcaption>{_e(title)}</figcaption><img alt="{_e(title)}" src="data:image/svg+xml;base64,{data}"></figure>'


def _figure(value: float | None, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def runs_html(runs: list[store.RunRecord]) -> str:
    rows = "".join(
        f"<tr{' class=what-if' if r.what_if else ''}><td>{r.id}</td>"
        f"<td class=l>{_chip(r.method or '', r.n)}{_e(r.method)}{' (what-if)' if r.what_if else ''}</td>"
        f"<td>{'' if r.n is None else r.n}</td><td class=l>{_e(r.workload)}</td><td>{r.concurrency}</td>"
        f"<td>{r.repeat or ''}</td><td class=l>{_e(r.status)}</td><td>{_figure(r.output_tok_s, '{:.1f}')}</td>"
        f"<td>{_figure(r.mal, '{:.2f}')}</td><td>{_figure(r.acceptance_rate, '{:.3f}')}</td></tr>" for r in runs)
    return ("<table><thead><tr><th>Run</th><th class=l>Method</th><th>N</th><th class=l>Workload</th><th>Conc.</th>"
            "<th>Repeat</th><th class=l>Status</th><th>tok/s</th><th>MAL</th><th>Accept.</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def details_html(runs: list[store.RunRecord]) -> str:
    models = sorted({(r.target, r.draft or "") for r in runs})
    model_items = "".join(f"<li>target <code>{_e(t)}</code>{f', draft <code>{_e(d)}</code>' if d else ''}</li>"
                          for t, d in models)
    # The versions of the vLLM that served each command (an image's, for a docker server), and how
    # its drafts were sampled, which changes acceptance.
    commands = sorted({(r.command or "", r.vllm_version or "?", r.torch_version or "?",
                        r.transformers_version or "?", r.draft_sample_method or "")
                       for r in runs if r.command})
    command_items = "".join(f"<li><code>{_e(c)}</code><br><small>vLLM {_e(v)}, torch {_e(t)}, transformers {_e(tf)}"
                            f"{f', draft sampling {_e(d)}' if d else ''}</small></li>"
                            for c, v, t, tf, d in commands)
    return (f"<details open><summary>Models (full paths), exact vLLM commands and versions</summary>"
            f"<ul>{model_items}</ul><ul>{command_items}</ul></details>")


def render(r: Report) -> str:
    charts = "".join(_image(title, svg) for title, svg in r.charts)
    missing = "".join(f"<li>{_e(title)}: {_e(why)}</li>" for title, why in r.not_drawn)
    crossings = "".join(f"<li>{_e(c.target_short)} · {_e(c.workload)}: {_e(c.text)}</li>"
                        for c in r.crossovers) or "<li>Every configuration ran at one concurrency only.</li>"
    serve = serve_html(r.answer, r.why_none_pays)
    if not r.answer and r.what_if:
        # Only what-if runs: an empty answer is not "nothing beat the baseline".
        crossings = "<li>No measured speculative run here.</li>"
        serve = ('<p>No measured speculative run here: every speculative run is a what-if run (acceptance '
                 'imposed), in <a href="#what-if">its own section</a> below.</p>')
    only_measured = (" Measured runs only: what-if runs (acceptance imposed) are in "
                     '<a href="#what-if">their own section</a>.') if r.what_if else ""
    what_if = what_if_html.section(r.what_if, r.what_if_sentences, r.what_if_source,
                                   "".join(_image(title, svg) for title, svg in r.what_if_charts))
    generated = time.strftime("%Y-%m-%d %H:%M")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(r.title)}</title><style>{STYLE}{what_if_html.STYLE}</style></head><body>
<h1>{_e(r.title)}</h1>
<p class="conditions">{_e(r.conditions)}</p>
<h2>Which method and N is fastest</h2>
<p class="note">Per target, workload and concurrency: each method at its best N. Speedup = output tokens/s / the
matching baseline's (same target, workload, concurrency and sampling); ± is a 95% confidence interval over
repeats; "beyond noise" when that interval excludes 1.0.{only_measured}</p>
{baseline_html(r.baseline_note)}
{answer_html(r.answer)}
{latency_html(r.speedups)}
<h3>Where speculation stops paying</h3><ul>{crossings}</ul>
<h3>Serve it</h3>{serve}
{trust_html(r.trust)}
<h2>Charts</h2><div class="charts">{charts}</div>
{f'<p class="note">Not drawn:</p><ul class="note">{missing}</ul>' if missing else ''}
{what_if}
<h2>Runs</h2>{runs_html(r.runs)}
<h2>Details</h2>{details_html(r.runs)}
{provenance_section(r.runs)}
<p class="note">Generated {generated} by Draftbench {__version__} on {_e(platform.node())}.</p>
</body></html>
"""
