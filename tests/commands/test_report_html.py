"""report.html without a browser (the browser tests are tests/commands/test_browser.py): the Markdown it is made
from stays text, each benchmark's record gives the verdict it means, the figures' cache makes a second
report load no data, and a doc whose figures cannot be had says why."""

import json
import os

import pytest

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.commands.report import read_runs, write_report
from lmms_eval_earthsci.commands.report.html import images as html_images
from lmms_eval_earthsci.commands.report.html.markdown import to_html
from lmms_eval_earthsci.commands.report.html.samples import task_docs, view


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
    cfg = {
        "task": "emma_mini_math", "dataset_path": "luckychao/EMMA-mini", "dataset_name": "Math", "test_split": "test",
        "metadata": {"version": 1.0, "earthsci_data": {"source": "mirror", "path": "/nonexistent/luckychao/EMMA-mini", "dataset_path": "luckychao/EMMA-mini", "fingerprint": fingerprint}},
    }
    samples = [
        {
            "doc_id": i, "target": "B", "input": f"q{i} <b>", "resps": [[f"\\boxed{{{'B' if i else 'A'}}}"]],
            "emma_acc": {"score": 100.0 if i else 0.0, "extraction": "B" if i else "A", "rule": "boxed"}, "emma_category_path_tracing": 100.0 if i else 0.0,
        }
        for i in range(3)
    ]
    (d / "20261123_000000_samples_emma_mini_math.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    (d / "20261123_000000_results.json").write_text(
        json.dumps(
            {
                "results": {"emma_mini_math": {"alias": "emma_mini_math", "emma_acc,none": 66.67}}, "configs": {"emma_mini_math": cfg}, "versions": {"emma_mini_math": 1.0},
                "config": {"model": "fake", "model_args": f"model={model}"},
            }
        )
    )
    return str(tmp_path / name)


