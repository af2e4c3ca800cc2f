"""The Compare charts, built with pyqtgraph from the data `workbench.analysis.compare.chart_data` returns,
and their export to PNG (chosen size and DPI), SVG and PDF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401  (the exporters are a submodule pyqtgraph does not import)
from PySide6.QtCore import QMarginsF, QRectF, QSizeF
from PySide6.QtGui import QPageSize, QPainter, QPdfWriter
from PySide6.QtWidgets import QApplication

from app.widgets import theme
from workbench.analysis import recommend

PREDICTION_TIP = ("Points: measured speedup (± 95% interval). Dashed line and band: the speedup predicted for "
                  "every N up to the largest one run, T(N) / c(N), with its 95% interval. T(N) = 1 + the "
                  "per-position acceptance measured at the largest N summed to N (tokens per step); c(N) = "
                  "1 + alpha + beta N, the step cost against a baseline step, fitted to the N that were run. "
                  "See docs/recommend-n.md")

CHARTS = {
    "per_position": ("Per-position acceptance", "acceptance (share of drafts)", "draft position",
                     "p[i] = accepted at draft position i / drafts: a survival curve per configuration"),
    "throughput": ("Output throughput against N", "output tokens/s", "N (speculative tokens)",
                   "Mean output tokens/s per N, one line per method; dashed: the matching baseline"),
    "efficiency": ("Efficiency and MAL against N", "efficiency = speedup / MAL", "N (speculative tokens)",
                   "How much of the ideal gain (MAL x) was realised; 1.0 would be a free draft"),
    "mal": ("MAL against N", "MAL (tokens / step)", "N (speculative tokens)",
            "Mean acceptance length = 1 + accepted / drafts"),
    "prediction": ("Speedup against N: measured and predicted", "speedup (x baseline)", "N (speculative tokens)",
                   PREDICTION_TIP),
    "concurrency": ("Speedup against concurrency", "speedup (x baseline)", "concurrency (requests in flight)",
                    "Where speculation stops paying: speedup at each concurrency, 1.0 = baseline"),
    "by_category": ("MAL by prompt category", "MAL (tokens / step)", "prompt category",
                    "Per-request attribution (vLLM's per-request spec-decode metrics): 1 + accepted / drafts "
                    "summed over the requests of each category"),
    "by_prompt_length": ("MAL against prompt length", "MAL (tokens / step)", "prompt length (tokens, bin start)",
                         "Per-request attribution: MAL of the requests whose prompt length falls in each bin"),
    "energy": ("Energy per output token against N", "joules per output token", "N (speculative tokens)",
               "GPU energy over the measurement window (power summed over the run's GPUs, integrated) / "
               "output tokens; dashed: the matching baseline. Needs GPU power readings"),
    "gpus": ("GPU power per configuration", "mean power (W)", "configuration",
             "Mean power of each GPU over a run's window, and their sum ('all GPUs') for tensor-parallel "
             "runs; hover a bar for utilisation"),
}


SHORT = {"math_word": "math words", "competition_math": "comp. math", "function_completion": "functions",
         "programming_task": "prog. tasks"}
EMPTY = {"prediction": "needs a baseline and runs at two or more N",
         "concurrency": "needs runs at two or more concurrencies",
         "by_category": "needs runs with per-request spec-decode metrics",
         "by_prompt_length": "needs runs with per-request spec-decode metrics",
         "energy": "needs runs with GPU power readings (NVIDIA or AMD telemetry)",
         "gpus": "needs runs with GPU power readings (NVIDIA or AMD telemetry)"}


def _series(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["series"], []).append(r)
    return out


def new_plot(name: str) -> pg.PlotWidget:
    w = theme.plot(*CHARTS[name])
    w.addLegend(offset=(-10, 10))
    theme.integer_ticks(w)
    # Ratios like an efficiency of 0.5 must not be shown as "500 (x0.001)".
    for side in ("left", "bottom"):
        w.getAxis(side).enableAutoSIPrefix(False)
    return w


def _line(w: pg.PlotWidget, i: int, x, y, name: str, ci=None) -> None:
    x, y = np.asarray(x, float), np.asarray(y, float)
    w.plot(x, y, name=name, pen=pg.mkPen(theme.color(i), width=2), symbol="o", symbolSize=6,
           symbolBrush=theme.color(i))
    if ci is not None and not np.all(np.isnan(np.asarray(ci, float))):
        err = pg.ErrorBarItem(x=x, y=y, height=2 * np.nan_to_num(np.asarray(ci, float)), beam=0.15,
                              pen=pg.mkPen(theme.color(i)))
        w.addItem(err)


def _against_n(w: pg.PlotWidget, rows: list[dict], key: str, baseline_key: str, fmt: str,
               ci: str | None = None) -> None:
    """One line per series against N, and a dashed line per context at its baseline's value."""
    baselines = set()
    for i, (series, items) in enumerate(_series(rows).items()):
        _line(w, i, [r["n"] for r in items], [r[key] for r in items], series,
              [r[ci] for r in items] if ci else None)
        baselines.add((series.split(" · ", 1)[1], items[0][baseline_key]))
    for context, base in sorted(baselines, key=str):
        if base:
            w.addItem(pg.InfiniteLine(pos=base, angle=0, pen=pg.mkPen("#888888", style=pg.QtCore.Qt.DashLine),
                                      label=f"baseline · {context}: {fmt.format(base)}",
                                      labelOpts={"position": 0.15, "color": "#666666"}))


