"""The judge client: request encoding, retries with backoff, the circuit breaker, concurrency, token
accounting, and the process-wide client per settings (:func:`get_judge`). Settings and results are in
:mod:`.config`, the verdict cache in :mod:`.cache`, the HTTP exchange in :mod:`.transport`.

Every request is retried on timeouts, connection errors, 429 (``Retry-After`` honoured), 5xx and
malformed replies, with exponential backoff, up to the bound. What still fails comes back as a
:class:`JudgeResult` with ``error`` (and a short ``cause`` such as ``HTTP 401``) set: nothing raises.

A circuit breaker guards each :meth:`JudgeClient.complete_many` call (one task's pass): an
authentication or not-found reply (401/403/404) stops it at once, and so do ``EARTHSCI_JUDGE_BREAKER``
consecutive docs that failed after all their retries (a dead or misconfigured endpoint); the docs not
yet judged are then failed with the same cause without a request, and requests waiting to retry are
woken. The client remembers it: an endpoint that stopped a pass, or on which every doc of a pass failed
after all its retries, is not asked again by this client (one per process and settings, :func:`get_judge`);
later passes and per-doc requests fail at once with the same cause (cached verdicts are still served).
A dead endpoint so costs one retry chain (at most ~16 s at the defaults) per run, not one per task or doc.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import io
import json
import logging
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

try:  # SIMD base64, the same bytes as the stdlib's (a figure of 1.5 MB: 0.04 ms instead of 1.6 ms)
    from pybase64 import b64encode
except ImportError:  # pragma: no cover - a declared dependency; the stdlib's is the fallback
    from base64 import b64encode  # type: ignore[assignment]  # pybase64's has extra optional arguments (padded, wrapcol); only b64encode(raw) is called

from lmms_eval_earthsci.core.judge.cache import VerdictCache
from lmms_eval_earthsci.core.judge.config import JUDGE_ENV, JudgeConfig, JudgeResult
from lmms_eval_earthsci.core.judge.transport import Retryable, Transport, TransportError
from lmms_eval_earthsci.core.runtime import current

logger = logging.getLogger("lmms_eval_earthsci")

# --------------------------------------------------------------------------- request encoding


def _mime(raw: bytes) -> str:
    if raw[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if raw[:4] == b"GIF8":
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


class DataURL(str):
    """A data URL this module made from an image's bytes (``data:<mime>;base64,<base64>``): every character
    is one JSON leaves as it is, so :func:`encode_payload` splices it into the body instead of having
    ``json`` scan and copy megabytes of it."""

    __slots__ = ()


def _image_to_data_url(img: Any) -> str:
    """PIL image, raw bytes, a path, an undecoded HF image (``{"bytes", "path"}``) or a data URL ->
    data URL. Stored bytes are sent as they are (no decode/re-encode)."""
    if isinstance(img, str) and img.startswith("data:"):
        return img
    if isinstance(img, Mapping):
        if img.get("bytes") is not None:
            img = img["bytes"]
        elif img.get("path"):
            img = img["path"]
        else:
            raise ValueError("image has neither bytes nor path")
    if isinstance(img, (bytes, bytearray)):
        raw = bytes(img)
    elif isinstance(img, (str, os.PathLike)):
        with open(img, "rb") as f:
            raw = f.read()
    else:  # PIL image
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        raw = buf.getvalue()
    # one copy into the string (the base64 written after its prefix, decoded once as ASCII)
    return DataURL(b"data:" + _mime(raw).encode() + b";base64," + b64encode(raw), "ascii")


def to_openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    """lmms-eval style messages (``{"type": "image", "url": PIL|path|bytes}`` parts) or plain
    OpenAI messages -> OpenAI chat-completions messages with base64 PNG data URLs."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        parts = []
        for p in content:
            if p.get("type") == "image":
                parts.append({"type": "image_url", "image_url": {"url": _image_to_data_url(p["url"])}})
            else:
                parts.append(p)
        out.append({"role": m["role"], "content": parts})
    return out


