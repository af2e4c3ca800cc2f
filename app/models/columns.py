"""The header of a table model whose columns are (key, label, tooltip) triples."""

from __future__ import annotations

from PySide6.QtCore import Qt


def header(columns, section: int, orientation, role):
    if orientation != Qt.Horizontal or not 0 <= section < len(columns):
        return None
    if role == Qt.DisplayRole:
        return columns[section][1]
    if role == Qt.ToolTipRole:
        return columns[section][2]
    return None
