import json
import os
import subprocess
import sys
import threading

import pytest
from PIL import Image

from lmms_eval_earthsci.core import judge as core_judge
from lmms_eval_earthsci.core.judge import cache as cache_module
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, Fault, image_urls, text_of


def make_client(server, tmp_path, **kw):
    settings = dict(base_url=server.base_url, model="judge-m", api_key="sk-secret", cache_dir=str(tmp_path / "cache"), backoff_base=0.01, backoff_max=0.05, timeout=2.0)
    settings.update(kw)
    return core_judge.JudgeClient(core_judge.JudgeConfig(**settings))


def test_not_configured_returns_none(monkeypatch):
    for k in ("EARTHSCI_JUDGE_BASE_URL", "EARTHSCI_JUDGE_MODEL", "OPENAI_API_URL", "MODEL_VERSION", "DEPLOYMENT_NAME", "API_TYPE"):
        monkeypatch.delenv(k, raising=False)
    assert core_judge.get_judge() is None


def test_a_half_configured_judge_names_the_setting_missing(monkeypatch, caplog):
    import logging


    for k in ("EARTHSCI_JUDGE_BASE_URL", "EARTHSCI_JUDGE_MODEL", "OPENAI_API_URL", "MODEL_VERSION", "DEPLOYMENT_NAME", "API_TYPE"):
        monkeypatch.delenv(k, raising=False)
    assert core_judge.JudgeConfig.from_env().missing() == "EARTHSCI_JUDGE_BASE_URL and EARTHSCI_JUDGE_MODEL"
    monkeypatch.setenv("EARTHSCI_JUDGE_BASE_URL", "http://h:8000/v1")
    with caplog.at_level(logging.WARNING, logger="lmms_eval_earthsci"):
        assert core_judge.get_judge(purpose="msearth_oe metrics") is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "no LLM judge configured (set EARTHSCI_JUDGE_MODEL (EARTHSCI_JUDGE_BASE_URL is set" in said[0], said
    monkeypatch.delenv("EARTHSCI_JUDGE_BASE_URL")
    monkeypatch.setenv("EARTHSCI_JUDGE_MODEL", "judge")
    assert core_judge.JudgeConfig.from_env().missing().startswith("EARTHSCI_JUDGE_BASE_URL (EARTHSCI_JUDGE_MODEL is set")


def test_env_config_and_key_never_shown(monkeypatch):
    monkeypatch.setenv("EARTHSCI_JUDGE_BASE_URL", "http://h:8000/v1")
    monkeypatch.setenv("EARTHSCI_JUDGE_MODEL", "Qwen/Qwen2.5-VL-72B-Instruct")
    monkeypatch.setenv("EARTHSCI_JUDGE_API_KEY", "sk-supersecret")
    monkeypatch.setenv("EARTHSCI_JUDGE_CONCURRENCY", "48")
    cfg = core_judge.JudgeConfig.from_env({"max_tokens": 16})
    assert (cfg.base_url, cfg.model, cfg.concurrency, cfg.max_tokens) == ("http://h:8000/v1", "Qwen/Qwen2.5-VL-72B-Instruct", 48, 16)
    assert "sk-supersecret" not in repr(cfg) and "sk-supersecret" not in json.dumps(cfg.public())
    with pytest.raises(ValueError, match="unknown judge setting"):
        core_judge.JudgeConfig.from_env({"nope": 1})


