"""A Compare chart written out: laid out at a chosen size, then PNG (that size and DPI), SVG or PDF."""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
# The exporters are a submodule pyqtgraph does not import.
import pyqtgraph.exporters  # noqa: F401
from PySide6.QtCore import QMarginsF, QRectF, QSizeF
from PySide6.QtGui import QPageSize, QPainter, QPdfWriter
from PySide6.QtWidgets import QApplication

from app.widgets.charts import fit_legend


def lay_out(w: pg.PlotWidget, width: int, height: int) -> None:
    """Give an unshown plot its size, so exports lay out titles, axes and the legend for that size."""
    fit_legend(w, height)
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
    writer.setPageSize(QPageSize(QSizeF(w.width() * 0.75, w.height() * 0.75), QPageSize.Unit.Point))
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
