"""A loopback HTTP proxy for tests, speaking both forms a client uses: ``CONNECT host:port`` (a tunnel,
what ``HTTPS_PROXY`` gives an ``https://`` endpoint) and absolute-form requests (``POST http://host/path``,
what ``HTTP_PROXY`` gives an ``http://`` endpoint). Every request is logged as ``(method, target)``.

    with ProxyServer() as proxy:
        os.environ["HTTPS_PROXY"] = proxy.url
        ...
        assert proxy.requests == [("CONNECT", "127.0.0.1:8443")]
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import urllib.parse

from lmms_eval_earthsci.testing.loopback import LoopbackServer, QuietHandler


class ProxyServer(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _log(self, method: str, target: str) -> None:
        with self._lock:
            self.requests.append((method, target))

    def handler_class(self):
        proxy = self

        class Handler(QuietHandler):
            def do_CONNECT(self):
                proxy._log("CONNECT", self.path)
                host, _, port = self.path.rpartition(":")
                try:
                    upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
                except OSError:
                    self.send_error(502)
                    return
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                self.close_connection = True
                conns = [self.connection, upstream]
                try:
                    while True:
                        ready, _, _ = select.select(conns, [], [], 30)
                        if not ready:
                            break
                        for s in ready:
                            data = s.recv(65536)
                            if not data:
                                return
                            (upstream if s is self.connection else self.connection).sendall(data)
                except OSError:
                    return
                finally:
                    upstream.close()

            def _forward(self):
                proxy._log(self.command, self.path)
                u = urllib.parse.urlsplit(self.path)
                if u.scheme != "http" or not u.hostname:
                    self.send_error(400, "absolute-form http:// request expected")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection", "keep-alive", "proxy-authorization")}
                conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=30)
                try:
                    conn.request(self.command, (u.path or "/") + (f"?{u.query}" if u.query else ""), body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _forward

        return Handler
