"""A real HTTP server on 127.0.0.1 speaking OpenAI chat-completions, for tests, benchmarks and the
demo: it stands in for what is external and paid (a model API or an LLM judge), nothing else.

It records every request body it received (``server.requests``), answers through a ``responder``
callable, and can add a fixed latency, cap concurrency (requests beyond the cap queue, like a
saturated vLLM server) and inject faults per request::

    with FakeOpenAIServer(responder=lambda body: "Correct", latency=0.1, max_concurrency=64) as srv:
        srv.base_url  # "http://127.0.0.1:<port>/v1"

A responder returns the reply text, or a :class:`Fault` to misbehave on that request; on ``/pooling`` (vLLM's
reward-model endpoint) a number, sent as the score at the last token.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lmms_eval_earthsci.testing.loopback import LoopbackServer, QuietHandler, drop_connection


def prompt_field(text: str, label: str) -> str:
    """The rest of the line after ``label: `` in a prompt (e.g. ``Standard Answer``), for responders
    that answer according to what a judge prompt says."""
    m = re.search(rf"{re.escape(label)}: (.*)\n", text)
    if m is None:
        raise ValueError(f"no {label!r} line in the prompt")
    return m.group(1)


@dataclass
class Fault:
    """``kind``: ``status`` (reply ``status`` with an error body, ``retry_after`` header if set),
    ``malformed`` (200 with a body that is not JSON), ``truncated`` (Content-Length larger than the
    body, then close), ``drop`` (close the connection without a reply), ``sleep`` (wait ``seconds``
    before answering normally with ``text``: a client timeout). ``error``: the error object of a ``status``
    reply (default: an injected-fault message), e.g. the one a real vLLM server sends."""

    kind: str
    status: int = 500
    retry_after: float | None = None
    seconds: float = 0.0
    text: str = ""
    error: dict | None = None


Responder = Callable[[dict], "str | Fault"]


def text_of(body: dict) -> str:
    """All text parts of all messages of a request body, joined."""
    out = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(p.get("text", "") for p in c if p.get("type") == "text")
    return "\n".join(out)


@dataclass
class Reasoned:
    """A responder's reply as a reasoning model (vLLM/SGLang with a reasoning parser, DeepSeek, QwQ)
    sends it: the answer in ``content``, the thinking in ``message.reasoning_content``."""

    content: str
    reasoning: str


def completion(body: dict, text: str) -> dict:
    """A chat-completions reply carrying ``text`` (token counts: whitespace words)."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": len(text_of(body).split()), "completion_tokens": len(text.split()), "total_tokens": 0},
    }


def pooled(body: dict, score: float) -> dict:
    """A /pooling reply as vLLM gives it for a token-level reward model: a score per token, ``score`` the last."""
    n = max(2, len(text_of(body).split()))
    return {"id": "pooling-fake", "object": "list", "created": int(time.time()), "model": body.get("model", "fake"),
            "data": [{"index": 0, "object": "pooling", "data": [[0.0]] * (n - 1) + [[score]]}], "usage": {"prompt_tokens": n, "total_tokens": n, "completion_tokens": 0}}


def image_urls(body: dict) -> list[str]:
    """The image data URLs of a request, in order."""
    urls = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, list):
            urls.extend(p["image_url"]["url"] for p in c if p.get("type") == "image_url")
    return urls


