"""A line edit for values often longer than their field (a checkpoint path or repo id, an option
list, an output folder).

Qt shows a value that does not fit from wherever the cursor is, which after the program sets it is
the end: a narrow field read "oisy-copy" for demo:smollm2-135m-draft-noisy-copy, and an output
folder showed only its last characters. Here a value that does not fit is shown elided in the
middle (its start and its end, which name it) while the field is not being edited; editing shows
the value itself, from its start. The tooltip holds the whole value, under the field's own hint.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QLineEdit, QStyle, QStyleOptionFrame, QWidget

# QLineEdit's own gap between its contents rectangle and its text (qlineedit_p.h), each side.
_TEXT_GAP = 2


class LongValueEdit(QLineEdit):
    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._hint = ""
        self.textChanged.connect(self._update_tip)
        self.setText(text)

    def setText(self, text: str | None) -> None:  # noqa: N802 - Qt's name
        super().setText(text)
        if not self.hasFocus():  # while the user types, the cursor stays where they type
            self.setCursorPosition(0)

    def setToolTip(self, hint: str) -> None:  # noqa: N802 - Qt's name
        """The field's hint; the whole value is added under it."""
        self._hint = hint
        self._update_tip()

    def _update_tip(self) -> None:
        super().setToolTip("\n".join(part for part in (self._hint, self.text()) if part))

    def _text_rect(self) -> tuple[QRect, QStyleOptionFrame]:
        option = QStyleOptionFrame()
        self.initStyleOption(option)
        rect = self.style().subElementRect(QStyle.SubElement.SE_LineEditContents, option, self)
        m = self.textMargins()
        return rect.adjusted(m.left() + _TEXT_GAP, m.top(), -m.right() - _TEXT_GAP, -m.bottom()), option

    def shown_text(self) -> str:
        """The text the field shows: the value, or (not being edited, too long to fit) the value
        elided in the middle."""
        if self.hasFocus() or not self.text() or self.echoMode() != QLineEdit.EchoMode.Normal:
            return self.text()
        width = self._text_rect()[0].width()
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideMiddle, width)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        shown = self.shown_text()
        if shown == self.text():
            super().paintEvent(event)
            return
        rect, option = self._text_rect()
        painter = QPainter(self)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelLineEdit, option, painter, self)
        group = QPalette.ColorGroup.Active if self.isEnabled() else QPalette.ColorGroup.Disabled
        painter.setPen(self.palette().color(group, QPalette.ColorRole.Text))
        painter.drawText(rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, shown)
        painter.end()
