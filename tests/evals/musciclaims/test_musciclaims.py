"""MuSciClaims: prompts against the spec, the parser on real-looking outputs, panel normalisation, and
every corpus metric on docs whose values were worked out by hand (and against sklearn)."""

import re

import pytest
from conftest import shared_path

from lmms_eval_earthsci.core.data import RecordError
from lmms_eval_earthsci.evals.musciclaims import tasks as musciclaims_tasks

# --------------------------------------------------------------------------- prompts


def _spec_blocks():
    text = open(shared_path("specs", "musciclaims.md")).read()
    blocks = {}
    for name in ("JSON-D", "JSON-RD", "JSON-IRD", "KV-D", "KV-RD", "KV-IRD"):
        m = re.search(r"\*\*" + re.escape(name) + r" \(paper Fig\. \d+[^\n]*\n```\n(.*?)\n```", text, re.S)
        assert m, name
        blocks[name] = m.group(1).replace("{claim}", "{claim}")
    return blocks


def test_full_prompts_equal_the_spec():
    b = _spec_blocks()
    assert musciclaims_tasks.JSON_D == b["JSON-D"]
    assert musciclaims_tasks.KV_D == b["KV-D"]
    assert musciclaims_tasks.KV_RD == b["KV-RD"]
    assert musciclaims_tasks.KV_IRD == b["KV-IRD"]


def test_rd_and_ird_are_the_d_head_plus_the_spec_tails():
    """The spec prints RD/IRD as "same header, CLAIM and CAPTION lines, and guidelines 1-3, then: ...":
    our constants are exactly that head followed by the printed tail."""
    b = _spec_blocks()
    head = musciclaims_tasks.JSON_D.split("\n\nAfter completing your analysis")[0]
    assert head.endswith("in relation to the claim.")
    assert musciclaims_tasks.JSON_RD == head + "\n" + b["JSON-RD"]
    assert musciclaims_tasks.JSON_IRD == head + "\n" + b["JSON-IRD"]


DOC = {
    "claim_id": "PIIS1_1_support",
    "base_claim_id": "PIIS1_1",
    "claim_text": "X rises in panel A (Figure 2A).",
    "caption": "Figure 2. (A) X. (B) Y.",
    "associated_figure_panels": ["Panel A", "Panel C"],
    "label_3class": "SUPPORT",
}


def test_prompt_filling_and_our_variants():
    d = musciclaims_tasks.prompt_text(DOC, musciclaims_tasks._task_kwargs({"prompt": "d"}))
    assert "CLAIM: X rises in panel A (Figure 2A).\n\nIMAGE CAPTION(S): Figure 2. (A) X. (B) Y.\n\nGuidelines:" in d
    assert "{" in d and "{claim}" not in d and "{caption}" not in d
    kv = musciclaims_tasks.prompt_text(DOC, musciclaims_tasks._task_kwargs({"prompt": "rd", "family": "kv"}))
    assert kv.startswith("This is an image from a scientific paper. The following is the caption of this image.\nIMAGE CAPTION(S): Figure 2.")
    c_only = musciclaims_tasks.prompt_text(DOC, musciclaims_tasks._task_kwargs({"prompt": "d", "inputs": "caption"}))
    assert "Your job is to analyze a given caption(s) to decide whether it SUPPORT" in c_only
    assert c_only.replace("a given caption(s) to decide", "a given image(s) and its provided caption(s) to decide") == d
    f_only = musciclaims_tasks.prompt_text(DOC, musciclaims_tasks._task_kwargs({"prompt": "rd", "inputs": "figure"}))
    assert "IMAGE CAPTION(S)" not in f_only and "CLAIM: X rises in panel A (Figure 2A).\n\nGuidelines:" in f_only
    thrd = musciclaims_tasks.prompt_text(DOC, musciclaims_tasks._task_kwargs({"prompt": "thrd"}))
    rd = musciclaims_tasks.prompt_text(DOC, musciclaims_tasks._task_kwargs({"prompt": "rd"}))
    assert thrd == rd.replace("(Figure 2A).\n\n", "(Figure 2A).\n\nRELEVANT PANELS: Panel A, Panel C\n\n", 1)
    no_panels = musciclaims_tasks.prompt_text({**DOC, "associated_figure_panels": []}, musciclaims_tasks._task_kwargs({"prompt": "thrd"}))
    assert no_panels == rd
    stripped = musciclaims_tasks.prompt_text(DOC, musciclaims_tasks._task_kwargs({"prompt": "d", "strip_figure_refs": True}))
    assert "CLAIM: X rises in panel A.\n" in stripped


