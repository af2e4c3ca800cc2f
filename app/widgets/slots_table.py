"""One row per GPU slot of a parallel sweep: the configuration its server runs, what it is doing,
and the throughput and MAL of its run in flight, all from the sweep's events."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from workbench import events

HEADERS = ("Slot", "GPUs", "Configuration", "State", "Output tok/s", "MAL")
TIP = ("Every server in flight: a parallel sweep runs one per GPU slot, none sharing a GPU. Throughput and "
       "MAL are the run's figures so far (the last scrape), then its final ones. Click a row to follow its run.")


class SlotsTable(QTableWidget):
    run_chosen = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(HEADERS), parent)
        self.setHorizontalHeaderLabels(HEADERS)
        self.setToolTip(TIP)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setMaximumHeight(160)
        self.rows: dict[int, int] = {}        # slot -> table row
        self.run_slot: dict[int, int] = {}    # run id -> slot
        self.slot_run: dict[int, int] = {}    # slot -> the run it is on
        self.cellClicked.connect(self._clicked)
        self.setVisible(False)

    def clear_slots(self) -> None:
        self.setRowCount(0)
        self.rows, self.run_slot, self.slot_run = {}, {}, {}
        self.setVisible(False)

    def _set(self, slot: int, column: int, text: str) -> None:
        if slot not in self.rows:
            self.rows[slot] = self.rowCount()
            self.insertRow(self.rowCount())
            self.setItem(self.rows[slot], 0, QTableWidgetItem(str(slot)))
            self.setVisible(True)
        item = QTableWidgetItem(text)
        if column >= 4:
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.setItem(self.rows[slot], column, item)

    def _figures(self, slot: int, tok_s: float | None, mal: float | None) -> None:
        self._set(slot, 4, "" if tok_s is None else f"{tok_s:.1f}")
        self._set(slot, 5, "" if mal is None else f"{mal:.2f}")

    def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.SweepStarted):
            self.clear_slots()
        elif isinstance(event, events.ServerStarting) and event.slot is not None:
            self._set(event.slot, 1, ",".join(map(str, event.gpus or [])))
            self._set(event.slot, 3, "starting vLLM")
            self._figures(event.slot, None, None)
        elif isinstance(event, events.ServerReady) and event.slot is not None:
            self._set(event.slot, 3, f"ready in {event.seconds:.0f} s")
        elif isinstance(event, events.RunStarted) and event.slot is not None:
            self.run_slot[event.run] = event.slot
            self.slot_run[event.slot] = event.run
            self._set(event.slot, 2, event.label)
            self._set(event.slot, 3, f"measuring (run {event.index} of {event.total})")
            self._figures(event.slot, None, None)
        elif isinstance(event, events.Progress) and event.run in self.run_slot:
            self._figures(self.run_slot[event.run], event.output_tok_s, event.mal)
        elif isinstance(event, events.RunFinished) and event.run in self.run_slot:
            self._set(self.run_slot[event.run], 3, "run completed")
            self._figures(self.run_slot[event.run], event.output_tok_s, event.mal)
        elif isinstance(event, events.RunFailed) and event.run in self.run_slot:
            self._set(self.run_slot[event.run], 3, f"failed: {event.error}")
        elif isinstance(event, events.SweepFinished):
            for slot in self.rows:
                if not self._state(slot).startswith("failed"):
                    self._set(slot, 3, "cancelled" if event.cancelled else "done")

    def _state(self, slot: int) -> str:
        """The text of the slot's State cell ("" while it has none)."""
        item = self.item(self.rows[slot], 3)
        return "" if item is None else item.text()

    def _clicked(self, row: int, _column: int) -> None:
        slot = next((s for s, r in self.rows.items() if r == row), None)
        if slot in self.slot_run:
            self.run_chosen.emit(self.slot_run[slot])
