"""A stand-in for a vLLM server that replays what a real one sent, for tests of Draftbench's own
logic that do not need a model to run.

The answers come from tests/fixtures/vllm/ (recorded from vLLM's CPU build by record_vllm.py
beside this file; SOURCES.md there says how): /health, /version and /v1/models as recorded, the
recorded refusals (a missing or wrong run key, an unknown model), and streamed chat completions
replayed SSE line by line at a fraction of their recorded pace, each with its usage and vLLM's
per-request spec-decode figures. A request gets the recording of its own prompt and max_tokens
(the built-in prompts at the recorded lengths), otherwise a recorded one chosen by its prompt.
/metrics is the page recorded before any request, whose counters then advance by what every
answered request reported, as vLLM's do (the recorder checked that the real counters did exactly
that): drafts, drafted and accepted tokens, accepted tokens per position (from each request's
acceptance histogram), prompt and generation tokens, finished requests by reason, and the running
gauge. Latency histograms stay as recorded. `log` holds the server's output: the recorded start-up
lines, one access line per request, and vLLM's periodic throughput and SpecDecoding lines.

Run as a script it serves until killed, printing its log, like `vllm serve` (the run key from
VLLM_API_KEY): `python tests/helpers/standins/vllm_server.py --port PORT [--recording baseline]`.

A what-if server, as a GPU build of vLLM serves one: with `--speculative-config` holding
`"rejection_sample_method": "synthetic"` and `"synthetic_acceptance_rates"`, every request's
spec-decode figures (and so the counters) come from the imposed curve as vLLM's synthetic sampler
draws them: at each step position i is accepted with probability p_i / p_(i-1) given that the
positions before it were, the step yields the accepted tokens plus one, and steps go on until the
request's output tokens are produced. With `--load-format dummy` and no speculative config (a
what-if baseline) the answers carry no spec-decode figures and the counters do not move.

A broken speculative server (`lossy`; as a script, STANDIN_LOSSY=1 with a speculative config):
every answer's text comes out reversed chunk by chunk, the figures as recorded, as a build whose
verifier keeps wrong tokens would answer: the same lengths and acceptance, other words.

A noisy server (STANDIN_PACE_FACTORS="1,3,0.5" and STANDIN_PACE_BLOCK=K): the k-th block of K
chat requests is paced by the factor at k (cycling), so runs of K requests each measure different
throughputs, as a server with drifting clocks would; without them every request keeps one pace.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import json
import os
import random
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "vllm"
SAMPLE = re.compile(r'^(?P<name>[\w:]+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$')
LABEL = re.compile(r'(\w+)="([^"]*)"')
SPEC = ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_total")
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
ADVANCED = {*SPEC, PER_POS, "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
            "vllm:prompt_tokens_by_source_total", "vllm:request_success_total", "vllm:num_requests_running"}


@dataclass(frozen=True)
class Recording:
    name: str
    meta: dict
    streams: dict[tuple[str, int], dict]
    log: list[str]

    @property
    def served_name(self) -> str:
        return self.meta["served_name"]

    def answer_for(self, prompt: str, max_tokens: int) -> tuple[dict, bool]:
        """The recording of this prompt at this length (True), else a recorded one (False): the
        same prompt at the nearest recorded length, or another prompt chosen by this one's hash."""
        if (prompt, max_tokens) in self.streams:
            return self.streams[(prompt, max_tokens)], True
        length = min(self.meta["max_tokens"], key=lambda n: (abs(n - max_tokens), n))
        if (prompt, length) in self.streams:
            return self.streams[(prompt, length)], False
        keys = sorted(k for k in self.streams if k[1] == length)
        pick = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(keys)
        return self.streams[keys[pick]], False


@functools.cache
def recording(name: str) -> Recording:
    meta = json.loads((FIXTURES / f"{name}.json").read_text())
    with gzip.open(FIXTURES / f"{name}_streams.jsonl.gz", "rt", encoding="utf-8") as f:
        streams = {(r["prompt"], r["max_tokens"]): r for r in map(json.loads, f)}
    log = (FIXTURES / f"{name}_server.log").read_text().splitlines()
    return Recording(name, meta, streams, log)


