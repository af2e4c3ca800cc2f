"""A real vLLM CPU server on the demo model: chat completions, spec-decode counters, API key."""

import httpx
import pytest

from helpers.vllm_servers import server_config, start_server
from workbench import metrics
from workbench.checkpoints import demo


@pytest.mark.vllm
def test_baseline_server_answers_a_chat_completion(demo_models, vllm_install):
    srv = start_server(server_config(str(demo_models[demo.TARGET.name])), vllm_install)
    try:
        body = {"model": "smollm2", "messages": [{"role": "user", "content": "What is 2 + 3?"}],
                "max_tokens": 16, "temperature": 0.0}
        auth = {"Authorization": f"Bearer {srv.api_key}"}
        reply = httpx.post(srv.spec.base_url + "/v1/chat/completions", json=body, headers=auth, timeout=120)
        assert reply.status_code == 200
        data = reply.json()
        assert data["usage"]["completion_tokens"] > 0
        assert data["choices"][0]["message"]["content"].strip()
        # The per-run key is required: a request without it is refused.
        assert httpx.post(srv.spec.base_url + "/v1/chat/completions", json=body, timeout=60).status_code == 401
        # Without speculation there are no spec-decode counters.
        snap = metrics.parse(httpx.get(srv.spec.base_url + "/metrics").text)
        assert not snap.speculative and snap.total("generation_tokens") > 0
    finally:
        srv.stop()
    assert not srv.alive


def test_draft_model_server_exposes_spec_decode_counters(draft_server):
    auth = {"Authorization": f"Bearer {draft_server.api_key}"}
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Count from 1 to 20."}],
            "max_tokens": 40, "temperature": 0.0}
    assert httpx.post(draft_server.spec.base_url + "/v1/chat/completions", json=body, headers=auth,
                      timeout=120).status_code == 200
    text = httpx.get(draft_server.spec.base_url + "/metrics").text
    for name in ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
                 "vllm:spec_decode_num_accepted_tokens_total"):
        assert name in text
    snap = metrics.parse(text)
    assert snap.num_positions == 3
    assert snap.total("drafts") > 0 and snap.total("draft_tokens") == 3 * snap.total("drafts")