def draw(w: pg.PlotWidget, name: str, data: dict[str, list[dict]]) -> None:
    w.clear()
    if name in EMPTY and not data.get(name):
        w.addItem(pg.TextItem(EMPTY[name], color="#888888", anchor=(0.5, 0.5)))
    if name == "per_position":
        for i, (series, rows) in enumerate(_series(data["per_position"]).items()):
            _line(w, i, [r["position"] for r in rows], [r["acceptance"] for r in rows], series)
        w.setYRange(0, 1.05)
    elif name == "throughput":
        _against_n(w, data["throughput"], "tok_s", "baseline_tok_s", "{:.1f}", ci="tok_s_ci95")
    elif name in ("efficiency", "mal"):
        key = "efficiency" if name == "efficiency" else "mal"
        for i, (series, rows) in enumerate(_series(data["efficiency"]).items()):
            _line(w, i, [r["n"] for r in rows], [r[key] if r[key] is not None else np.nan for r in rows], series)
    elif name == "prediction":
        draw_prediction(w, data.get("prediction", []))
    elif name == "by_category":
        categories = sorted({r["category"] for r in data.get("by_category", [])})
        axis = w.getAxis("bottom")
        axis.setTicks([[(i + 1, SHORT.get(c, c)) for i, c in enumerate(categories)]])
        series = _series(data.get("by_category", []))
        width = 0.8 / max(1, len(series))
        for i, (name_, rows) in enumerate(series.items()):
            xs = [categories.index(r["category"]) + 1 - 0.4 + width * (i + 0.5) for r in rows]
            w.addItem(pg.BarGraphItem(x=xs, height=[r["mal"] for r in rows], width=width * 0.9,
                                      brush=theme.color(i)))
            w.plot([], [], name=name_, pen=None, symbol="s", symbolBrush=theme.color(i))
    elif name == "by_prompt_length":
        for i, (series, rows) in enumerate(_series(data.get("by_prompt_length", [])).items()):
            _line(w, i, [r["prompt_tokens_from"] for r in rows], [r["mal"] for r in rows], series)
    elif name == "energy":
        _against_n(w, data.get("energy", []), "joules_per_token", "baseline_joules_per_token", "{:.3f} J")
    elif name == "gpus":
        rows = data.get("gpus", [])
        configs = list(dict.fromkeys(f"#{r['run']} {r['config']}" for r in rows))
        w.getAxis("bottom").setTicks([[(i + 1, c) for i, c in enumerate(configs)]])
        by_gpu: dict[str, list[dict]] = {}
        for r in rows:
            by_gpu.setdefault(r["gpu"], []).append(r)
        width = 0.8 / max(1, len(by_gpu))
        for i, (gpu, items) in enumerate(by_gpu.items()):
            xs = [configs.index(f"#{r['run']} {r['config']}") + 1 - 0.4 + width * (i + 0.5) for r in items]
            bars = pg.BarGraphItem(x=xs, height=[r["power_w"] for r in items], width=width * 0.9,
                                   brush=theme.color(i))
            bars.setToolTip("\n".join(f"{r['config']}: {r['power_w']:.0f} W"
                                       + (f", {r['util_pct']:.0f} % busy" if r["util_pct"] is not None else "")
                                       for r in items))
            w.addItem(bars)
            w.plot([], [], name=gpu, pen=None, symbol="s", symbolBrush=theme.color(i))
    elif name == "concurrency":
        for i, (series, rows) in enumerate(_series(data["concurrency"]).items()):
            _line(w, i, [r["concurrency"] for r in rows], [r["speedup"] for r in rows], series,
                  [r["speedup_ci95"] for r in rows])
        w.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen("#888888", style=pg.QtCore.Qt.DotLine)))


