"""The app in a 1280×800 window (a laptop screen): the Experiment page's method fields and the Train
page's folders show values a newcomer can read — whole where they fit, else their start and end
with the whole value in the tooltip — never only a value's tail."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea

from app.main import MainWindow


@pytest.fixture
def window(qtbot, tmp_path, vllm_install):
    w = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    # No page may hold the window wider than the screen (it was once 1285 pixels at the least).
    assert w.minimumSizeHint().width() <= 1280
    qtbot.waitUntil(lambda: w.size().toTuple() == (1280, 800), timeout=5000)
    return w


def _fits(edit) -> bool:
    # The text's width within the field, less its frame and Qt's text margins.
    return edit.fontMetrics().horizontalAdvance(edit.text()) <= edit.width() - 10


def test_method_fields_show_their_values_at_1280(window, qtbot):
    page = window.experiment
    rows = {r.method.currentData(): r for r in page.rows}
    draft, options = rows["draft_model"].draft, rows["ngram"].options
    assert draft.text() == "demo:smollm2-135m-draft-noisy-copy"
    assert options.text() == "prompt_lookup_min = 2, prompt_lookup_max = 4"
    for edit in (draft, options, rows["draft_model"].n):
        assert edit.isVisible() and _fits(edit), (edit.text(), edit.width())
    # Nothing of the form is cut at the right either: no sideways scrolling.
    scroll = page.profile_form.parentWidget().parentWidget().parentWidget()
    assert isinstance(scroll, QScrollArea)
    assert scroll.horizontalScrollBar().maximum() == 0
    # A value too long for its field reads from its start, and ends with its end.
    long = "/models/checkpoints/" + "very-long-folder-name-" * 8 + "eagle3-draft"
    doc = page.document()
    doc["methods"][1]["draft"] = long
    page.set_document(doc)
    draft = page.rows[1].draft
    assert draft.cursorPosition() == 0 and long in draft.toolTip()
    shown = draft.shown_text()
    assert shown != long and shown.startswith("/models/") and shown.endswith("eagle3-draft") and "…" in shown


def test_train_output_folder_shows_its_start_and_end(window, qtbot):
    window.tabs.setCurrentWidget(window.train)
    out = window.train.form.out
    qtbot.waitUntil(out.isVisible, timeout=5000)
    path = out.text()
    assert path.endswith("trained-eagle3-smollm2-135m") and path in out.toolTip()
    shown = out.shown_text()
    if _fits(out):
        assert shown == path
    else:  # the start (where it lies) and the end (its name), the middle elided
        assert shown.startswith(path[:8]) and shown.endswith(path[-12:]) and "…" in shown
    assert out.cursorPosition() == 0
    # Editing shows the value itself, where the user types.
    out.setFocus(Qt.OtherFocusReason)
    qtbot.waitUntil(out.hasFocus, timeout=5000)
    assert out.shown_text() == path