def test_a_claim_quoting_a_placeholder_is_kept():
    doc = {**DOC, "claim_text": "The {caption} token", "caption": "cap"}
    assert "CLAIM: The {caption} token" in musciclaims_tasks.prompt_text(doc, musciclaims_tasks._task_kwargs({}))


@pytest.mark.parametrize("bad", [{"prompt": "x"}, {"family": "yaml"}, {"inputs": "caption", "family": "kv"}, {"inputs": "figure", "prompt": "ird"}, {"prompt": "thrd", "family": "kv"}])
def test_bad_settings_are_one_clear_error(bad):
    with pytest.raises(ValueError, match="MuSciClaims"):
        musciclaims_tasks._task_kwargs(bad)


# --------------------------------------------------------------------------- parser

S, N, C, INV = musciclaims_tasks.SUPPORT, musciclaims_tasks.NEUTRAL, musciclaims_tasks.CONTRADICT, musciclaims_tasks.INVALID
CASES = [
    # JSON family, as asked
    ('{"decision": "SUPPORT"}', S, "json"),
    ('{"decision": "CONTRADICT"}', C, "json"),
    ('{"decision": "NEUTRAL"}', N, "json"),
    ('{"reasoning": "The bars in panel B fall, which does not support the claim.", "decision": "CONTRADICT"}', C, "json"),
    ('{"reasoning": "The figure shows an unrelated assay; it neither supports nor contradicts.", "decision": "NEUTRAL"}', N, "json"),
    ('```json\n{"reasoning": "Rising trend as claimed.", "decision": "SUPPORT"}\n```', S, "json"),
    ('```\n{"decision": "NEUTRAL"}\n```', N, "json"),
    ('Here is my answer:\n{"decision": "CONTRADICT"}', C, "json"),
    ('{"figure_panels": ["Panel A", "Panel C"], "reasoning": "Panel A shows the drop.", "decision": "SUPPORT"}', S, "json"),
    ('{"Decision": "support"}', S, "json"),
    ('{"decision": "Supported"}', S, "json"),
    ('{"decision": "**CONTRADICT**"}', C, "json"),
    ("{'reasoning': 'The curve rises.', 'decision': 'SUPPORT'}", S, "json"),
    ('{"reasoning": "Trend matches",\n "decision": "SUPPORT",}', S, "json"),
    ('{"decision": "PARTIALLY SUPPORT"}', INV, "decision-unrecognized"),
    ('{"reasoning": "I cannot see the image clearly."}', INV, "none"),
    # broken JSON: the decision field read by regex
    ('{"reasoning": "The "key" result rises", "decision": "SUPPORT"', S, "json-regex"),
    ('"decision": "neutral"', N, "json-regex"),
    # reasoning models
    ("<think>The claim says it supports... but panel B contradicts.</think>\n{\"decision\": \"CONTRADICT\"}", C, "json"),
    ("Okay, let me look. SUPPORT seems likely... no wait.</think>{\"decision\": \"NEUTRAL\"}", N, "json"),
    ("<think>\nSUPPORT? CONTRADICT?\n</think>\n\nDECISION: SUPPORT", S, "kv"),
    # KV family
    ("DECISION: SUPPORT", S, "kv"),
    ("DECISION: CONTRADICT", C, "kv"),
    ("REASONING: The plot shows a decrease, so the claim that it increases does not support.\nDECISION: CONTRADICT", C, "kv"),
    ("FIGURE PANELS: Figure A, Figure C\nREASONING: Panel A shows it.\nDECISION: SUPPORT", S, "kv"),
    ("DECISION: **NEUTRAL**", N, "kv"),
    ("**DECISION:** **NEUTRAL**", N, "kv"),
    ("Decision: neutral", N, "kv"),
    ("DECISION：SUPPORT", S, "kv"),
    ("DECISION: SUPPORT\nWait, re-checking.\nDECISION: CONTRADICT", C, "kv"),
    ("REASONING: supports the claim\nDECISION: NEUTRAL", N, "kv"),
    # bare keywords and variants
    ("SUPPORT", S, "keyword-whole"),
    ("Contradict.", C, "keyword-whole"),
    ("**NEUTRAL**", N, "keyword-whole"),
    ("Supported", S, "keyword-whole"),
    ("REFUTED", C, "keyword-whole"),
    ("Contradiction", C, "keyword-whole"),
    ("Not enough info", N, "keyword-whole"),
    # prose: the last upper-case keyword, else the last non-negated one
    ("The figure does not SUPPORT this; the trend is opposite. Final answer: CONTRADICT", C, "keyword-last"),
    ("Panel B shows the effect described, so the answer is SUPPORT.", S, "keyword-last"),
    ("Although the caption mentions the drug, the data supports the claim.", S, "keyword-last"),
    ("The data does not support the claim.", INV, "none"),
    ("The figure contradicts the claim because the values fall.", C, "keyword-last"),
    ("This evidence refutes the statement.", C, "keyword-last"),
    # refusals and junk
    ("I'm sorry, but I can't help with verifying this image.", INV, "none"),
    ("", INV, "empty"),
    (None, INV, "empty"),
    ("   \n ", INV, "empty"),
    ("42", INV, "none"),
    ("<think>Let me think about whether this supports", INV, "reasoning-only"),
]