def final_chunk(record: dict) -> dict:
    """The chunk that carries the usage (and, with speculation, the per-request figures)."""
    for _, line in reversed(record["lines"]):
        if line.startswith("data: {") and '"usage":{' in line.replace(" ", ""):
            return json.loads(line[6:])
    return {}


def finishes(line: str) -> bool:
    """An SSE line whose choice carries a finish reason (a string, not null)."""
    return '"finish_reason":"' in line.replace(" ", "")


def finish_reason(record: dict) -> str | None:
    for _, line in reversed(record["lines"]):
        if finishes(line):
            for choice in json.loads(line[6:]).get("choices", []):
                if choice.get("finish_reason"):
                    return choice["finish_reason"]
    return None


def counted_at(record: dict) -> int:
    """The index of the line before which the request is in /metrics: its first line with a finish
    reason. vLLM's output handler records an engine step's stats in the same pass that queues the
    step's outputs, before the answer's coroutine can send them, so a scrape made once the client
    has its last token already counts the whole request."""
    for i, (_, line) in enumerate(record["lines"]):
        if finishes(line):
            return i
    return len(record["lines"]) - 1


class Counters:
    """The recorded /metrics page with the counters that requests advance."""

    def __init__(self, page: str):
        self.lines = page.splitlines()
        self.at: dict[tuple[str, str], int] = {}
        self.values: dict[int, float] = {}
        for i, line in enumerate(self.lines):
            m = SAMPLE.match(line)
            if m and m["name"] in ADVANCED:
                labels = dict(LABEL.findall(m["labels"]))
                which = labels.get("position") or labels.get("finished_reason") or labels.get("source") or ""
                self.at[(m["name"], which)] = i
                self.values[i] = float(m["value"])
        self.lock = threading.Lock()

    def ensure_positions(self, n: int) -> None:
        """Per-position counters for positions 0..n-1 (vLLM has one per drafted position from the
        start), added after the recorded ones at zero."""
        last = max(i for (name, _), i in self.at.items() if name == PER_POS)
        template = self.lines[last]
        for pos in range(n):
            if (PER_POS, str(pos)) not in self.at:
                line = re.sub(r'position="\d+"', f'position="{pos}"', template).rsplit(" ", 1)[0] + " 0.0"
                last += 1
                self.lines.insert(last, line)
                self.at = {k: (i + 1 if i >= last else i) for k, i in self.at.items()}
                self.values = {(i + 1 if i >= last else i): v for i, v in self.values.items()}
                self.at[(PER_POS, str(pos))] = last
                self.values[last] = 0.0

    def add(self, name: str, amount: float, which: str = "") -> None:
        i = self.at.get((name, which))
        if i is not None:
            self.values[i] += amount

    def get(self, name: str, which: str = "") -> float:
        return self.values[self.at[(name, which)]]

    def served(self, record: dict) -> None:
        chunk = final_chunk(record)
        usage = chunk.get("usage") or {}
        spec = (chunk.get("metrics") or {}).get("speculative_decoding") or {}
        reason = finish_reason(record)
        with self.lock:
            self.add("vllm:prompt_tokens_total", usage.get("prompt_tokens", 0))
            self.add("vllm:prompt_tokens_by_source_total", usage.get("prompt_tokens", 0), "local_compute")
            self.add("vllm:generation_tokens_total", usage.get("completion_tokens", 0))
            self.add("vllm:request_success_total", 1, reason or "length")
            if spec:
                for name, key in zip(SPEC, ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens")):
                    self.add(name, spec[key])
                hist = spec["acceptance_histogram"]  # hist[k]: steps that accepted exactly k tokens
                for i in range(len(hist) - 1):
                    self.add(PER_POS, sum(hist[i + 1:]), str(i))

    def page(self, running: int) -> str:
        with self.lock:
            self.add("vllm:num_requests_running", running - self.get("vllm:num_requests_running"))
            out = list(self.lines)
            for i, value in self.values.items():
                out[i] = out[i].rsplit(" ", 1)[0] + " " + repr(float(value))
        return "\n".join(out) + "\n"


def imposed_figures(rates: list[float], output_tokens: int, rng: random.Random) -> dict:
    """One request's spec-decode figures as vLLM's synthetic rejection sampler makes them."""
    n = len(rates)
    hist = [0] * (n + 1)
    produced, steps = 1, 0  # the first token comes from the prefill, not from a speculative step
    while produced < output_tokens:
        k, before = 0, 1.0
        while k < n and before > 0 and rng.random() < rates[k] / before:
            before = rates[k]
            k += 1
        hist[k] += 1
        steps += 1
        produced += k + 1
    accepted = sum(k * c for k, c in enumerate(hist))
    return {"mean_acceptance_length": 1 + accepted / steps if steps else 0.0,
            "draft_acceptance_rate": accepted / (steps * n) if steps else 0.0,
            "acceptance_histogram": hist, "num_spec_steps": steps,
            "num_accepted_draft_tokens": accepted, "num_draft_tokens": steps * n}


def with_figures(record: dict, figures: dict | None) -> dict:
    """The record with its final chunk's per-request spec-decode figures replaced (None: removed)."""
    lines = list(record["lines"])
    for i in range(len(lines) - 1, -1, -1):
        t, line = lines[i]
        if line.startswith("data: {") and '"usage":{' in line.replace(" ", ""):
            chunk = json.loads(line[6:])
            metrics = dict(chunk.get("metrics") or {})
            metrics.pop("speculative_decoding", None)
            if figures is not None:
                metrics["speculative_decoding"] = figures
            if metrics:
                chunk["metrics"] = metrics
            else:
                chunk.pop("metrics", None)
            lines[i] = (t, "data: " + json.dumps(chunk, separators=(",", ":")))
            break
    return {**record, "lines": lines}


class StandinVllm:
    def __init__(self, recording_name: str = "draft_model_n3", api_key: str | None = None, pace: float = 0.01,
                 port: int = 0, on_line: Callable[[str], None] | None = None, log_interval_s: float = 10.0,
                 imposed: list[float] | None = None, dummy: bool = False, lossy: bool = False):
        self.recording = recording(recording_name)
        self.lossy = lossy
        factors = os.environ.get("STANDIN_PACE_FACTORS")
        self.pace_factors = [float(x) for x in factors.split(",")] if factors else [1.0]
        self.pace_block = int(os.environ.get("STANDIN_PACE_BLOCK") or 1)
        # What-if: acceptance drawn from an imposed curve, or (a dummy-weight baseline) none at all.
        self.imposed = list(imposed) if imposed else None
        self.no_spec = dummy and not imposed
        self._rng = random.Random(0)
        self.api_key = api_key
        self.pace = pace  # each chunk waits this fraction of its recorded delay
        self.counters = Counters(self.recording.meta["metrics_before"])
        if self.imposed:
            self.counters.ensure_positions(len(self.imposed))
        self.requests: list[dict] = []  # every chat request: its body, and whether its own recording answered
        # A rule (prompt, max_tokens) -> True for the requests whose connection is dropped unanswered,
        # as a server that dies mid-request: set by the tests of failed requests.
        self.drop: Callable[[str, int], bool] | None = None
        self.running = 0
        self.scrapes = 0  # /metrics requests answered
        self.log: list[str] = []
        self.on_line = on_line
        self._window = {"t": time.time(), "prompt": 0, "generation": 0, "drafts": 0, "drafted": 0, "accepted": 0,
                        "per_pos": [], "served": 0}
        self._stop = threading.Event()
        self.log_interval_s = log_interval_s
        standin = self

        class Handler(_Handler):
            pass

        Handler.standin = standin
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"

    def pace_factor(self, served: int) -> float:
        """The pace factor of the request after `served` others (1 unless made noisy)."""
        return self.pace_factors[(served // self.pace_block) % len(self.pace_factors)]

    # --- the server's output ---------------------------------------------------------------------
    def say(self, line: str) -> None:
        self.log.append(line)
        if self.on_line:
            self.on_line(line)

    def _prefix(self, marker: str) -> str:
        """The start of a recorded line (process tag, level, time, source) for lines made here."""
        line = next((x for x in self.recording.log if marker in x), "")
        return line.split(marker)[0]

    def _access(self, method: str, path: str, status: int, phrase: str, port: int) -> None:
        self.say(f'{self._prefix("INFO:")}INFO:     127.0.0.1:{port} - "{method} {path} HTTP/1.1" {status} {phrase}')

    def served(self, record: dict) -> None:
        self.counters.served(record)
        chunk = final_chunk(record)
        usage = chunk.get("usage") or {}
        spec = (chunk.get("metrics") or {}).get("speculative_decoding") or {}
        with self.counters.lock:
            w = self._window
            w["served"] += 1
            w["prompt"] += usage.get("prompt_tokens", 0)
            w["generation"] += usage.get("completion_tokens", 0)
            if spec:
                hist = spec["acceptance_histogram"]
                w["drafts"] += spec["num_spec_steps"]
                w["drafted"] += spec["num_draft_tokens"]
                w["accepted"] += spec["num_accepted_draft_tokens"]
                w["per_pos"] = [a + b for a, b in zip(w["per_pos"] or [0] * (len(hist) - 1),
                                                      [sum(hist[i + 1:]) for i in range(len(hist) - 1)])]

    def _stats_lines(self) -> None:
        """vLLM's periodic lines over the last interval, in the recorded build's wording."""
        with self.counters.lock:
            w, now = self._window, time.time()
            self._window = {**w, "t": now, "prompt": 0, "generation": 0, "drafts": 0, "drafted": 0,
                            "accepted": 0, "per_pos": [], "served": 0}
        if not w["served"] and not self.running:
            return
        dt = max(now - w["t"], 1e-9)
        stamp = time.strftime("%m-%d %H:%M:%S")
        head, spec_head = (re.sub(r"\d\d-\d\d \d\d:\d\d:\d\d", stamp, self._prefix(mark))
                           for mark in ("Engine 000:", "SpecDecoding metrics:"))
        self.say(f"{head}Engine 000: Avg prompt throughput: {w['prompt'] / dt:.1f} tokens/s, Avg generation "
                 f"throughput: {w['generation'] / dt:.1f} tokens/s, Running: {self.running} reqs, Waiting: 0 reqs, "
                 "CPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%")
        if w["drafts"]:
            per_pos = ", ".join(f"{a / w['drafts']:.3f}" for a in w["per_pos"])
            self.say(f"{spec_head}SpecDecoding metrics: Mean acceptance length: {1 + w['accepted'] / w['drafts']:.2f}, "
                     f"Accepted throughput: {w['accepted'] / dt:.2f} tokens/s, Drafted throughput: "
                     f"{w['drafted'] / dt:.2f} tokens/s, Accepted: {w['accepted']} tokens, Drafted: {w['drafted']} "
                     f"tokens, Per-position acceptance rate: {per_pos}, Avg Draft acceptance rate: "
                     f"{100 * w['accepted'] / w['drafted']:.1f}%")

    def _log_loop(self) -> None:
        while not self._stop.wait(self.log_interval_s):
            self._stats_lines()

    # --- lifetime --------------------------------------------------------------------------------
    def start(self) -> "StandinVllm":
        for line in self.recording.log:
            self.say(line)
            if "Application startup complete" in line:
                break
        threading.Thread(target=self.server.serve_forever, daemon=True, name="stand-in-vllm").start()
        threading.Thread(target=self._log_loop, daemon=True, name="stand-in-vllm-log").start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "StandinVllm":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    standin: StandinVllm

    def log_message(self, *args):
        pass

    def _send(self, answer: dict, replace: tuple[str, str] | None = None) -> None:
        body = answer["body"] if replace is None else answer["body"].replace(*replace)
        data = body.encode()
        self.send_response(answer["status"])
        for k, v in answer.get("headers", {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self._access(answer["status"])

    def _access(self, status: int) -> None:
        phrase = self.responses.get(status, ("",))[0]
        self.standin._access(self.command, self.path, status, phrase, self.client_address[1])

    def _authorized(self) -> bool:
        key = self.standin.api_key
        return key is None or self.headers.get("Authorization") == f"Bearer {key}"

    def do_GET(self):
        s, meta = self.standin, self.standin.recording.meta
        path = self.path.split("?")[0]
        if path == "/metrics":
            with s.counters.lock:
                s.scrapes += 1  # a test can wait for the sampler's next scrapes instead of timing them
            text = s.counters.page(s.running)
            return self._send({"status": 200, "headers": meta["get"]["/metrics"]["headers"], "body": text})
        if path not in meta["get"]:
            return self._send({"status": 404, "headers": {"content-type": "application/json"},
                               "body": '{"detail":"Not Found"}'})
        if not self._authorized():
            return self._send(meta["get"][path + " without key"])
        return self._send(meta["get"][path])

    def do_POST(self):
        s, meta = self.standin, self.standin.recording.meta
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path != "/v1/chat/completions":
            return self._send({"status": 404, "headers": {"content-type": "application/json"},
                               "body": '{"detail":"Not Found"}'})
        if not self._authorized():
            return self._send(meta["refusals"]["no key" if "Authorization" not in self.headers else "wrong key"])
        if body.get("model") != s.recording.served_name:
            return self._send(meta["refusals"]["unknown model"], ("`other`", f"`{body.get('model')}`"))
        if not body.get("stream"):
            return self._send({"status": 501, "headers": {"content-type": "application/json"},
                               "body": '{"error": "the stand-in replays streamed chat completions only"}'})
        prompt, max_tokens = body["messages"][-1]["content"], body.get("max_tokens", 16)
        if s.drop and s.drop(prompt, max_tokens):
            raise ConnectionAbortedError("the stand-in drops this request")
        record, exact = s.recording.answer_for(prompt, max_tokens)
        if s.imposed or s.no_spec:
            usage = final_chunk(record).get("usage") or {}
            with s.counters.lock:
                figures = imposed_figures(s.imposed, usage.get("completion_tokens", 0), s._rng) if s.imposed else None
            record = with_figures(record, figures)
        if s.lossy:
            record = garbled(record)
        self.pace = s.pace * s.pace_factor(len(s.requests))
        s.requests.append({"body": body, "exact": exact})
        self._stream(record)

    def _stream(self, record: dict) -> None:
        s = self.standin
        self.send_response(record["status"])
        for k, v in record["headers"].items():
            self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with s.counters.lock:
            s.running += 1
        t0 = time.perf_counter()
        counted, at = False, counted_at(record)
        try:
            for i, (t, line) in enumerate(record["lines"]):
                delay = t0 + t * self.pace - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                if i == at:
                    s.served(record)
                    counted = True
                data = (line + "\n\n").encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            if not counted:
                s.counters.add("vllm:request_success_total", 1, "abort")
            self.close_connection = True
        finally:
            with s.counters.lock:
                s.running -= 1
        self._access(record["status"])


def garbled(record: dict) -> dict:
    """The record with every streamed piece of text reversed (and nothing else changed)."""
    lines = []
    for t, line in record["lines"]:
        if line.startswith("data: {") and '"content"' in line:
            chunk = json.loads(line[len("data: "):])
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if isinstance(delta.get("content"), str) and len(delta["content"]) > 1:
                    delta["content"] = delta["content"][::-1]
            line = "data: " + json.dumps(chunk)
        lines.append((t, line))
    return {**record, "lines": lines}


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve a recorded vLLM server until killed.")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--recording", default="draft_model_n3")
    parser.add_argument("--pace", type=float, default=0.01)
    parser.add_argument("--speculative-config")
    parser.add_argument("--load-format")
    args, _ = parser.parse_known_args()
    spec = json.loads(args.speculative_config) if args.speculative_config else {}
    imposed = spec.get("synthetic_acceptance_rates") if spec.get("rejection_sample_method") == "synthetic" else None
    standin = StandinVllm(args.recording, os.environ.get("VLLM_API_KEY"), args.pace, args.port,
                          on_line=lambda line: print(line, flush=True), imposed=imposed,
                          dummy=args.load_format == "dummy",
                          lossy=bool(spec) and os.environ.get("STANDIN_LOSSY") == "1")
    standin.start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        standin.stop()


if __name__ == "__main__":
    main()
