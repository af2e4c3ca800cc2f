"""Draftbench's desktop app (PySide6 + pyqtgraph): views and process adapters, no domain logic."""
