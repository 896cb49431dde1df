"""report.html without a browser (the browser tests are tests/test_browser.py): the Markdown it is made
from stays text, each benchmark's record gives the verdict it means, the figures' cache makes a second
report load no data, and a doc whose figures cannot be had says why."""

import json
import os

import pytest

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.report import read_runs, write_report
from lmms_eval_earthsci.report.html import images as I
from lmms_eval_earthsci.report.html.markdown import to_html
from lmms_eval_earthsci.report.html.samples import task_docs, view


def test_markdown_is_escaped_and_only_report_images_are_kept():
    md = "# T <b>\n\n| a | b |\n|---|---:|\n| <script>x</script> | `<i>` **y** |\n\n![chart](emma.png)\n![x](javascript:alert(1))\n![y](../secret.png)\n\n- one <img src=x onerror=alert(1)>\n"
    out = to_html(md)
    assert "<script>" not in out and "&lt;script&gt;x&lt;/script&gt;" in out
    assert "<code>&lt;i&gt;</code> <strong>y</strong>" in out and '<td class="right">' in out
    assert '<img src="emma.png"' in out and 'src="javascript' not in out and "<a " not in out and "secret" not in out
    assert "<li>one &lt;img src=x onerror=alert(1)&gt;</li>" in out


@pytest.mark.parametrize(
    "bench, task, sample, verdict, answer, stage",
    [
        ("emma", "emma_mini_math", {"emma_acc": {"score": 100.0, "extraction": "B", "rule": "boxed"}}, "right", "B", "boxed"),
        ("emma", "emma_mini_math", {"emma_acc": {"score": 0.0, "extraction": "", "rule": "none"}}, "no_answer", None, "none"),
        ("emma", "emma_mini_judge_math", {"emma_acc": {"score": 0.0, "extraction": "C", "rule": "boxed"}, "emma_judge_acc": {"score": 0.0, "judge": {"status": "request_failed", "cause": "HTTP 500"}}}, "judge_failed", "C", "boxed"),
        ("emma", "emma_mini_judge_math", {"emma_acc": {"score": 0.0, "extraction": "C", "rule": "boxed"}, "emma_judge_acc": None}, "no_verdict", "C", "boxed"),
        ("msearth", "msearth_caption", {"msearth_cap_score": {"score": 4.0, "judge": {"status": "judged"}}}, "scored", None, None),
        ("scifibench", "scifibench_cs_c2f", {"scifibench_acc": {"score": 0.0, "parsed": "D", "stage": "strict", "gold": "A"}}, "wrong", "D", "strict"),
        ("musciclaims", "musciclaims_d", {"musciclaims_macro_f1": {"gold": "SUPPORT", "pred": "SUPPORT", "stage": "json"}}, "right", "SUPPORT", "json"),
        ("musciclaims", "musciclaims_d", {"musciclaims_macro_f1": {"gold": "SUPPORT", "pred": "INVALID", "stage": "none"}}, "no_answer", "INVALID", "none"),
        ("mac", "mac2025_i2t_info", {"mac_acc": {"gold": "B", "pred": "A", "parsed": True, "path": "json", "correct": False}}, "wrong", "A", "json"),
        ("mac", "mac2025_i2t_info", {"mac_acc": {"gold": "B", "pred": None, "parsed": False, "path": "none"}}, "no_answer", None, "none"),
        ("emma", "emma_mini_math", {}, "no_verdict", None, None),  # a --predict_only run: responses, no metric yet
    ],
)
def test_each_benchmarks_record_gives_its_verdict(bench, task, sample, verdict, answer, stage):
    got = view(registry.get(bench).report_spec(), task, {"doc_id": 0, "target": "x", "input": "p", "resps": [["r1", "r2"]], **sample})
    assert (got["verdict"], got["answer"], got["stage"]) == (verdict, answer, stage)
    assert got["responses"] == ["r1", "r2"]  # --repeats: every response


