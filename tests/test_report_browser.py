"""The HTML report opened in a real browser (headless Chromium, installed by scripts/bootstrap.sh):
at 1280 px nothing overflows horizontally, every chart image has loaded and each chart's title is
read once (its caption, not drawn into the image as well), for the recorded demo sweep and the H200
sweep. The page measures itself with a small script added to a copy of it."""

from __future__ import annotations

import base64

import pytest

from app.exports import write_report
from helpers.browser import MEASURE, measure
from helpers.recorded import ROOT, copy_db
from workbench import store
from workbench.usecases import compare_view

@pytest.mark.parametrize("source", ["tests/fixtures/demo/demo-sweep.sqlite", "docs/gpu/h200-tp1.sqlite"])
def test_report_fits_1280_px_and_every_image_loads(qapp, source, tmp_path):
    db = copy_db(ROOT / source, tmp_path / "results.sqlite")
    store.open_db(db).conn.close()
    report = write_report(compare_view.build(compare_view.select(db), db), tmp_path / "report.html",
                          "Draftbench report")
    page = tmp_path / "measured.html"
    page.write_text(report.read_text().replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    seen = measure(page)
    assert seen["width"] <= 1280 and seen["scroll"] <= seen["width"], seen
    assert seen["wide"] == [], seen["wide"]
    assert seen["images"] >= 5 and seen["broken"] == [], seen
    assert len(seen["titles"]) == seen["images"] and all(t.strip() for t, _ in seen["titles"]), seen["titles"]
    assert [t for t, times in seen["titles"] if times != 1] == [], seen["titles"]


def test_the_measurement_sees_an_overflow_and_a_broken_image(tmp_path):
    page = tmp_path / "bad.html"
    titled = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40">'
                              b'<text x="5" y="20">MAL against N</text></svg>').decode()
    page.write_text('<!DOCTYPE html><html><body><div style="width:2000px">wide</div>'
                    '<img alt="broken" src="data:image/svg+xml;base64,bm90IGFuIHN2Zw==">'
                    f'<figure><figcaption>MAL against N</figcaption><img alt="t" src="data:image/svg+xml;base64,{titled}">'
                    '</figure></body></html>'.replace("</body>", MEASURE + "</body>"))
    seen = measure(page)
    assert seen["scroll"] > seen["width"] and seen["wide"] and seen["broken"] == ["broken"]
    assert seen["titles"] == [["MAL against N", 2]]  # the caption, and the same title drawn in the image