def encode_plain(payload: Mapping[str, Any]) -> bytes:
    """The request body as ``json`` writes it, canonically (sorted keys, UTF-8): what
    :func:`encode_payload` must equal byte for byte (cache keys and scoring fingerprints hash it)."""
    return json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


_SPLICE = "\ue000{}\ue000"  # a private-use character no request of ours holds around a number
_SPLICED = re.compile('"\ue000(\\d+)\ue000"')


def _lighten(o: Any, urls: list[str]) -> Any:
    """``o`` with each :class:`DataURL` replaced by its splice mark (the URL appended to ``urls``). A
    module function, not a closure: a recursive closure is a reference cycle that keeps megabytes of
    figures alive until the garbage collector happens to run."""
    if isinstance(o, DataURL):
        urls.append(o)
        return _SPLICE.format(len(urls) - 1)
    if isinstance(o, dict):
        return {k: _lighten(v, urls) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_lighten(v, urls) for v in o]
    return o


def encode_payload(payload: Mapping[str, Any]) -> bytes:
    """The request body, serialized once, canonically (sorted keys): sent as is and hashed for the key.
    Byte for byte :func:`encode_plain`; the data URLs this module made (:class:`DataURL`) are written
    in without ``json`` copying them (base64 needs no escaping), so a multi-megabyte figure costs one
    copy, not a scan and two copies."""
    urls: list[str] = []
    small = _lighten(payload, urls)
    if not urls:
        return encode_plain(payload)
    text = json.dumps(small, sort_keys=True, ensure_ascii=False)
    pieces = _SPLICED.split(text)
    if len(pieces) != 2 * len(urls) + 1 or sorted(int(i) for i in pieces[1::2]) != list(range(len(urls))):
        return encode_plain(payload)  # a text that looks like a splice mark: the plain way
    out = []
    for j, piece in enumerate(pieces):
        out.append(piece.encode("utf-8", "surrogatepass") if j % 2 == 0 else b'"' + urls[int(piece)].encode("ascii") + b'"')
    return b"".join(out)


def request_key(cfg: JudgeConfig, body: bytes) -> str:
    """Cache key: judge endpoint kind + model + the full request body (prompt, images, settings)."""
    h = hashlib.sha256(f"{cfg.api_type}\0{cfg.model}\0".encode())
    h.update(body)
    return h.hexdigest()


# --------------------------------------------------------------------------- client


def _usage(raw: Any) -> dict:
    """Token counts from a reply's ``usage`` (anything unexpected counts as 0)."""
    out = {}
    for k in ("prompt_tokens", "completion_tokens"):
        try:
            out[k] = max(0, int(raw.get(k) or 0)) if isinstance(raw, Mapping) else 0
        except (TypeError, ValueError):
            out[k] = 0
    details = raw.get("completion_tokens_details") if isinstance(raw, Mapping) else None
    try:
        reasoning = int(details.get("reasoning_tokens") or 0) if isinstance(details, Mapping) else 0
    except (TypeError, ValueError):
        reasoning = 0
    if reasoning > 0:  # a reasoning model's thinking, already inside completion_tokens
        out["reasoning_tokens"] = reasoning
    return out


# request bodies are built off the event loop by this many threads (base64 and json hold the GIL, so more
# add little on 2 cores; hashing and the SQLite lookup release it), at most BUILD_AHEAD beyond the
# requests in flight
BUILD_THREADS = 2
BUILD_AHEAD = 8

# a 400 that names what the judge server refused (vLLM's and SGLang's OpenAI-compatible errors): the doc's
# own failure, counted under a cause that names the server setting to change
OVER_CONTEXT = "HTTP 400: over the judge's context length (the server's --max-model-len)"
TOO_MANY_IMAGES = "HTTP 400: more images than the judge accepts (the server's --limit-mm-per-prompt)"
NO_SUCH_MODEL = "HTTP 404: the server has no such model (EARTHSCI_JUDGE_MODEL)"
_REFUSALS = ((re.compile(r"maximum context length|context length|input_tokens|too long", re.I), OVER_CONTEXT),
             (re.compile(r"image\(s\) may be provided|at most \d+ image|param\W+image|exceeds? the (?:mm|multimodal) limit", re.I), TOO_MANY_IMAGES))


