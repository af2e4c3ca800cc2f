"""The data steps of a training run, each an object the `Pipeline` runs: prompts (a workload, a file, or written by the target
itself), and the target's own responses from a vLLM server."""

from __future__ import annotations

import json
import sys
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench import events
from workbench.host import engine
from workbench.train.config import CONCURRENCY, SELF_PROMPTS, Cancelled, TrainError
from workbench.train.context import StepContext
from workbench.train.records import (Prompt, Response, _cut_to_last_line, _write_jsonl, read_prompts,
                                     read_responses)

if TYPE_CHECKING:  # for annotations only: launch loads when a server starts, httpx when a step asks the target
    import httpx

    from workbench.launch import LocalServer


def _client(base_url: str, api_key: str | None) -> httpx.Client:
    # Deferred: httpx takes a while to import and only the steps that query the target need it
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(base_url=base_url, headers=headers, timeout=600)


def _post(client: httpx.Client, base_url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    # Deferred: httpx takes a while to import and only the steps that query the target need it
    import httpx

    try:
        return client.post(path, json=body)
    except httpx.HTTPError as exc:
        raise TrainError(f"cannot reach the target's server at {base_url}: {exc}") from None


def _served_model(client: httpx.Client, base_url: str) -> str:
    """The model id a vLLM server serves; a refused key or a foreign server is one line."""
    # Deferred: httpx takes a while to import and only the steps that query the target need it
    import httpx

    try:
        r = client.get("/v1/models")
    except httpx.HTTPError as exc:
        raise TrainError(f"cannot reach the target's server at {base_url}: {exc}") from None
    if r.status_code in (401, 403):
        raise TrainError(f"the server at {base_url} refused the API key (HTTP {r.status_code}); "
                         "pass its key with --api-key-env")
    try:
        return r.json()["data"][0]["id"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise TrainError(f"{base_url} is not an OpenAI-compatible vLLM server "
                         f"(GET /v1/models answered HTTP {r.status_code})") from None


def _user_turn(index: int, text: str) -> Prompt:
    return Prompt(id=f"p{index}", messages=[{"role": "user", "content": text}])


class Prompts:
    """Step 1: the prompts, from a workload or file, or written by the target itself."""
    name = "prompts"

    def run(self, p: StepContext) -> dict[str, Any]:
        # Deferred: the load package imports aiohttp, which only reading a workload needs
        from workbench.load import workloads

        if p.config.prompts == SELF_PROMPTS:
            return self._self_written(p)
        try:
            prompts = workloads.load(p.config.prompts, Path.cwd())
        except workloads.WorkloadError as exc:
            raise TrainError(str(exc)) from None
        if not prompts:
            raise TrainError(f"the workload {p.config.prompts!r} has no prompts")
        chosen = workloads.sample(prompts, p.config.num_prompts, p.config.seed)
        # Cycling would repeat prompts when more are asked for than exist: keep each once.
        seen: set[str] = set()
        written: list[Prompt] = []
        for prompt in chosen:
            if prompt.text in seen:
                continue
            seen.add(prompt.text)
            written.append(_user_turn(len(written), prompt.text))
        _write_jsonl(p.out / "prompts.jsonl", written)
        return {"prompts": len(written), "source": p.config.prompts}

    def _self_written(self, p: StepContext) -> dict[str, Any]:
        """Prompts written by the target itself (the Magpie method): given only its chat template up
        to the start of a user turn, a chat model samples something a user might ask. For a target
        with no representative traffic at hand this gives on-distribution prompts, and it keeps
        Draftbench's own workloads unseen by the draft, so an evaluation on them is held out."""
        # Deferred: transformers takes seconds to import and only this step needs it
        from transformers import AutoTokenizer

        marker = "\u2063DRAFTBENCH\u2063"
        try:
            tok = AutoTokenizer.from_pretrained(p.target)
            text = tok.apply_chat_template([{"role": "user", "content": marker}], tokenize=False)
        except Exception as exc:  # noqa: BLE001 - no tokenizer or no chat template: nothing to sample from
            raise TrainError(f"self-written prompts need the target's chat template: {exc}") from None
        prefix, _, suffix = text.partition(marker)
        stop = suffix.strip().split("\n")[0] or (tok.eos_token or "")
        if not prefix or not stop:
            raise TrainError("self-written prompts need a chat template with a user turn")
        # The turn ends with a special token, which vLLM leaves out of the text: stop on its id.
        stop_id = tok.convert_tokens_to_ids(stop) if stop in tok.all_special_tokens else None
        base_url, api_key = p.server_endpoint()
        want = p.config.num_prompts
        written: list[Prompt] = []
        seen: set[str] = set()
        with _client(base_url, api_key) as client:
            model = _served_model(client, base_url)

            def one(i: int) -> str:
                if p.cancel_event.is_set():
                    return ""
                # The template already holds any BOS token: vLLM must not add a second one.
                body = {"model": model, "prompt": prefix, "max_tokens": 96, "temperature": 1.0, "top_p": 0.95,
                        "stop": [stop], "seed": p.config.seed * 1_000_003 + i, "add_special_tokens": False}
                if stop_id is not None:
                    body["stop_token_ids"] = [stop_id]
                r = _post(client, base_url, "/v1/completions", body)
                if r.status_code != 200:
                    raise TrainError(f"the target's server answered {r.status_code}: {r.text[:200]}")
                choice = r.json()["choices"][0]
                # A prompt cut by max_tokens is unfinished: it would teach the draft odd endings.
                return choice["text"].strip() if choice.get("finish_reason") == "stop" else ""

            attempt = 0
            # Not a `with` block: on a cancel the requests in flight are abandoned, not awaited.
            pool = ThreadPoolExecutor(CONCURRENCY)
            try:
                while len(written) < want and attempt < 4 * want:
                    batch = range(attempt, attempt + min(4 * CONCURRENCY, 4 * want - attempt))
                    attempt = batch.stop
                    for text in pool.map(one, batch):
                        p.check()
                        if len(text) >= 12 and text not in seen and len(written) < want:
                            seen.add(text)
                            written.append(_user_turn(len(written), text))
                    p.emit(events.Progress(step="prompts", done=len(written), total=want))
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        if not written:
            raise TrainError("the target wrote no usable prompt (is it a chat model?)")
        _write_jsonl(p.out / "prompts.jsonl", written)
        return {"prompts": len(written), "source": f"written by the target ({attempt} samples)"}


class Responses:
    """Step 2: the target's own greedy responses, from a vLLM server."""
    name = "responses"

    def run(self, p: StepContext) -> dict[str, Any]:
        prompts = read_prompts(p.out / "prompts.jsonl")
        partial = p.out / "responses.partial.jsonl"
        have = {answered.id for answered in read_responses(partial)}
        todo = [prompt for prompt in prompts if prompt.id not in have]
        if todo and partial.exists():
            _cut_to_last_line(partial)  # so the next appended response starts on a line of its own
        if todo:
            base_url, api_key = p.server_endpoint()
            self._generate(p, base_url, api_key, todo, partial, len(have), len(prompts))
        answers = {answered.id: answered for answered in read_responses(partial)}
        ordered = [answers[prompt.id] for prompt in prompts if prompt.id in answers]
        _write_jsonl(p.out / "responses.jsonl", ordered)
        return {"responses": len(ordered), "completion_tokens": sum(sum(r.loss_mask) for r in ordered),
                "tokens": sum(len(r.input_ids) for r in ordered)}

    def _generate(self, p: StepContext, base_url: str, api_key: str | None, todo: list[Prompt], partial: Path,
                  done: int, total: int) -> None:
        """Greedy responses by the target itself, with the exact token ids vLLM used (prompt
        tokens get loss mask 0, generated ones 1), as `speculators regenerate-responses` writes."""
        # Not a `with` block: on a cancel the requests in flight are abandoned, not awaited (the
        # server is stopped next, which ends them).
        pool = ThreadPoolExecutor(CONCURRENCY)
        with _client(base_url, api_key) as client, open(partial, "a", encoding="utf-8") as f:
            model = _served_model(client, base_url)

            def one(prompt: Prompt) -> Response | None:
                if p.cancel_event.is_set():
                    return None
                body = {"model": model, "messages": prompt.messages, "max_tokens": p.config.max_tokens,
                        "temperature": 0.0, "return_token_ids": True}
                r = _post(client, base_url, "/v1/chat/completions", body)
                if r.status_code != 200:
                    raise TrainError(f"the target's server answered {r.status_code}: {r.text[:200]}")
                data = r.json()
                choice = data["choices"][0]
                prompt_ids, completion_ids = data.get("prompt_token_ids"), choice.get("token_ids")
                if prompt_ids is None or completion_ids is None:
                    raise TrainError("the vLLM server returned no token ids (it needs `return_token_ids`, "
                                     "vLLM >= 0.10.2)")
                answer = {"role": "assistant", "content": choice["message"]["content"] or ""}
                return Response(id=prompt.id, messages=prompt.messages + [answer],
                                input_ids=prompt_ids + completion_ids,
                                loss_mask=[0] * len(prompt_ids) + [1] * len(completion_ids))

            pending = {pool.submit(one, prompt) for prompt in todo}
            try:
                while pending:
                    finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        out = fut.result()
                        if out is None:
                            continue
                        # One whole line per response, written here only: a cancel loses at most
                        # the requests in flight.
                        f.write(json.dumps(asdict(out)) + "\n")
                        f.flush()
                        done += 1
                        p.emit(events.Progress(step="responses", done=done, total=total))
                    p.check()
            finally:
                pool.shutdown(wait=False, cancel_futures=True)


def start_server(p: StepContext) -> LocalServer:
    # Deferred: launch and plan pull in httpx, huggingface_hub and aiohttp, which only starting a server needs
    from workbench import launch, plan

    install = engine.probe(p.vllm_python or sys.executable)
    if not install.found:
        raise TrainError(f"no vLLM in {install.python}: install Draftbench with the `cpu` or `gpu` extra")
    server = plan.Server(target=p.target, served_name="target", method="baseline", n=None, draft=None,
                         options=(), max_model_len=max(2048, p.config.seq_length), dtype="bfloat16",
                         extra_args=(), env=(), enforce_eager=True, per_request_metrics=False)
    log = open(p.out / "server.log", "a", encoding="utf-8", buffering=1)
    srv = launch.LocalServer(launch.prepare(server, install, launch.free_port()),
                             on_line=lambda _stream, line: log.closed or log.write(line + "\n"))
    p.server_log = log
    p.emit(events.ServerStarting(command=srv.spec.command))
    srv.start()
    try:
        srv.wait_healthy(600, cancelled=p.cancel_event.is_set)
    except launch.LaunchError as exc:
        srv.stop()
        log.close()
        if p.cancel_event.is_set():
            raise Cancelled() from None
        raise TrainError(str(exc)) from None
    return srv
