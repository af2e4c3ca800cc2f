"""`draftbench show` prints the Compare page's speedup table, row for row and cell for cell, from one
function (workbench.analysis.compare.speedup_table); with repeats, the speedup carries its interval."""

from __future__ import annotations

import subprocess
import sys

from PySide6.QtCore import Qt

from app.pages.compare_page import ComparePage
from helpers.cli_table import shown_table
from helpers.recorded import copy_db
from workbench import store


def with_second_repeats(recorded_db, path):
    """The recorded GPU sweep with a second repeat of every completed run, 4% slower, so each
    configuration has a mean over two repeats and a 95% interval."""
    copy_db(recorded_db, path)
    db = store.open_db(path)
    exp = store.latest_experiment(db)
    for r in store.runs_of_experiment(db, exp):
        if r.status == "completed":
            again = {k: v for k, v in r.as_dict().items() if k != "id"}
            again.update(key=f"{r.key}-2", repeat=2, seq=r.seq + 1000, output_tok_s=r.output_tok_s * 0.96)
            store.add_imported_run(db, again)
    rows = store.runs_of_experiment(db, exp)
    store.close(db)
    return rows


def test_show_prints_the_compare_pages_table(qtbot, recorded_db, tmp_path):
    path = tmp_path / "repeats.sqlite"
    rows = with_second_repeats(recorded_db, path)
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "show", "--db", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    printed = shown_table(done.stdout)

    page = ComparePage()
    qtbot.addWidget(page)
    page.set_runs(rows, path)
    qtbot.waitUntil(lambda: not page.building, timeout=20000)  # built on the worker
    model = page.table_model
    on_page = [[model.headerData(c, Qt.Horizontal) for c in range(model.columnCount())]]
    on_page += [[model.data(model.index(r, c)) for c in range(model.columnCount())] for r in range(model.rowCount())]
    assert len(on_page) == 9  # the header and every configuration: two methods at two N and two concurrencies
    assert printed == on_page
    speedups = [row[on_page[0].index("Speedup")] for row in on_page[1:]]
    assert all(" ± " in s for s in speedups), speedups