@pytest.mark.parametrize("response,label,stage", CASES)
def test_parser(response, label, stage):
    got = musciclaims_tasks.parse_response(response)
    assert (got.value, got.rule) == (label, stage)


def test_parser_has_forty_cases_and_never_raises():
    assert len(CASES) >= 40
    for junk in [b"\xff\xfe", 3.5, {"decision": "x"}, "{" * 5000, "\ud800", "DECISION:" * 1000]:
        assert musciclaims_tasks.parse_response(junk).value in (*musciclaims_tasks.LABELS, musciclaims_tasks.INVALID)


def test_panels_are_read_from_json_and_kv():
    assert musciclaims_tasks.parse_response('{"figure_panels": ["Panel A", "(c)"], "decision": "SUPPORT"}').panels == ("Panel A", "(c)")
    assert musciclaims_tasks.parse_response('{"figure_panels": "A and C", "decision": "SUPPORT"}').panels == ("A", "C")
    assert musciclaims_tasks.parse_response('{"figure_panels": ["Panel B"], "reasoning": "x" "decision": "SUPPORT"}').panels == ("Panel B",)
    assert musciclaims_tasks.parse_response("FIGURE PANELS: Figure A, Figure B and C\nDECISION: SUPPORT").panels == ("Figure A", "Figure B", "C")
    assert musciclaims_tasks.parse_response("DECISION: SUPPORT").panels == ()


@pytest.mark.parametrize(
    "values,letters,whole",
    [
        (["Panel A", "Panel C"], "AC", False),
        (["(b)"], "B", False),
        (["panel a"], "A", False),
        (["Figure 2C"], "C", False),
        (["Fig. 2a"], "A", False),
        (["Figure A", "Figure B"], "AB", False),
        (["A–C"], "ABC", False),
        (["Panels A-D"], "ABCD", False),
        (["A to C"], "ABC", False),
        (["A, B and D"], "ABD", False),
        (["Panel I"], "I", False),
        (["ALL Panels"], "", True),
        (["Full Figure"], "", True),
        (["No panel markings"], "", True),
        (["Figure 3"], "", True),
        ([], "", False),
    ],
)
def test_panel_normalisation(values, letters, whole):
    got, got_whole = musciclaims_tasks.normalize_panels(values)
    assert ("".join(sorted(got)), got_whole) == (letters, whole)


