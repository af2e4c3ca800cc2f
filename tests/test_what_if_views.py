"""What-if runs (dummy weights, acceptance imposed) marked as such wherever runs are shown, and kept out
of every measured table and answer unless the user asks: the Compare page's separate section and its
checkbox, the break-even chart and what-if table in exports, the HTML report opened in Chromium,
`draftbench runs` / `show`, `export-bench`, History and Live.

On the first what-if sweep recorded on one H200 (docs/gpu/what-if-h200.sqlite, experiment 1: a Qwen3-8B shape, baseline,
eagle3 N=3, dflash N=7 and dspark N=7 at c = 1, 16, 64, acceptance typed in the plan), and the same database with
a measured copy of every completed run beside it (acceptance measured, slower drafts), so both kinds
are in one experiment."""

from __future__ import annotations

import csv
import dataclasses
import html
import json
import re
import sqlite3
import xml.etree.ElementTree as ET
from contextlib import closing

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from app.entry import main as draftbench
from app.exports import write_report
from app.models.runs_model import COLUMNS, HistoryRow, RunsModel
from app.pages.compare_page import ComparePage
from app.pages.live import LivePage
from helpers.browser import measure
from helpers.recorded import ROOT, copy_db, stored_runs
from workbench import cli, store
from workbench.analysis import answer, compare, series
from workbench.report import benchjson
from workbench.usecases import compare_view

SOURCE = ROOT / "docs" / "gpu" / "what-if-h200.sqlite"
MARK = "acceptance imposed: typed"


@pytest.fixture
def what_if_db(tmp_path):
    """The database's first sweep (experiment 1) alone: the later ones (the N grid, MiMo's MTP, the
    Gemma 4 pair that failed to start) are the subject of tests/test_what_if_table.py."""
    db = copy_db(SOURCE, tmp_path / "what-if.sqlite")
    handle = store.open_db(db)  # brought to this version's schema
    for r in store.runs(handle):
        if r.experiment_id != 1:
            store.delete_run(handle, r.id)
    store.close(handle)
    # Their experiments too, so "the latest experiment" is the first sweep (the store deletes runs,
    # never experiments: a test's own trimming of a copy).
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM experiments WHERE id != 1")
    return db


@pytest.fixture
def mixed_db(what_if_db):
    """Every completed run again as a measured one: its speculative runs 20% slower than imposed."""
    db = store.open_db(what_if_db)
    for r in store.runs(db):
        if r.status == "completed":
            again = {k: v for k, v in r.as_dict().items() if k != "id"}
            slower = 1.0 if r.method == "baseline" else 0.8
            again.update(key=f"measured-{r.key}", seq=r.seq + 1000, what_if=0, imposed=None,
                         output_tok_s=r.output_tok_s * slower)
            store.add_imported_run(db, again)
    store.close(db)
    return what_if_db


def test_what_if_series_never_merge_with_measured_ones(mixed_db):
    rows = stored_runs(mixed_db)
    cs = compare.configs(rows)
    lines_of = {r.series: r.what_if for r in series.throughput(cs)}
    assert lines_of["eagle3 · builtin · c=16"] is False and lines_of["eagle3 (what-if) · builtin · c=16"] is True
    assert {r.imposed_source for r in series.per_position(cs) if r.what_if} == {"typed"}
    # Speedup against concurrency: each kind its own line, never one line through both kinds' points.
    lines = {}
    for r in series.concurrency(cs):
        lines.setdefault(r.series, []).append(r.concurrency)
    assert lines["eagle3 N=3 · builtin"] == [1, 16, 64] and lines["eagle3 N=3 (what-if) · builtin"] == [1, 16, 64]
    # The answer rests on measured runs only.
    assert {r.config for r in answer.answer_rows(cs)} == {"eagle3 N=3", "dflash N=7", "dspark N=7"}
    assert compare.marker(rows[3]) == "what-if, acceptance imposed: typed (MAL 2.85)"
    assert compare.marker(rows[0]) == "what-if baseline (dummy weights)" and compare.marker(rows[-1]) == ""


