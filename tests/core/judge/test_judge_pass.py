"""The judge pass (core.judge.task_pass) against the loopback server: concurrency, faults, parse failures,
deduplication, undecoded images, the fallback path and the failure metric."""

import base64
import io

import pytest
from PIL import Image

from lmms_eval_earthsci.core import judge as core_judge
from lmms_eval_earthsci.core.adapter import judge_hook
from lmms_eval_earthsci.core.adapter.inventory import ENTRIES
from lmms_eval_earthsci.core.judge import client as judge_client
from lmms_eval_earthsci.core.judge import task_pass as core_judge_pass
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream.patching import wrap_method
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, Fault, image_urls, text_of

SPEC = core_judge_pass.JudgeSpec(
    name="t_spec",
    build=lambda doc, response, images: [{"role": "user", "content": f"doc {doc['id']}\nResponse: {response}"}],
    parse=lambda reply: {"yes": True, "no": False}[reply.strip().lower()],
)


@pytest.fixture(autouse=True)
def _clean():
    core_judge_pass.forget()
    yield
    core_judge_pass.forget()


def client(srv, tmp_path, **kw):
    cfg = dict(base_url=srv.base_url, model="judge-m", cache_dir=str(tmp_path / "cache"), backoff_base=0.01, backoff_max=0.05, timeout=1.0, max_retries=2)
    cfg.update(kw)
    return core_judge.JudgeClient(core_judge.JudgeConfig(**cfg))


def test_applying_a_tasks_filters_drops_the_earlier_tasks_outcomes_before_its_pass():
    """The hook's wrapper on a class of our own (lmms-eval's ConfigurableTask in a run): an earlier task's
    outcome and pass error are gone when the next task's pass starts, and the pass runs."""
    core_judge_pass._store(SPEC, "doc-of-task-1", "yes", core_judge_pass.Outcome(core_judge_pass.JUDGED, verdict=True))
    current().judge.errors["other_spec"] = "ConnectionError: boom"
    seen = []

    def process_results(doc, results):
        return {}

    process_results.batch_prepare = lambda pairs: seen.append((len(current().judge.outcomes), dict(current().judge.errors), pairs))

    class Task:
        config = type("Config", (), {"process_results": process_results, "reasoning_tags": None})()
        instances: list = []
        eval_docs_no_media: list = []
        filtered = False

        def apply_filters(self):
            self.filtered = True
            return "filtered"

    assert wrap_method(Task, "apply_filters", judge_hook.after_filters, entry=ENTRIES["judge pass"])
    task = Task()
    assert task.apply_filters() == "filtered" and task.filtered
    assert seen == [(0, {}, [])]  # forgotten first, then the pass ran on this task's (no) docs
    assert not current().judge.outcomes


def test_pass_runs_concurrently_and_in_order(tmp_path):
    with FakeOpenAIServer(responder=lambda b: "yes" if "Response: good" in text_of(b) else "no", latency=0.05) as srv:
        items = [core_judge_pass.PassItem({"id": i}, "good" if i % 3 else "bad") for i in range(40)]
        outs = core_judge_pass.run_pass(SPEC, items, client(srv, tmp_path, concurrency=16))
        assert [o.verdict for o in outs] == [bool(i % 3) for i in range(40)]
        assert srv.count == 40 and 8 < srv.max_in_flight <= 16
        # process_results then finds each outcome without a request
        assert core_judge_pass.outcome_for(SPEC, {"id": 4}, "good").verdict is True
        assert srv.count == 40


def test_duplicates_are_judged_once(tmp_path):
    with FakeOpenAIServer(responder=lambda b: "yes") as srv:
        items = [core_judge_pass.PassItem({"id": 1}, "same"), core_judge_pass.PassItem({"id": 1}, "same"), core_judge_pass.PassItem({"id": 2}, "same")]
        outs = core_judge_pass.run_pass(SPEC, items, client(srv, tmp_path))
        assert [o.ok for o in outs] == [True, True, True] and srv.count == 2