def refusal_cause(status: int, raw: bytes) -> str:
    """The cause of a 4xx reply: ``HTTP <status>``, or for a 400 that says why (the prompt over the server's
    context length, more images than it accepts) and a 404 that names the model, a cause that says so."""
    text = raw[:2000].decode("utf-8", "replace")
    if status == 400:
        for pattern, cause in _REFUSALS:
            if pattern.search(text):
                return cause
    if status == 404 and re.search(r"model\W.*does not exist|param\W+model", text, re.I):
        return NO_SUCH_MODEL
    return f"HTTP {status}"


# replies that no retry and no other doc can fix: the endpoint, model or key is wrong
_FATAL_STATUS = (401, 403, 404)
_FATAL_CAUSES = frozenset({f"HTTP {c}" for c in _FATAL_STATUS} | {"TLS certificate not trusted", NO_SUCH_MODEL})
# a doc that ran out of retries on these says nothing about the endpoint being dead (rate limiting; a
# reply without content): such docs neither count towards the breaker nor reset it
_NEUTRAL_CAUSES = ("HTTP 429",)


class _Breaker:
    """Stops one pass when the endpoint is unusable (see the module docstring)."""

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.cause: str | None = None
        self.error: str | None = None
        self._consecutive = 0
        self._counted = 0  # docs that counted towards the breaker or reset it
        self.last: tuple[str, str] | None = None  # (cause, error) of the last doc that failed after all its retries
        self._lock = threading.Lock()

    def dead(self) -> bool:
        """Whether the endpoint is unusable beyond this pass: the breaker tripped, or every doc that got
        to the endpoint failed after all its retries."""
        with self._lock:
            return self.cause is not None or (self._counted > 0 and self._consecutive == self._counted)

    @property
    def open(self) -> bool:
        return self.cause is not None

    def trip(self, cause: str, error: str) -> None:
        with self._lock:
            if self.cause is None:
                self.cause, self.error = cause, error

    def record(self, result: JudgeResult, transport_failure: bool) -> None:
        if result.cause in _FATAL_CAUSES:
            self.trip(result.cause, result.error or result.cause)
            return
        if result.cause in _NEUTRAL_CAUSES:
            return  # a live endpoint that is rate-limiting or answering oddly: neither dead nor healthy
        with self._lock:
            self._counted += 1
            self._consecutive = self._consecutive + 1 if transport_failure else 0
            if transport_failure:
                self.last = (result.cause or "transport failure", result.error or "")
            hit = self.threshold > 0 and self._consecutive >= self.threshold
        if hit:
            self.trip(result.cause or "transport failure", f"{self.threshold} consecutive docs failed after all retries; last: {result.error}")

    def skipped(self) -> JudgeResult:
        return JudgeResult(None, error=f"not sent: the judge pass was stopped ({self.error})", cause=self.cause)


