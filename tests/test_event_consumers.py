"""Where an adaptive sweep's decisions show: on `draftbench run`'s stderr and on the Live page."""

from __future__ import annotations

from workbench import events
from workbench.cli import run as run_verb

STARTED = events.AdaptiveStarted(contexts=1, probes={"ngram · builtin · c=1": [5, 1]})
PREDICTED = events.Prediction(context="ngram · builtin · c=1", best_n=3, uncertain=True, runner_up=2,
                              measured_n=[1, 5], next_n=[3, 2], curve=[])
RECOMMENDED = events.Recommendation(context="ngram · builtin · c=1", runs_used=4, runs_total=6,
                                    message="ngram · builtin · c=1: best N = 3, predicted speedup 1.40 ± 0.10")


def test_draftbench_run_says_the_adaptive_decisions_on_stderr(capsys):
    written = []
    emit = run_verb._with_adaptive_lines(written.append)
    for event in (events.SweepStarted(experiment=1, db="r.sqlite", runs=6, pending=6), STARTED, PREDICTED,
                  RECOMMENDED):
        emit(event)
    assert len(written) == 4  # every event still goes out as it is
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "adaptive: ngram · builtin · c=1: measuring N = 5, 1 first",
        "adaptive: ngram · builtin · c=1: predicted best N = 3 (N=2 within noise); next N = 3, 2",
        "adaptive: ngram · builtin · c=1: best N = 3, predicted speedup 1.40 ± 0.10",
    ]


def test_the_live_page_lists_each_contexts_latest_decision(qtbot):
    from app.pages.live import LivePage

    page = LivePage()
    qtbot.addWidget(page)
    assert not page.adaptive.isVisibleTo(page)
    page.on_event(STARTED)
    assert page.adaptive.isVisibleTo(page) and "measuring N = 5, 1 first" in page.adaptive.text()
    page.on_event(PREDICTED)
    assert "predicted best N = 3" in page.adaptive.text() and "measuring" not in page.adaptive.text()
    page.on_event(RECOMMENDED)
    assert "recommended: ngram · builtin · c=1: best N = 3" in page.adaptive.text()
    page.on_event(events.ServerReady(seconds=12.0, port=8000))
    assert page.eta.text() == "vLLM ready in 12 s"
    # A new sweep starts with a clean slate.
    page.on_event(events.SweepStarted(experiment=2, db="r.sqlite", runs=2, pending=2))
    assert not page.adaptive.isVisibleTo(page)
