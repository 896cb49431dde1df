"""The judge's HTTP exchange, on aiohttp: one event loop per process, in a daemon thread, with one
``ClientSession`` whose connection pool every judge request of the process shares.

The client (:mod:`.client`) builds each request's body off the loop, in its builder threads (messages,
images, encoding, the cache key and lookup), and runs each request's sending, retries and backoff as a
coroutine on the loop, which so only sends and receives; the loop carries the protocol work (HTTP/1.1
parsing, keep-alive, chunked and content-length bodies, TLS, proxies). Measured side by side:
``benchmarks/judge_throughput.py`` and the judge's README.

- **Timeouts** apply per socket operation (``sock_connect``, ``sock_read``), as before: a long answer
  that keeps streaming is not cut, a silent server is.
- **TLS**: the system's CA store (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` honoured), or the judge's own
  bundle (``EARTHSCI_JUDGE_CA_BUNDLE``) for a private judge CA without touching how anything else
  (the Hub) is reached. An untrusted certificate fails with a cause that says so, and is not retried.
- **Proxies**: ``HTTPS_PROXY`` (a CONNECT tunnel), ``HTTP_PROXY`` (absolute-form requests for
  ``http://`` endpoints), ``ALL_PROXY`` and ``NO_PROXY``, read from the environment once per endpoint.
- **Processes**: each process (a rank) makes its own loop on first use; a forked child makes a new one.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import threading
import urllib.parse
import urllib.request
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import aiohttp


class Retryable(Exception):
    def __init__(self, msg: str, retry_after: float | None = None, cause: str | None = None):
        super().__init__(msg)
        self.retry_after = retry_after
        self.cause = cause or msg


class TransportError(Exception):
    """A request that got no HTTP reply: ``cause`` names what happened (``ConnectionRefusedError``,
    ``TimeoutError``, ``ServerDisconnectedError``, ...); ``retryable`` is False for what no retry can fix
    (an untrusted certificate)."""

    def __init__(self, cause: str, msg: str, retryable: bool = True):
        super().__init__(msg)
        self.cause = cause
        self.retryable = retryable


# idle connections are closed before servers close them (vLLM: 5 s), so a request rarely meets one the
# server has just dropped
KEEPALIVE = 4.0


def ssl_context(ca_bundle: str | None = None) -> ssl.SSLContext:
    """The judge's TLS context: its own CA bundle when set, else the system's (``SSL_CERT_FILE``)."""
    return ssl.create_default_context(cafile=ca_bundle) if ca_bundle else ssl.create_default_context()


def _shutdown(loop: asyncio.AbstractEventLoop, session: Any, pid: int | None) -> None:
    """Close a transport's session and stop its loop (in the process that made them; idempotent)."""
    if pid != os.getpid() or loop.is_closed() or not loop.is_running():
        return
    try:
        if not session.closed:
            asyncio.run_coroutine_threadsafe(session.close(), loop).result(timeout=5)
    except Exception:
        pass
    loop.call_soon_threadsafe(loop.stop)


class Transport:
    """POST ``body`` to ``url`` on the process's loop (:meth:`apost`) and return ``(status, lower-cased
    headers, body)``; raises :class:`TransportError` when no reply came."""

    def __init__(self, timeout: float, ca_bundle: str | None = None):
        self.timeout = timeout
        self.ca_bundle = ca_bundle
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None
        self._pid: int | None = None
        self._urls: dict = {}  # url -> (its yarl.URL, its proxy or None), made once per endpoint

    # -- the loop
    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="earthsci-judge-http", daemon=True)
                thread.start()
                self._session = asyncio.run_coroutine_threadsafe(self._make_session(), loop).result()
                self._loop, self._pid = loop, os.getpid()
                # a client dropped without close() (or the interpreter exiting) still closes its session
                weakref.finalize(self, _shutdown, loop, self._session, self._pid)
            return self._loop

    async def _make_session(self) -> aiohttp.ClientSession:
        import aiohttp  # noqa: PLC0415 - heavy (aiohttp, ~100 ms), only when the judge is called

        # no connection limit of its own: a pass's width bounds the requests in flight
        connector = aiohttp.TCPConnector(limit=0, ssl=ssl_context(self.ca_bundle), keepalive_timeout=KEEPALIVE)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=self.timeout)
        # no Accept-Encoding: identity bodies (decompressing a verdict costs more than it saves on loopback)
        # proxies are read from the environment once per endpoint (_proxy), not by aiohttp per request
        # (trust_env re-reads the variables and ~/.netrc on every request: a tenth of the client's CPU)
        return aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False, cookie_jar=aiohttp.DummyCookieJar(), skip_auto_headers=("User-Agent",))

    @staticmethod
    def _proxy(url: str) -> str | None:
        """The proxy for ``url`` from ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY`` and ``NO_PROXY``
        (either case), as urllib reads them; None for a direct connection."""
        u = urllib.parse.urlsplit(url)
        proxies = urllib.request.getproxies_environment()
        proxy = proxies.get(u.scheme) or proxies.get("all")
        if not proxy or urllib.request.proxy_bypass_environment(u.hostname or "", proxies):  # type: ignore[attr-defined]  # in urllib.request since Python 3.2, missing from typeshed
            return None
        return proxy if "://" in proxy else f"http://{proxy}"

    def close(self) -> None:
        with self._lock:
            loop, session, self._loop, self._session = self._loop, self._session, None, None
        if loop is not None:
            _shutdown(loop, session, self._pid)

    # -- one request
    async def apost(self, url: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, dict, bytes]:
        """POST from a coroutine running on :meth:`loop` (the client runs every request there)."""
        import aiohttp  # noqa: PLC0415 - heavy (aiohttp, ~100 ms), only when the judge is called
        import yarl  # noqa: PLC0415 - aiohttp's URL type (~15 ms), loaded with aiohttp above

        try:
            target = self._urls.get(url)
            if target is None:  # parsed once per endpoint, not by aiohttp on every request
                target = self._urls[url] = (yarl.URL(url), self._proxy(url))
            async with cast(aiohttp.ClientSession, self._session).post(target[0], data=body, headers=headers, proxy=target[1]) as resp:
                data = await resp.read()
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, data
        except aiohttp.ClientConnectorCertificateError as exc:
            raise TransportError(
                "TLS certificate not trusted",
                f"the judge's TLS certificate is not trusted ({exc.certificate_error}); set EARTHSCI_JUDGE_CA_BUNDLE (or SSL_CERT_FILE) to the CA bundle that signed it",
                retryable=False,
            ) from exc
        except aiohttp.ClientConnectorError as exc:  # refused, unreachable, DNS: the OS error names it
            os_error = getattr(exc, "os_error", None)
            raise TransportError(type(os_error).__name__ if os_error is not None else type(exc).__name__, f"{type(exc).__name__}: {exc}") from exc
        except (asyncio.TimeoutError, TimeoutError) as exc:
            raise TransportError("TimeoutError", f"TimeoutError: no reply within {self.timeout:g} s") from exc
        except aiohttp.ClientError as exc:  # dropped, truncated, malformed at the protocol level
            raise TransportError(type(exc).__name__, f"{type(exc).__name__}: {exc}") from exc

    def loop(self) -> asyncio.AbstractEventLoop:
        """The process's event loop of this transport (started on first use)."""
        return self._ensure()
