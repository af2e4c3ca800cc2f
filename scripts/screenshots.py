"""Screenshots of the Experiment, Live (mid-run, real data) and History pages for docs/.

Run under a real X server, e.g.  xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots.py
It starts a small real sweep (baseline and ngram on the demo target) through the app itself.
With `--compare DB [FILE]` it instead opens that results database (e.g. one made by
`draftbench run resources/plans/demo.toml`), compares its latest experiment, and saves the
Compare page (as docs/FILE, default screenshot-compare.png) and, by default, an HTML report (rendered to PNG with headless Chromium when it is installed).
With `--train FOLDER` it shows that training folder on the Train page (docs/screenshot-train.png).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtWidgets import QApplication  # noqa: E402


def wait(app: QApplication, predicate, timeout: float) -> None:
    end = time.time() + timeout
    while time.time() < end:
        app.processEvents()
        if predicate():
            return
        time.sleep(0.05)
    raise SystemExit("timed out waiting for the app")


def compare_shots(app: QApplication, db: Path, name: str = "screenshot-compare.png") -> None:
    import shutil
    import subprocess

    from app.main import MainWindow

    out = ROOT / "docs"
    w = MainWindow(db)
    w.resize(1500, 940)
    w.show()
    wait(app, lambda: w.isVisible(), 10)
    w.history.view.selectRow(w.history.proxy.rowCount() - 1)
    w.history.compare_experiment_button.click()
    for _ in range(10):
        app.processEvents()
        time.sleep(0.05)
    w.grab().save(str(out / name))
    if name != "screenshot-compare.png":
        w.close()
        return
    report = Path(tempfile.mkdtemp()) / "report.html"
    from app.exports import write_report

    write_report(w.compare.rows, report, "Draftbench demo sweep (SmolLM2-135M on 2 CPU cores)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                        f"--screenshot={out / 'screenshot-report.png'}", "--window-size=1280,2400",
                        report.as_uri()], check=True, capture_output=True, timeout=120)
    w.close()


def train_shot(app: QApplication, folder: Path) -> None:
    from app.main import MainWindow

    from workbench import paths

    w = MainWindow(paths.default_db())  # the app's own default, as a user would see it
    w.resize(1500, 940)
    w.show()
    wait(app, lambda: w.isVisible(), 10)
    w.tabs.setCurrentWidget(w.train)
    w.train.out.setText(str(folder))
    w.train.out.setModified(True)
    w.train.show_folder()
    for _ in range(10):
        app.processEvents()
        time.sleep(0.05)
    w.grab().save(str(ROOT / "docs" / "screenshot-train.png"))
    w.close()


def main() -> None:
    app = QApplication(sys.argv[:1])
    if len(sys.argv) == 3 and sys.argv[1] == "--train":
        from app.widgets import theme

        theme.apply()
        train_shot(app, Path(sys.argv[2]))
        return
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--compare":
        from app.widgets import theme

        theme.apply()
        compare_shots(app, Path(sys.argv[2]), *sys.argv[3:])
        return
    from app.widgets import theme
    from app.main import MainWindow

    theme.apply()
    out = ROOT / "docs"
    out.mkdir(exist_ok=True)
    db = Path(tempfile.mkdtemp()) / "screenshots.sqlite"
    w = MainWindow(db)
    w.resize(1500, 940)
    w.show()
    wait(app, lambda: w.isVisible(), 10)
    w.tabs.setCurrentWidget(w.experiment)
    time.sleep(0.5)
    app.processEvents()
    w.grab().save(str(out / "screenshot-experiment.png"))

    doc = w.experiment.document()
    doc["name"] = "screenshots"
    doc["methods"] = [{"method": "ngram", "n": [3], "options": {"prompt_lookup_min": 2, "prompt_lookup_max": 4}}]
    doc["workload"].update({"concurrency": [4], "num_prompts": 16, "max_tokens": 96, "warmup": 1})
    w.experiment.set_document(doc)
    w.experiment.request_run()
    live = w.live
    wait(app, lambda: live.feed is not None and len(live.positions) == 3 and live.samples.n >= 12
         and live.requests.n >= 4, 400)
    for _ in range(10):
        app.processEvents()
        time.sleep(0.05)
    w.grab().save(str(out / "screenshot-live.png"))
    wait(app, lambda: w.sweep is None, 400)
    w.tabs.setCurrentWidget(w.history)
    w.refresh_history()
    app.processEvents()
    time.sleep(0.3)
    app.processEvents()
    w.grab().save(str(out / "screenshot-history.png"))
    w.close()
    print("wrote", *sorted(p.name for p in out.glob("screenshot-*.png")))


if __name__ == "__main__":
    main()
