"""Render the SVG application icon to the PNG sizes desktops look for (run after editing the SVG)."""

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"
SIZES = (16, 32, 48, 64, 128, 256)


def main() -> None:
    app = QGuiApplication(sys.argv[:1])  # Qt needs an application object to paint
    renderer = QSvgRenderer(str(ICONS / "draftbench.svg"))
    for size in SIZES:
        image = QImage(size, size, QImage.Format_ARGB32)
        image.fill(Qt.transparent)
        painter = QPainter(image)
        renderer.render(painter)
        painter.end()
        image.save(str(ICONS / f"draftbench-{size}.png"))
    print("wrote", ", ".join(f"draftbench-{s}.png" for s in SIZES))
    app.quit()


if __name__ == "__main__":
    main()
