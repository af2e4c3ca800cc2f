"""Acceptance alarms on counter data replayed from vLLM's /metrics pages: a collapsed drafter, MAL
falling mid-run, and the accepted-token counter over-counting past an answer's end (vllm issue
56101), checked against the recorded per-request figures; none raised on healthy recorded runs; and
the runner storing them and sending each as an event (the vLLM stand-in, drafting at an imposed
acceptance)."""

from __future__ import annotations

import gzip
import json

import pytest
from helpers.standins.vllm_server import StandinVllm, final_chunk
from helpers.plans import attach_plan

from helpers.recorded import ROOT, copy_db
from workbench import events, metrics, plan, store
from workbench.analysis import alarms, run_summary
from workbench.sweep import runner

FIXTURES = ROOT / "tests" / "fixtures"
# As vLLM writes its counters: the TYPE line names the sample, `_total` and all.
SPEC_PAGE = """# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="m"}} {accepted}
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",model_name="m"}} {generated}
# TYPE vllm:request_success_total counter
vllm:request_success_total{{engine="0",finished_reason="stop",model_name="m"}} {requests}
"""


def _page(t: float, drafts: float, accepted: float, generated: float, requests: float) -> metrics.Snapshot:
    return metrics.parse(SPEC_PAGE.format(drafts=drafts, accepted=accepted, generated=generated,
                                          requests=requests), t)


def _replay(pages: list[metrics.Snapshot]) -> tuple[metrics.Window, list[tuple[float, float, float]]]:
    """The run's window and its cumulative samples, as the runner takes them from its scrapes."""
    first = pages[0]
    samples = [(p.t - first.t, metrics.window(first, p).drafts, metrics.window(first, p).accepted) for p in pages[1:]]
    return metrics.window(first, pages[-1]), samples


def _check(method: str, pages: list[metrics.Snapshot]) -> list[alarms.Alarm]:
    w, samples = _replay(pages)
    return alarms.check(method, w.drafts, w.accepted, w.generation_tokens, w.requests_finished, samples)


def test_a_collapsed_model_drafter_is_alarmed_and_a_model_free_one_is_not():
    # 400 verification steps accepted 8 tokens: MAL 1.02. 10 requests, each its prefill token.
    pages = [_page(0, 100, 150, 1000, 5), _page(5, 300, 154, 1206, 10), _page(10, 500, 158, 1418, 15)]
    (alarm,) = _check("eagle3", pages)
    assert alarm.kind == alarms.COLLAPSED
    assert alarm.message.startswith("acceptance collapsed: every draft rejected — check the drafter/kernels")
    assert "MAL 1.020 over 400 drafts" in alarm.message
    # n-gram and suffix decoding propose only where they find a match: a low MAL is their nature.
    assert _check("ngram", pages) == [] and _check("suffix", pages) == []
    # Too few drafts to say anything.
    assert _check("draft_model", [_page(0, 0, 0, 0, 0), _page(1, 10, 0, 12, 2)]) == []


def test_mal_falling_by_more_than_a_third_mid_run_is_alarmed():
    # First half: 200 drafts accepted 300 (MAL 2.5); second half: 200 drafts accepted 80 (MAL 1.4).
    pages = [_page(0, 0, 0, 0, 0), _page(4, 100, 150, 254, 4), _page(8, 200, 300, 508, 8),
             _page(12, 300, 340, 648, 8), _page(16, 400, 380, 788, 8)]
    (alarm,) = _check("draft_model", pages)
    assert alarm.kind == alarms.MAL_DROP
    assert alarm.message == "MAL fell by more than a third during the run: 2.50 in its first half, 1.40 in its second"
    assert alarms.halves(_replay(pages)[1]) == pytest.approx((2.5, 1.4))
    # n-gram too: its MAL falling mid-run is as suspect.
    assert [a.kind for a in _check("ngram", pages)] == [alarms.MAL_DROP]
    # A fall of a third exactly (2.4 to 1.6) is not more than a third.
    even = [_page(0, 0, 0, 0, 0), _page(5, 100, 140, 248, 4), _page(10, 200, 200, 408, 8)]
    assert _check("draft_model", even) == []


def test_an_eos_overcount_is_alarmed():
    # 10 requests, 300 steps, 600 accepted: 910 tokens if every accepted token were emitted; the
    # generation counter says 860, so 50 were counted past the answers' ends.
    pages = [_page(0, 0, 0, 0, 0), _page(10, 300, 600, 860, 10)]
    (alarm,) = _check("dflash", pages)
    assert alarm.kind == alarms.OVERCOUNT
    assert alarm.message.startswith("MAL from the accepted-token counter is 3.000, but the tokens emitted per draft "
                                    "step are 2.833 (5.9 % apart, 50 accepted tokens never emitted)")
    assert "vllm issue 56101" in alarm.message
    # Five tokens counted past the ends (0.6 % apart) stay within the 2 % tolerance.
    assert _check("dflash", [_page(0, 0, 0, 0, 0), _page(10, 300, 600, 905, 10)]) == []
    # Model-free drafters skip steps without a match, so the identity does not hold for them.
    assert _check("ngram", pages) == []


