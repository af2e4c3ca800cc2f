"""A stand-in for vLLM's OpenAI server that streams chat completions as fast as it can.

It answers /v1/chat/completions with vLLM's chunk format (a role chunk, one content chunk per
token, a finish chunk, a usage chunk, [DONE]), each in its own HTTP chunk as vLLM writes them, and
/metrics with an empty counter set. It exists to find the ceiling of Draftbench's load generator:
the client, not a model, must be the limit. Several processes share the port (SO_REUSEPORT).

usage: python bench/sse_standin.py --port 8011 [--workers 4] [--step-ms 0] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import threading
import time
from http.client import HTTPConnection

_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
         b"transfer-encoding: chunked\r\n\r\n")


def _frame(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _event(obj: dict) -> bytes:
    return _frame(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, step_s: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            body = await reader.readexactly(length) if length else b""
            if not path.startswith("/v1/chat/completions"):
                text = b"ok" if path != "/v1/models" else b'{"data":[{"id":"standin"}]}'
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(text), text))
                await writer.drain()
                continue
            req = json.loads(body)
            n = int(req.get("max_tokens", 16))
            base = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": req.get("model", "standin")}
            writer.write(_HEAD)
            writer.write(_event({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                      "logprobs": None, "finish_reason": None}]}))
            token = _event({**base, "choices": [{"index": 0, "delta": {"content": " tok"}, "logprobs": None,
                                                 "finish_reason": None}]})
            for _ in range(n - 1):
                writer.write(token)
                await writer.drain()
                await asyncio.sleep(step_s)
            writer.write(_event({**base, "choices": [{"index": 0, "delta": {"content": " end"}, "logprobs": None,
                                                      "finish_reason": "length", "stop_reason": None}]}))
            writer.write(_event({**base, "choices": [], "usage": {"prompt_tokens": 20, "total_tokens": 20 + n,
                                                                  "completion_tokens": n}}))
            writer.write(_frame(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def _serve(port: int, step_s: float) -> None:
    async def main() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        server = await asyncio.start_server(lambda r, w: _handle(r, w, step_s), sock=sock, backlog=1024)
        async with server:
            await server.serve_forever()
    asyncio.run(main())


def smoke() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    threading.Thread(target=_serve, args=(port, 0.0), daemon=True).start()
    for _ in range(100):
        try:
            conn = HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/v1/chat/completions", body=json.dumps({"model": "standin", "max_tokens": 8}),
                         headers={"Content-Type": "application/json"})
            break
        except ConnectionRefusedError:
            time.sleep(0.05)
    events = [line for line in conn.getresponse().read().decode().splitlines() if line.startswith("data: ")]
    usage = json.loads(events[-2][6:])["usage"]
    print(f"| stand-in smoke | {len(events)} events | {usage['completion_tokens']} tokens | {events[-1]} |")
    return 0 if usage["completion_tokens"] == 8 and events[-1] == "data: [DONE]" else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--step-ms", type=float, default=0.0)
    ap.add_argument("--smoke", action="store_true",
                    help="serve one streamed request to itself on a free port, print what came back and exit")
    args = ap.parse_args()
    if args.smoke:
        return smoke()
    procs = [multiprocessing.Process(target=_serve, args=(args.port, args.step_ms / 1000), daemon=True)
             for _ in range(args.workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
