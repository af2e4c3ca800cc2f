"""The embedded demo target and its drafts, as the app builds and lists them (the build runs on the
app's worker, its steps shown in a dialog; workbench.checkpoints.demo does it)."""

from __future__ import annotations

from pathlib import Path

from workbench.checkpoints import demo
from workbench.checkpoints.demo import ALL, DemoModel, Progress

__all__ = ["ALL", "DemoModel", "Progress", "ensure", "status"]


def status(model: DemoModel) -> str:
    """'ready', 'missing' or 'damaged: why'."""
    return demo.status(model)


def ensure(progress: Progress | None = None, force: bool = False) -> dict[str, Path]:
    """Builds whatever is missing or damaged (everything with `force`); the folders by model name."""
    return demo.ensure(progress=progress, force=force)