def test_compare_page_keeps_what_if_apart_and_lets_the_user_ask(qtbot, qtmodeltester, mixed_db, tmp_path):
    rows = stored_runs(mixed_db)
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, mixed_db)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    # The answer and the measured table: measured runs only.
    answered = [page.answer_model.row(i).config for i in range(page.answer_model.rowCount())]
    assert answered and not any("what-if" in a for a in answered)
    table = page.table_model
    assert table.rowCount() == 9 and not any(table.row(i).what_if for i in range(9))
    assert not page.what_if_box.isChecked() and page.what_if_box.isEnabled()
    page.what_if_box.setChecked(True)
    assert table.rowCount() == 18
    shown = [table.data(table.index(i, 1)) for i in range(18)]
    assert shown[9:] == ["dflash (what-if)"] * 3 + ["dspark (what-if)"] * 3 + ["eagle3 (what-if)"] * 3
    assert "what-if" not in " ".join(shown[:9])
    assert table.data(table.index(11, 1), Qt.FontRole).italic()
    assert MARK in table.data(table.index(11, 1), Qt.ToolTipRole)
    qtmodeltester.check(table)
    page.what_if_box.setChecked(False)
    assert table.rowCount() == 9

    # The what-if section: its own box, titled with the source, table, sentences and break-even chart.
    section = page.what_if
    assert section.isVisibleTo(page) and section.title() == f"What-if ({MARK})"
    assert "within 3 % of the real drafter's" in section.note.text()  # the lab's own measured error
    model = section.model
    qtmodeltester.check(model)
    assert model.rowCount() == 9
    headers = {model.headerData(c, Qt.Horizontal): model.headerData(c, Qt.Horizontal, Qt.ToolTipRole)
               for c in range(model.columnCount())}
    assert "baseline decode steps" in headers["Step cost"] and "pays" in headers["Break-even p1"]
    assert {"MAL read back", "MAL imposed", "Break-even MAL"} <= set(headers)
    assert "eagle3 N=3 pays at c &lt;= 64 once position 1 accepts &gt;= 0.34" in section.sentences.text()
    plot = section.plot.getPlotItem()
    assert MARK in plot.titleLabel.text
    named = {label.text: sample.item for sample, label in plot.legend.items}
    assert len([n for n in named if n.endswith(("c=1", "c=16", "c=64"))]) == 9
    unity = named["speedup 1.0 (break-even)"]
    assert list(unity.yData) == [1.0, 1.0] and unity.opts["pen"].style() == Qt.DashLine
    # In the measured charts what-if series are drawn apart (long dashes) and labelled.
    curves = {c.name(): c for c in page.plots["per_position"].getPlotItem().listDataItems()}
    for name, curve in curves.items():
        dashed = curve.opts["pen"].style() == Qt.CustomDashLine
        assert dashed == ("(what-if)" in name), name
    assert "what-if" in page.plots["per_position"].getPlotItem().caption.text
    assert "12 what-if run(s)" in page.title.text()

    written = {p.name for p in page.export_to(tmp_path / "out")}
    assert {"breakeven.svg", "breakeven.png", "breakeven.csv", "what_if_table.csv", "what_if_table.json"} <= written
    assert MARK in (tmp_path / "out" / "breakeven.svg").read_text()


def test_export_writes_the_break_even_chart_and_the_what_if_table(qapp, what_if_db, recorded_db, tmp_path, capsys):
    out = tmp_path / "out"
    assert draftbench(["export", "--db", str(what_if_db), "--out", str(out), "--format", "png,svg,csv,json",
                        "--width", "640", "--height", "400"]) == 0
    assert QImage(str(out / "breakeven.png")).size().toTuple() == (640, 400)
    svg = ET.parse(out / "breakeven.svg").getroot()
    texts = " ".join(t.text for t in svg.iter() if t.tag.endswith("text") and t.text)
    assert MARK in texts, texts[:300]
    with open(out / "breakeven.csv") as f:
        points = list(csv.DictReader(f))
    assert {p["imposed_source"] for p in points} == {"typed"} and {p["what_if"] for p in points} == {"True"}
    assert {p["series"] for p in points} == {f"{m} (what-if) · c={c}" for m in ("eagle3 N=3", "dflash N=7", "dspark N=7")
                                             for c in (1, 16, 64)}
    table = json.loads((out / "what_if_table.json").read_text())
    assert len(table) == 9 and all(r["what_if"] and r["imposed_source"] == "typed" for r in table)
    eagle = next(r for r in table if r["config"] == "eagle3 N=3 (what-if)" and r["concurrency"] == 64)
    assert eagle["break_even_p1"] == pytest.approx(0.337, abs=0.001) and eagle["imposed_mal"] == 2.85
    with open(out / "what_if_table.csv") as f:
        assert next(csv.DictReader(f))["imposed_rates"] == "0.85 0.72 0.61 0.52 0.44 0.37 0.31"
    # The measured table's file holds no what-if row.
    assert json.loads((out / "speedup_table.json").read_text()) == []
    assert "breakeven not drawn" not in capsys.readouterr().err
    # A measured sweep: no what-if chart or table, said only when the chart was asked for by name.
    for chart, said in (("all", False), ("breakeven", True)):
        measured = tmp_path / f"measured-{chart}"
        assert draftbench(["export", "--db", str(recorded_db), "--out", str(measured), "--chart", chart,
                            "--format", "csv"]) == 0
        assert ("breakeven not drawn: needs what-if runs" in capsys.readouterr().err) == said
        assert not (measured / "what_if_table.csv").exists() and not (measured / "breakeven.csv").exists()


