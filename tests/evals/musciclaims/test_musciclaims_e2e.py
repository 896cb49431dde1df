"""MuSciClaims through the real lmms-eval CLI: chat and simple backends (request layout, image pixels and
order, exact prompts), the corpus metrics on fixture docs worked out by hand, two real ranks equal to
one (flip rate included), the Hub route (figures fetched once) equal to the mirror route, and the
missing-figure error."""

import base64
import io
import os
import shutil

import forkserver
import pytest
from conftest import cli_env, openai_args, read_outputs, run_cli, two_ranks
from PIL import Image

from lmms_eval_earthsci.evals.musciclaims import tasks as musciclaims_tasks
from lmms_eval_earthsci.evals.musciclaims.benchmark import DATASET as MUSCICLAIMS_REPO
from lmms_eval_earthsci.evals.musciclaims.fixtures import musciclaims_rows
from lmms_eval_earthsci.testing.hub_server import FakeHubServer
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, image_urls, text_of

pytestmark = pytest.mark.e2e

ROWS = musciclaims_rows()[0]
FIGURES = musciclaims_rows()[1]


def responder(body):
    """A model that is right except on the chemistry contra claim (says SUPPORT) and the second
    biology neutral row (no decision)."""
    text = text_of(body)
    claim = text.split("CLAIM: ", 1)[1].split("\n", 1)[0] if "CLAIM: " in text else ""
    if "unrelated experiment" in text:
        return "I cannot tell from this image." if "lived longer" in claim else '{"reasoning": "Another figure.", "decision": "NEUTRAL"}'
    if "falls" in claim:
        return '```json\n{"reasoning": "It does not contradict.", "decision": "SUPPORT"}\n```'
    if "raises" in claim or "shorter" in claim:
        return 'REASONING: the figure does not support this.\nDECISION: CONTRADICT' if "DECISION:" in text else '{"decision": "CONTRADICT"}'
    return '{"figure_panels": ["Panel A", "Panel B"], "reasoning": "As claimed.", "decision": "SUPPORT"}' if "figure_panels" in text else '{"decision": "SUPPORT"}'


# golds S,C,N per base claim; preds b1 S,C,N / b2 S,C,INVALID / b3 (chemistry) S,S,N
HAND = {
    "musciclaims_precision_support,none": 75.0, "musciclaims_recall_support,none": 100.0, "musciclaims_f1_support,none": 600 / 7,
    "musciclaims_precision_neutral,none": 100.0, "musciclaims_recall_neutral,none": 200 / 3, "musciclaims_f1_neutral,none": 80.0,
    "musciclaims_precision_contradict,none": 100.0, "musciclaims_recall_contradict,none": 200 / 3, "musciclaims_f1_contradict,none": 80.0,
    "musciclaims_macro_f1,none": (600 / 7 + 80 + 80) / 3,
    "musciclaims_invalid_rate,none": 100 / 9,
    "musciclaims_flip_rate,none": 200 / 3, "musciclaims_correct_flip_rate,none": 200 / 3,
    "musciclaims_macro_f1_biology,none": (100 + 100 + 200 / 3) / 3, "musciclaims_macro_f1_chemistry,none": (200 / 3 + 0 + 100) / 3,
    "musciclaims_macro_f1_physics,none": None,
    # Table 1 on the biology slice (b1, b2: golds S,C,N x2, preds S,C,N,S,C,INVALID); physics has no docs
    **{f"musciclaims_{m}_{c}_biology,none": 100.0 for m in ("precision", "recall", "f1") for c in ("support", "contradict")},
    "musciclaims_precision_neutral_biology,none": 100.0, "musciclaims_recall_neutral_biology,none": 50.0, "musciclaims_f1_neutral_biology,none": 200 / 3,
    "musciclaims_macro_precision_biology,none": 100.0, "musciclaims_macro_recall_biology,none": 250 / 3,
    "musciclaims_recall_contradict_chemistry,none": 0.0, "musciclaims_macro_precision_physics,none": None, "musciclaims_f1_support_physics,none": None,
    # Table 7: b2 ("Full Figure") is single-panel, b1 ("Panel A", "Panel C") and b3 ("(b)", "(c)") multi-panel,
    # each claim's NEUTRAL row with it. Single: preds S,C,INVALID (N: 0). Multi: golds S,C,N x2, preds
    # S,C,N,S,S,N (S: P 2/3 R 1; C: P 1 R 1/2; N: 1)
    "musciclaims_macro_precision_single_panel,none": 200 / 3, "musciclaims_macro_recall_single_panel,none": 200 / 3, "musciclaims_macro_f1_single_panel,none": 200 / 3,
    "musciclaims_macro_precision_multi_panel,none": 800 / 9, "musciclaims_macro_recall_multi_panel,none": 250 / 3, "musciclaims_macro_f1_multi_panel,none": (80 + 200 / 3 + 100) / 3,
    "musciclaims_macro_f1_single_panel_biology,none": 200 / 3, "musciclaims_macro_f1_multi_panel_biology,none": 100.0,
}


