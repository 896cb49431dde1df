"""report.html in a real browser (Debian's Chromium driven by Playwright): two fixture runs made with the
real lmms-eval CLI (a loopback model answering with letters, probabilities and hostile markup), the real
`report` command, then the page opened from file://.

Proves: no console error and no request outside the report folder; each verdict filter's count equals the
count computed here straight from the samples JSONL; the disagreement filter (and the paired table's
McNemar links) lists exactly the docs one run got right and the other wrong; figures appear for the docs
that have them; hostile responses stay text and open no dialog. A screenshot per benchmark is saved in
the test's folder. Run by `make test-browser` (--run-browser)."""

import glob
import hashlib
import json
import os
import re
import subprocess

import pytest

from conftest import VENV_BIN, cli_env, openai_args, run_cli
from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
TASKS = {"emma": "emma_mini_math", "msearth": "msearth_mcq", "scifibench": "scifibench_cs_c2f", "musciclaims": "musciclaims_d", "mac": "mac2025_i2t_info"}
HOSTILE = [
    "<script>window.__pwned = 1; alert(1)</script>",
    "</script><script>alert(2)</script>",
    '<img src=x onerror="alert(3)">',
    "[click](javascript:alert(4)) **bold** $\\href{javascript:alert(5)}{x}$",
]


