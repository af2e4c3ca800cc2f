"""Exports checked for real: PNG decodes at the requested size, SVG parses, PDF has a page,
CSV/JSON round-trip, the HTML report references nothing outside itself (on the sweep recorded on a
GPU); and the Compare page with vLLM's per-request figures (on a real CPU sweep)."""

import base64
import csv
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtGui import QImage

from app.pages.compare_page import ComparePage
from app.exports import export_all, write_report
from workbench import store
from workbench.analysis import compare, series
from workbench.usecases import compare_view
from workbench.usecases.chart_names import CHART_NAMES

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import""", re.I)


@pytest.fixture(scope="module")
def rows(recorded_db):
    db = store.open_db(recorded_db, readonly=True)
    return store.runs(db)


def test_every_format_is_a_real_file(qapp, rows, tmp_path):
    written = export_all(compare_view.build(rows), tmp_path, ["png", "svg", "pdf", "csv", "json"],
                         ["per_position", "throughput", "efficiency"], 900, 500, 200)
    assert len(written) == 3 * 5 + 2
    for name in ("per_position", "throughput", "efficiency"):
        image = QImage(str(tmp_path / f"{name}.png"))
        assert not image.isNull() and (image.width(), image.height()) == (900, 500)
        assert round(image.dotsPerMeterX() * 0.0254) == 200
        root = ET.parse(tmp_path / f"{name}.svg").getroot()
        assert root.tag.endswith("svg") and len(list(root.iter())) > 10
        if name == "throughput":
            # The axes were ranged to the data (tokens/s of tens), not left at their 0..1 default.
            labels = [float(t.text) for t in root.iter() if t.tag.endswith("text") and t.text
                      and re.fullmatch(r"-?\d+(\.\d+)?", t.text.strip())]
            assert max(labels) >= 10, labels
        pdf = (tmp_path / f"{name}.pdf").read_bytes()
        assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page\b", pdf)) == 1
    cs = compare.configs(rows)
    with open(tmp_path / "per_position.csv") as f:
        back = list(csv.DictReader(f))
    assert [float(r["acceptance"]) for r in back] == pytest.approx([p.acceptance for p in series.per_position(cs)])
    assert json.loads((tmp_path / "throughput.json").read_text()) == [p.as_dict() for p in series.throughput(cs)]
    table = json.loads((tmp_path / "speedup_table.json").read_text())
    assert {r["method"] for r in table} == {"ngram", "draft_model"}


def test_html_report_is_self_contained(qapp, rows, tmp_path):
    path = write_report(compare_view.build(rows), tmp_path / "report.html", "A comparison")
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "A comparison" in text
    assert not EXTERNAL.search(text), EXTERNAL.search(text).group(0)
    images = re.findall(r'<img alt="([^"]+)" src="data:image/svg\+xml;base64,([^"]+)"', text)
    assert len(images) >= 4
    for title, data in images:
        svg = base64.b64decode(data).decode()
        assert ET.fromstring(svg).tag.endswith("svg") and not EXTERNAL.search(svg), title
    # Answer first: the best configuration per method comes before the charts; full paths only in the details.
    assert text.index("Which method and N is fastest") < text.index("<h2>Charts")
    assert "ngram (fastest measured: one run, no interval)" in text and "--speculative-config" in text.split("Serve it")[1].split("<h2>")[0]
    tables = [t.split("</table>")[0] for t in text.split("<table>")[1:]]
    # The answer, what its speedups cost in latency, and the runs.
    assert len(tables) == 3 and all(rows[0].target not in t for t in tables)
    assert ">smollm2-135m<" in tables[0] and rows[0].target in text.split("<h2>Details")[1]
    for r in rows:
        assert r.command in text.replace("&quot;", '"').replace("&#x27;", "'")
    assert "vLLM 0.26.0" in text  # the version the recorded runs were measured on


def test_export_and_report_from_the_cli_without_a_display(recorded_db, tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM")}
    done = subprocess.run([sys.executable, "-m", "app", "export", "--db", str(recorded_db), "--out", str(tmp_path),
                           "--chart", "mal", "--format", "png,csv", "--width", "640", "--height", "480"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert QImage(str(tmp_path / "mal.png")).size().toTuple() == (640, 480)
    done = subprocess.run([sys.executable, "-m", "app", "report", "--db", str(recorded_db),
                           "--out", str(tmp_path / "r.html")], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and (tmp_path / "r.html").stat().st_size > 10000
    bad = subprocess.run([sys.executable, "-m", "app", "export", "--db", str(recorded_db), "--format", "gif"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "unknown format 'gif'" in bad.stderr and "Traceback" not in bad.stderr


def test_compare_page_draws_the_runs(qtbot, qtmodeltester, sweep_db, tmp_path):
    rows = store.runs(store.open_db(sweep_db[0], readonly=True))
    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, sweep_db[0])
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    # Per-request attribution: one bar series per speculative configuration, over the four families.
    bars = [i for i in page.plots["by_category"].getPlotItem().items if type(i).__name__ == "BarGraphItem"]
    assert len(bars) == 2
    assert {r.category for r in page.data.by_category} <= {"math_word", "competition_math",
                                                           "function_completion", "programming_task"}
    assert page.plots["by_prompt_length"].getPlotItem().listDataItems()
    qtmodeltester.check(page.table_model)
    assert page.table_model.rowCount() == 2
    curves = [item for item in page.plots["per_position"].getPlotItem().listDataItems()]
    assert len(curves) == 2
    assert page.plots["throughput"].getPlotItem().listDataItems()
    written = page.export_to(tmp_path)
    # A CPU sweep of one N per method at one concurrency: no GPU power readings, nothing to predict
    # from, no second concurrency; those charts are not drawn, nor written.
    drawn = [n for n in CHART_NAMES if n not in ("energy", "gpus", "prediction", "concurrency")]
    assert sorted({p.stem for p in written}) == sorted(drawn)
    assert len(written) == len(drawn) * 5 and all(p.stat().st_size > 0 for p in written)
