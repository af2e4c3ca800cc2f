"""The header of a table model whose columns are (key, label, tooltip) triples."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt


def header(columns: Sequence[tuple[str, str, str]], section: int, orientation: Qt.Orientation,
           role: int) -> str | None:
    if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(columns):
        return None
    if role == Qt.ItemDataRole.DisplayRole:
        return columns[section][1]
    if role == Qt.ItemDataRole.ToolTipRole:
        return columns[section][2]
    return None