def draw_prediction(w: pg.PlotWidget, rows: list[dict]) -> None:
    for i, (series, rs) in enumerate(_series(rows).items()):
        x = np.array([r["n"] for r in rs], float)
        color = pg.mkColor(theme.color(i))
        low = pg.PlotDataItem(x, [r["low"] for r in rs], pen=pg.mkPen(None))
        high = pg.PlotDataItem(x, [r["high"] for r in rs], pen=pg.mkPen(None))
        band_color = pg.mkColor(theme.color(i))
        band_color.setAlpha(50)
        band = pg.FillBetweenItem(low, high, brush=pg.mkBrush(band_color))
        band.setToolTip(f"{series}: predicted speedup's 95% interval (measurement noise of the runs it was "
                        f"fitted to, and of the baseline)")
        for item in (low, high, band):
            w.addItem(item)
        line = w.plot(x, [r["predicted"] for r in rs], name=f"{series} · predicted",
                      pen=pg.mkPen(color, width=2, style=pg.QtCore.Qt.DashLine))
        line.setToolTip(f"{series}: predicted speedup T(N) / c(N); best N = {rs[0]['best_n']}"
                        + (" (a close rival is within noise)" if rs[0]["uncertain"] else "")
                        + f". Step cost model for {recommend.FAMILIES[rs[0]['family']]}")
        seen = [r for r in rs if r["measured"] is not None]
        if seen:
            mx = np.array([r["n"] for r in seen], float)
            my = np.array([r["measured"] for r in seen], float)
            w.plot(mx, my, name=f"{series} · measured", pen=None, symbol="o", symbolSize=8, symbolBrush=color)
            w.addItem(pg.ErrorBarItem(x=mx, y=my, height=2 * np.array([r["measured_ci95"] or 0.0 for r in seen]),
                                      beam=0.15, pen=pg.mkPen(color)))
    if rows:
        w.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen("#888888", style=pg.QtCore.Qt.DotLine)))


def lay_out(w: pg.PlotWidget, width: int, height: int) -> None:
    """Give an unshown plot its size, so exports lay out titles and axes for that size."""
    w.resize(width, height)
    w.getPlotItem().resize(width, height)
    w.setSceneRect(0, 0, width, height)
    QApplication.processEvents()
    # Auto-ranging is applied lazily at paint time, which an unshown plot never reaches; the SVG
    # exporter reads the view's transform directly, so apply the pending range and matrix now.
    view = w.getPlotItem().getViewBox()
    view.updateAutoRange()
    view.updateViewRange()
    view.updateMatrix()
    QApplication.processEvents()


def export_png(w: pg.PlotWidget, path: str | Path, width: int = 1200, height: int = 800, dpi: int = 150) -> None:
    lay_out(w, width, height)
    exporter = pg.exporters.ImageExporter(w.getPlotItem())
    exporter.parameters()["width"] = width  # the height follows from the laid-out aspect ratio
    image = exporter.export(toBytes=True)
    if image.height() != height:
        image = image.scaled(width, height)
    per_metre = round(dpi / 0.0254)
    image.setDotsPerMeterX(per_metre)
    image.setDotsPerMeterY(per_metre)
    if not image.save(str(path), "PNG"):
        raise OSError(f"could not write {path}")


def export_svg(w: pg.PlotWidget, path: str | Path) -> None:
    pg.exporters.SVGExporter(w.getPlotItem()).export(str(path))


def svg_text(w: pg.PlotWidget) -> str:
    return pg.exporters.SVGExporter(w.getPlotItem()).export(toBytes=True).decode()


def export_pdf(w: pg.PlotWidget, path: str | Path) -> None:
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QSizeF(w.width() * 0.75, w.height() * 0.75), QPageSize.Point))
    writer.setPageMargins(QMarginsF(0, 0, 0, 0))
    writer.setResolution(96)
    painter = QPainter(writer)
    try:
        w.render(painter, target=QRectF(painter.viewport()))
    finally:
        painter.end()


def export(w: pg.PlotWidget, path: str | Path, width: int = 1200, height: int = 800, dpi: int = 150) -> None:
    suffix = Path(path).suffix.lower()
    if suffix == ".png":
        export_png(w, path, width, height, dpi)
    elif suffix == ".svg":
        lay_out(w, width, height)
        export_svg(w, path)
    elif suffix == ".pdf":
        lay_out(w, width, height)
        export_pdf(w, path)
    else:
        raise ValueError(f"cannot export a chart as {suffix or 'a file without extension'}: use .png, .svg or .pdf")