@dataclass
class JudgeStats:
    requests: int = 0  # HTTP requests sent (retries included)
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class JudgeClient:
    def __init__(self, config: JudgeConfig):
        if not config.configured:
            raise ValueError("judge is not configured (base URL and model are required)")
        self.config = config
        self.cache: VerdictCache | None = None
        if config.cache_dir:
            try:
                self.cache = VerdictCache(config.cache_dir, config.cache_journal)
                self.cache.on_error = lambda exc, path=self.cache.path: self._cache_failed("written", path, exc)
            except Exception as exc:  # judging goes on uncached: a cache must never cost a pass
                self._cache_failed("opened", os.path.join(config.cache_dir, "verdicts.sqlite3"), exc)
        self.stats = JudgeStats()
        self._stats_lock = threading.Lock()
        self._transport = Transport(config.timeout, config.ca_bundle)
        self._url, self._headers = self._endpoint()
        self._builder: ThreadPoolExecutor | None = None
        # (cause, error) once the endpoint was found unusable: no request is sent to it again
        self._dead: tuple[str, str] | None = None

    def _cache_failed(self, what: str, path: str, exc: BaseException) -> None:
        """One warning for the client's life; the cache is dropped and judging goes on uncached."""
        self.cache = None
        logger.warning(
            "lmms_eval_earthsci: the judge verdict cache %s could not be %s (%s: %s); judging goes on without "
            "a cache (verdicts are not kept for a rerun). Set EARTHSCI_JUDGE_CACHE to a writable local directory, or off.",
            path, what, type(exc).__name__, exc,
        )

    def close(self) -> None:
        """Close the cache and the HTTP session (also run at interpreter exit)."""
        cache, self.cache = self.cache, None
        if cache is not None:
            cache.close()
        builder, self._builder = self._builder, None
        if builder is not None:
            builder.shutdown(wait=False, cancel_futures=True)
        self._transport.close()

    # -- plumbing
    def _endpoint(self) -> tuple[str, dict]:
        """The URL and headers of every request (the client's settings do not change after it is made)."""
        cfg = self.config
        assert cfg.base_url is not None  # only called from __init__, after its `configured` check
        base = cfg.base_url.rstrip("/")
        if cfg.api_type == "azure":
            url = f"{base}/openai/deployments/{cfg.model}/chat/completions?api-version={cfg.api_version}"
            headers = {"api-key": cfg.api_key or ""}
        else:
            if cfg.api == "pooling":  # vLLM serves /pooling beside /v1, not under it
                url = f"{base[: -len('/v1')] if base.endswith('/v1') else base}/pooling"
            else:
                url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
            headers = {"Authorization": f"Bearer {cfg.api_key or 'EMPTY'}"}
        return url, {**headers, "Content-Type": "application/json"}

    def _breaker(self, threshold: int) -> _Breaker:
        """A breaker for one pass (or one per-doc request), tripped from the start when an earlier one found
        the endpoint unusable."""
        breaker = _Breaker(threshold)
        dead = self._dead
        if dead is not None:
            breaker.trip(dead[0], f"{self._url} failed earlier in this run ({dead[1]}); not asked again")
        return breaker

    def _remember(self, breaker: _Breaker) -> None:
        """Keep what a finished breaker found: an unusable endpoint is not asked again."""
        if self._dead is None and self.config.breaker > 0 and breaker.dead():  # EARTHSCI_JUDGE_BREAKER=0: every doc is tried
            if breaker.cause is not None:
                self._dead = (breaker.cause, breaker.error or breaker.cause)
            else:
                cause, error = breaker.last or ("transport failure", "")
                self._dead = (cause, f"every doc of a pass failed after all its retries; last: {error or cause}")

    def _count(self, **inc: int) -> None:
        with self._stats_lock:
            for k, v in inc.items():
                setattr(self.stats, k, getattr(self.stats, k) + v)

    async def _apost_once(self, body: bytes) -> JudgeResult:
        self._count(requests=1)
        try:
            reply = await self._transport.apost(self._url, body, self._headers)
        except TransportError as exc:
            return self._no_reply(exc)
        return self._reply(*reply)

    @staticmethod
    def _no_reply(exc: TransportError) -> JudgeResult:
        """Timeouts, refused or dropped connections, truncated bodies: retried (raises Retryable); an
        untrusted certificate: a failed result, since no retry and no other doc can fix it."""
        if not exc.retryable:
            return JudgeResult(None, error=str(exc), cause=exc.cause)
        raise Retryable(str(exc), cause=exc.cause) from exc

    def _reply(self, status: int, resp_headers: Mapping[str, str], raw: bytes) -> JudgeResult:
        """The result of one HTTP reply; raises :class:`Retryable` for what a retry may fix."""
        if status == 429 or status >= 500:
            ra = resp_headers.get("retry-after")
            try:  # honoured, but never negative and never longer than the backoff cap
                retry_after = min(max(0.0, float(ra)), self.config.backoff_max) if ra is not None else None
            except ValueError:
                retry_after = None
            raise Retryable(f"HTTP {status}", retry_after)
        if status >= 400:
            # 4xx other than 429: the request itself is wrong; retrying cannot help
            return JudgeResult(None, error=f"HTTP {status}: {raw[:300].decode('utf-8', 'replace')}", cause=refusal_cause(status, raw))
        if self.config.api == "pooling":
            return self._pooled(raw)
        try:
            reply = json.loads(raw)
            message = reply["choices"][0]["message"]
            content = message["content"]
            if not isinstance(content, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise Retryable(f"malformed reply: {exc}", cause="malformed reply") from exc
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        return JudgeResult(content, usage=_usage(reply.get("usage")), reasoning=reasoning if isinstance(reasoning, str) else None)

    @staticmethod
    def _pooled(raw: bytes) -> JudgeResult:
        """A /pooling reply: a reward model's score at the last token (vLLM gives one per token for a
        token-level reward model, ``[[s0], [s1], ...]``; one per sequence for a pooled one), as text."""
        try:
            reply = json.loads(raw)
            value: Any = reply["data"][0]["data"]
            while isinstance(value, list):
                value = value[-1]
            score = float(value)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise Retryable(f"malformed reply: {exc}", cause="malformed reply") from exc
        return JudgeResult(repr(score), usage=_usage(reply.get("usage")))

    def _payload(self, messages: Sequence[Mapping[str, Any]], **settings: Any) -> dict:
        if self.config.api == "pooling":  # the chat rendered by the server's template, no generation prompt
            return {"model": self.config.model, "messages": to_openai_messages(messages), **settings}
        payload = {"model": self.config.model, "messages": to_openai_messages(messages), "temperature": self.config.temperature}
        if self.config.max_tokens:
            payload["max_tokens"] = self.config.max_tokens
        if self.config.reasoning_effort:
            payload["reasoning_effort"] = self.config.reasoning_effort
        payload.update(settings)
        return payload

    # -- public
    def complete(self, messages: Sequence[Mapping[str, Any]] | Callable[[], Sequence[Mapping[str, Any]]], **settings: Any) -> JudgeResult:
        """One judged request, from any thread but the transport's loop (a per-doc fallback; a pass
        uses :meth:`complete_many`). ``messages`` may be a callable that builds them. Never raises:
        anything unexpected comes back as a failed :class:`JudgeResult`."""
        breaker = self._breaker(0)
        try:
            result = asyncio.run_coroutine_threadsafe(self._acomplete(messages, breaker, settings), self._transport.loop()).result()
            self._remember(breaker)
            return result
        except Exception as exc:  # the loop itself failed (interpreter shutting down)
            self._count(failures=1)
            return JudgeResult(None, error=f"judge client error: {type(exc).__name__}: {exc}", cause=f"client error {type(exc).__name__}")

    def _prepare(self, messages: Sequence[Mapping[str, Any]] | Callable[[], Sequence[Mapping[str, Any]]], settings: Mapping[str, Any]) -> tuple[bytes, str] | JudgeResult:
        """(body, cache key) of a request, or its result when it could not be built or is cached.
        No early exit on an open breaker: a verdict already in the cache is still served."""
        try:
            msgs = messages() if callable(messages) else messages
            payload = self._payload(msgs, **settings)
        except Exception as exc:  # building the request failed (e.g. undecodable image)
            self._count(failures=1)
            return JudgeResult(None, error=f"request could not be built: {exc!r}", cause="request not built")
        body = encode_payload(payload)
        key = request_key(self.config, body)
        cache = self.cache
        if cache is not None:
            try:
                hit = cache.get(key)
            except sqlite3.Error as exc:
                self._cache_failed("read", cache.path, exc)
                hit = None
            if hit is not None:
                self._count(cache_hits=1)
                return hit
        return body, key

    def _delay(self, exc: Retryable, attempt: int) -> float:
        if exc.retry_after is not None:
            return exc.retry_after
        return min(self.config.backoff_max, self.config.backoff_base * 2**attempt) * random.uniform(0.5, 1.0)

    def _finish(self, result: JudgeResult, key: str, attempt: int, breaker: _Breaker) -> JudgeResult:
        result.attempts = attempt + 1
        if result.ok:
            self._count(prompt_tokens=result.usage.get("prompt_tokens", 0), completion_tokens=result.usage.get("completion_tokens", 0))
            cache = self.cache
            if cache is not None:
                try:
                    cache.put(key, result)
                except sqlite3.Error as exc:
                    self._cache_failed("written", cache.path, exc)
        else:
            self._count(failures=1)
        breaker.record(result, transport_failure=False)
        return result

    def _exhausted(self, last: Retryable, breaker: _Breaker) -> JudgeResult:
        self._count(failures=1)
        result = JudgeResult(None, error=str(last), attempts=self.config.max_retries + 1, cause=last.cause)
        breaker.record(result, transport_failure=True)
        return result

    def _build_pool(self) -> ThreadPoolExecutor:
        """The threads that build request bodies (messages, images, encoding, the key, the cache lookup),
        so that the event loop only sends and receives; made on first use."""
        with self._stats_lock:
            if self._builder is None:
                self._builder = ThreadPoolExecutor(max_workers=BUILD_THREADS, thread_name_prefix="earthsci-judge-build")
            return self._builder

    async def _acomplete(
        self, messages: Sequence[Mapping[str, Any]] | Callable[[], Sequence[Mapping[str, Any]]], breaker: _Breaker, settings: Mapping[str, Any],
        send_slots: asyncio.Semaphore | None = None, turn: tuple | None = None,
    ) -> JudgeResult:
        """One request: built and looked up in the cache by a builder thread (off the event loop), then
        sent and retried with backoff on the loop, holding one of ``send_slots`` (the requests in flight)
        while it is sent (a tripped ``breaker`` ends its waits and skips what is left). ``turn``: (the
        previous request's event, this one's): requests take their slots in input order, as they did
        when they were built on the loop, whichever builder thread finishes first. Never raises."""
        previous, mine = turn or (None, None)
        try:
            prepared = await asyncio.get_running_loop().run_in_executor(self._build_pool(), self._prepare, messages, settings)
            if isinstance(prepared, JudgeResult):
                return prepared
            if previous is not None:
                await previous.wait()
            if send_slots is None:
                return await self._send(*prepared, breaker)
            async with send_slots:
                if mine is not None:
                    mine.set()
                return await self._send(*prepared, breaker)
        except Exception as exc:  # as complete(): never raises
            self._count(failures=1)
            return JudgeResult(None, error=f"judge client error: {type(exc).__name__}: {exc}", cause=f"client error {type(exc).__name__}")
        finally:
            if mine is not None:
                mine.set()  # a cached, unbuildable or finished request lets the next one take its turn

    async def _send(self, body: bytes, key: str, breaker: _Breaker) -> JudgeResult:
        last = Retryable("no attempt made")
        for attempt in range(self.config.max_retries + 1):
            if breaker.open:
                self._count(failures=1)
                return breaker.skipped()
            try:
                result = await self._apost_once(body)
            except Retryable as exc:
                last = exc
                if attempt == self.config.max_retries:
                    break
                end = time.monotonic() + self._delay(exc, attempt)
                while not breaker.open and time.monotonic() < end:  # a tripped breaker ends the wait
                    await asyncio.sleep(min(0.05, max(0.0, end - time.monotonic())))
                continue
            return self._finish(result, key, attempt, breaker)
        return self._exhausted(last, breaker)

    def complete_many(self, requests: Sequence[Any], progress: bool = False, desc: str = "judging", concurrency: int | None = None, **settings: Any) -> list[JudgeResult]:
        """Judge many requests with ``concurrency`` (default ``config.concurrency``) in flight; results
        in input order. Each request may be a callable building its messages: it is called in a builder
        thread, at most ``width + BUILD_AHEAD`` requests ahead of their replies."""
        if not requests:
            return []
        bar = None
        if progress:
            try:
                from tqdm import tqdm  # noqa: PLC0415 - tqdm (~30 ms), optional: only for a progress bar

                bar = tqdm(total=len(requests), desc=desc)
            except ImportError:
                bar = None

        width = max(1, min(concurrency or self.config.concurrency, self.config.concurrency))
        breaker = self._breaker(self.config.breaker)

        async def run_all() -> list[JudgeResult]:
            sending = asyncio.Semaphore(width)  # at most `width` requests of this call in flight
            # bodies built ahead of a free slot, no further: a body lives from its build to its reply,
            # so memory holds `width + BUILD_AHEAD` bodies however many docs the pass has
            built = asyncio.Semaphore(width + BUILD_AHEAD)
            turns = [asyncio.Event() for _ in requests]

            async def one(i: int, req: Any) -> JudgeResult:
                async with built:
                    try:
                        return await self._acomplete(req, breaker, settings, sending, (turns[i - 1] if i else None, turns[i]))
                    finally:
                        if bar is not None:
                            bar.update(1)

            return await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))

        # the pass's requests are sent and received on the transport's event loop; their bodies are
        # built by the builder threads (_build_pool), never on the loop
        results = list(asyncio.run_coroutine_threadsafe(run_all(), self._transport.loop()).result())
        self._remember(breaker)
        if bar is not None:
            bar.close()
        if breaker.open:
            logger.warning(
                "lmms_eval_earthsci: %s stopped after %s (%s); %d of %d requests were not sent",
                desc, breaker.cause, breaker.error, sum(1 for r in results if r.error and r.error.startswith("not sent")), len(results),
            )
        return results