def test_panel_scores_exclude_neutral_whole_and_empty_golds():
    parsed = musciclaims_tasks.parse_response('{"figure_panels": ["Panel A", "Panel B"], "decision": "SUPPORT"}')
    doc = {**DOC, "associated_figure_panels": ["Panel A", "Panel C"]}
    got = musciclaims_tasks._panel_score(doc, parsed)
    assert (got["p"], got["r"], round(got["f"], 4)) == (0.5, 0.5, 0.5)
    assert musciclaims_tasks._panel_score({**doc, "label_3class": "NEUTRAL"}, parsed) is None
    assert musciclaims_tasks._panel_score({**doc, "associated_figure_panels": ["Full Figure"]}, parsed) is None
    assert musciclaims_tasks._panel_score({**doc, "associated_figure_panels": []}, parsed) is None
    none = musciclaims_tasks._panel_score(doc, musciclaims_tasks.parse_response('{"decision": "SUPPORT"}'))
    assert (none["p"], none["r"], none["f"]) == (0.0, 0.0, 0.0)


# --------------------------------------------------------------------------- records


def test_variant_domain_and_id_parsing():
    assert musciclaims_tasks.variant_of({"claim_id": "10.1021_jacs.3c01234_2_contra"}) == "contra"
    assert musciclaims_tasks.variant_of({"claim_id": "odd", "label_3class": "NEUTRAL"}) == "neutral"
    assert musciclaims_tasks.domain_of({"domain": "Biology"}) == ("biology", "field")
    assert musciclaims_tasks.domain_of({"domain": "life_sciences"}) == ("biology", "field")
    assert musciclaims_tasks.domain_of({"domain": "", "paper_id": "PIIS0092867425000455"}) == ("biology", "id")
    assert musciclaims_tasks.domain_of({"domain": None, "paper_id": "10.1021_jacs.4c0001"}) == ("chemistry", "id")
    assert musciclaims_tasks.domain_of({"domain": "astro", "paper_id": "s41567_024_1"}) == ("physics", "id")
    assert musciclaims_tasks.domain_of({"domain": "?", "paper_id": "xyz"}) == ("other", "id")


def test_schema_errors_name_the_field(mirror, monkeypatch):
    monkeypatch.setenv("EARTHSCI_DATA_MIRROR", mirror)
    from lmms_eval_earthsci.evals.musciclaims.fixtures import musciclaims_rows

    row = musciclaims_rows()[0][0]
    musciclaims_tasks.check_record(row, {})
    for field, value, msg in [("caption", None, "expected str"), ("label_3class", "MAYBE", "expected one of"), ("associated_figure_panels", "Panel A", "expected list")]:
        with pytest.raises(RecordError, match=rf"record '{row['claim_id']}', field '{field}': {msg}"):
            musciclaims_tasks.check_record({**row, field: value}, {})
    with pytest.raises(RecordError, match="field 'domain': missing"):
        musciclaims_tasks.check_record({k: v for k, v in row.items() if k != "domain"}, {})
    import datasets

    ds = datasets.Dataset.from_list([{k: v for k, v in row.items() if k not in ("caption", "paper_id")}])
    with pytest.raises(RecordError, match="'paper_id, caption'.*column\\(s\\) missing"):
        musciclaims_tasks.check_schema(ds)


# --------------------------------------------------------------------------- corpus metrics

# base claim -> (domain, pred on support, pred on contra, pred on neutral)
HAND = {"b1": ("biology", S, S, N), "b2": ("biology", S, C, S), "b3": ("chemistry", INV, C, C)}
# each row's own panel class: b1 multi, b2 and b3 single; the NEUTRAL rows' own differ (None, multi,
# single): they are classed by their claim's SUPPORT row
PANEL_CLASS = {"b1": ("multi", "multi", None), "b2": ("single", "single", "multi"), "b3": ("single", "single", "single")}


