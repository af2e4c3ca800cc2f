"""Forms the mouse wheel cannot change: over every spin box and combo box of the Experiment page
a wheel event changes nothing unless the field has focus, and the page under it scrolls instead."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QScrollArea


def _wheel(widget, steps: int = -3) -> None:
    """A real wheel event (three notches down) delivered through the application, as from a mouse."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0), QPoint(0, 120 * steps),
                        Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def _value(widget):
    return widget.value() if isinstance(widget, QAbstractSpinBox) else widget.currentIndex()


def test_a_wheel_over_the_experiment_form_changes_no_field_and_scrolls_the_page(qtbot, tmp_path, vllm_install):
    from app.main import MainWindow

    window = MainWindow(tmp_path / "results.sqlite", vllm_install)
    qtbot.addWidget(window)
    window.resize(1280, 500)  # short enough that the form scrolls
    window.show()
    qtbot.waitExposed(window)
    page = window.experiment
    fields = [w for w in page.findChildren(QAbstractSpinBox) + page.findChildren(QComboBox) if w.isVisible()]
    assert len(fields) >= 8, fields
    for w in fields:
        # Away from both ends, so a wheel could move it either way.
        if isinstance(w, QAbstractSpinBox) and hasattr(w, "maximum"):
            w.setValue(w.minimum() + (w.maximum() - w.minimum()) / 2 if isinstance(w.value(), float)
                       else (w.minimum() + w.maximum()) // 2)
        elif isinstance(w, QComboBox) and w.count() > 2:
            w.setCurrentIndex(1)
    scroll = next(a for a in page.findChildren(QScrollArea) if a.verticalScrollBar().maximum() > 0)
    before = {id(w): _value(w) for w in fields}
    page.setFocus()
    start = scroll.verticalScrollBar().value()
    for w in fields:
        assert w.focusPolicy() == Qt.StrongFocus, w
        assert not w.hasFocus()
        _wheel(w)
        assert _value(w) == before[id(w)], f"{type(w).__name__} {w.objectName() or w.toolTip()[:40]} changed"
    assert scroll.verticalScrollBar().value() != start  # the page scrolled instead
    # A focused field takes the wheel, as it should.
    spin = next(w for w in fields if isinstance(w, QAbstractSpinBox) and w.isEnabled())
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus)
    _wheel(spin, steps=1)
    assert _value(spin) != before[id(spin)]
