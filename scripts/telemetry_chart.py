"""Export a run's GPU telemetry charts (power per GPU and summed, utilisation) as the Live page
draws them. usage: python scripts/telemetry_chart.py DB RUN_ID OUT_PREFIX  (writes PREFIX-power.png
and PREFIX-util.png)"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.widgets import chart_export, theme  # noqa: E402
from app.pages.live import LivePage  # noqa: E402


def main() -> int:
    db, run_id, prefix = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    _app = QApplication.instance() or QApplication([])  # held: widgets need it alive
    theme.apply()
    page = LivePage()
    page.show_run(db, run_id)
    page.poll()
    page.charts.dirty = True
    page.redraw()
    chart_export.export_png(page.charts.power_plot, f"{prefix}-power.png", 1000, 500)
    chart_export.export_png(page.charts.util_plot, f"{prefix}-util.png", 1000, 500)
    print(f"{prefix}-power.png {prefix}-util.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