def get_judge(overrides: Mapping[str, Any] | None = None, purpose: str = "judge metrics", prefix: str = JUDGE_ENV, endpoint_fallback: bool = True) -> JudgeClient | None:
    """The process-wide judge for the current settings (``<prefix>_*`` variables, see
    :meth:`JudgeConfig.from_env`), or None (with one warning) if none is configured. Thread-safe; builds
    no client until first called."""
    cfg = JudgeConfig.from_env(overrides, prefix=prefix, endpoint_fallback=endpoint_fallback)
    if not cfg.configured:
        if current().first_time(f"no judge: {purpose}"):
            names = cfg.missing(prefix) + ("" if prefix == JUDGE_ENV or not endpoint_fallback else f" (or {JUDGE_ENV}_*)")
            logger.warning(
                "lmms_eval_earthsci: no LLM judge configured (set %s); %s are reported as unavailable, rule-based metrics are unaffected",
                names,
                purpose,
            )
        return None
    ident = json.dumps({**cfg.public(), "cache_dir": cfg.cache_dir, "timeout": cfg.timeout, "retries": cfg.max_retries, "max_tokens": cfg.max_tokens, "reasoning_effort": cfg.reasoning_effort}, sort_keys=True)
    rt = current()
    with rt.lock:
        clients = rt.resource("judge clients", dict)  # the process's clients, by configuration
        client = clients.get(ident)
        if client is None or client.config.api_key != cfg.api_key:
            client = clients[ident] = JudgeClient(cfg)
            # nothing of ours left running at exit; registered with the first client, once per process
            rt.resource(("at exit", "judge clients"), lambda: atexit.register(close_all))
        return client


def close_all() -> None:
    """Leave nothing of ours running at interpreter exit (builder threads, HTTP sessions, SQLite handles)."""
    rt = current()
    with rt.lock:
        held = rt.resource("judge clients", dict)
        clients = list(held.values())
        held.clear()
    for c in clients:
        try:
            c.close()
        except Exception:
            pass
