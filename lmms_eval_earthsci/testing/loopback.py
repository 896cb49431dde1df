"""The lifecycle shared by our loopback test servers (OpenAI-compatible, Hugging Face Hub): a threading
HTTP server on 127.0.0.1, a free port, started and stopped as a context manager."""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_COUNT_LOCK = threading.Lock()


class LoopbackServer:
    """Subclasses implement :meth:`handler_class` (a ``BaseHTTPRequestHandler`` subclass)."""

    request_queue_size = 128

    def __init__(self, tls=None) -> None:
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.tls = tls  # an ssl.SSLContext (server side): the server speaks HTTPS
        self.connections = 0  # connections accepted

    def handler_class(self) -> type[BaseHTTPRequestHandler]:  # pragma: no cover - abstract
        raise NotImplementedError

    def start(self):
        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = self.request_queue_size

        owner = self

        class Counted(self.handler_class()):
            def setup(self):
                with _COUNT_LOCK:
                    owner.connections += 1
                super().setup()

        self._httpd = Server(("127.0.0.1", 0), Counted)
        if self.tls is not None:
            self._httpd.socket = self.tls.wrap_socket(self._httpd.socket, server_side=True)
        # a short poll interval: stop() returns within 50 ms instead of up to 0.5 s
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]


class QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without TCP_NODELAY, Nagle + the client's delayed ACK
    # add ~40 ms to every reply
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        pass

    def handle(self):
        # a client that gave up (its timeout, a slow-reply fault, a TLS handshake it refused) is not an
        # error of the server
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True


def drop_connection(handler: BaseHTTPRequestHandler) -> None:
    """Fault injection: close the connection without a reply."""
    handler.close_connection = True
    try:
        handler.connection.shutdown(2)
    except OSError:
        pass
