"""What a dead or misconfigured judge endpoint costs a task, against the number of docs.

Each case runs one task's judge pass (``core.judge.task_pass.run_pass``, the code the lmms-eval hook runs)
with the DEFAULT client settings (32 in flight, 5 retries with 0.5 s doubling backoff, breaker 5) on
N docs, for N = 32 and N = 2,000, against

  - ``refused``: nothing listening on the port;
  - ``html200``: a server answering every request with an HTML page and status 200 (a proxy's login
    page, a wrong base URL): a malformed reply, retried;
  - ``401``: a wrong key (not retried; stops the pass at once).

Goal (issue 12): less than 30 s per task whatever the doc count; so the ratio time(2000) / time(32)
stays near 1 (without the breaker it grows with N / concurrency). Every doc must end failed, with the
cause recorded.

    .venv/bin/python benchmarks/dead_endpoint.py

The last line is machine-readable: ``RESULT worst_seconds=<s> worst_ratio_2000_vs_32=<r>``.
"""

import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lmms_eval_earthsci.core.judge import JudgeClient, JudgeConfig
from lmms_eval_earthsci.core.judge.task_pass import JudgeSpec, PassItem, forget, run_pass

SPEC = JudgeSpec(name="bench", build=lambda doc, response, images: [{"role": "user", "content": f"doc {doc['id']}: {response}"}], parse=lambda r: r)


class _Handler(BaseHTTPRequestHandler):
    status = 200
    body = b"<html><body>Please sign in</body></html>"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def serve(status):
    handler = type("H", (_Handler,), {"status": status})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/v1"


def closed_port_url():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


def one_pass(url, n):
    forget()
    client = JudgeClient(JudgeConfig(base_url=url, model="judge", cache_dir=tempfile.mkdtemp()))  # defaults otherwise
    items = [PassItem({"id": i}, f"response {i}") for i in range(n)]
    t = time.perf_counter()
    outs = run_pass(SPEC, items, client)
    took = time.perf_counter() - t
    assert all(o.failed and o.cause for o in outs), "every doc must end failed with its cause"
    sent = client.stats.requests
    client.close()
    return took, sent, outs[0].cause


def main():
    servers = {}
    cases = {"refused": closed_port_url()}
    for name, status in (("html200", 200), ("401", 401)):
        servers[name], cases[name] = serve(status)
    worst, worst_ratio = 0.0, 0.0
    for name, url in cases.items():
        small, s_sent, cause = one_pass(url, 32)
        large, l_sent, _ = one_pass(url, 2000)
        ratio = large / small if small > 0.05 else 1.0
        worst, worst_ratio = max(worst, small, large), max(worst_ratio, ratio)
        print(f"{name:8s} cause={cause!r:28s} 32 docs: {small:6.2f} s ({s_sent} requests)   2000 docs: {large:6.2f} s ({l_sent} requests)   ratio {ratio:.2f}")
    for srv in servers.values():
        srv.shutdown()
    print(f"RESULT worst_seconds={worst:.2f} worst_ratio_2000_vs_32={worst_ratio:.2f}")


if __name__ == "__main__":
    main()
