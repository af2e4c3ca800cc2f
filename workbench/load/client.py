"""The load generator's HTTP client: streaming chat completions at a fixed concurrency or request rate,
each request timed chunk by chunk into a RequestResult.

The client must never be what limits a measured throughput, so it is lean: aiohttp (the client
`vllm bench serve` itself uses) reads the raw stream, server-sent events are split on bytes, and
each event is parsed with orjson. Measured against a stand-in that streams as fast as it can
(bench/client_ceiling.py), this costs about a seventh of the CPU that httpx's line iterator with
the standard json module did. `workbench.load.pool` spreads the load over processes, away from
the runner's scrapes and database writes.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import aiohttp

from workbench.load import grade
from workbench.load.workloads import Prompt

_loads: Callable[[str | bytes], Any]
try:
    from orjson import loads as _loads
except ImportError:  # orjson is a dependency; the standard parser only keeps a broken install usable
    _loads = json.loads


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
    spec: dict[str, Any] | None = None  # vLLM's per-request speculative decoding figures, when enabled
    # The answer as streamed, kept so that a speculative run can be checked against its baseline
    # (greedy speculative decoding answers token for token as the target alone does), and whether
    # it gets the task right where the workload has a reference answer (workbench.load.grade).
    text: str | None = None
    correct: bool | None = None

    def row(self, run_id: int) -> dict[str, Any]:
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
            "text": self.text, "correct": None if self.correct is None else int(self.correct),
        }


@dataclass(frozen=True)
class Sampling:
    max_tokens: int
    temperature: float
    top_p: float = 1.0
    ignore_eos: bool = False


def chat_body(model: str, prompt: Prompt, sampling: Sampling) -> dict[str, Any]:
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


async def one_request(session: aiohttp.ClientSession, url: str, body: dict[str, Any], idx: int, prompt_id: str,
                      category: str | None = None) -> RequestResult:
    start = time.perf_counter()
    result = RequestResult(idx, prompt_id, time.time(), category)
    gaps = result.chunk_gaps_ms
    parts: list[str] = []
    last = None
    buf = b""
    try:
        async with session.post(url, json=body) as response:
            if response.status != 200:
                text = (await response.read()).decode(errors="replace")[:300]
                result.error = f"HTTP {response.status}: {text}"
                return result
            done = False
            async for raw in response.content.iter_any():
                now = time.perf_counter()
                buf += raw
                if b"\r" in buf:
                    buf = buf.replace(b"\r\n", b"\n")
                *events, buf = buf.split(b"\n\n")
                for event in events:
                    if not event.startswith(b"data:"):
                        continue
                    data = event[5:].strip()
                    if data == b"[DONE]":
                        done = True
                        break
                    chunk = _loads(data)
                    if chunk.get("error"):
                        result.error = str(chunk["error"])[:300]
                        return result
                    for choice in chunk.get("choices") or ():
                        delta = choice.get("delta")
                        if delta and delta.get("content"):
                            parts.append(delta["content"])
                            if last is None:
                                result.ttft_ms = (now - start) * 1000
                            else:
                                gaps.append((now - last) * 1000)
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
                if done:
                    break
            if not done:
                result.error = "the stream ended before [DONE]"
                return result
        result.ok = True
        result.text = "".join(parts)
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        result.latency_ms = (time.perf_counter() - start) * 1000
    return result


def session(api_key: str | None, concurrency: int, timeout_s: float) -> aiohttp.ClientSession:
    # One keep-alive connection per request in flight, as `vllm bench serve` keeps them.
    connector = aiohttp.TCPConnector(limit=concurrency + 2, force_close=False)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout_s),
                                 headers={"Authorization": f"Bearer {api_key}"}, read_bufsize=2 ** 16)


async def generate(base_url: str, api_key: str | None, model: str, prompts: list[Prompt], sampling: Sampling,
                   concurrency: int, request_rate: float | None = None, seed: int = 0,
                   on_result: Callable[[RequestResult], None] | None = None,
                   timeout_s: float = 600.0, indices: list[int] | None = None) -> list[RequestResult]:
    """Send every prompt once, at most `concurrency` at a time; with `request_rate`, arrivals
    follow a Poisson process of that rate (requests/s), still capped by the concurrency."""
    url = base_url.rstrip("/") + "/v1/chat/completions"
    gate = asyncio.Semaphore(concurrency)
    rng = random.Random(seed)
    results: list[RequestResult] = []

    async with session(api_key, concurrency, timeout_s) as client:
        async def send(i: int, prompt: Prompt) -> None:
            async with gate:
                r = await one_request(client, url, chat_body(model, prompt, sampling), i, prompt.id, prompt.family)
            if r.ok and r.text is not None:
                r.correct = grade.correct(prompt.family, prompt.reference, r.text)
            results.append(r)
            if on_result:
                on_result(r)

        tasks = []
        # `indices` numbers the prompts when they are one process's share of a larger set.
        for k, (i, prompt) in enumerate(zip(indices or range(len(prompts)), prompts)):
            if request_rate and k:
                await asyncio.sleep(rng.expovariate(request_rate))
            tasks.append(asyncio.create_task(send(i, prompt)))
        await asyncio.gather(*tasks)
    results.sort(key=lambda r: r.idx)
    return results
