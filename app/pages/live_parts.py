"""Parts of the Live page: the headline (the run's title and the lines that flag what to distrust in
it) and the sweep bar (its progress, the Stop button, the clock and the pace note) as widgets of
their own, and the server log's text. The page fills them as it reads the run and follows the sweep."""

from __future__ import annotations

import json

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QProgressBar, QPushButton, QVBoxLayout, QWidget

from app.pages import live_pace
from app.widgets import theme
from workbench import store

NO_RUN = "No run selected: start a sweep on the Experiment page, or open a run from History."


class RunHeadline(QWidget):
    """The run's title, then a line each, shown only when there is something to say: the run lost
    requests or failed, the runner warned of something that skews its figures, the sweep's alarms."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(NO_RUN)
        self.title.setWordWrap(True)
        # A run that lost requests, or failed, said in one line that stands out.
        self.flag = QLabel("")
        self.flag.setWordWrap(True)
        self.flag.setStyleSheet("color: #b00020; font-weight: bold")
        self.flag.setVisible(False)
        # What may have skewed the run's figures (the runner's warnings: a busy client or app, ...).
        self.warned = QLabel("")
        self.warned.setWordWrap(True)
        self.warned.setStyleSheet("color: #9a6700")
        self.warned.setVisible(False)
        # The sweep's acceptance alarms as they come (a collapsed MAL, a mid-run drop, an EOS
        # over-count): a run whose MAL should not be trusted as it stands, said where it is watched.
        self.alarms = QLabel("")
        self.alarms.setWordWrap(True)
        self.alarms.setStyleSheet("color: #b00020")
        self.alarms.setToolTip("Acceptance alarms of this sweep's finished runs (stored with each run; "
                               "`draftbench show RUN` lists them)")
        self.alarms.setVisible(False)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        for label in (self.title, self.flag, self.warned, self.alarms):
            box.addWidget(label)

    def clear_flags(self) -> None:
        self.flag.setVisible(False)
        self.warned.setVisible(False)

    def show_flags(self, row: store.RunRecord) -> None:
        """The flag line (failed, or partial: left out of speedups) and the warnings line of this run."""
        lost = row.requests_failed or 0
        if row.status == "failed":
            text = f"Run {row.id} failed: {row.error or 'see the server log'}"
        elif row.status == "partial" or lost:
            sent = (row.requests_ok or 0) + lost
            text = (f"Run {row.id} is partial: {lost} of {sent} requests failed "
                    f"({row.error or 'see the server log'}); it is left out of speedups")
        else:
            text = ""
        self.flag.setText(text)
        self.flag.setVisible(bool(text))
        try:
            found = json.loads(row.warnings or "[]")
        except ValueError:
            found = []
        more = f" (and {len(found) - 1} more: hover to read them)" if len(found) > 1 else ""
        self.warned.setText(f"Warning: {found[0]}{more}" if found else "")
        self.warned.setToolTip("\n".join(found))
        self.warned.setVisible(bool(found))


class SweepBar(QWidget):
    """The sweep's progress and its Stop button on one line, the clock and the pace note under them."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m runs")
        self.progress.setToolTip("Runs of the sweep done (completed or failed) out of all its runs")
        self.eta = QLabel("")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the sweep: every server is shut down and the runs in flight are marked "
                                    "cancelled (Ctrl+.)")
        # Ctrl+. belongs to the main window's Sweep > Stop, which works on every page: a second
        # owner here would make Qt find the key ambiguous on this page and fire neither.
        self.stop_button.setEnabled(False)
        self.pace_note = QLabel(live_pace.NOTE)
        self.pace_note.setStyleSheet("color: #666666; font-size: 8pt")
        self.pace_note.setVisible(False)
        # The clock and the pace note wrap on a line of their own under the progress bar: side by
        # side with it, their longest texts held the window over 1280 pixels wide.
        self.eta.setWordWrap(True)
        self.pace_note.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.progress, 1)
        top.addWidget(self.stop_button)
        clock = QHBoxLayout()
        clock.addWidget(self.eta, 1)
        clock.addWidget(self.pace_note)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(top)
        box.addLayout(clock)


def server_log() -> QPlainTextEdit:
    """The vLLM server's output for the run shown; the last 1000 lines are kept. The page lays it
    out under its heading, itself, so the log takes the stretch and the heading does not."""
    text = QPlainTextEdit(readOnly=True)
    text.setMaximumBlockCount(1000)
    text.setToolTip("The vLLM server's output for this run")
    text.setFont(theme.mono())
    return text
