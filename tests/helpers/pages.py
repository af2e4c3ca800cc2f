"""Steps on the app's pages that several GUI tests take alike."""

from __future__ import annotations

from helpers.plans import DRAFT


def add_draft_row(page, qtbot) -> None:
    """Add a draft model's method row (the noisy-copy draft at N = 3) to the Experiment page, as a
    user would: the quick demo has n-gram lookup only. A row added to a shown page is shown by the
    event loop (Qt queues it), as it is in the app, so this waits for it."""
    doc = page.document()
    doc["methods"].append({**DRAFT, "n": 3})
    page.set_document(doc)
    qtbot.waitUntil(lambda: all(r.method.isVisible() for r in page.rows), timeout=3000)