class FakeOpenAIServer(LoopbackServer):
    def __init__(self, responder: Responder | None = None, latency: float = 0.0, max_concurrency: int | None = None, record: bool = True, tls=None, framing: str = "length"):
        """``tls``: a server-side ``ssl.SSLContext`` (HTTPS); ``framing`` of every reply body: ``length``
        (Content-Length, keep-alive), ``chunked`` (Transfer-Encoding: chunked) or ``close`` (no length,
        ``Connection: close``, the body ends when the server closes)."""
        if framing not in ("length", "chunked", "close"):
            raise ValueError(f"unknown framing {framing!r}")
        self.framing = framing
        self.responder = responder or (lambda body: "A")
        self.latency = latency
        self.record = record
        self.requests: list[dict] = []
        self.count = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_concurrency) if max_concurrency else None
        super().__init__(tls)

    # -- lifecycle
    request_queue_size = 256

    def handler_class(self):
        server = self

        class Handler(QuietHandler):
            def do_GET(self):  # /v1/models, for clients that probe
                self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json(400, {"error": {"message": "body is not JSON"}})
                    return
                server._serve(self, body)

            def _json(self, status: int, obj: Any, headers: dict | None = None):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if server.framing == "length":
                    self.send_header("Content-Length", str(len(data)))
                elif server.framing == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if server.framing == "chunked":  # in two chunks, with a chunk extension, then the last
                    half = len(data) // 2
                    for part in (data[:half], data[half:]):
                        self.wfile.write(f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(data)

        return Handler

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

    # -- serving
    def _serve(self, handler, body: dict) -> None:
        if self._slots:
            self._slots.acquire()
        with self._lock:
            self.count += 1
            if self.record:
                self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                time.sleep(self.latency)
            reply = self.responder(body)
            if isinstance(reply, Fault):
                self._fault(handler, reply)
            elif isinstance(reply, Reasoned):
                out = completion(body, reply.content)
                out["choices"][0]["message"]["reasoning_content"] = reply.reasoning
                handler._json(200, out)
            else:
                self._ok(handler, body, str(reply))
        finally:
            with self._lock:
                self.in_flight -= 1
            if self._slots:
                self._slots.release()

    @staticmethod
    def _ok(handler, body: dict, text: str) -> None:
        if handler.path.rstrip("/").endswith("/pooling"):  # vLLM's reward-model endpoint: the responder's number
            handler._json(200, pooled(body, float(text)))
            return
        handler._json(200, completion(body, text))

    def _fault(self, handler, f: Fault) -> None:
        if f.kind == "status":
            headers = {"Retry-After": f"{f.retry_after:g}"} if f.retry_after is not None else None
            handler._json(f.status, {"error": f.error or {"message": "injected fault"}}, headers)
        elif f.kind == "malformed":
            data = b"{not json"
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        elif f.kind == "truncated":
            data = b'{"choices": [{"message": {"content": "Cor'
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data) + 100))
            handler.end_headers()
            handler.wfile.write(data)
            handler.wfile.flush()
            handler.close_connection = True
        elif f.kind == "drop":
            drop_connection(handler)
        elif f.kind == "sleep":
            time.sleep(f.seconds)
            self._ok(handler, {}, f.text)
        else:
            raise ValueError(f"unknown fault kind {f.kind!r}")


def _serve_asyncio(latency: float, max_concurrency: int | None, reply: str, skim: bool = False) -> None:
    """A lighter server for throughput benchmarks (aiohttp, one event loop, no thread per
    connection), so the server's own CPU cost does not mask the client's. Same protocol. ``skim``: the
    body is read but not parsed (a multi-megabyte figure costs the server a copy, not a JSON parse),
    so that a benchmark of image requests measures the client."""
    from aiohttp import web  # noqa: PLC0415 - heavy (aiohttp, ~100 ms), only for the asyncio engine

    async def run():
        slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None

        async def chat(request):
            if skim:  # the body's chunks are read as they come and dropped: no join, no parse
                async for _ in request.content.iter_any():
                    pass
                body = {}
            else:
                body = await request.json()
            if slots:
                await slots.acquire()
            try:
                if latency:
                    await asyncio.sleep(latency)
            finally:
                if slots:
                    slots.release()
            return web.json_response(completion(body, reply))

        app = web.Application(client_max_size=256 * 1024**2)
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        print(f"PORT {port}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
        await runner.cleanup()

    asyncio.run(run())


def main(argv=None) -> int:
    """Serve from a separate process (benchmarks, manual tests): prints ``PORT <n>`` then serves until
    stdin closes. ``--reply`` is the fixed answer text; ``--engine asyncio`` uses the lighter aiohttp
    server (same protocol, latency and concurrency cap)."""
    ap = argparse.ArgumentParser(prog="python -m lmms_eval_earthsci.testing.openai_server")
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--max-concurrency", type=int, default=None)
    ap.add_argument("--reply", default="Correct")
    ap.add_argument("--engine", choices=["threads", "asyncio"], default="threads")
    ap.add_argument("--skim", action="store_true", help="(asyncio engine) read each body without parsing it")
    args = ap.parse_args(argv)
    if args.engine == "asyncio":
        _serve_asyncio(args.latency, args.max_concurrency, args.reply, args.skim)
        return 0
    srv = FakeOpenAIServer(responder=lambda body: args.reply, latency=args.latency, max_concurrency=args.max_concurrency, record=False).start()
    print(f"PORT {srv.port}", flush=True)
    try:
        sys.stdin.read()  # returns when the parent closes our stdin
    except KeyboardInterrupt:
        pass
    srv.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
