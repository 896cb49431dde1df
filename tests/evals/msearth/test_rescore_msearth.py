"""`lmms-eval-earthsci rescore --from msearth-release FILE`: the records MSEarth's `auto_evaluator` scores
(the dataset's records plus the model's `generated_answer` / `generated_caption`) judged through our
msearth tasks by the real lmms-eval CLI, against a loopback judge, matched by `question_id`.

On the fixture mirror (always) and on all 1,411 released open-ended records (../shared/reference/msearth,
skipped when absent; the mirror is written from the records' own dataset columns with drawn figures)."""

import glob
import gzip
import json
import os
import zlib

import pytest
from conftest import cli_env, read_outputs, run_rescore, shared_path

from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, prompt_field, text_of

pytestmark = pytest.mark.e2e

JUDGE = "judge-m"


def judge_reply(body):
    """OE: correct iff the generated answer is the standard one; captions: 5 when the caption starts
    with the reference's first word, else 2."""
    text = text_of(body)
    if "Generated Answer:" in text:
        std = prompt_field(text, "Standard Answer")
        gen = prompt_field(text, "Generated Answer")
        return '{"is_correct": %s}' % ("true" if std == gen else "false")
    ref = prompt_field(text, "Standard Caption")
    gen = prompt_field(text, "Generated Caption")
    return json.dumps({"score": 5 if gen.split()[0] == ref.split()[0] else 2})


def release_file(path, records):
    """The evaluator's input as the authors keep it: one JSON array."""
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def rescore(args, mirror, hf_home, srv, cwd, cache):
    env = cli_env(mirror, hf_home, EARTHSCI_JUDGE_BASE_URL=srv.base_url, EARTHSCI_JUDGE_MODEL=JUDGE, EARTHSCI_JUDGE_CACHE=str(cache))
    return run_rescore(["--from", "msearth-release", *args], env, str(cwd))


def as_record(row):
    """A dataset row as the evaluator's records have it (image decoded away, its file name kept)."""
    rec = {k: v for k, v in row.items() if k != "image"}
    rec["images"] = [f"{row['question_id']}.png"]
    return rec


def judge_texts(srv):
    return [text_of(b) for b in srv.requests if b.get("model") == JUDGE]


# --------------------------------------------------------------------------- the fixture mirror


def test_open_ended_and_caption_records_judged_as_released(mirror, hf_home, tmp_path):
    from lmms_eval_earthsci.evals.msearth.fixtures import msearth_rows
    from lmms_eval_earthsci.evals.msearth.tasks import CAPTION_JUDGE_PROMPT, OE_JUDGE_PROMPT

    oe = [as_record(r) for r in msearth_rows("open")]
    for i, r in enumerate(oe):
        r["generated_answer"] = r["response"] if i % 2 == 0 else "Not sure"  # right on even docs
    caps = [as_record(r) for r in msearth_rows("caption")]
    caps[0]["generated_caption"] = caps[0]["response"]  # judged 5
    caps[1]["generated_caption"] = "Unrelated words."  # judged 2
    caps[2]["generated_caption"] = ""  # empty: the official judge reads generated_answer instead
    caps[2]["generated_answer"] = caps[2]["response"]  # judged 5
    with FakeOpenAIServer(responder=lambda body: judge_reply(body) if body.get("model") == JUDGE else "no model here") as srv:
        p1 = rescore([release_file(tmp_path / "qwen_open.json", oe), "--out", tmp_path / "o1"], mirror, hf_home, srv, tmp_path, tmp_path / "cache")
        p2 = rescore([release_file(tmp_path / "qwen_caption.json", caps), "--out", tmp_path / "o2"], mirror, hf_home, srv, tmp_path, tmp_path / "cache")
        texts = judge_texts(srv)
        assert len(srv.requests) == len(texts) == len(oe) + len(caps)  # the judge only: no model
    for p in (p1, p2):
        assert p.returncode == 0, f"{p.stdout[-2000:]}\n{p.stderr[-8000:]}"

    res, samples = read_outputs(str(tmp_path / "o1"))
    want = 100 * sum(i % 2 == 0 for i in range(len(oe))) / len(oe)
    assert res["results"]["msearth_open"]["msearth_oe_acc,none"] == pytest.approx(want)
    assert res["model_name"] == "qwen_open" and res["rescore"]["source"]["kind"] == "msearth-release"
    verdicts = {s["msearth_oe_acc"]["id"]: s["msearth_oe_acc"]["judge"]["verdict"] for s in samples["msearth_open"]}
    assert verdicts == {r["question_id"]: i % 2 == 0 for i, r in enumerate(oe)}  # per doc, matched by question_id
    # the official judge prompt, filled from each record's own fields
    for r in oe:
        prompt = OE_JUDGE_PROMPT.replace("{query}", r["query"]).replace("{caption}", r["caption"]).replace("{response}", r["response"]).replace("{generated_answer}", r["generated_answer"])
        assert sum(prompt in t for t in texts) == 1, r["question_id"]

    res, samples = read_outputs(str(tmp_path / "o2"))
    assert res["results"]["msearth_caption"]["msearth_cap_score,none"] == pytest.approx(4.0)  # (5 + 2 + 5) / 3
    for r in caps:
        generated = r["generated_caption"] or r["generated_answer"]
        prompt = CAPTION_JUDGE_PROMPT.replace("{response}", r["response"]).replace("{generated_caption}", generated)
        assert sum(prompt in t for t in texts) == 1, r["question_id"]