def _pixels(img):
    return list(img.convert("RGB").getdata())


def _decode(url):
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def _figure_for(row):
    rel = row["associated_figure_filepath"].replace("jacs_data_10.1021_", "chem_10.1021_")
    return Image.open(io.BytesIO(_jpeg(FIGURES[rel])))


def _jpeg(img):
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _row_of(text):
    hits = [
        r
        for r in ROWS
        if musciclaims_tasks.prompt_text(r, musciclaims_tasks._task_kwargs({})) == text
        or musciclaims_tasks.prompt_text(r, musciclaims_tasks._task_kwargs({"prompt": "ird"})) == text
        or musciclaims_tasks.prompt_text(r, musciclaims_tasks._task_kwargs({"prompt": "d", "inputs": "caption"})) == text
        or musciclaims_tasks.prompt_text(r, musciclaims_tasks._task_kwargs({"prompt": "rd", "family": "kv"})) == text
    ]
    assert len(hits) == 1, text[:300]
    return hits[0]


def _run_openai(mirror, hf_home, tmp_path, name, tasks, extra=(), launcher=None, env_extra=None, env=None):
    with FakeOpenAIServer(responder=responder) as srv:
        out = tmp_path / name
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url, num_concurrent=2), "--tasks", tasks, "--output_path", str(out), "--log_samples", *extra]
        proc = run_cli(args, env or cli_env(mirror, hf_home, OMP_NUM_THREADS="1", **(env_extra or {})), str(tmp_path), launcher=launcher)
        bodies = list(srv.requests)
    res, samples = read_outputs(str(out))
    return proc.stdout + proc.stderr, res, samples, bodies


BACKEND_TASKS = "musciclaims_d,musciclaims_ird,musciclaims_caption_only_d,musciclaims_rd_kv"


@pytest.fixture(scope="module")
def chat_run(mirror, hf_home, tmp_path_factory):
    """One chat-backend run, shared by the tests that assert on it."""
    return _run_openai(mirror, hf_home, tmp_path_factory.mktemp("musciclaims_chat"), "chat", BACKEND_TASKS)


