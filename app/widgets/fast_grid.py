"""A plot's grid as opaque lines behind the data, at the axes' own ticks.

pyqtgraph draws a grid by stretching the axes' tick lines across the view in a translucent pen,
and Qt's raster engine blends translucent lines pixel by pixel: about 20 times the cost of the
same lines opaque (5-20 ms per repaint of one Live chart on a small CPU, most of its paint). The
same look comes from opaque lines whose colour is the foreground mixed into the background, drawn
under the data so they never cover a curve.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF, QSizeF
from PySide6.QtGui import QColor, QPainter, QPen, QTransform

ALPHA = 0.2  # the grid's strength, as pyqtgraph's showGrid(alpha=...) had it
# One tick level's lines in device pixels, and the pen they are drawn in.
Level = tuple[QPen, list[QLineF]]


def _mixed(alpha: float) -> QColor:
    """The foreground at `alpha` over the background, as one opaque colour."""
    fg, bg = pg.mkColor(pg.getConfigOption("foreground")), pg.mkColor(pg.getConfigOption("background"))
    return QColor(*(round(b + (f - b) * alpha) for f, b in ((fg.red(), bg.red()), (fg.green(), bg.green()),
                                                             (fg.blue(), bg.blue()))))


class Grid(pg.GraphicsObject):
    """Grid lines of the bottom and left axes' tick levels (major lines stronger, as the axes'
    own grid fades finer levels), in view coordinates; ignored by auto-range."""

    def __init__(self, plot: pg.PlotWidget, alpha: float = ALPHA):
        super().__init__()
        self.pi = plot.getPlotItem()
        self.vb = self.pi.getViewBox()
        self.alpha = alpha
        self.vb.addItem(self, ignoreBounds=True)
        self.setZValue(-1000)  # under every data item (addItem lifts an item to the view's own level)
        self._key: object = None  # the range, size and transform the lines were laid out for
        self._drawn: list[Level] = []
        self._pens: dict[float, QPen] = {}
        self.vb.sigRangeChanged.connect(self._moved)
        self.vb.sigResized.connect(self._moved)

    def _moved(self, *_: object) -> None:
        self.prepareGeometryChange()
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return self.vb.viewRect()

    def _lines(self, side: str, lo: float, hi: float, pixels: float, rect: QRectF) -> list[list[QLineF]]:
        """Per tick level, its lines across the view."""
        axis = self.pi.getAxis(side)
        if pixels <= 0 or hi <= lo:
            return []
        levels: list[list[QLineF]] = []
        for _, values in axis.tickValues(lo, hi, pixels):
            if side == "bottom":
                levels.append([QLineF(v, rect.top(), v, rect.bottom()) for v in values])
            else:
                levels.append([QLineF(rect.left(), v, rect.right(), v) for v in values])
        return levels

    def paint(self, p: QPainter, *_: object) -> None:
        transform = p.transform()
        rect = self.vb.viewRect()
        size = self.vb.size()
        key = (rect.getRect(), (size.width(), size.height()),
               (transform.m11(), transform.m12(), transform.m21(), transform.m22(), transform.dx(), transform.dy()))
        if key != self._key:  # the lines move only with the range, the size or the transform
            self._key, self._drawn = key, self._levels(rect, size, transform)
        # In device pixels with a one-pixel pen: the view's scale must not widen or blur a line.
        p.resetTransform()
        for pen, lines in self._drawn:
            p.setPen(pen)
            p.drawLines(lines)
        p.setTransform(transform)

    def _levels(self, rect: QRectF, size: QSizeF, transform: QTransform) -> list[Level]:
        """Per tick level of each axis: its pen and its lines in device pixels."""
        out: list[Level] = []
        for side, lo, hi, pixels in (("bottom", rect.left(), rect.right(), size.width()),
                                     ("left", rect.top(), rect.bottom(), size.height())):
            for i, lines in enumerate(self._lines(side, lo, hi, pixels, rect)):
                # As the axes fade a level whose lines crowd together (AxisItem.generateDrawSpecs).
                crowd = min(1.0, max(0.0, 0.05 * pixels / (len(lines) + 1)))
                alpha = round(self.alpha * crowd / (i + 1), 2)
                if lines and alpha > 0.01:
                    if alpha not in self._pens:
                        self._pens[alpha] = pg.mkPen(_mixed(alpha), width=1, cosmetic=True)
                    out.append((self._pens[alpha], [transform.map(line) for line in lines]))
        return out


def add(plot: pg.PlotWidget, alpha: float = ALPHA) -> Grid:
    """The plot's grid drawn by a Grid instead of its axes; kept as the plot's `fast_grid`."""
    plot.showGrid(x=False, y=False)
    plot.fast_grid = Grid(plot, alpha)
    return plot.fast_grid