def _records():
    recs = []
    for base, (domain, *preds) in HAND.items():
        for (variant, gold), pred, panels in zip((("support", S), ("contra", C), ("neutral", N)), preds, PANEL_CLASS[base]):
            recs.append({"claim_id": f"{base}_{variant}", "base_claim_id": base, "variant": variant, "gold": gold, "pred": pred, "stage": "json", "domain": domain, "domain_source": "field", "panel_class": panels})
    return recs


# Table 1 on each domain, by hand. Biology (b1, b2): golds S,C,N,S,C,N; preds S,S,N,S,C,S. Chemistry (b3):
# golds S,C,N; preds INVALID,C,C. Physics: no docs, every metric None (n/a), never 0.
DOMAIN_SLICES = {
    "musciclaims_precision_support_biology": 50.0, "musciclaims_recall_support_biology": 100.0, "musciclaims_f1_support_biology": 200 / 3,
    "musciclaims_precision_contradict_biology": 100.0, "musciclaims_recall_contradict_biology": 50.0, "musciclaims_f1_contradict_biology": 200 / 3,
    "musciclaims_precision_neutral_biology": 100.0, "musciclaims_recall_neutral_biology": 50.0, "musciclaims_f1_neutral_biology": 200 / 3,
    "musciclaims_macro_precision_biology": 250 / 3, "musciclaims_macro_recall_biology": 200 / 3,
    "musciclaims_precision_support_chemistry": 0.0, "musciclaims_recall_support_chemistry": 0.0, "musciclaims_f1_support_chemistry": 0.0,
    "musciclaims_precision_contradict_chemistry": 50.0, "musciclaims_recall_contradict_chemistry": 100.0, "musciclaims_f1_contradict_chemistry": 200 / 3,
    "musciclaims_precision_neutral_chemistry": 0.0, "musciclaims_recall_neutral_chemistry": 0.0, "musciclaims_f1_neutral_chemistry": 0.0,
    "musciclaims_macro_precision_chemistry": 50 / 3, "musciclaims_macro_recall_chemistry": 100 / 3,
    **{f"musciclaims_{k}_physics": None for k in ("macro_precision", "macro_recall", *(f"{m}_{c}" for c in ("support", "neutral", "contradict") for m in ("precision", "recall", "f1")))},
}


def test_domain_slices_have_every_table_1_cell():
    names = set(musciclaims_tasks.CLASSIFICATION_METRICS)
    assert set(DOMAIN_SLICES) <= names and len(DOMAIN_SLICES) == 33
    compact = [musciclaims_tasks._compact(r) for r in _records()]
    for name, want in DOMAIN_SLICES.items():
        assert musciclaims_tasks.CLASSIFICATION_METRICS[name](compact) == (pytest.approx(want) if want is not None else None), name
    # the slice's macro F1 is the mean of its per-class F1 (the paper's "Overall")
    per_class = [musciclaims_tasks.CLASSIFICATION_METRICS[f"musciclaims_f1_{c}_chemistry"](compact) for c in ("support", "neutral", "contradict")]
    assert musciclaims_tasks.macro_f1_chemistry(compact) == pytest.approx(sum(per_class) / 3)
    assert musciclaims_tasks.precision_support_biology([]) is None


# Table 7 by hand. Single (b2, b3): golds S,C,N,S,C,N; preds S,C,S,INVALID,C,C: S P 1/2 R 1/2; C P 2/3 R 1;
# N 0. Multi (b1): golds S,C,N; preds S,S,N: S P 1/2 R 1; C 0; N 1. Biology single is b2 alone: golds
# S,C,N; preds S,C,S: S P 1/2 R 1; C 1; N 0.
PANEL_SLICES = {
    "musciclaims_macro_precision_single_panel": 700 / 18, "musciclaims_macro_recall_single_panel": 50.0, "musciclaims_macro_f1_single_panel": 130 / 3,
    "musciclaims_macro_precision_multi_panel": 50.0, "musciclaims_macro_recall_multi_panel": 200 / 3, "musciclaims_macro_f1_multi_panel": 500 / 9,
    "musciclaims_macro_precision_single_panel_biology": 50.0, "musciclaims_macro_recall_single_panel_biology": 200 / 3, "musciclaims_macro_f1_single_panel_biology": 500 / 9,
    "musciclaims_macro_precision_multi_panel_biology": 50.0, "musciclaims_macro_recall_multi_panel_biology": 200 / 3, "musciclaims_macro_f1_multi_panel_biology": 500 / 9,
}


