import json
import threading

import pytest
from PIL import Image

from lmms_eval_earthsci.core import judge as J
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, Fault, image_urls, text_of


def make_client(server, tmp_path, **kw):
    cfg = J.JudgeConfig(base_url=server.base_url, model="judge-m", api_key="sk-secret", cache_dir=str(tmp_path / "cache"), backoff_base=0.01, backoff_max=0.05, timeout=2.0, **kw)
    return J.JudgeClient(cfg)


def test_not_configured_returns_none(monkeypatch):
    for k in ("EARTHSCI_JUDGE_BASE_URL", "EARTHSCI_JUDGE_MODEL", "OPENAI_API_URL", "MODEL_VERSION", "DEPLOYMENT_NAME", "API_TYPE"):
        monkeypatch.delenv(k, raising=False)
    assert J.get_judge() is None


def test_env_config_and_key_never_shown(monkeypatch):
    monkeypatch.setenv("EARTHSCI_JUDGE_BASE_URL", "http://h:8000/v1")
    monkeypatch.setenv("EARTHSCI_JUDGE_MODEL", "Qwen/Qwen2.5-VL-72B-Instruct")
    monkeypatch.setenv("EARTHSCI_JUDGE_API_KEY", "sk-supersecret")
    monkeypatch.setenv("EARTHSCI_JUDGE_CONCURRENCY", "48")
    cfg = J.JudgeConfig.from_env({"max_tokens": 16})
    assert (cfg.base_url, cfg.model, cfg.concurrency, cfg.max_tokens) == ("http://h:8000/v1", "Qwen/Qwen2.5-VL-72B-Instruct", 48, 16)
    assert "sk-supersecret" not in repr(cfg) and "sk-supersecret" not in json.dumps(cfg.public())
    with pytest.raises(ValueError, match="unknown judge setting"):
        J.JudgeConfig.from_env({"nope": 1})


def test_lmms_eval_openai_conventions(monkeypatch):
    for k in ("EARTHSCI_JUDGE_BASE_URL", "EARTHSCI_JUDGE_MODEL", "EARTHSCI_JUDGE_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("API_TYPE", "openai")
    monkeypatch.setenv("OPENAI_API_URL", "http://x/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("MODEL_VERSION", "gpt-4o")
    cfg = J.JudgeConfig.from_env()
    assert (cfg.base_url, cfg.model, cfg.api_key) == ("http://x/v1", "gpt-4o", "k")


def test_complete_sends_images_and_caches(tmp_path):
    with FakeOpenAIServer(responder=lambda body: "Correct") as srv:
        client = make_client(srv, tmp_path)
        msgs = [{"role": "user", "content": [{"type": "text", "text": "Is it right?"}, {"type": "image", "url": Image.new("RGB", (2, 2))}]}]
        r1 = client.complete(msgs)
        r2 = client.complete(msgs)
        assert r1.ok and r1.content == "Correct" and not r1.cached
        assert r2.cached and r2.content == "Correct"
        assert srv.count == 1
        body = srv.requests[0]
        assert body["model"] == "judge-m" and body["temperature"] == 0.0
        assert text_of(body) == "Is it right?"
        assert image_urls(body)[0].startswith("data:image/png;base64,")
        assert client.stats.cache_hits == 1 and client.stats.requests == 1


@pytest.mark.parametrize(
    "fault",
    [
        Fault("status", status=500),
        Fault("status", status=503),
        Fault("status", status=429, retry_after=0.05),
        Fault("malformed"),
        Fault("truncated"),
        Fault("drop"),
        Fault("sleep", seconds=3.0, text="late"),
    ],
    ids=["500", "503", "429", "malformed", "truncated", "drop", "timeout"],
)
def test_transient_faults_are_retried(tmp_path, fault):
    seen = {}
    lock = threading.Lock()

    def responder(body):
        key = text_of(body)
        with lock:
            seen[key] = seen.get(key, 0) + 1
            first = seen[key] == 1
        return fault if first else "Correct"

    with FakeOpenAIServer(responder=responder) as srv:
        client = make_client(srv, tmp_path, max_retries=3)
        reqs = [[{"role": "user", "content": f"doc {i}"}] for i in range(8)]
        results = client.complete_many(reqs)
    assert [r.content for r in results] == ["Correct"] * 8
    assert all(r.attempts == 2 for r in results)


def test_persistent_failure_is_recorded_not_raised(tmp_path):
    with FakeOpenAIServer(responder=lambda body: Fault("status", status=500)) as srv:
        client = make_client(srv, tmp_path, max_retries=2)
        results = client.complete_many([[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]])
    assert all(not r.ok and r.error == "HTTP 500" and r.attempts == 3 for r in results)
    assert client.stats.failures == 2 and srv.count == 6


def test_client_error_is_not_retried_and_bad_request_builder(tmp_path):
    with FakeOpenAIServer(responder=lambda body: Fault("status", status=400)) as srv:
        client = make_client(srv, tmp_path)
        r = client.complete([{"role": "user", "content": "a"}])
        assert not r.ok and r.error.startswith("HTTP 400") and srv.count == 1

        def broken():
            raise ValueError("image 3 unreadable")

        r = client.complete(broken)
        assert not r.ok and "image 3 unreadable" in r.error