CHECK = """<script>
window.addEventListener("load", () => {
  const width = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > width + 0.5)
    .map(e => e.tagName.toLowerCase() + ": " + (e.textContent || e.alt || "").slice(0, 60));
  const images = [...document.images];
  const section = document.querySelector("section.what-if");
  const answer = document.querySelector("h2 + p.note + table");
  const figure = section.querySelector("figure");
  const out = document.createElement("pre");
  out.id = "measure";
  out.textContent = JSON.stringify({width, scroll: document.documentElement.scrollWidth, wide,
    broken: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt),
    heading: section.querySelector("h2").textContent, border: getComputedStyle(section).borderTopStyle,
    rows: section.querySelectorAll("tbody tr").length, caption: figure.querySelector("figcaption").textContent,
    chart: figure.querySelector("img").naturalWidth, sentences: [...section.querySelectorAll("li")].map(l => l.textContent),
    answer: answer.textContent, answer_above: answer.getBoundingClientRect().bottom < section.getBoundingClientRect().top});
  document.body.appendChild(out);
});
</script>"""


def test_report_has_a_marked_what_if_section_in_chromium(qapp, mixed_db, tmp_path):
    report = write_report(compare_view.build(compare_view.select(mixed_db), mixed_db), tmp_path / "report.html",
                          "What-if report")
    page = tmp_path / "checked.html"
    page.write_text(report.read_text().replace("</body>", CHECK + "</body>"), encoding="utf-8")
    seen = measure(page)
    assert seen["scroll"] <= seen["width"] <= 1280 and seen["wide"] == [] and seen["broken"] == [], seen
    assert seen["heading"].endswith(f"What-if ({MARK})") and seen["border"] == "dashed"
    assert seen["rows"] == 9 and seen["chart"] > 0 and MARK in seen["caption"]
    assert "eagle3 N=3 pays at c <= 64 once position 1 accepts >= 0.34" in seen["sentences"]
    # The measured answer above it: measured configurations, no what-if one.
    assert seen["answer_above"] and "eagle3" in seen["answer"] and "what-if" not in seen["answer"]
    text = html.unescape(report.read_text())
    assert "within 3 % of the real drafter's" in text.split('id="what-if"')[1].split("</section>")[0]
    runs = text.split("<h2>Runs")[1].split("</table>")[0]
    assert len(re.findall(r"\(what-if\)</td>", runs)) == 12


def test_runs_and_show_mark_what_if_runs(mixed_db, capsys):
    assert cli.main(["runs", "--db", str(mixed_db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "what-if"
    assert lines[2 + 3].startswith("4 ") and "what-if, acceptance imposed: typed (MAL 2.85)" in lines[2 + 3]
    assert "what-if" not in lines[-1]  # a measured copy: its column empty
    assert cli.main(["show", "5", "--db", str(mixed_db)]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"^what-if\s+what-if, acceptance imposed: typed \(MAL 2.85\)", shown, re.M)
    assert re.search(r"^imposed per-position\s+0.800 0.600 0.450$", shown, re.M)
    assert cli.main(["show", "--db", str(mixed_db)]) == 0
    shown = capsys.readouterr().out
    measured, what_if = shown.split("what-if (acceptance imposed: typed;")
    table = measured.split("as on the Compare page")[1]
    assert "eagle3" in table and "(what-if)" not in table
    assert "Step cost" in what_if and "eagle3 N=3 pays at c <= 64 once position 1 accepts >= 0.34" in what_if


def test_export_bench_says_what_if_and_imports_back_as_one(what_if_db, tmp_path, capsys):
    out = tmp_path / "run4.json"
    assert cli.main(["export-bench", "4", "--db", str(what_if_db), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["what_if"] is True and data["imposed"] == {"rates": [0.8, 0.6, 0.45], "source": "typed", "mal": 2.85}
    assert data["label"].endswith("(what-if)")
    db = store.open_db(tmp_path / "back.sqlite")
    row = store.run(db, benchjson.import_file(db, out, method="eagle3", n=3))
    assert row.what_if == 1 and json.loads(row.imposed)["source"] == "typed"
    assert not compare.speedup_table(compare.configs([row]))
    measured = dataclasses.replace(store.run(store.open_db(what_if_db, readonly=True), 4), what_if=0, imposed=None)
    assert "what_if" not in benchjson.export_run(measured)


def test_history_and_live_mark_what_if_runs(qtbot, what_if_db):
    rows = stored_runs(what_if_db)
    model = RunsModel()
    model.set_rows([HistoryRow(run=r) for r in rows])
    method = [key for key, *_ in COLUMNS].index("method")
    assert model.data(model.index(3, method)) == "eagle3 (what-if)"
    assert model.data(model.index(3, method), Qt.ToolTipRole) == "what-if, acceptance imposed: typed (MAL 2.85)"
    live = LivePage()
    qtbot.addWidget(live)
    live.show_run(what_if_db, 4)
    assert MARK in live.title.text() and "eagle3 N=3" in live.title.text()
    live.show_run(what_if_db, 1)
    assert "what-if baseline" in live.title.text()
