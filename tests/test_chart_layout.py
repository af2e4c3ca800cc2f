"""Every Compare chart and every exported chart, drawn offscreen from stored sweeps (the demo sweep
recorded on 2 CPU cores, and the H200 sweeps in docs/gpu/) at 1280x800 and 1920x1080: no legend over
the data, no text cut off by its view, each legend swatch in its series' colour, and one colour per
(method, N) in Compare, Live, the report and the exports."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from helpers import chartcheck
from app.exports import export_all, write_report
from app.main import MainWindow
from app.pages.live import LivePage
from app.widgets import chart_export, charts as chartlib
from helpers.recorded import GPU_DB, ROOT, copy_db
from workbench import store
from workbench.analysis import answer
from workbench.report import palette
from workbench.usecases import compare_view
from workbench.usecases.chart_names import CHART_NAMES
from workbench.usecases.compare_view import select

DEMO_DB = ROOT / "tests" / "fixtures" / "demo" / "demo-sweep.sqlite"
SOURCES = {"demo": DEMO_DB, "h200": GPU_DB, "h200x2": ROOT / "docs" / "gpu" / "h200x2-tp2.sqlite"}
SIZES = [(1280, 800), (1920, 1080)]


@pytest.fixture(scope="module", params=sorted(SOURCES))
def db(request, tmp_path_factory) -> Path:
    path = copy_db(SOURCES[request.param], tmp_path_factory.mktemp(request.param) / "results.sqlite")
    store.open_db(path).conn.close()  # brought to this version's schema
    return path


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    path = copy_db(DEMO_DB, tmp_path_factory.mktemp("demo") / "results.sqlite")
    store.open_db(path).conn.close()
    return path


def _problems(w) -> list[str]:
    return chartcheck.legend_overlaps(w) + chartcheck.clipped_texts(w)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_compare_charts_fit_the_window(qtbot, db, size, vllm_install):
    window = MainWindow(db, vllm_install)
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    # The file is checked, its latest experiment read, and then its runs' view built, off the GUI thread.
    qtbot.waitUntil(lambda: window.opening is None and bool(window.compare.rows) and not window.compare.building,
                    timeout=20000)
    window.tabs.setCurrentWidget(window.compare)
    page = window.compare
    # The database's latest experiment is on Compare without going through History.
    latest = store.latest_experiment(store.open_db(db, readonly=True))
    assert page.rows and {r.experiment_id for r in page.rows} == {latest}
    assert page.answer_model.rowCount() > 0
    assert page.answer.horizontalScrollBar().maximum() == 0, "the answer table is wider than the window"
    offered = [page.chooser.itemData(i) for i in range(page.chooser.count())]
    assert offered == [n for n in CHART_NAMES if page.data.has(n)] and len(offered) >= 5
    for name in offered:
        page.show_chart(name)
        qtbot.wait(30)
        plot = page.plots[name]
        assert plot.isVisible() and plot.width() > 900 and plot.height() > 250, (name, plot.size())
        assert _problems(plot) == [], name
        for label, pixels in chartcheck.swatch_colours(plot, chartcheck.render(plot)):
            expected = chartcheck.expected_colour(label)
            if expected:
                assert any(chartcheck.close(p, expected) for p in pixels), (name, label, expected, pixels)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_exported_charts_are_ready_for_a_slide(qtbot, db, size, tmp_path):
    rows = select(db)
    data = compare_view.build(rows, db).data
    caption = answer.conditions(rows)
    drawn = [n for n in CHART_NAMES if data.has(n)]
    assert len(drawn) >= 5
    for name in drawn:
        w = chartlib.new_plot(name)
        qtbot.addWidget(w)
        assert chartlib.draw(w, name, data, caption)
        path = tmp_path / f"{name}.png"
        chart_export.export_png(w, path, *size)
        assert _problems(w) == [], name
        pi = w.getPlotItem()
        assert pi.titleLabel.text == chartlib.CHARTS[name][0]
        assert "(" in w.getAxis("left").labelText, "the y axis names its unit"
        for condition in (f"vLLM {rows[0].vllm_version}", "temperature", "concurrency", "target", "workload"):
            assert condition in pi.caption.text
        image = QImage(str(path))
        assert (image.width(), image.height()) == size
        entries = chartcheck.swatch_colours(w, image)
        assert entries, f"{name} has no legend"
        for (sample, _), (label, pixels) in zip(pi.legend.items, entries):
            # The swatch is drawn in its own series' colour (bar charts included)...
            own = chartcheck.series_colour(sample.item)
            assert any(chartcheck.close(p, own) for p in pixels), (name, label, own, pixels)
            # ...which is the palette's colour of that configuration, method or baseline.
            expected = chartcheck.expected_colour(label)
            if expected:
                assert chartcheck.close(own, expected), (name, label, own, expected)


def test_a_chart_without_data_is_not_drawn_and_says_why(qtbot, demo_db, tmp_path):
    rows = select(demo_db)
    view = compare_view.build(rows, demo_db)
    data = view.data
    # The demo sweep ran on CPUs: no GPU power readings.
    assert not data.has("energy") and not data.has("gpus")
    written = export_all(view, tmp_path, ["png"], list(CHART_NAMES), 800, 500, 96)
    assert {p.stem for p in written} == {n for n in CHART_NAMES if data.has(n)}
    assert not (tmp_path / "energy.png").exists()
    from app.pages.compare_page import ComparePage

    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, demo_db)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    assert page.chooser.findData("energy") == -1
    assert chartlib.EMPTY["energy"] in page.missing.text()


def test_one_colour_per_method_and_n_everywhere(qtbot, demo_db, tmp_path):
    rows = select(demo_db)
    spec = [r for r in rows if r.method != "baseline" and r.status == "completed"]
    assert {r.method for r in spec} == {"ngram", "draft_model"}
    colours = {(r.method, r.n): palette.colour(r.method, r.n) for r in spec}
    assert len(set(colours.values())) == len(colours), "two configurations share a colour"

    from app.pages.compare_page import ComparePage

    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, demo_db)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    curves = {c.name(): c for c in page.plots["per_position"].getPlotItem().listDataItems() if c.name()}
    report_path = write_report(compare_view.build(rows, demo_db), tmp_path / "report.html", "colours")
    text = report_path.read_text()
    svgs = {title: base64.b64decode(data).decode()
            for title, data in re.findall(r'<img alt="([^"]+)" src="data:image/svg\+xml;base64,([^"]+)"', text)}
    per_position_svg = svgs[chartlib.CHARTS["per_position"][0]].lower()
    live = LivePage()
    qtbot.addWidget(live)
    for r in spec:
        colour = colours[(r.method, r.n)]
        series = f"{r.method} N={r.n} · {r.workload} · c={r.concurrency}"
        # Compare
        assert chartcheck.series_colour(curves[series]) == colour, series
        # Live
        live.show_run(demo_db, r.id)
        live.redraw()
        assert chartcheck.series_colour(live.charts.bars) == colour
        assert live.charts.tps_curve.opts["pen"].color().name() == colour
        # The report: its answer table's chip and its charts
        assert f"background:{colour}" in text
        assert colour in per_position_svg, series
    # The exports: every legend swatch's pixels, checked in test_exported_charts_are_ready_for_a_slide.