@pytest.mark.parametrize(
    "values, want",
    [
        (["Panel A", "Panel C"], "multi"), (["(b)", "(c)"], "multi"), (["Figure 2C"], "multi"), (["panel A"], "multi"), (["Panel I"], "multi"),
        (["ALL Panels"], "multi"), (["Full Figure", "Panel B"], "multi"), (["A-C"], "multi"),
        (["No panel markings"], "single"), (["Full Figure"], "single"), (["full figure"], "single"), (["Figure 3"], "single"), (["Whole figure"], "single"),
        ([], None), (None, None), ([""], None), (["None"], None), (["n/a"], None), (["inset"], None),
    ],
)
def test_panel_class_proxy(values, want):
    assert musciclaims_tasks.panel_class(values) == want


def test_single_and_multi_panel_slices_by_hand():
    recs = _records()
    compact = [musciclaims_tasks._compact(r) for r in recs]
    assert musciclaims_tasks.panel_classes(musciclaims_tasks.record_rows(compact)) == ["multi"] * 3 + ["single"] * 6
    for name, want in PANEL_SLICES.items():
        assert musciclaims_tasks.CLASSIFICATION_METRICS[name](compact) == pytest.approx(want), name
    # a NEUTRAL row whose claim's SUPPORT / CONTRADICT rows are not in the run keeps its own class
    assert musciclaims_tasks.panel_classes(musciclaims_tasks.record_rows([compact[2], compact[5]])) == [None, "multi"]
    # records logged before the panel class (five fields) are in neither slice: n/a, never 0
    old = [c[:5] for c in compact]
    assert musciclaims_tasks.macro_f1_single_panel(old) is None and musciclaims_tasks.macro_f1_multi_panel_biology(old) is None
    assert musciclaims_tasks.macro_f1_biology(old) == pytest.approx(200 / 3)


def test_every_corpus_metric_by_hand():
    recs = _records()
    compact = [musciclaims_tasks._compact(r) for r in recs]
    # worked out by hand (module docstring of this test file: golds S,C,N x3; preds S,S,N / S,C,S / I,C,C)
    want = {
        "musciclaims_precision_support": 50.0, "musciclaims_recall_support": 200 / 3, "musciclaims_f1_support": 400 / 7,
        "musciclaims_precision_neutral": 100.0, "musciclaims_recall_neutral": 100 / 3, "musciclaims_f1_neutral": 50.0,
        "musciclaims_precision_contradict": 200 / 3, "musciclaims_recall_contradict": 200 / 3, "musciclaims_f1_contradict": 200 / 3,
        "musciclaims_macro_precision": (50 + 100 + 200 / 3) / 3, "musciclaims_macro_recall": (200 / 3 + 100 / 3 + 200 / 3) / 3,
        "musciclaims_invalid_rate": 100 / 9,
        "musciclaims_flip_rate": 200 / 3, "musciclaims_correct_flip_rate": 100 / 3,
        "musciclaims_2class_f1_support": 400 / 7, "musciclaims_2class_f1_nonsupport": 80.0,
        # 2-class golds S,NS,NS x3; preds S,S,NS / S,NS,S / I,NS,NS: S 2 of 4 predicted, 2 of 3 found; NS 4 of 4, 4 of 6
        "musciclaims_2class_precision_support": 50.0, "musciclaims_2class_recall_support": 200 / 3,
        "musciclaims_2class_precision_nonsupport": 100.0, "musciclaims_2class_recall_nonsupport": 200 / 3,
        "musciclaims_2class_weighted_precision": (50 * 3 + 100 * 6) / 9, "musciclaims_2class_weighted_recall": 200 / 3,
        "musciclaims_2class_weighted_f1": (400 / 7 * 3 + 80 * 6) / 9,
        "musciclaims_macro_f1_biology": 200 / 3, "musciclaims_macro_f1_chemistry": None, "musciclaims_macro_f1_physics": None,
        **DOMAIN_SLICES,
        **PANEL_SLICES,
    }
    for name, fn in musciclaims_tasks.CLASSIFICATION_METRICS.items():
        if name == "musciclaims_macro_f1_chemistry":
            # chemistry: golds S,C,N; preds I,C,C -> S: 0; C: P 1/2 R 1 F 2/3; N: 0
            assert fn(compact) == pytest.approx(100 * (2 / 3) / 3)
            continue
        assert fn(compact) == (pytest.approx(want[name]) if want[name] is not None else None), name
    macro = (400 / 7 + 50 + 200 / 3) / 3
    assert musciclaims_tasks.macro_f1(recs) == pytest.approx(macro)
    # macro F1 is the mean of per-class F1, not the harmonic mean of macro P and R
    p, r = want["musciclaims_macro_precision"], want["musciclaims_macro_recall"]
    assert abs(macro - 2 * p * r / (p + r)) > 1