def responder(letter):
    """Run a answers A (and SUPPORT), run b answers B (and CONTRADICT), each in the form the task reads,
    so the runs are right on different docs; every third doc's answer carries hostile markup."""
    def answer(body):
        text = json.dumps(body.get("messages"), sort_keys=True)
        low = text.lower()
        h = int(hashlib.sha1(text.encode()).hexdigest(), 16)
        hostile = HOSTILE[(h // 3) % len(HOSTILE)] if h % 3 == 0 else ""
        if "probability" in low:  # MAC: the official probability JSON
            probs = {x: (0.85 if x == letter else 0.05) for x in "ABCD"}
            return json.dumps(probs) + ("" if not hostile else " " + hostile)
        if "claim" in low:  # MuSciClaims: a decision
            return json.dumps({"decision": "SUPPORT" if letter == "A" else "CONTRADICT"}) + ("" if not hostile else " " + hostile)
        return f"{hostile} So the answer is \\boxed{{{letter}}}." if hostile else f"The answer is \\boxed{{{letter}}}."

    return answer


@pytest.fixture(scope="module")
def report(mirror, hf_home, tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test-browser` installs Debian's chromium")
    root = tmp_path_factory.mktemp("browser")
    runs = []
    for salt, letter in (("a", "A"), ("b", "B")):
        out = root / f"run_{salt}"
        with FakeOpenAIServer(responder=responder(letter)) as srv:
            # two models (model_version): one model's two runs would be one run of the sweep, the newer kept
            args = ["--model", "openai", "--model_args", openai_args(srv.base_url, model_version=f"fake-{salt}"), "--tasks", ",".join(TASKS.values()), "--output_path", str(out), "--log_samples"]
            run_cli(args, cli_env(mirror, hf_home), str(root))
        runs.append(str(out))
    rep = root / "report"
    proc = subprocess.run([os.path.join(VENV_BIN, "lmms-eval-earthsci"), "report", *runs, "--out", str(rep), "--resamples", "200"], env=cli_env(mirror, hf_home), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, runs, rep


def samples_of(run, task):
    (path,) = glob.glob(os.path.join(run, "**", f"*_samples_{task}.jsonl"), recursive=True)
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def expected_verdict(task, s):
    """Each benchmark's verdict from its headline record, written here from the samples' own fields."""
    if task.startswith("emma"):
        r = s["emma_acc"]
        return "no_answer" if r["rule"] == "none" else ("right" if r["score"] > 0 else "wrong")
    if task.startswith("msearth"):
        r = s["msearth_acc"]
        return "no_answer" if r["rule"] in ("none", "no-answer") else ("right" if r["score"] > 0 else "wrong")
    if task.startswith("scifibench"):
        r = s["scifibench_acc"]
        return "no_answer" if r["stage"] == "none" else ("right" if r["score"] > 0 else "wrong")
    if task.startswith("musciclaims"):
        r = s["musciclaims_macro_f1"]
        return "no_answer" if r["pred"] == "INVALID" else ("right" if r["pred"] == r["gold"] else "wrong")
    r = s["mac_acc"]
    return "no_answer" if not r["parsed"] else ("right" if r["correct"] else "wrong")


@pytest.fixture(scope="module")
def page(report):
    from playwright.sync_api import sync_playwright

    root, runs, rep = report
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"])
        pg = browser.new_page(viewport={"width": 1300, "height": 1200})
        log = {"console": [], "requests": [], "dialogs": [], "errors": []}
        pg.on("console", lambda m: log["console"].append((m.type, m.text)))
        pg.on("pageerror", lambda e: log["errors"].append(str(e)))
        pg.on("request", lambda r: log["requests"].append(r.url))

        def dialog(d):
            log["dialogs"].append(d.message)
            d.dismiss()

        pg.on("dialog", dialog)
        pg.goto(f"file://{rep}/report.html")
        pg.wait_for_selector("#match-count")
        yield pg, log, root, runs, rep
        browser.close()


def load_images(pg):
    for img in pg.query_selector_all("article.doc .images img"):
        img.scroll_into_view_if_needed()
    pg.wait_for_function("() => [...document.querySelectorAll('article.doc .images img')].every(i => i.complete)")


def open_task(pg, task, extra=""):
    pg.evaluate("h => { location.hash = h; }", f"#samples?task={task}{extra}")
    pg.wait_for_function("t => { const c = document.getElementById('f-task'); return c && c.value === t && document.getElementById('match-count'); }", arg=task)


def count(pg):
    shown, total = re.fullmatch(r"(\d+) of (\d+) docs", pg.inner_text("#match-count")).groups()
    return int(shown), int(total)


def listed(pg):
    return [(a.get_attribute("data-task"), a.get_attribute("data-doc")) for a in pg.query_selector_all("article.doc")]


def test_verdict_filters_count_what_the_samples_say(page):
    pg, log, root, runs, rep = page
    for bench, task in TASKS.items():
        expected = {}
        for s in samples_of(runs[0], task):
            v = expected_verdict(task, s)
            expected[v] = expected.get(v, 0) + 1
        open_task(pg, task)
        assert count(pg)[1] == sum(expected.values()), task
        for v in ("right", "wrong", "no_answer"):
            pg.click(f"#f-verdict-{v}")
            pg.wait_for_function("v => document.getElementById('f-verdict-' + v).checked", arg=v)
            assert count(pg)[0] == expected.get(v, 0), (task, v, expected)
            assert pg.inner_text(f"#count-{v}") == str(expected.get(v, 0))
            pg.click(f"#f-verdict-{v}")
            pg.wait_for_function("v => !document.getElementById('f-verdict-' + v).checked", arg=v)
        assert count(pg)[0] == sum(expected.values())


def test_the_disagreement_filter_lists_exactly_the_discordant_docs(page):
    pg, log, root, runs, rep = page
    wrongish = {"wrong", "no_answer"}
    total = 0
    for task in TASKS.values():
        a = {str(s["doc_id"]): expected_verdict(task, s) for s in samples_of(runs[0], task)}
        b = {str(s["doc_id"]): expected_verdict(task, s) for s in samples_of(runs[1], task)}
        a_right = sorted(d for d in a if a[d] == "right" and b.get(d) in wrongish)
        b_right = sorted(d for d in a if b.get(d) == "right" and a[d] in wrongish)
        total += len(a_right) + len(b_right)
        for pair, docs in (("a_right", a_right), ("b_right", b_right), ("any", sorted(a_right + b_right))):
            open_task(pg, task, f"&pair={pair}&a=0&b=1")
            assert sorted(d for _, d in listed(pg)) == docs, (task, pair)
    assert total > 0, "the two runs never disagree: the test would prove nothing"
    # the paired table's McNemar cells link to the same filter, with the same counts
    links = pg.query_selector_all("a.mcnemar")
    assert links
    for link in links[:4]:
        n = int(link.inner_text())
        link.click()
        pg.wait_for_function("() => document.getElementById('match-count')")
        pg.wait_for_timeout(100)
        assert count(pg)[0] == n, link.get_attribute("href")


def test_figures_appear_and_hostile_text_stays_text(page):
    pg, log, root, runs, rep = page
    shots = []
    for bench, task in TASKS.items():
        open_task(pg, task)
        pg.wait_for_timeout(200)
        imgs = pg.query_selector_all("article.doc .images img")
        assert imgs, task
        load_images(pg)
        pg.evaluate("() => document.getElementById('samples').scrollIntoView()")
        assert all(i.evaluate("i => i.naturalWidth") > 0 for i in imgs), task
        assert not pg.query_selector_all("article.doc .placeholder"), task
        path = os.path.join(root, f"screenshot_{bench}.png")
        pg.screenshot(path=path)
        shots.append(path)
    print("\nscreenshots: " + " ".join(shots))
    # every hostile answer is on the page as the text it is, inside a <pre>, and nothing ran
    hostile_docs = 0
    for task in TASKS.values():
        open_task(pg, task, "&q=" + "script")
        hostile_docs += count(pg)[0]
        texts = [p.inner_text() for p in pg.query_selector_all("pre.response")]
        assert all("<script>" in t or "script" in t.lower() for t in texts)
    assert hostile_docs > 0, "no hostile response was served"
    assert pg.evaluate("() => window.__pwned === undefined") and log["dialogs"] == []
    assert pg.evaluate("() => document.querySelectorAll('article.doc script, article.doc img:not([src^=\"browser/img/\"]), a[href^=\"javascript:\"]').length") == 0


def test_no_console_error_and_no_request_outside_the_report(page):
    pg, log, root, runs, rep = page
    for task in TASKS.values():
        open_task(pg, task)
        load_images(pg)
    assert log["errors"] == [] and [t for t, _ in log["console"] if t == "error"] == [], log
    # an export is a blob: URL the page makes from its own data (in memory, not a request for a file)
    outside = [u for u in log["requests"] if not u.startswith(f"file://{rep}/") and not u.startswith("blob:")]
    assert outside == [], outside
    assert any(u.endswith(".jpg") for u in log["requests"]) and any("/browser/data/" in u for u in log["requests"])


def test_each_benchmarks_view(page):
    """MuSciClaims: a claim's variants with each run's decision and the flip; MAC: each option's
    probability per run, gold marked, and the task's reliability diagram; SciFIBench C→F: the five
    candidate figures lettered, gold marked; EMMA: the doc's figures."""
    pg, log, root, runs, rep = page
    open_task(pg, "musciclaims_d")
    pair = pg.query_selector("article.doc .crossview")
    assert pair and pair.inner_text().startswith("claim ")
    rows = [[c.inner_text() for c in tr.query_selector_all("td")] for tr in pair.query_selector_all("tr")[1:]]
    doc = pg.query_selector("article.doc").get_attribute("data-doc")
    per_run = [{str(s["doc_id"]): s["musciclaims_macro_f1"] for s in samples_of(run, "musciclaims_d")} for run in runs]
    base = per_run[0][doc]["base_claim_id"]
    variants = sorted(d for d, r in per_run[0].items() if r["base_claim_id"] == base)
    shown = [re.search(r"\(doc (\w+)\)", r[0]).group(1) for r in rows[:-1]]
    assert sorted(shown) == variants and len(variants) >= 2
    for i, recs in enumerate(per_run):  # each run's decision on each variant, and its flip, from the samples
        assert [r[2 + i] for r in rows[:-1]] == [recs[d]["pred"] for d in shown]
        preds = [recs[d]["pred"] for d in variants]
        want = ("flipped, correctly" if all(recs[d]["pred"] == recs[d]["gold"] for d in variants) else "flipped, not both right") if len(set(preds)) > 1 else "no flip: the same decision on both"
        assert rows[-1][0] == "flip" and rows[-1][2 + i] == want

    open_task(pg, "mac2025_i2t_info")
    opts = pg.query_selector("article.doc .crossview")
    rows = [[c.inner_text() for c in tr.query_selector_all("td")] for tr in opts.query_selector_all("tr")[1:]]
    assert [r[0] for r in rows] == ["A", "B", "C", "D"] and sum(r[1] == "✓" for r in rows) == 1
    assert rows[0][2] == "0.85 ← pick" and rows[1][3] == "0.85 ← pick"  # run a put 0.85 on A, run b on B
    assert pg.query_selector("details.taskcharts img[src='mac2025_i2t_info_reliability.png']")

    open_task(pg, "scifibench_cs_c2f")
    caps = [c.inner_text() for c in pg.query_selector("article.doc").query_selector_all("figcaption")]
    assert [c[0] for c in caps] == ["A", "B", "C", "D", "E"] and sum("(gold)" in c for c in caps) == 1
    assert any("← fake-a (run_a)" in c for c in caps)


def test_the_filtered_docs_export_as_jsonl_and_csv(page):
    pg, log, root, runs, rep = page
    open_task(pg, "emma_mini_math", "&verdict=right,wrong")
    shown = count(pg)[0]
    want = sorted(str(s["doc_id"]) for s in samples_of(runs[0], "emma_mini_math") if expected_verdict("emma_mini_math", s) in ("right", "wrong"))
    assert shown == len(want) > 0
    with pg.expect_download() as got:
        pg.click("#export-jsonl")
    rows = [json.loads(x) for x in open(got.value.path()).read().splitlines()]
    assert sorted(r["doc_id"] for r in rows) == want and all(r["task"] == "emma_mini_math" for r in rows)
    assert [x["verdict"] for r in rows for x in r["runs"][:1]] == [expected_verdict("emma_mini_math", s) for s in samples_of(runs[0], "emma_mini_math") if str(s["doc_id"]) in want]
    with pg.expect_download() as got:
        pg.click("#export-csv")
    import csv

    table = list(csv.DictReader(open(got.value.path(), newline="")))
    assert sorted(r["doc_id"] for r in table) == want and {"run0_verdict", "run1_response"} <= set(table[0])
