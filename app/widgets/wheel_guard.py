"""Forms the mouse wheel cannot change by accident: a spin box or combo box takes the wheel only
once it has focus (clicked or tabbed into), the usual Qt pattern. Without it, scrolling a page
with the pointer over its form changed whatever field passed under the pointer (the Experiment
page's "Servers at once" went from 1 to 8 that way).

One application-wide event filter instead of a subclass per widget, so every form of the app,
present and future, behaves alike: on polish each such widget gets StrongFocus (Qt's WheelFocus
default would give it focus, and so the wheel, on the first wheel event), and a wheel event over
one without focus goes to the scroll area it sits in instead, so the page under it still scrolls.

The What-if dialog's fields are classes of their own too (SpinBox, DoubleSpinBox, ComboBox below),
which take the wheel only with focus whether or not the guard is installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import (QAbstractScrollArea, QAbstractSpinBox, QApplication, QComboBox, QDoubleSpinBox,
                               QSpinBox, QWidget)

GUARDED = (QAbstractSpinBox, QComboBox)


class WheelGuard(QObject):
    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        kind = event.type()
        if kind == QEvent.Type.Polish and isinstance(obj, GUARDED):
            obj.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        elif kind == QEvent.Type.Wheel and isinstance(obj, GUARDED) and not obj.hasFocus():
            area = _scroll_area(obj)
            if area is not None:
                # Straight to the scroll area's viewport: Qt does not pass a wheel event it did not
                # get from the window system up to the parents, so ignoring it would not scroll.
                QApplication.sendEvent(area.viewport(), event)
            return True
        return False


def _scroll_area(widget: QWidget) -> QAbstractScrollArea | None:
    """The nearest scroll area the widget sits in (a combo box's own popup list excluded)."""
    w = widget.parentWidget()
    while w is not None:
        if isinstance(w, QAbstractScrollArea) and not isinstance(w.parentWidget(), QComboBox):
            return w
        w = w.parentWidget()
    return None


def install(app: QApplication | None = None) -> WheelGuard:
    """Installs the guard once per application (a second call returns the first)."""
    owner = app or QApplication.instance()
    assert owner is not None, "the guard is installed on an application, made before any widget"
    guard = owner.findChild(WheelGuard)
    if guard is None:
        guard = WheelGuard(owner)  # a child of the application: found again, and freed with it
        owner.installEventFilter(guard)
    return guard


def _wheel(widget: QWidget, event: QWheelEvent, take: Callable[[QWheelEvent], None]) -> None:
    """The wheel event to `take` (the Qt class's own handler) while `widget` has focus; else ignored."""
    if widget.hasFocus():
        take(event)
    else:
        event.ignore()


class SpinBox(QSpinBox):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt's name
        _wheel(self, event, super().wheelEvent)


class DoubleSpinBox(QDoubleSpinBox):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt's name
        _wheel(self, event, super().wheelEvent)


class ComboBox(QComboBox):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt's name
        _wheel(self, event, super().wheelEvent)