def test_the_aggregations_benchmark_py_names_are_the_task_modules():
    """The YAML generator reads the task module's path and its aggregations' names as strings from
    benchmark.py (importing tasks.py installs the run hooks): each names the real module, a function of it,
    the one the metric is aggregated by; every ``!function`` aggregation the generator writes resolves."""
    import importlib

    from lmms_eval_earthsci.evals.musciclaims import benchmark
    from lmms_eval_earthsci.evals.musciclaims.yamls import musciclaims_files

    assert benchmark.TASKS_MODULE == musciclaims_tasks.__name__
    assert getattr(musciclaims_tasks, benchmark.METRIC_AGGREGATION) is musciclaims_tasks.macro_f1
    named = {**benchmark.CLASSIFICATION_AGGREGATIONS, **benchmark.PANEL_AGGREGATIONS}
    assert {**musciclaims_tasks.CLASSIFICATION_METRICS, **musciclaims_tasks.PANEL_METRICS}.keys() == named.keys()
    for name, fn in named.items():
        agg = getattr(musciclaims_tasks, fn)
        assert callable(agg) and agg.__name__ in (name, fn), name  # made by _slice_metric: named for its metric
    written = {a for text in musciclaims_files().values() for a in re.findall(r"aggregation: !function (\S+)", text)}
    assert len(written) == len(named) + 1  # its premise: the headline's and every named one
    for ref in written:
        module, _, attr = ref.rpartition(".")
        assert callable(getattr(importlib.import_module(module), attr)), ref


def test_metrics_equal_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    recs = _records()
    g, p = [r["gold"] for r in recs], [r["pred"] for r in recs]
    labels = list(musciclaims_tasks.LABELS)
    P, R, F, _ = sk.precision_recall_fscore_support(g, p, labels=labels, zero_division=0)
    for k, lab in enumerate(labels):
        assert musciclaims_tasks.CLASSIFICATION_METRICS[f"musciclaims_f1_{lab.lower()}"](recs) == pytest.approx(100 * F[k])
        assert musciclaims_tasks.CLASSIFICATION_METRICS[f"musciclaims_precision_{lab.lower()}"](recs) == pytest.approx(100 * P[k])
    assert musciclaims_tasks.macro_f1(recs) == pytest.approx(100 * sk.f1_score(g, p, labels=labels, average="macro", zero_division=0))
    merge = {S: "S", N: "NS", C: "NS", INV: "INVALID"}
    g2, p2 = [merge[x] for x in g], [merge[x] for x in p]
    for metric, fn in (("precision", sk.precision_score), ("recall", sk.recall_score), ("f1", sk.f1_score)):
        assert musciclaims_tasks.CLASSIFICATION_METRICS[f"musciclaims_2class_weighted_{metric}"](recs) == pytest.approx(100 * fn(g2, p2, labels=["S", "NS"], average="weighted", zero_division=0))