def test_lmms_eval_openai_conventions(monkeypatch):
    for k in ("EARTHSCI_JUDGE_BASE_URL", "EARTHSCI_JUDGE_MODEL", "EARTHSCI_JUDGE_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("API_TYPE", "openai")
    monkeypatch.setenv("OPENAI_API_URL", "http://x/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("MODEL_VERSION", "gpt-4o")
    cfg = core_judge.JudgeConfig.from_env()
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


# --------------------------------------------------------------------------- cache opened by many processes


_STRESS = r"""
import multiprocessing, os, sqlite3, sys
from lmms_eval_earthsci.core import judge as core_judge


def open_and_write(directory, i, barrier, errors):
    try:
        barrier.wait(timeout=30)
        cache = core_judge.VerdictCache(directory)
        cache.put(f"k{i}", core_judge.JudgeResult(f"v{i}"))
        assert cache.get(f"k{i}").content == f"v{i}"
        cache.close()
    except BaseException as exc:  # reported to the parent, which fails the test
        errors.put(f"{type(exc).__name__}: {exc}")
        raise SystemExit(1)


ctx = multiprocessing.get_context("fork")
errors = ctx.Queue()
for trial in range(50):
    directory = os.path.join(sys.argv[1], f"trial{trial}", "not-yet")  # does not exist: every process creates it
    barrier = ctx.Barrier(8)
    procs = [ctx.Process(target=open_and_write, args=(directory, i, barrier, errors)) for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    codes = [p.exitcode for p in procs]
    found = []
    while not errors.empty():
        found.append(errors.get())
    con = sqlite3.connect(os.path.join(directory, "verdicts.sqlite3"))
    rows = con.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    con.close()
    if codes != [0] * 8 or found or rows != 8:
        print(f"FAILED trial {trial}: exit codes {codes}, errors {found}, rows {rows}")
        sys.exit(1)
print("ok 50 trials")
"""


@pytest.mark.slow
def test_eight_processes_open_one_new_cache_fifty_times(tmp_path):
    # run from a fresh interpreter: forking this test process (hundreds of threads by this point of a
    # full run, some holding locks) can deadlock the children
    proc = subprocess.run([sys.executable, "-c", _STRESS, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "ok 50 trials" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_journal_mode_local_and_network_filesystems(tmp_path, monkeypatch):
    assert core_judge.VerdictCache(str(tmp_path / "c")).journal == "wal"
    monkeypatch.setattr(cache_module, "filesystem_type", lambda path: "nfs4")
    assert core_judge.journal_mode_for(str(tmp_path)) == "delete"
    assert core_judge.VerdictCache(str(tmp_path / "n")).journal == "delete"
    assert core_judge.journal_mode_for(str(tmp_path), "WAL") == "wal"  # an explicit choice wins
    with pytest.raises(ValueError, match="EARTHSCI_JUDGE_CACHE_JOURNAL"):
        core_judge.journal_mode_for(str(tmp_path), "memory")


@pytest.mark.parametrize("broken", ["not_a_directory", "db_is_a_directory"])
def test_unusable_cache_judges_uncached_with_one_warning(tmp_path, caplog, broken):
    if broken == "not_a_directory":
        (tmp_path / "file").write_text("x")
        cache_dir = tmp_path / "file" / "cache"
    else:
        cache_dir = tmp_path / "cache"
        (cache_dir / "verdicts.sqlite3").mkdir(parents=True)
    with FakeOpenAIServer(responder=lambda body: "Correct") as srv:
        cfg = core_judge.JudgeConfig(base_url=srv.base_url, model="judge-m", cache_dir=str(cache_dir), timeout=2.0)
        with caplog.at_level("WARNING", logger="lmms_eval_earthsci"):
            client = core_judge.JudgeClient(cfg)
            results = client.complete_many([[{"role": "user", "content": f"d{i}"}] for i in range(5)])
    assert [r.content for r in results] == ["Correct"] * 5 and client.cache is None
    warnings = [r.getMessage() for r in caplog.records if "verdict cache" in r.getMessage()]
    assert len(warnings) == 1 and str(cache_dir) in warnings[0] and "Error" in warnings[0]


# --------------------------------------------------------------------------- circuit breaker


@pytest.mark.parametrize("status", [401, 403, 404])
def test_auth_and_not_found_stop_the_pass_at_once(tmp_path, status):
    with FakeOpenAIServer(responder=lambda body: Fault("status", status=status)) as srv:
        client = make_client(srv, tmp_path, concurrency=1)
        results = client.complete_many([[{"role": "user", "content": f"d{i}"}] for i in range(40)])
        assert srv.count == 1  # one request, not one per doc
    assert all(not r.ok and r.cause == f"HTTP {status}" for r in results)
    assert sum(r.error.startswith("not sent") for r in results) == 39


def test_dead_endpoint_stops_after_consecutive_failures(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    cfg = core_judge.JudgeConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", cache_dir=None, backoff_base=0.01, backoff_max=0.02, timeout=1.0, max_retries=2, concurrency=4, breaker=3)
    client = core_judge.JudgeClient(cfg)
    results = client.complete_many([[{"role": "user", "content": f"d{i}"}] for i in range(200)])
    assert all(not r.ok and r.cause == "ConnectionRefusedError" for r in results)
    sent = [r for r in results if not r.error.startswith("not sent")]
    assert len(sent) <= 3 + 4  # the breaker's threshold plus what was in flight
    assert client.stats.requests <= (3 + 4) * 3


def test_breaker_resets_on_success_and_can_be_disabled(tmp_path):
    # every other doc's request fails for good: never K consecutive, so nothing is skipped
    with FakeOpenAIServer(responder=lambda body: Fault("status", status=500) if int(text_of(body)[1:]) % 2 else "ok") as srv:
        client = make_client(srv, tmp_path, concurrency=1, max_retries=0, breaker=2)
        results = client.complete_many([[{"role": "user", "content": f"d{i}"}] for i in range(10)])
    assert [r.ok for r in results] == [True, False] * 5
    with FakeOpenAIServer(responder=lambda body: Fault("status", status=500)) as srv:
        client = make_client(srv, tmp_path, concurrency=1, max_retries=0, breaker=0, cache_dir=None)
        results = client.complete_many([[{"role": "user", "content": f"d{i}"}] for i in range(6)])
        assert srv.count == 6 and all(r.cause == "HTTP 500" for r in results)


def _docs(prefix, n):
    return [[{"role": "user", "content": f"{prefix}{i}"}] for i in range(n)]


def _closed_port_url():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    return f"http://127.0.0.1:{port}/v1"


def test_a_dead_endpoint_is_asked_once_per_run_not_once_per_task(tmp_path):
    """Three judged tasks' passes, then a per-doc request, through one client (as get_judge gives every task
    of a run) against a loopback endpoint that drops every connection: the first pass spends its retry
    chain (every doc fails, fewer docs than the breaker's threshold); the endpoint is then known dead, and
    the later passes and the per-doc request send nothing and fail at once with the same cause."""
    import time

    with FakeOpenAIServer(responder=lambda body: Fault("drop")) as srv:
        client = make_client(srv, tmp_path, concurrency=1, max_retries=1, breaker=5)
        first = client.complete_many(_docs("a", 3))
        reached = srv.count
        t0 = time.monotonic()
        later = client.complete_many(_docs("b", 4)) + client.complete_many(_docs("c", 2)) + [client.complete(_docs("d", 1)[0])]
        took = time.monotonic() - t0
        assert reached == 3 * 2 and srv.count == reached  # one retry chain per doc of the first pass, nothing after
    cause = first[0].cause
    assert cause and all(not r.ok and r.cause == cause for r in first + later)
    assert all(r.error.startswith("not sent") and "failed earlier in this run" in r.error for r in later)
    assert took < 1.0 and client.stats.requests == 6


def test_a_closed_port_is_tried_once_per_run(tmp_path):
    """The same against a closed port, counting the client's connection attempts: the breaker trips in the
    first pass (more docs than its threshold), and a second pass makes no attempt."""
    cfg = core_judge.JudgeConfig(base_url=_closed_port_url(), model="m", cache_dir=None, backoff_base=0.01, backoff_max=0.02, timeout=1.0, max_retries=2, concurrency=1, breaker=3)
    client = core_judge.JudgeClient(cfg)
    first = client.complete_many(_docs("a", 20))
    attempts = client.stats.requests
    second = client.complete_many(_docs("b", 20))
    assert attempts == 3 * 3 and client.stats.requests == attempts  # the threshold's docs, each its retry chain; then none
    assert all(r.cause == "ConnectionRefusedError" for r in first + second) and all(r.error.startswith("not sent") for r in second)


def test_an_endpoint_that_answered_or_a_disabled_breaker_is_asked_again(tmp_path):
    """Only an endpoint on which every doc failed is remembered: a pass where one doc got through leaves the
    next pass asking; with EARTHSCI_JUDGE_BREAKER=0 every pass asks (every doc is tried)."""
    flaky = FakeOpenAIServer(responder=lambda body: "Correct" if text_of(body) == "a0" else Fault("drop"))
    with flaky as srv:
        client = make_client(srv, tmp_path, concurrency=1, max_retries=0, breaker=5, cache_dir=None)
        assert [r.ok for r in client.complete_many(_docs("a", 3))] == [True, False, False]
        before = srv.count
        client.complete_many(_docs("b", 2))
        assert srv.count == before + 2
    with FakeOpenAIServer(responder=lambda body: Fault("drop")) as srv:
        client = make_client(srv, tmp_path, concurrency=1, max_retries=0, breaker=0, cache_dir=None)
        client.complete_many(_docs("a", 2))
        client.complete_many(_docs("b", 2))
        assert srv.count == 4


def test_stacked_mounts(monkeypatch):
    import io

    mounts = "systemd-1 /mnt/x autofs rw 0 0\nsrv:/x /mnt/x nfs4 rw 0 0\n"
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: io.StringIO(mounts) if path == "/proc/mounts" else real_open(path, *a, **k))
    assert core_judge.filesystem_type("/mnt/x/cache") == "nfs4"  # the last mount on a point is the one in effect


def test_open_breaker_still_serves_cached_verdicts(tmp_path):
    with FakeOpenAIServer(responder=lambda body: "Correct") as srv:
        client = make_client(srv, tmp_path, concurrency=1)
        assert client.complete([{"role": "user", "content": "d0"}]).ok
    client.cache.flush()
    with FakeOpenAIServer(responder=lambda body: Fault("status", status=401)) as srv:
        client = make_client(srv, tmp_path, concurrency=1)  # same cache, now a wrong key
        results = client.complete_many([[{"role": "user", "content": f"d{i}"}] for i in (1, 0, 2)])
    assert [r.ok for r in results] == [False, True, False] and results[1].cached


def test_second_endpoint_prefix_falls_back_to_the_judge(monkeypatch):
    for k in list(os.environ):
        if k.startswith(("EARTHSCI_JUDGE", "EARTHSCI_DAD", "OPENAI_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("EARTHSCI_JUDGE_BASE_URL", "http://judge")
    monkeypatch.setenv("EARTHSCI_JUDGE_MODEL", "judge-m")
    monkeypatch.setenv("EARTHSCI_JUDGE_API_KEY", "k-judge")
    cfg = core_judge.JudgeConfig.from_env(prefix="EARTHSCI_DAD")
    assert (cfg.base_url, cfg.model, cfg.api_key, cfg.max_tokens, cfg.reasoning_effort) == ("http://judge", "judge-m", "k-judge", None, None)
    monkeypatch.setenv("EARTHSCI_DAD_BASE_URL", "http://reasoner")
    monkeypatch.setenv("EARTHSCI_DAD_MODEL", "qwq-32b")
    monkeypatch.setenv("EARTHSCI_DAD_MAX_TOKENS", "16384")
    monkeypatch.setenv("EARTHSCI_DAD_REASONING_EFFORT", "high")
    cfg = core_judge.JudgeConfig.from_env(prefix="EARTHSCI_DAD")
    assert (cfg.base_url, cfg.model, cfg.api_key, cfg.max_tokens, cfg.reasoning_effort) == ("http://reasoner", "qwq-32b", "k-judge", 16384, "high")
    judge = core_judge.JudgeConfig.from_env()
    assert (judge.base_url, judge.model, judge.reasoning_effort) == ("http://judge", "judge-m", None)  # untouched


def test_reasoning_content_is_kept_apart_cached_and_effort_sent(tmp_path):
    from lmms_eval_earthsci.testing.openai_server import Reasoned

    with FakeOpenAIServer(responder=lambda body: Reasoned('{"A": 0.9, "B": 0.1}', "Let me think: A looks right.")) as srv:
        cfg = core_judge.JudgeConfig(base_url=srv.base_url, model="qwq", cache_dir=str(tmp_path / "c"), reasoning_effort="high", max_tokens=8000)
        client = core_judge.JudgeClient(cfg)
        got = client.complete([{"role": "user", "content": "q"}])
        assert (got.content, got.reasoning, got.cached) == ('{"A": 0.9, "B": 0.1}', "Let me think: A looks right.", False)
        assert srv.requests[0]["reasoning_effort"] == "high" and srv.requests[0]["max_tokens"] == 8000
        client.close()
        again = core_judge.JudgeClient(cfg).complete([{"role": "user", "content": "q"}])
        assert (again.content, again.reasoning, again.cached) == (got.content, got.reasoning, True)
        assert len(srv.requests) == 1 and "_reasoning_content" not in again.usage