def test_every_fault_ends_judged_or_counted(tmp_path):
    seen = {}

    def responder(body):
        doc = text_of(body).split("\n")[0]
        n = seen[doc] = seen.get(doc, 0) + 1
        plan = {
            "doc 0": [Fault("status", status=500)],
            "doc 1": [Fault("status", status=429, retry_after=0.05)],
            "doc 2": [Fault("malformed")],
            "doc 3": [Fault("truncated")],
            "doc 4": [Fault("drop")],
            "doc 5": [Fault("sleep", seconds=1.5, text="yes")],  # client timeout (1 s)
            "doc 6": [Fault("status", status=503)] * 10,  # never recovers
            "doc 7": [Fault("status", status=400)],  # not retried
            "doc 8": ["maybe"],  # unparseable verdict
        }.get(doc, [])
        return plan[n - 1] if n <= len(plan) else "yes"

    with FakeOpenAIServer(responder=responder) as srv:
        items = [core_judge_pass.PassItem({"id": i}, "r") for i in range(10)]
        outs = core_judge_pass.run_pass(SPEC, items, client(srv, tmp_path, concurrency=4))
    status = [o.status for o in outs]
    assert status == ["judged"] * 6 + ["request_failed", "request_failed", "parse_failed", "judged"]
    assert all(o.verdict is True for o in outs if o.ok)
    assert "HTTP 503" in outs[6].error and "HTTP 400" in outs[7].error and "unparseable" in outs[8].error
    assert outs[8].reply == "maybe"  # the raw reply is kept for the sample
    assert seen["doc 6"] == 3 and seen["doc 7"] == 1  # bounded retries; 4xx not retried
    assert core_judge_pass.summarize(outs)["failed"] == 3
    items = [o.failed_item() for o in outs]
    assert core_judge_pass.judge_failed(items) == 3 and [i["score"] for i in items] == [0] * 6 + [1, 1, 1, 0]


def test_failures_are_not_cached_and_are_retried_next_run(tmp_path):
    state = {"down": True}
    with FakeOpenAIServer(responder=lambda b: Fault("status", status=500) if state["down"] else "yes") as srv:
        c = client(srv, tmp_path, max_retries=0)
        assert core_judge_pass.run_pass(SPEC, [core_judge_pass.PassItem({"id": 1}, "r")], c)[0].status == "request_failed"
        state["down"] = False
        core_judge_pass.forget()
        out = core_judge_pass.run_pass(SPEC, [core_judge_pass.PassItem({"id": 1}, "r")], client(srv, tmp_path, max_retries=0))[0]
        assert out.ok and not out.cached


def test_outcome_for_fallback_and_unavailable(tmp_path, monkeypatch):
    for k in ("EARTHSCI_JUDGE_BASE_URL", "EARTHSCI_JUDGE_MODEL", "OPENAI_API_URL", "MODEL_VERSION", "DEPLOYMENT_NAME", "API_TYPE"):
        monkeypatch.delenv(k, raising=False)
    out = core_judge_pass.outcome_for(SPEC, {"id": 1}, "r")
    assert out.status == "unavailable" and out.failed_item() is None
    assert core_judge_pass.judge_failed([None, None]) is None
    with FakeOpenAIServer(responder=lambda b: "no") as srv:
        monkeypatch.setenv("EARTHSCI_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("EARTHSCI_JUDGE_MODEL", "judge-m")
        monkeypatch.setenv("EARTHSCI_JUDGE_CACHE", str(tmp_path / "c"))
        # no pass ran for this doc (hook missing): a text-only spec is judged on the spot
        out = core_judge_pass.outcome_for(SPEC, {"id": 2, "image": {"bytes": b"\x89PNG", "path": None}}, "r")
        assert out.ok and out.verdict is False and srv.count == 1
        # a spec that needs images cannot be judged from process_results: a counted failure
        img_spec = core_judge_pass.JudgeSpec(name="t_img", build=SPEC.build, parse=SPEC.parse, uses_images=True)
        out = core_judge_pass.outcome_for(img_spec, {"id": 3}, "r")
        assert out.status == "request_failed" and "did not run" in out.error and srv.count == 1


def test_doc_key_ignores_media_columns():
    plain = {"id": 7, "q": "x"}
    assert core_judge_pass.doc_key(plain) == core_judge_pass.doc_key({**plain, "image_1": Image.new("RGB", (2, 2)), "image_2": {"bytes": b"..", "path": None}})
    assert core_judge_pass.doc_key(plain) != core_judge_pass.doc_key({"id": 8, "q": "x"})


def test_images_are_sent_as_stored_bytes(tmp_path):
    import datasets

    jpeg = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(jpeg, format="JPEG")
    png = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 200, 10)).save(png, format="PNG")
    feats = datasets.Features({"id": datasets.Value("int32"), "image": datasets.Image()})
    ds = datasets.Dataset.from_dict({"id": [0, 1], "image": [{"bytes": jpeg.getvalue(), "path": None}, {"bytes": png.getvalue(), "path": None}]}, features=feats)
    raw = judge_hook.undecoded(ds)
    spec = core_judge_pass.JudgeSpec(
        name="t_images",
        build=lambda doc, response, images: [{"role": "user", "content": [{"type": "text", "text": "judge"}, {"type": "image", "url": images()["image"]}]}],
        parse=lambda r: r,
        uses_images=True,
    )
    with FakeOpenAIServer(responder=lambda b: "ok") as srv:
        items = [core_judge_pass.PassItem({"id": i}, "r", lambda i=i: {"image": raw[i]["image"]}) for i in range(2)]
        assert all(o.ok for o in core_judge_pass.run_pass(spec, items, client(srv, tmp_path)))
        urls = sorted((image_urls(b)[0] for b in srv.requests), key=lambda u: u.startswith("data:image/png"))
    assert urls[0] == "data:image/jpeg;base64," + base64.b64encode(jpeg.getvalue()).decode()
    assert urls[1] == "data:image/png;base64," + base64.b64encode(png.getvalue()).decode()


