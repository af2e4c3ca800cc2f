"""Exports without Qt: chart data to CSV/JSON, and a self-contained HTML report (charts passed in as SVG)."""

from __future__ import annotations

import csv
import html
import json
import platform
import time
from pathlib import Path

from workbench import __version__
from workbench.report.provenance_html import section as provenance_section

TABLE_COLUMNS = [
    ("target", "Target", "{}"), ("method", "Method", "{}"), ("workload", "Workload", "{}"),
    ("concurrency", "Conc.", "{}"), ("best_n", "Best N", "{}"), ("baseline_tok_s", "Baseline tok/s", "{:.1f}"),
    ("tok_s", "tok/s", "{:.1f}"), ("speedup", "Speedup", "{:.2f}"), ("mal", "MAL", "{:.2f}"),
    ("acceptance_rate", "Accept.", "{:.3f}"), ("efficiency", "Efficiency", "{:.2f}"), ("repeats", "Repeats", "{}"),
]


def write_csv(rows: list[dict], path: str | Path) -> None:
    columns = list(rows[0]) if rows else []
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def write_json(rows: list[dict], path: str | Path) -> None:
    Path(path).write_text(json.dumps(rows, indent=1))


def cell(row: dict, key: str, fmt: str) -> str:
    value = row.get(key)
    if value is None:
        return "–"
    if key == "speedup" and row.get("speedup_ci95") is not None:
        mark = "" if row.get("beyond_noise") else " (within noise)"
        return f"{value:.2f} ± {row['speedup_ci95']:.2f}{mark}"
    return fmt.format(value)


def shown(row: dict, key: str, fmt: str) -> str:
    """A cell of the speedup table as the Compare page and `draftbench show` print it: the target
    by its folder or repo name (the report keeps the whole path)."""
    value = cell(row, key, fmt)
    return value.rstrip("/").rsplit("/", 1)[-1] if key == "target" else value


def speedup_html(table: list[dict]) -> str:
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label, _ in TABLE_COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(r, k, f))}</td>" for k, _, f in TABLE_COLUMNS)
                   + "</tr>" for r in table)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render(title: str, table: list[dict], charts: list[tuple[str, str]], runs: list[dict]) -> str:
    """A report that opens with no network: styles inline, charts as inline SVG, no external URL."""
    chart_html = "".join(f"<figure><figcaption>{html.escape(name)}</figcaption>{_strip_xml_header(svg)}</figure>"
                         for name, svg in charts)
    commands = sorted({(r.get("command") or "", r.get("vllm_version") or "?", r.get("torch_version") or "?")
                       for r in runs if r.get("command")})
    command_html = "".join(f"<li><code>{html.escape(c)}</code><br><small>vLLM {html.escape(v)}, torch "
                           f"{html.escape(t)}</small></li>" for c, v, t in commands)
    run_rows = "".join(
        f"<tr><td>{r['id']}</td><td>{html.escape(str(r['method']))}</td><td>{'' if r.get('n') is None else r['n']}</td>"
        f"<td>{html.escape(str(r['workload']))}</td><td>{r['concurrency']}</td><td>{r.get('repeat') or ''}</td>"
        f"<td>{html.escape(str(r['status']))}</td><td>{cell(r, 'output_tok_s', '{:.1f}')}</td>"
        f"<td>{cell(r, 'mal', '{:.2f}')}</td><td>{cell(r, 'acceptance_rate', '{:.3f}')}</td></tr>" for r in runs)
    generated = time.strftime("%Y-%m-%d %H:%M")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }}
th {{ background: #f0f0f0; }} td:nth-child(-n+3) {{ text-align: left; }}
table.prov th, table.prov td {{ text-align: left; }}
figure {{ display: inline-block; margin: 0.5em; border: 1px solid #ddd; padding: 0.5em; }}
figcaption {{ font-weight: bold; margin-bottom: 0.3em; }}
figure svg {{ width: 560px; height: auto; display: block; }}
code {{ font-size: 0.85em; word-break: break-all; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Generated {generated} by Draftbench {__version__} on {html.escape(platform.node())}.
Speedup = output tokens/s / the matching baseline's (same target, workload, concurrency and sampling);
± is a 95% confidence interval over repeats; efficiency = speedup / MAL.</p>
<h2>Best N per method</h2>{speedup_html(table)}
<h2>Charts</h2>{chart_html}
<h2>Runs</h2><table><thead><tr><th>Run</th><th>Method</th><th>N</th><th>Workload</th><th>Conc.</th><th>Repeat</th>
<th>Status</th><th>tok/s</th><th>MAL</th><th>Accept.</th></tr></thead><tbody>{run_rows}</tbody></table>
<h2>Exact vLLM commands and versions</h2><ul>{command_html}</ul>
{provenance_section(runs)}
</body></html>
"""


def _strip_xml_header(svg: str) -> str:
    svg = svg.strip()
    if svg.startswith("<?xml"):
        svg = svg.split("?>", 1)[1]
    return svg.replace("<!DOCTYPE svg", "<!-- ").replace("DTD/svg11.dtd'>", " -->")
