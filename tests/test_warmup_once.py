"""The warm-up runs before the first window at each concurrency on a server, not before every
repeat: the next repeat finds the server warm and the window's batch sizes already run. Against the
vLLM stand-in (replaying recorded real answers), counting the warm-up prompt's requests."""

from __future__ import annotations

from helpers.plans import attach_plan
from helpers.standins.vllm_server import StandinVllm

from workbench import plan, store
from workbench.sweep import measure, runner


def warmups(server: StandinVllm) -> list[int]:
    """The warm-up requests the stand-in was sent, as a list of 1s and window requests as 0s."""
    return [int(r["body"]["messages"][-1]["content"] == measure.WARMUP_PROMPT.text) for r in server.requests]


def test_one_warm_up_per_concurrency_on_a_server(demo_models, vllm_install, tmp_path, monkeypatch):
    from workbench.checkpoints import demo

    workload = {"num_prompts": 3, "warmup": 2, "concurrency": [1, 2], "repeats": 3}
    with StandinVllm("draft_model_n3", api_key="standin-warmup-key-0123456789abc") as server:
        monkeypatch.setenv("STANDIN_KEY", server.api_key)
        p = plan.loads(attach_plan(server.base_url, demo_models[demo.DRAFT_NOISY.name], workload=workload))
        db_path = tmp_path / "warmup.sqlite"
        summary = runner.Runner(p, str(db_path), vllm_install, emit=lambda e: None, scrape_interval_s=0.1).run()
        sent = warmups(server)

    assert summary["completed"] == 6
    # c=1 asks max(2, 1) = 2 warm-up requests, c=2 max(2, 2) = 2; each concurrency once, although
    # each has three repeats on the same server.
    assert sum(sent) == 4
    runs = store.runs(store.open_db(db_path, readonly=True))
    assert sorted((r.concurrency, r.repeat) for r in runs) == [(c, k) for c in (1, 2) for k in (1, 2, 3)]
    # The server's first requests are a warm-up: a fresh server is never measured cold.
    assert sent[:2] == [1, 1]


def test_a_failed_warm_up_leaves_the_next_repeat_a_warm_up(demo_models, vllm_install, tmp_path, monkeypatch):
    """The first warm-up request gets no answer: that run fails before its window and the server
    was not warmed, so the second repeat is warmed up again before its window."""
    from workbench.checkpoints import demo

    warm_calls = []

    def drop_first_warm_up(prompt: str, max_tokens: int) -> bool:
        if prompt == measure.WARMUP_PROMPT.text:
            warm_calls.append(prompt)
        return prompt == measure.WARMUP_PROMPT.text and len(warm_calls) == 1

    workload = {"num_prompts": 3, "warmup": 2, "concurrency": [2], "repeats": 2}
    with StandinVllm("draft_model_n3", api_key="standin-warmup-key-0123456789abd") as server:
        server.drop = drop_first_warm_up
        monkeypatch.setenv("STANDIN_KEY", server.api_key)
        p = plan.loads(attach_plan(server.base_url, demo_models[demo.DRAFT_NOISY.name], workload=workload))
        db_path = tmp_path / "warmup-failed.sqlite"
        summary = runner.Runner(p, str(db_path), vllm_install, emit=lambda e: None, scrape_interval_s=0.1).run()

    assert summary["completed"] == 1
    runs = sorted(store.runs(store.open_db(db_path, readonly=True)), key=lambda r: r.repeat)
    assert [r.status for r in runs] == ["failed", "completed"]
    assert runs[0].error.startswith("warm-up request failed")
    assert len(warm_calls) == 4   # two before each run's window: the failed warm-up warmed nothing