def test_token_counts_of_instances_and_their_sum():
    """The judged response's own token counts (lmms-eval >= 0.7 ``Instance.token_counts``, TokenCounts
    objects or dicts, None for unreported) are summed per instance and over docs; none reported = None."""
    from types import SimpleNamespace

    from lmms_eval.api.instance import TokenCounts

    inst = SimpleNamespace(token_counts=[TokenCounts(input_tokens=10, output_tokens=4), None, {"input_tokens": 1, "output_tokens": 2, "reasoning_tokens": 3}])
    assert judge_hook.token_counts_of(inst) == {"input_tokens": 11, "output_tokens": 6, "reasoning_tokens": 3}
    assert judge_hook.token_counts_of(SimpleNamespace(token_counts=[None, TokenCounts()])) is None
    assert judge_hook.token_counts_of(SimpleNamespace()) is None
    counts = [{"input_tokens": 11, "output_tokens": 6, "reasoning_tokens": 3}, None, {"input_tokens": 1, "output_tokens": 1}]
    assert core_judge_pass.model_tokens(counts) == {"docs": 2, "input_tokens": 12, "output_tokens": 7, "reasoning_tokens": 3}
    assert core_judge_pass.model_tokens([None, None]) is None


def test_reasoning_tokens_are_read_from_completion_details():
    assert judge_client._usage({"prompt_tokens": 5, "completion_tokens": 9, "completion_tokens_details": {"reasoning_tokens": 7}}) == {"prompt_tokens": 5, "completion_tokens": 9, "reasoning_tokens": 7}
    assert judge_client._usage({"prompt_tokens": 5, "completion_tokens": 9, "completion_tokens_details": None}) == {"prompt_tokens": 5, "completion_tokens": 9}
    assert judge_client._usage({"completion_tokens_details": {"reasoning_tokens": "x"}}) == {"prompt_tokens": 0, "completion_tokens": 0}


def test_spec_defaults_apply_where_no_variable_sets_them(monkeypatch):
    from lmms_eval_earthsci.core.judge.task_pass import JudgeSpec

    spec = JudgeSpec(name="rm", build=lambda d, r, i: [], parse=str, env_prefix="EARTHSCI_RM", defaults={"max_tokens": 2048})
    for k in ("EARTHSCI_RM_MAX_TOKENS", "EARTHSCI_JUDGE_MAX_TOKENS"):
        monkeypatch.delenv(k, raising=False)
    assert spec.overrides(None) == {"max_tokens": 2048}
    assert spec.overrides({"concurrency": 4}) == {"max_tokens": 2048, "concurrency": 4}
    monkeypatch.setenv("EARTHSCI_JUDGE_MAX_TOKENS", "512")  # the RM falls back to the judge's setting: it wins over the default
    assert spec.overrides(None) == {}
    monkeypatch.setenv("EARTHSCI_RM_MAX_TOKENS", "4096")
    assert spec.overrides({"max_tokens": 100}) == {"max_tokens": 100}  # a task's own override wins over everything
    assert JudgeSpec(name="j", build=lambda d, r, i: [], parse=str).overrides(None) is None


def test_the_pass_reads_a_non_string_response_as_process_results_does():
    """A backend's None response is "" in the pass, as process_results' as_text reads it (a reward model's
    prompt built from "None" would never be looked up)."""
    from lmms_eval_earthsci.core.adapter import judge_hook

    class Inst:
        doc_id, metadata, token_counts = 0, {}, []
        filtered_resps = {"none": ["an answer", None, 3]}

    class Task:
        eval_docs_no_media = [{"pid": "x"}]
        instances = [Inst()]

    items = judge_hook._rank_items(Task(), media=False, tags=None)
    assert [it.response for it in items] == ["an answer", "", "3"]
    seen = []
    judge_hook._rank_items(Task(), media=False, tags=None, per_question=lambda doc, texts: seen.append(texts) or texts[:1])
    assert seen == [["an answer", "", "3"]]