@pytest.mark.slow  # lmms-eval builds the task to look for the doc the cache lacks
def test_a_cached_doc_set_loads_no_data_and_a_missing_one_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("EARTHSCI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("EARTHSCI_DATA_MIRROR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run = _run(tmp_path, "a")
    (r,) = read_runs([run])
    store = html_images.ThumbStore(str(tmp_path / "unused"))
    import io

    from PIL import Image

    names = []
    for i in range(2):  # docs 0 and 1 are in the cache, doc 2 is not
        buf = io.BytesIO()
        Image.new("RGB", (300, 200), (i * 90, 10, 10)).save(buf, "PNG")
        names.append(store.put(html_images.thumbnail(Image.open(io.BytesIO(buf.getvalue())))))
    store.save_manifest(html_images.docset_key("emma_mini_math", r.configs["emma_mini_math"], 1.0), {"0": [names[0]], "1": [names[1]]})
    called = []
    real = html_images._from_data
    monkeypatch.setattr(html_images, "_from_data", lambda run, missing, store, budget: called.append(dict(missing)) or real(run, missing, store, budget))
    # thumbnails only (a budget would decode docs 0 and 1 again for their large copies, not cached here)
    write_report([run], str(tmp_path / "rep"), resamples=0, html=True, figure_budget_mb=0)
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
    write_report([run], str(tmp_path / "rep2"), resamples=0, html=False, figure_budget_mb=0)
    assert not (tmp_path / "rep2" / "report.html").exists() and called == []


def test_two_runs_are_side_by_side_and_a_changed_prompt_is_flagged(tmp_path):
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b", model="n")
    path = next((tmp_path / "b" / "m").glob("*_samples_*.jsonl"))
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[1]["input"] = "another prompt"
    rows[2]["emma_acc"] = {"score": 0.0, "extraction": "C", "rule": "boxed"}
    path.write_text("".join(json.dumps(x) + "\n" for x in rows[1:]))  # doc 0 only in run a
    runs = read_runs([a, b])
    docs = task_docs(registry.get("emma"), "emma_mini_math", runs)["docs"]
    assert [d["id"] for d in docs] == ["0", "1", "2"]
    assert docs[0]["runs"][1] is None and not docs[0]["prompts_differ"]
    assert docs[1]["prompts_differ"] and docs[1]["runs"][1]["prompt"] == "another prompt" and "prompt" not in docs[1]["runs"][0]
    assert [r["verdict"] for r in docs[2]["runs"]] == ["right", "wrong"]
    assert docs[2]["fields"] == {"category": "path tracing"}
    # split for the page: the list's part kept per run, each run's details handed over as the run is read
    got = {}
    split = task_docs(registry.get("emma"), "emma_mini_math", runs, lambda i, by_doc: got.setdefault(i, by_doc))
    assert sorted(got) == [0, 1] and sorted(got[0]) == ["0", "1", "2"] and sorted(got[1]) == ["1", "2"]
    assert set(split["docs"][2]["runs"][1]) == {"verdict", "score", "answer", "detail", "stage"}
    assert got[1]["2"]["responses"] == ["\\boxed{B}"] and got[1]["1"]["prompt"] == "another prompt" and "prompt" not in got[1]["2"]
    assert split["no_verdict"] == [None, None]


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
    from lmms_eval_earthsci.commands.report.html import _paired_links

    runs = read_runs([a, b])
    cell = _paired_links(runs, runs[1])
    row = ["emma_mini_math", "emma_acc", runs[0].column, "", "", "", "", "", "", "", "", "7/2"]
    assert cell("Changes against the baseline", row, 11, "7/2") == (
        '<a class="mcnemar" href="#samples?task=emma_mini_math&amp;pair=b_right&amp;a=1&amp;b=0">7</a>/'
        '<a class="mcnemar" href="#samples?task=emma_mini_math&amp;pair=a_right&amp;a=1&amp;b=0">2</a>'
    )
    assert cell("Changes against the baseline", row, 10, "x") == "x"


MCQ_PROMPT = "Caption: rainfall.\nQuestion:\nWhich month is wettest?\nOptions:\nA. January\nB. April\nC. July\nD. October\n\nBased on the image, select the correct option."


@pytest.mark.parametrize(
    "bench, task, sample, verdict, answer, detail",
    [
        # MSEarth: the option scored and its text, not the raw response; the similarity that decided it
        (
            "msearth", "msearth_mcq",
            {"target": "C. July", "msearth_acc": {"score": 0.0, "answer": "zrveedim ocean", "rule": "similarity", "option": "B", "similarity": 0.147, "runner_up_similarity": 0.1148}},
            "wrong", "B. April", "similarity fallback: 0.147 (runner-up 0.115); below 0.5: a low-confidence pick",
        ),
        ("msearth", "msearth_mcq", {"target": "C. July", "msearth_acc": {"score": 100.0, "answer": "c", "rule": "letter", "option": "C"}}, "right", "C. July", "read as a letter"),
        ("msearth", "msearth_mcq", {"target": "C. July", "msearth_acc": {"score": 100.0, "answer": "July", "rule": "content"}}, "right", "C. July", "the option's text, exactly"),
        ("msearth", "msearth_mcq", {"target": "C. July", "msearth_acc": {"score": 0.0, "answer": "", "rule": "none"}}, "no_answer", None, None),
        ("msearth", "msearth_open", {"target": "spring", "msearth_oe_acc": {"id": "x", "answer": "late spring", "score": 100.0, "judge": {"status": "judged"}}}, "right", "late spring", None),
        # MAC: the pick with its probability; an unparsed answer says why
        ("mac", "mac2025_i2t_info", {"mac_acc": {"gold": "B", "pred": "B", "parsed": True, "path": "json", "correct": True, "probs": {"A": 0.1, "B": 0.7, "C": 0.1, "D": 0.1}}}, "right", "B", "probability 0.70"),
        ("mac", "mac2025_i2t_info", {"mac_acc": {"gold": "B", "pred": None, "parsed": False, "path": "none", "problem": "no JSON object"}}, "no_answer", None, "no JSON object"),
        ("musciclaims", "musciclaims_d", {"musciclaims_macro_f1": {"gold": "SUPPORT", "pred": "CONTRADICT", "stage": "json"}}, "wrong", "CONTRADICT", None),
    ],
)
def test_each_benchmark_says_what_was_scored(bench, task, sample, verdict, answer, detail):
    got = view(registry.get(bench).report_spec(), task, {"doc_id": 0, "input": MCQ_PROMPT, "resps": [["raw"]], "target": "x", **sample})
    assert (got["verdict"], got["answer"], got["detail"]) == (verdict, answer, detail)


def _write_run(tmp_path, name, task, samples, configs=None, cli=None, model="m"):
    d = tmp_path / name / "m"
    d.mkdir(parents=True)
    (d / f"20261123_000000_samples_{task}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    cfg = {"model": "fake", "model_args": f"model={model}", "resolved_cli_args": cli or {}}
    (d / "20261123_000000_results.json").write_text(json.dumps({"results": {task: {"alias": task}}, "configs": configs or {}, "versions": {task: 1.0}, "config": cfg}))
    return str(tmp_path / name)


def test_no_verdict_says_why_from_what_the_run_recorded(tmp_path):
    """A judged task without a judge, a --predict_only run, a metric the run could not compute: each
    run's reason in the task's data (the page shows it under "no verdict")."""
    judged = [{"doc_id": 0, "input": "p", "resps": [["r"]], "target": "3", "emma_acc": {"score": 0.0, "extraction": "2", "rule": "boxed"}, "emma_judge_acc": None}]
    predict = [{"doc_id": 0, "input": "p", "resps": [["r"]], "target": "3"}]
    caption = [{"doc_id": 0, "input": "p", "resps": [["r"]], "target": "c", "msearth_cap_score": None}]
    runs = read_runs([
        _write_run(tmp_path, "nojudge", "emma_mini_judge_math", judged),
        _write_run(tmp_path, "predict", "emma_mini_judge_math", predict, cli={"predict_only": True}, model="n"),
    ])
    data = task_docs(registry.get("emma"), "emma_mini_judge_math", runs)
    assert [r["verdict"] for r in data["docs"][0]["runs"]] == ["no_verdict", "no_verdict"]
    assert data["no_verdict"][0].startswith("no LLM judge was configured for this run, so emma_judge_acc has no value (set EARTHSCI_JUDGE_BASE_URL")
    assert data["no_verdict"][1].startswith("a --predict_only run: its responses were logged, nothing was scored")
    cfg = {"msearth_caption": {"metadata": {"earthsci_unavailable": {"msearth_cap_score": "the judge endpoint refused every request (HTTP 401)"}}}}
    (run,) = read_runs([_write_run(tmp_path, "unavailable", "msearth_caption", caption, configs=cfg)])
    data = task_docs(registry.get("msearth"), "msearth_caption", [run])
    assert data["no_verdict"] == ["msearth_cap_score could not be computed in this run: the judge endpoint refused every request (HTTP 401)"]


def test_links_are_encoded_part_by_part():
    """Python's links parse back part by part (as app.js parses them) for values holding the
    characters that broke whole-fragment decoding."""
    from urllib.parse import unquote

    from lmms_eval_earthsci.commands.report.html import fragment

    values = {"task": "mac2025_i2t_info", "f.journal": "ACS Fake Materials & Interfaces", "q": "a&b=c %41 #x ü 漢 +1", "doc": "7"}
    link = fragment(**values)
    assert link.startswith("#samples?") and link.count("&") == len(values) - 1 and "#" not in link[1:] and " " not in link
    parsed = dict(part.split("=", 1) for part in link.split("?", 1)[1].split("&"))
    assert {unquote(k): unquote(v) for k, v in parsed.items()} == values


def test_the_large_figures_budget_is_shared_by_doc_counts_and_passed_on():
    b = html_images.LargeBudget(1000, {"a": 30, "b": 10, "c": 60})
    assert b.allows("a") and b.share["a"] == 300
    b.spend("a", 100)
    b.finish("a")  # a left 200: the tasks started after it share it
    assert b.allows("b") and b.share["b"] == (1000 - 300 + 200) * 10 // 70
    b.spend("b", 500)  # overrun by the doc in flight: b is done
    assert not b.allows("b") and b.used == 600 and b.docs == 2
    b.finish("b")
    assert b.allows("c") and b.share["c"] == 1000 - 300 + 200 - 128
    assert not html_images.LargeBudget(0, {"a": 3}).allows("a")


def test_a_figure_and_its_large_copy_come_from_one_decode():
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (3000, 1500), (200, 30, 30)).save(buf, "JPEG")
    thumb, large = html_images.copies(Image.open(io.BytesIO(buf.getvalue())), large=True)
    assert Image.open(io.BytesIO(thumb)).size == (256, 128) and Image.open(io.BytesIO(large)).size == (1024, 512)
    assert html_images.copies(Image.open(io.BytesIO(buf.getvalue())), large=False)[1] is None


def test_the_generic_report_names_no_benchmarks_field():
    """Breakdown, answer and gold fields are declared by each benchmark's report spec; the generic
    report and the core's benchmark declaration name none of them."""
    import re

    root = os.path.dirname(registry.__file__)
    files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "report")) for f in fs if f.endswith((".py", ".js"))]
    files.append(os.path.join(root, "core", "benchmark.py"))
    # the words of lmms-eval and of the page itself too
    fields = {k for b in registry.benchmarks() for spec in [b.report_spec()] for k in (*spec.breakdown_fields, *spec.record_fields, spec.answer_field, spec.gold_field) if k} - {"task", "gold"}
    assert {"sphere", "publisher", "journal", "pred", "gt_content"} <= fields
    for path in files:
        text = open(path).read()
        named = sorted(k for k in fields if re.search(rf"""["']{re.escape(k)}["']""", text))
        assert not named, (path, named)


