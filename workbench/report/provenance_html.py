"""The report's provenance section: each distinct provenance with the runs that share it, and the
fields on which the compared runs differ, said first."""

from __future__ import annotations

from typing import Any
import html
import json

from workbench import store
from workbench.host import provenance


def _of(run: store.RunRecord) -> dict[str, Any] | None:
    return json.loads(run.provenance) if run.provenance else None


def section(runs: list[store.RunRecord]) -> str:
    provs = {r.id: _of(r) for r in runs}
    groups: dict[str, list[int]] = {}
    for run_id, prov in sorted(provs.items()):
        if prov:
            groups.setdefault(json.dumps(prov, sort_keys=True), []).append(run_id)
    if not groups:
        return "<h2>Provenance</h2><p>Not recorded for these runs.</p>"
    differ = provenance.differences(provs)
    note = ""
    if differ:
        items = "".join(f"<li>{html.escape(label)}: " + "; ".join(
            f"{html.escape(value)} (runs {', '.join(map(str, ids))})" for value, ids in values.items()) + "</li>"
            for label, values in differ)
        note = f"<p><b>These runs' provenance differs</b>, so their figures may not compare like for like:</p><ul>{items}</ul>"
    blocks = []
    for text, ids in groups.items():
        rows = "".join(f"<tr><th>{html.escape(label)}</th><td>{html.escape(value)}</td></tr>"
                       for label, value in provenance.rows(json.loads(text)))
        blocks.append(f"<h3>Runs {', '.join(map(str, ids))}</h3><table class=\"prov\">{rows}</table>")
    return f"<h2>Provenance</h2>{note}{''.join(blocks)}"