def test_the_recorded_overcount_is_the_one_in_vllms_per_request_figures():
    # The draft-model recording (N=3, answers of 32 and 48 tokens, nearly all cut at max_tokens):
    # each request's figures say 1 + steps + accepted tokens, its usage says fewer. The counters'
    # shortfall is their sum, and at these lengths it puts the counter's MAL 3 % above the
    # tokens actually emitted per step.
    meta = json.loads((FIXTURES / "vllm" / "draft_model_n3.json").read_text())
    w = metrics.window(metrics.parse(meta["metrics_before"]), metrics.parse(meta["metrics_after"]))
    overshoot = 0
    with gzip.open(FIXTURES / "vllm" / "draft_model_n3_streams.jsonl.gz", "rt") as f:
        for record in map(json.loads, f):
            chunk = final_chunk(record)
            spec = chunk["metrics"]["speculative_decoding"]
            overshoot += 1 + spec["num_spec_steps"] + spec["num_accepted_draft_tokens"] - chunk["usage"]["completion_tokens"]
    assert overshoot == w.requests_finished + w.drafts + w.accepted - w.generation_tokens == 116
    (alarm,) = alarms.check("draft_model", w.drafts, w.accepted, w.generation_tokens, w.requests_finished, [])
    assert alarm.kind == alarms.OVERCOUNT and "116 accepted tokens never emitted" in alarm.message
    assert alarms.emitted_mal(w.generation_tokens, w.requests_finished, w.drafts) == pytest.approx(3798 / 1397)


def test_healthy_recorded_runs_raise_none():
    # A draft-model server's whole life (16 answers of about 112 tokens): under 1 % apart.
    snap = metrics.parse((FIXTURES / "metrics_full_draft_model_k3.txt").read_text())
    assert alarms.check("draft_model", snap.total("drafts"), snap.total("accepted"), snap.total("generation_tokens"),
                        snap.total("requests_finished"), []) == []
    # The recorded demo sweep's runs with their stored scrapes: baselines, n-gram N=2 and 4, the
    # noisy-copy draft at N=1 (its N=3 runs, 48-token answers, over-count by 2.7 and 3.1 %).
    db = store.open_db(FIXTURES / "demo" / "demo-sweep.sqlite", readonly=True)
    raised = {r.id: [a.kind for a in alarms.of_row(r, store.counter_samples(db, r.id))] for r in store.runs(db)}
    assert all(raised[i] == [] for i in range(1, 9)), raised
    assert raised[9] == raised[10] == [alarms.OVERCOUNT]
    for i in (3, 6, 7):  # each half drafted enough to compare, and stayed within a third
        first, second = alarms.halves(store.counter_samples(db, i))
        assert abs(first - second) < first / 3


def test_runs_on_an_h200_whose_draft_accepts_four_percent_are_collapsed():
    # docs/gpu: a 6-layer draft that agrees with its target about 5 % of the time (MAL 1.04).
    db = store.open_db(ROOT / "docs" / "gpu" / "h200-tp1.sqlite", readonly=True)
    kinds = {(r.method, r.n, r.concurrency): [a.kind for a in alarms.of_row(r, store.counter_samples(db, r.id))]
             for r in store.runs(db)}
    assert {k: v for k, v in kinds.items() if v} == {("draft_model", n, c): [alarms.COLLAPSED]
                                                     for n in (1, 3) for c in (1, 8)}


def test_stored_alarms_are_shown_as_stored(demo_db):
    db = store.open_db(demo_db)
    store.Recorder(db).run_completed(7, {"alarms": alarms.encode([alarms.Alarm(alarms.MAL_DROP, "MAL fell")])})
    store.Recorder(db).run_completed(9, {"alarms": "[]"})
    assert ("alarm", "MAL fell") in run_summary(db, store.run(db, 7))
    # Checked when stored, and none raised: the stored verdict stands.
    assert ("alarms", "none") in run_summary(db, store.run(db, 9))
    # Stored before alarms existed: worked out from its stored figures, and said so.
    assert [k for k, _ in run_summary(db, store.run(db, 10)) if k.startswith("alarm")] == ["alarm (from its stored figures)"]


def test_the_runner_stores_a_collapsed_drafters_alarm_and_sends_it(demo_models, vllm_install, tmp_path, monkeypatch):
    from workbench.checkpoints import demo

    sent: list[events.Event] = []
    # The stand-in drafts as vLLM's synthetic sampler would at 1 % first-position acceptance.
    with StandinVllm("draft_model_n3", api_key="standin-alarm-key-0123456789abcd", imposed=[0.01, 0.0, 0.0]) as server:
        monkeypatch.setenv("STANDIN_KEY", server.api_key)
        p = plan.loads(attach_plan(server.base_url, demo_models[demo.DRAFT_NOISY.name]))
        db_path = tmp_path / "alarm.sqlite"
        summary = runner.Runner(p, str(db_path), vllm_install, emit=sent.append, scrape_interval_s=0.1).run()
    assert summary["completed"] == 1
    (row,) = store.runs(store.open_db(db_path, readonly=True))
    stored = alarms.decode(row.alarms)
    assert [a["kind"] for a in stored] == [alarms.COLLAPSED] and row.mal < alarms.COLLAPSED_MAL
    (event,) = [e for e in sent if isinstance(e, events.Alarm)]
    assert (event.run, event.kind, event.message) == (row.id, alarms.COLLAPSED, stored[0]["message"])
    # Sent before the run's RunFinished, so a follower has it when the run's figures arrive.
    finished = next(i for i, e in enumerate(sent) if isinstance(e, events.RunFinished))
    assert sent.index(event) < finished
    # Every run also has its steady state and prefix-cache columns (the stand-in's cache counters
    # stay still: nothing looked up in the window).
    assert 0 < row.steady_s <= row.window_s and row.steady_tok_s > 0
    assert row.prefix_cache_queries == 0 and row.prefix_cache_hit_rate is None
    copy = copy_db(db_path, tmp_path / "copy.sqlite")
    assert store.open_db(copy, readonly=True)  # the file stays a readable Draftbench database
