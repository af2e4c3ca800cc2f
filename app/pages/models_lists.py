"""The Models page's four lists as tables of records: what a Hub search found (FoundModel, whose
size is asked for later), the models in the local cache, the catalog's published pairs and the
shipped target shapes, each with its columns and what hovering a row shows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.widgets.tables import TableModel
from workbench.plan import catalog
from workbench.usecases import hub, whatif


def _yes(v: object) -> str:
    return "yes" if v else "no"


def _listed(values: Iterable[object]) -> str:
    return ", ".join(map(str, values))


def _bytes_if_any(n: int) -> str:
    return hub.human(n) if n else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FoundModel:
    """A search result as the Hub list shows it: its size is None until asked for (Size)."""
    repo: str
    downloads: int
    likes: int
    gated: bool
    size: int | None = None


def found_model(hit: hub.SearchHit) -> FoundModel:
    return FoundModel(repo=hit.repo, downloads=hit.downloads or 0, likes=hit.likes or 0, gated=hit.gated)


def results_model() -> TableModel:
    """FoundModel rows."""
    return TableModel([("repo", "Model", None), ("downloads", "Downloads", "{:,}".format),
                       ("likes", "Likes", None), ("gated", "Gated", _yes), ("size", "Size", hub.human)])


def cache_model() -> TableModel:
    """hub.CachedRepo rows; hovering one shows its folder."""
    return TableModel([("repo", "Model", None), ("size", "Size", hub.human), ("files", "Files", None),
                       ("refs", "Refs", _listed), ("partial", "Partial download", _bytes_if_any)],
                      tooltip=lambda cached: str(cached.path))


def catalog_model(pairs: list[catalog.Pair]) -> TableModel:
    """The catalog's pairs; hovering one shows where it was published."""
    model = TableModel([("name", "Pair", None), ("method", "Method", None), ("draft", "Draft", None),
                        ("target", "Target", None), ("n", "N", _listed), ("gated", "Gated", _yes)],
                       tooltip=lambda pair: pair.source)
    model.set_rows(list(pairs))
    return model


def shapes_model() -> TableModel:
    """The shipped target shapes (whatif.TargetShape); hovering one shows its notes."""
    model = TableModel([("name", "Shape", None), ("repo", "Mirrors", None), ("drafts", "Drafts", _listed)],
                       tooltip=lambda shape: shape.notes)
    model.set_rows(whatif.target_shapes())
    return model