def test_a_claims_view_is_written_once_and_a_sweeps_copies_keep_claims_apart(tmp_path):
    """MuSciClaims' claim view (its variants side by side) is shared by the claim's docs: the task's data
    holds it once (`views`), each doc its index. A sweep's copies (`clone_run(docs=...)`, the benchmarks'
    20,000-sample runs) repeat docs with ids of their own, so a claim keeps its two variants."""
    from lmms_eval_earthsci.testing.sweep import clone_run

    def sample(doc, base, variant, gold, pred):
        rec = {"gold": gold, "pred": pred, "stage": "json", "base_claim_id": base, "variant": variant}
        return {"doc_id": doc, "input": "p", "resps": [[pred]], "target": gold, "musciclaims_macro_f1": rec}

    samples = [sample(0, "c1", "support", "SUPPORT", "SUPPORT"), sample(1, "c1", "contra", "CONTRADICT", "SUPPORT"),
               sample(2, "c2", "support", "SUPPORT", "INVALID"), sample(3, "c2", "contra", "CONTRADICT", "CONTRADICT")]
    (run,) = read_runs([_write_run(tmp_path, "a", "musciclaims_d", samples)])
    data = task_docs(registry.get("musciclaims"), "musciclaims_d", [run])
    assert [d["pair"] for d in data["docs"]] == [0, 0, 1, 1]
    assert [v["title"] for v in data["views"]] == ["claim c1: its variants", "claim c2: its variants"]
    assert [[r["doc"] for r in v["rows"]] for v in data["views"]] == [["1", "0"], ["3", "2"]]
    assert data["views"][0]["summary"] == ["no flip: the same decision on both"]
    (results,) = (tmp_path / "a" / "m").glob("*_results.json")
    (copy,) = read_runs([os.path.dirname(clone_run(str(results), str(tmp_path / "copy"), docs=10))])
    data = task_docs(registry.get("musciclaims"), "musciclaims_d", [copy])
    assert len(data["docs"]) == 10 and [len(v["rows"]) for v in data["views"]] == [2, 2, 2, 2, 2]
    assert data["views"][2]["title"] == "claim c1~1: its variants"
    # a benchmark without shared views writes none
    assert "views" not in task_docs(registry.get("emma"), "emma_mini_math", read_runs([_write_run(tmp_path, "e", "emma_mini_math", [{"doc_id": 0, "input": "p", "resps": [["r"]], "target": "3", "emma_acc": {"score": 0.0}}])]))


def test_heading_ids_are_unique_and_in_page_links_find_them(tmp_path):
    """Every benchmark's "Counts", a benchmark under Position bias and under its own section: one id
    each (the page's own ids left alone), and every in-page link has its target."""
    import re

    from test_circular_report import circular_run, never

    md = "## EMMA\n\n### Counts\n\n## MSEarth\n\n### Counts\n\n## Position bias\n\n### EMMA\n\n## Paper reference\n\n### EMMA\n\n## Samples\n\n## EMMA\n"
    ids = re.findall(r' id="([^"]+)"', to_html(md, reserved=("samples",)))
    assert ids == ["emma", "emma-counts", "msearth", "msearth-counts", "position-bias", "position-bias-emma", "paper-reference", "paper-reference-emma", "samples-2", "emma-2"]

    path = circular_run(tmp_path, "silent", never)
    write_report([path], str(tmp_path / "rep"), resamples=0, html=True, images=False)
    page = (tmp_path / "rep" / "report.html").read_text()
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids)) and {"msearth-counts", "scifibench-counts", "position-bias-msearth", "position-bias-scifibench"} <= set(ids)
    links = set(re.findall(r'href="#([^"?]+)"', page))
    assert links and links <= set(ids), links - set(ids)