def _run(tmp_path, name, fingerprint="fp-1", model="m"):
    d = tmp_path / name / "m"
    d.mkdir(parents=True)
    cfg = {"task": "emma_mini_math", "dataset_path": "luckychao/EMMA-mini", "dataset_name": "Math", "test_split": "test", "metadata": {"version": 1.0, "earthsci_data": {"source": "mirror", "path": "/nonexistent/luckychao/EMMA-mini", "dataset_path": "luckychao/EMMA-mini", "fingerprint": fingerprint}}}
    samples = [{"doc_id": i, "target": "B", "input": f"q{i} <b>", "resps": [[f"\\boxed{{{'B' if i else 'A'}}}"]], "emma_acc": {"score": 100.0 if i else 0.0, "extraction": "B" if i else "A", "rule": "boxed"}, "emma_category_path_tracing": 100.0 if i else 0.0} for i in range(3)]
    (d / "20261123_000000_samples_emma_mini_math.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    (d / "20261123_000000_results.json").write_text(json.dumps({"results": {"emma_mini_math": {"alias": "emma_mini_math", "emma_acc,none": 66.67}}, "configs": {"emma_mini_math": cfg}, "versions": {"emma_mini_math": 1.0}, "config": {"model": "fake", "model_args": f"model={model}"}}))
    return str(tmp_path / name)


@pytest.mark.slow  # lmms-eval builds the task to look for the doc the cache lacks
def test_a_cached_doc_set_loads_no_data_and_a_missing_one_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("EARTHSCI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("EARTHSCI_DATA_MIRROR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run = _run(tmp_path, "a")
    (r,) = read_runs([run])
    store = I.ThumbStore(str(tmp_path / "unused"))
    from PIL import Image
    import io

    names = []
    for i in range(2):  # docs 0 and 1 are in the cache, doc 2 is not
        buf = io.BytesIO()
        Image.new("RGB", (300, 200), (i * 90, 10, 10)).save(buf, "PNG")
        names.append(store.put(I.thumbnail(Image.open(io.BytesIO(buf.getvalue())))))
    store.save_manifest(I.docset_key("emma_mini_math", r.configs["emma_mini_math"], 1.0), {"0": [names[0]], "1": [names[1]]})
    called = []
    real = I._from_data
    monkeypatch.setattr(I, "_from_data", lambda run, missing, store: called.append(dict(missing)) or real(run, missing, store))
    write_report([run], str(tmp_path / "rep"), resamples=0, html=True)
    data = (tmp_path / "rep" / "browser" / "data" / "t0.js").read_text()
    docs = json.loads(data[data.index(",") + 1 : data.rindex(")")])["docs"]
    assert [d["images"] for d in docs[:2]] == [[names[0]], [names[1]]]
    assert sorted(os.listdir(tmp_path / "rep" / "browser" / "img")) == sorted(names)
    assert called == [{"emma_mini_math": ["2"]}]  # only the doc the cache lacks was looked for
    assert isinstance(docs[2]["images"], str) and docs[2]["images"].startswith("the run's data could not be loaded here (") and "EMMA-mini" in docs[2]["images"]
    # the page: the report's tables, the browser's scripts, a CSP; the data file is inert JSON
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "Content-Security-Policy" in page and '<script src="browser/app.js"></script>' in page and "<h2 id=\"headline\">" in page
    assert "</" not in data and docs[0]["prompt"] == "q0 <b>"  # a JSON string in a script file: text
    # a second report finds every cached doc again without asking for data; --no-html writes no page
    called.clear()
    write_report([run], str(tmp_path / "rep2"), resamples=0, html=False)
    assert not (tmp_path / "rep2" / "report.html").exists() and called == []


def test_two_runs_are_side_by_side_and_a_changed_prompt_is_flagged(tmp_path):
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b", model="n")
    path = next((tmp_path / "b" / "m").glob("*_samples_*.jsonl"))
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[1]["input"] = "another prompt"
    rows[2]["emma_acc"] = {"score": 0.0, "extraction": "C", "rule": "boxed"}
    path.write_text("".join(json.dumps(x) + "\n" for x in rows[1:]))  # doc 0 only in run a
    runs = read_runs([a, b])
    docs = task_docs(registry.get("emma"), "emma_mini_math", runs)
    assert [d["id"] for d in docs] == ["0", "1", "2"]
    assert docs[0]["runs"][1] is None and not docs[0]["prompts_differ"]
    assert docs[1]["prompts_differ"] and docs[1]["runs"][1]["prompt"] == "another prompt"
    assert [r["verdict"] for r in docs[2]["runs"]] == ["right", "wrong"]
    assert docs[2]["fields"] == {"category": "path tracing"}


def test_discordant_counts_link_to_the_disagreement_filter_in_both_tables(tmp_path):
    """The paired table and the changes against the baseline: "x/y" links to the two runs' disagreement
    filter (x: this run right and the baseline wrong, y: the reverse), with the runs' indices."""
    import re

    a, b = _run(tmp_path, "a"), _run(tmp_path, "b", model="n")
    path = next((tmp_path / "b" / "m").glob("*_samples_*.jsonl"))
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[0]["emma_acc"] = {"score": 100.0, "extraction": "B", "rule": "boxed"}  # b right where a is wrong
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    write_report([a, b], str(tmp_path / "rep"), resamples=100, html=True, images=False, baseline_run="n (b)")
    page = (tmp_path / "rep" / "report.html").read_text()
    links = re.findall(r'<a class="mcnemar" href="#samples\?task=(\w+)&amp;pair=(\w+)&amp;a=(\d)&amp;b=(\d)">(\d+)</a>', page)
    # baseline n (b) is run 1; run m (a) is run 0, right on 0 docs where b is wrong, wrong on 1 where b is right
    assert ("emma_mini_math", "b_right", "1", "0", "0") in links and ("emma_mini_math", "a_right", "1", "0", "1") in links
    # the changes table names the run alone (its baseline is the report's)
    from lmms_eval_earthsci.report.html import _paired_links

    runs = read_runs([a, b])
    cell = _paired_links(runs, runs[1])
    row = ["emma_mini_math", "emma_acc", runs[0].column, "", "", "", "", "", "", "", "", "7/2"]
    assert cell("Changes against the baseline", row, 11, "7/2") == (
        '<a class="mcnemar" href="#samples?task=emma_mini_math&amp;pair=b_right&amp;a=1&amp;b=0">7</a>/'
        '<a class="mcnemar" href="#samples?task=emma_mini_math&amp;pair=a_right&amp;a=1&amp;b=0">2</a>'
    )
    assert cell("Changes against the baseline", row, 10, "x") == "x"
