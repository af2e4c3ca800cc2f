"""Load generation: streaming chat completions at a fixed concurrency or request rate (asyncio + httpx)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from typing import Callable

import httpx

from workbench.load.workloads import Prompt


@dataclass
class RequestResult:
    idx: int
    prompt_id: str
    start: float
    category: str | None = None
    ok: bool = False
    error: str | None = None
    prompt_tokens: int = 0
    output_tokens: int = 0
    ttft_ms: float | None = None
    chunk_gaps_ms: list[float] = field(default_factory=list)
    latency_ms: float | None = None
    finish_reason: str | None = None
    spec: dict | None = None  # vLLM's per-request speculative decoding figures, when enabled

    def row(self, run_id: int) -> dict:
        gaps = self.chunk_gaps_ms
        spec = self.spec or {}
        return {
            "run_id": run_id, "idx": self.idx, "prompt_id": self.prompt_id, "category": self.category,
            "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
            "ttft_ms": self.ttft_ms, "itl_mean_ms": sum(gaps) / len(gaps) if gaps else None,
            "itl_max_ms": max(gaps) if gaps else None, "latency_ms": self.latency_ms,
            "ok": int(self.ok), "error": self.error, "finish_reason": self.finish_reason,
            "spec_mal": spec.get("mean_acceptance_length"),
            "spec_acceptance_rate": spec.get("draft_acceptance_rate"),
            "spec_drafts": spec.get("num_spec_steps"),
            "spec_draft_tokens": spec.get("num_draft_tokens"),
            "spec_accepted": spec.get("num_accepted_draft_tokens"),
            "spec_histogram": json.dumps(spec["acceptance_histogram"]) if "acceptance_histogram" in spec else None,
        }


@dataclass(frozen=True)
class Sampling:
    max_tokens: int
    temperature: float
    top_p: float = 1.0
    ignore_eos: bool = False


def chat_body(model: str, prompt: Prompt, sampling: Sampling) -> dict:
    # Temperature is always sent: servers' defaults differ and acceptance depends on it.
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt.text}],
        "max_tokens": sampling.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "stream": True,
        "stream_options": {"include_usage": True},
        **({"ignore_eos": True} if sampling.ignore_eos else {}),
    }


async def one_request(client: httpx.AsyncClient, url: str, body: dict, idx: int, prompt_id: str,
                      category: str | None = None) -> RequestResult:
    start = time.perf_counter()
    result = RequestResult(idx, prompt_id, time.time(), category)
    last = None
    try:
        async with client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")[:300]
                result.error = f"HTTP {response.status_code}: {text}"
                return result
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                if chunk.get("error"):
                    result.error = str(chunk["error"])[:300]
                    return result
                now = time.perf_counter()
                for choice in chunk.get("choices", []):
                    if choice.get("delta", {}).get("content"):
                        if last is None:
                            result.ttft_ms = (now - start) * 1000
                        else:
                            result.chunk_gaps_ms.append((now - last) * 1000)
                        last = now
                    if choice.get("finish_reason"):
                        result.finish_reason = choice["finish_reason"]
                usage = chunk.get("usage")
                if usage:
                    result.prompt_tokens = usage.get("prompt_tokens", 0)
                    result.output_tokens = usage.get("completion_tokens", 0)
                spec = (chunk.get("metrics") or {}).get("speculative_decoding")
                if spec:
                    result.spec = spec
        result.ok = True
    except (httpx.HTTPError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        result.latency_ms = (time.perf_counter() - start) * 1000
    return result


async def generate(base_url: str, api_key: str, model: str, prompts: list[Prompt], sampling: Sampling,
                   concurrency: int, request_rate: float | None = None, seed: int = 0,
                   on_result: Callable[[RequestResult], None] | None = None,
                   timeout_s: float = 600.0) -> list[RequestResult]:
    """Send every prompt once, at most `concurrency` at a time; with `request_rate`, arrivals
    follow a Poisson process of that rate (requests/s), still capped by the concurrency."""
    url = base_url.rstrip("/") + "/v1/chat/completions"
    limits = httpx.Limits(max_connections=concurrency + 2, max_keepalive_connections=concurrency + 2)
    headers = {"Authorization": f"Bearer {api_key}"}
    gate = asyncio.Semaphore(concurrency)
    rng = random.Random(seed)
    results: list[RequestResult] = []

    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), limits=limits, headers=headers) as client:
        async def send(i: int, prompt: Prompt) -> None:
            async with gate:
                r = await one_request(client, url, chat_body(model, prompt, sampling), i, prompt.id, prompt.family)
            results.append(r)
            if on_result:
                on_result(r)

        tasks = []
        for i, prompt in enumerate(prompts):
            if request_rate and i:
                await asyncio.sleep(rng.expovariate(request_rate))
            tasks.append(asyncio.create_task(send(i, prompt)))
        await asyncio.gather(*tasks)
    results.sort(key=lambda r: r.idx)
    return results