@pytest.mark.parametrize("route", ["chat", "simple"])
def test_backends_send_the_figure_then_the_exact_prompt_and_score_by_hand(route, mirror, hf_home, tmp_path, request):
    if route == "chat":
        log, res, samples, bodies = request.getfixturevalue("chat_run")
    else:
        log, res, samples, bodies = _run_openai(mirror, hf_home, tmp_path, route, BACKEND_TASKS, extra=["--force_simple"])
    r = res["results"]
    for task in ("musciclaims_d", "musciclaims_ird", "musciclaims_rd_kv"):
        for key, want in HAND.items():
            assert r[task][key] == (pytest.approx(want) if want is not None else None), (task, key)
        assert len(samples[task]) == 9
        assert {s["musciclaims_macro_f1"]["route"] for s in samples[task]} == {route}
    # caption only: the same answers (the responder reads the text)
    assert r["musciclaims_caption_only_d"]["musciclaims_macro_f1,none"] == pytest.approx(HAND["musciclaims_macro_f1,none"])
    # IRD panels: gold A,C for b1's support/contra, (b),(c) for b3's; the support answers name A,B (P = R
    # = 1/2), the contra answers no panel (0); b2's "Full Figure" and the NEUTRAL rows are excluded
    assert r["musciclaims_ird"]["musciclaims_panel_precision,none"] == pytest.approx(100 * (0.5 + 0 + 0.5 + 0) / 4)
    assert r["musciclaims_ird"]["musciclaims_panel_recall,none"] == pytest.approx(100 * (0.5 + 0 + 0.5 + 0) / 4)
    ird = {s["musciclaims_macro_f1"]["claim_id"]: s["musciclaims_macro_f1"] for s in samples["musciclaims_ird"]}
    assert ird["PIIS0092867400000001_2_support"]["panel_scored"] is False and ird["PIIS0092867400000001_1_neutral"]["panel_scored"] is False
    assert [ird[f"PIIS0092867400000001_{n}_{v}"]["panel_class"] for n in (1, 2) for v in ("support", "neutral")] == ["multi", "multi", "single", "single"]
    stages = {s["musciclaims_macro_f1"]["claim_id"]: s["musciclaims_macro_f1"]["stage"] for s in samples["musciclaims_rd_kv"]}
    assert stages["PIIS0092867400000001_1_contra"] == "kv" and stages["PIIS0092867400000001_2_neutral"] == "none"

    # every request: one user turn, no system prompt; the figure (pixels of the file the row names,
    # after the jacs->chem fix; NEUTRAL rows show the paper's other figure), then the exact prompt
    assert len(bodies) == 4 * 9
    seen_caption_only = 0
    for body in bodies:
        msgs = body["messages"]
        assert [m["role"] for m in msgs] == ["user"]
        text = text_of(body)
        row = _row_of(text)
        urls = image_urls(body)
        if "a given caption(s) to decide" in text:
            seen_caption_only += 1
            assert urls == []
            continue
        assert len(urls) == 1 and _pixels(_decode(urls[0])) == _pixels(_figure_for(row))
        if route == "chat":
            assert [p["type"] for p in msgs[0]["content"]] == ["image_url", "text"]
    assert seen_caption_only == 9


TWO_RANKS_PORT = "29546"  # one port per module: modules run side by side on the two workers


def test_two_real_ranks_equal_one_flip_rate_included(chat_run, mirror, hf_home, tmp_path):
    """Two ranks against the one-rank chat run (same backend, responder and settings)."""

    launcher = two_ranks(TWO_RANKS_PORT)
    tasks = "musciclaims_d,musciclaims_ird"
    log1, r1, s1, _ = chat_run
    assert "world_size2" not in log1
    log2, r2, s2, _ = _run_openai(mirror, hf_home, tmp_path, "two", tasks, launcher=launcher)
    assert "Running on rank 1 (local rank 1)" in log2 and "world_size2" in log2, "the launcher started one process"
    for task in tasks.split(","):
        m1 = {k: v for k, v in r1["results"][task].items() if "stderr" not in k}
        m2 = {k: v for k, v in r2["results"][task].items() if "stderr" not in k}
        assert m1 == m2, task
        assert {s["doc_id"]: s["musciclaims_macro_f1"] for s in s1[task]} == {s["doc_id"]: s["musciclaims_macro_f1"] for s in s2[task]}
    # the pairs of a base claim were split over the ranks (doc i -> rank i % 2), yet the flip rate is exact
    assert r2["results"]["musciclaims_d"]["musciclaims_flip_rate,none"] == pytest.approx(200 / 3)