def test_records_that_do_not_match_the_dataset_are_refused(mirror, hf_home, tmp_path):
    """Exit 2 before anything is judged: a question_id the dataset lacks, a record whose gold answer
    differs from the dataset's; and a file mixing tasks needs --tasks (nothing run)."""
    from lmms_eval_earthsci.evals.msearth.fixtures import msearth_rows

    oe = [dict(as_record(r), generated_answer="x") for r in msearth_rows("open")]
    oe[1]["response"] = "Something else"
    oe.append(dict(oe[0], question_id="ON999999"))
    with FakeOpenAIServer(responder=judge_reply) as srv:
        proc = rescore([release_file(tmp_path / "bad.json", oe), "--out", tmp_path / "o"], mirror, hf_home, srv, tmp_path, tmp_path / "cache")
        assert srv.requests == []
    assert proc.returncode == 2, proc.stderr[-5000:]
    message = proc.stderr[proc.stderr.rindex("lmms-eval-earthsci rescore:") :]
    assert "nothing scored" in message and "question_id ON999999" in message, message
    assert f"({'question_id'} {oe[1]['question_id']}): response is 'Something else'" in message, message
    assert not glob.glob(str(tmp_path / "o" / "**" / "*_results.json"), recursive=True)

    mixed = [dict(as_record(r), generated_answer="x") for r in msearth_rows("open") + msearth_rows("mcq")]
    with FakeOpenAIServer(responder=judge_reply) as srv:
        proc = rescore([release_file(tmp_path / "mixed.json", mixed), "--out", tmp_path / "o"], mirror, hf_home, srv, tmp_path, tmp_path / "cache")
    assert proc.returncode == 2 and "records of several tasks" in proc.stderr and "--tasks" in proc.stderr, proc.stderr[-3000:]


# --------------------------------------------------------------------------- the released records

OE_COLUMNS = ("query", "response", "question_id", "title", "classification_result", "subject", "reasoning_chain", "vqa_type", "caption")


@pytest.fixture(scope="module")
def released_open():
    with gzip.open(shared_path("reference", "msearth", "msearth_open.jsonl.gz"), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_all_released_open_ended_records(released_open, hf_home, tmp_path):
    """The 1,411 released records as the evaluator file, each with a generated answer (the gold one for
    about half): every record judged once with its own official prompt, accuracy = the share right."""
    from lmms_eval_earthsci.evals.msearth.fixtures import msearth_features
    from lmms_eval_earthsci.evals.msearth.tasks import OE_JUDGE_PROMPT
    from lmms_eval_earthsci.testing.figures import draw_figure, png_bytes, write_hf_repo

    rows = []
    for r in released_open:
        row = {c: r[c] for c in OE_COLUMNS}
        row["image"] = {"bytes": png_bytes(draw_figure(zlib.crc32(r["question_id"].encode()) % 100000)), "path": None}
        rows.append(row)
    root = str(tmp_path / "mirror")
    write_hf_repo(os.path.join(root, "MSEarth", "MSEarth_Open_Ended"), {"default": {"train": rows}}, msearth_features("open", "official"), lambda c, s: f"data/{s}-00000-of-00001.parquet")

    records = [dict(r, generated_answer=r["response"] if zlib.crc32(r["question_id"].encode()) % 2 else "Not determinable") for r in released_open]
    right = {r["question_id"] for r in records if r["generated_answer"] == r["response"]}
    assert 0 < len(right) < len(records) == 1411
    with FakeOpenAIServer(responder=judge_reply) as srv:
        proc = rescore([release_file(tmp_path / "model_open.json", records), "--out", tmp_path / "o"], root, hf_home, srv, tmp_path, tmp_path / "cache")
        texts = judge_texts(srv)
    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-8000:]}"
    res, samples = read_outputs(str(tmp_path / "o"))
    assert res["n-samples"]["msearth_open"]["effective"] == 1411 and len(texts) == 1411
    assert res["results"]["msearth_open"]["msearth_oe_acc,none"] == pytest.approx(100 * len(right) / 1411)
    assert {s["msearth_oe_acc"]["id"] for s in samples["msearth_open"] if s["msearth_oe_acc"]["judge"]["verdict"]} == right
    wanted = {OE_JUDGE_PROMPT.replace("{query}", r["query"]).replace("{caption}", r["caption"]).replace("{response}", r["response"]).replace("{generated_answer}", r["generated_answer"]) for r in records}
    assert sum(any(w in t for w in wanted) for t in texts[:50]) == 50  # sampled: each prompt is one of the records' own
