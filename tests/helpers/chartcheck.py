"""Geometry and colour checks of a drawn pyqtgraph chart, read from its scene: a legend clear of the
plotted data, every text item inside the view, each legend swatch in its series' colour."""

from __future__ import annotations

import re

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QGraphicsTextItem

from workbench.report import palette

LABEL = re.compile(r"^(?P<method>[a-z0-9_]+)(?: N=(?P<n>\d+))?(?: ·|$)")


def _visible(item) -> bool:
    while item is not None:
        if not item.isVisible():
            return False
        item = item.parentItem()
    return True


def view_rect(w: pg.PlotWidget) -> QRectF:
    """What the view shows of the scene: the widget's area."""
    return w.mapToScene(w.rect()).boundingRect()


def legend_overlaps(w: pg.PlotWidget) -> list[str]:
    """Plotted items (clipped to the data area, as drawn) whose box meets the legend's."""
    pi = w.getPlotItem()
    legend = pi.legend
    if legend is None or not legend.items:
        return []
    box = legend.sceneBoundingRect()
    area = pi.getViewBox().sceneBoundingRect()
    out = []
    for item in _drawn(pi.getViewBox().addedItems):
        drawn = item.sceneBoundingRect().intersected(area)
        if not drawn.isEmpty() and drawn.intersects(box):
            out.append(f"{type(item).__name__} at {drawn.getRect()} under the legend at {box.getRect()}")
    return out


def _drawn(items) -> list:
    """The items that paint, down through containers (a PlotDataItem paints through its curve and
    its scatter, and has no extent of its own)."""
    out = []
    for item in items:
        if not _visible(item):
            continue
        if not item.boundingRect().isEmpty():
            out.append(item)
        out += _drawn(item.childItems())
    return out


def clipped_texts(w: pg.PlotWidget) -> list[str]:
    """Text items that reach outside the view (cut off where it ends)."""
    shown = view_rect(w).adjusted(-0.5, -0.5, 0.5, 0.5)
    out = []
    for item in w.scene().items():
        if isinstance(item, QGraphicsTextItem) and _visible(item) and item.toPlainText().strip():
            rect = item.mapRectToScene(item.boundingRect())
            # A text item's box has its document's margin around the glyphs.
            m = item.document().documentMargin()
            inner = rect.adjusted(m, m, -m, -m)
            if not shown.contains(inner):
                out.append(f"{item.toPlainText()!r} at {inner.getRect()} outside {shown.getRect()}")
    return out


def expected_colour(label: str) -> str | None:
    """A legend entry's colour by its text alone, from the palette: a configuration (method N=..),
    a method's line across N (method · ...), or a baseline."""
    if label.startswith("baseline"):
        return palette.BASELINE
    m = LABEL.match(label)
    if not m or m["method"] in ("all", "gpu"):
        return None
    return palette.colour(m["method"], int(m["n"]) if m["n"] else None)


def series_colour(item) -> str:
    """The colour an item is drawn in: a bar's fill, a line's pen, a point's fill."""
    opts = item.opts
    if isinstance(item, pg.BarGraphItem):
        return pg.mkBrush(opts["brush"]).color().name()
    if opts.get("pen") is not None and pg.mkPen(opts["pen"]).style() != 0:
        return pg.mkPen(opts["pen"]).color().name()
    return pg.mkBrush(opts["symbolBrush"]).color().name()


def render(w: pg.PlotWidget) -> QImage:
    """The chart as the PNG exporter draws it (the plot item's area, one pixel per scene unit)."""
    exporter = pg.exporters.ImageExporter(w.getPlotItem())
    exporter.parameters()["width"] = int(w.getPlotItem().sceneBoundingRect().width())
    return exporter.export(toBytes=True)


def swatch_colours(w: pg.PlotWidget, image: QImage) -> list[tuple[str, set[str]]]:
    """Per legend entry: its label, and the colours of the pixels where its swatch is drawn."""
    origin = w.getPlotItem().sceneBoundingRect().topLeft()
    out = []
    for sample, label in w.getPlotItem().legend.items:
        r = sample.sceneBoundingRect().translated(-origin)
        pixels = set()
        for dx in range(1, 19):
            for dy in (10, 11, 12) if not isinstance(sample.item, pg.BarGraphItem) else (6, 10, 14):
                x, y = int(r.left() + dx), int(r.top() + dy)
                if 0 <= x < image.width() and 0 <= y < image.height():
                    pixels.add(QColor(image.pixel(x, y)).name())
        out.append((label.text, pixels))
    return out


def close(a: str, b: str, tolerance: int = 6) -> bool:
    ca, cb = QColor(a), QColor(b)
    return all(abs(x - y) <= tolerance for x, y in ((ca.red(), cb.red()), (ca.green(), cb.green()),
                                                    (ca.blue(), cb.blue())))