def _copy_repo(mirror, dst):
    src = os.path.join(mirror, *MUSCICLAIMS_REPO.split("/"))
    out = os.path.join(dst, *MUSCICLAIMS_REPO.split("/"))
    shutil.copytree(src, out)
    return out


def test_missing_figure_names_claims_paths_and_root(mirror, hf_home, tmp_path):
    own = str(tmp_path / "mirror")
    repo = _copy_repo(mirror, own)
    os.remove(os.path.join(repo, "paper_figures", "chem_10.1021_jacs.0c00001_figure_1.jpg"))

    from conftest import VENV_BIN

    args = [os.path.join(VENV_BIN, "lmms-eval"), "--model", "dummy", "--model_args", 'response={"decision": "SUPPORT"}', "--tasks", "musciclaims_d", "--output_path", str(tmp_path / "o"), "--verbosity", "DEBUG"]
    proc = forkserver.subprocess_run(args, env=cli_env(own, hf_home), cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    for claim in ("10.1021_jacs.0c00001_1_support", "10.1021_jacs.0c00001_1_contra"):
        assert (
            f"record '{claim}', field 'associated_figure_filepath': figure not found: "
            "tried 'paper_figures/jacs_data_10.1021_jacs.0c00001_figure_1.jpg', 'paper_figures/chem_10.1021_jacs.0c00001_figure_1.jpg', "
            f"'*/jacs_data_10.1021_jacs.0c00001_figure_1.jpg', '*/chem_10.1021_jacs.0c00001_figure_1.jpg' in {repo}"
        ) in out, out[-3000:]
    assert "nothing was sent to the model" in out
    # skip mode: the two rows are left out and counted; the other seven are scored
    run_cli(args[1:-2] + ["--log_samples"], cli_env(own, hf_home, EARTHSCI_BAD_RECORDS="skip"), str(tmp_path))
    res, samples = read_outputs(str(tmp_path / "o"))
    assert len(samples["musciclaims_d"]) == 7
    assert res["configs"]["musciclaims_d"]["metadata"]["earthsci_data"]["bad_records"]["count"] == 2


def test_hub_route_fetches_each_figure_once_and_matches_the_mirror(chat_run, mirror, hf_home, tmp_path):
    """Two of the module's chat-run tasks made again over the Hub (same backend, responder and settings, no
    mirror): their mirror side is the shared chat run."""
    repo = os.path.join(mirror, *MUSCICLAIMS_REPO.split("/"))
    with FakeHubServer({MUSCICLAIMS_REPO: repo}) as hub:
        base = cli_env(mirror, hf_home, OMP_NUM_THREADS="1")
        base.pop("EARTHSCI_DATA_MIRROR")
        env = hub.client_env(hf_home=str(tmp_path / "hf_hub"), base=base)
        _, res_h, s_h, _ = _run_openai(mirror, hf_home, tmp_path, "hub", "musciclaims_d,musciclaims_ird", env=env)
        figures = sorted(f for _, _, f in hub.downloaded_files() if f.startswith("paper_figures/"))
    _, res_m, s_m, _ = chat_run
    # two tasks, one machine: each of the four figures transferred once
    assert figures == sorted(FIGURES)
    for task in ("musciclaims_d", "musciclaims_ird"):
        assert res_h["results"][task] == res_m["results"][task]
        assert [s["musciclaims_macro_f1"] for s in s_h[task]] == [s["musciclaims_macro_f1"] for s in s_m[task]]
        files_h = res_h["configs"][task]["metadata"]["earthsci_data"]["repo_files"]
        files_m = res_m["configs"][task]["metadata"]["earthsci_data"]["repo_files"]
        assert files_h["source"] == "hub" and files_h["revision"] == hub.sha(MUSCICLAIMS_REPO) and files_h["fallbacks"] == {"rewritten": 1}
        assert files_m["source"] == "mirror" and files_m["root"] == repo and files_m["fallbacks"] == {"rewritten": 1}