def test_flip_rate_counts_only_complete_pairs():
    recs = _records()
    got = musciclaims_tasks.flips(recs[:4])  # b1 complete, b2 support only
    assert (got["pairs"], got["unpaired"], got["flip_rate"]) == (1, 1, 0.0)
    assert musciclaims_tasks.flip_rate([]) is None and musciclaims_tasks.macro_f1([]) is None


def test_panel_aggregations():
    items = [{"p": 1.0, "r": 0.5, "f": 2 / 3, "tp": 1, "n_pred": 1, "n_gold": 2}, None, {"p": 0.0, "r": 0.0, "f": 0.0, "tp": 0, "n_pred": 2, "n_gold": 1}]
    assert musciclaims_tasks.panel_precision(items) == pytest.approx(50.0)
    assert musciclaims_tasks.panel_recall(items) == pytest.approx(25.0)
    assert musciclaims_tasks.panel_f1(items) == pytest.approx(100 / 3)
    got = musciclaims_tasks.panels(items)
    assert (got["n"], got["micro_precision"], got["micro_recall"]) == (2, 1 / 3, 1 / 3)
    assert musciclaims_tasks.panel_f1([None, None]) is None


def test_process_results_records_every_doc(mirror, monkeypatch):
    monkeypatch.setenv("EARTHSCI_DATA_MIRROR", mirror)
    from lmms_eval_earthsci.evals.musciclaims.fixtures import musciclaims_rows

    rows = musciclaims_rows()[0]
    out = musciclaims_tasks.process_results_ird(rows[0], ['{"figure_panels": ["Panel A"], "reasoning": "r", "decision": "SUPPORT"}'])
    rec = out[musciclaims_tasks.METRIC]
    assert (rec["gold"], rec["pred"], rec["stage"], rec["variant"], rec["domain"]) == ("SUPPORT", "SUPPORT", "json", "support", "biology")
    assert out["musciclaims_panel_precision"]["p"] == 1.0 and out["musciclaims_panel_recall"]["r"] == 0.5
    assert set(out) == {musciclaims_tasks.METRIC, *musciclaims_tasks.CLASSIFICATION_METRICS, *musciclaims_tasks.PANEL_METRICS}
    plain = musciclaims_tasks.process_results(rows[1], [None])
    assert plain[musciclaims_tasks.METRIC]["pred"] == "INVALID" and set(plain) == {musciclaims_tasks.METRIC, *musciclaims_tasks.CLASSIFICATION_METRICS}


def test_slice_kernels_equal_their_aggregations_on_resampled_claims():
    """The report's cluster bootstrap of the domain and panel slices: each kernel gives what its aggregation
    gives, on all docs and on resampled base claims (a NEUTRAL row classed by its claim's SUPPORT row)."""
    import random

    import numpy as np

    from lmms_eval_earthsci.core.scoring.stats import resolve
    from lmms_eval_earthsci.evals.musciclaims.kernels import kernels

    rng = random.Random(3)
    items, units = [], []
    for b in range(40):
        own = rng.choice(["single", "multi", None])
        units.append(list(range(len(items), len(items) + 3)))
        for variant, gold in (("support", S), ("contra", C), ("neutral", N)):
            panels = rng.choice(["single", "multi", None]) if variant == "neutral" else own
            items.append([gold, rng.choice([S, C, N, INV]), f"b{b}", variant, rng.choice(["biology", "chemistry"]), panels])
    table = {k: v for k, v in kernels().items() if k.endswith(("_panel", "_panel_biology", "_support_biology", "_recall_chemistry", "_physics"))}
    assert len(table) == 12 + 3 + 2 + 11
    np_rng = np.random.default_rng(0)
    for dotted, (encode, stat) in table.items():
        agg = resolve(dotted)
        arrays = encode(items)
        for idx in [np.arange(len(units))] + [np_rng.integers(0, len(units), len(units)) for _ in range(5)]:
            got = stat(*(a[idx] for a in arrays))
            want = agg([items[j] for u in idx for j in units[u]])
            assert (want is None and np.isnan(got)) or got == pytest.approx(want, abs=1e-9), dotted
