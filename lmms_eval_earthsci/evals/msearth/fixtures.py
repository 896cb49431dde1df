"""MSEarth fixture data: made-up MCQ, open-ended and captioning records in the schema of the official
repos and of their re-uploads (``MSEarth-Data``), figures drawn here."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from types import MappingProxyType

from lmms_eval_earthsci.evals.msearth.benchmark import DATASETS, REUPLOADS
from lmms_eval_earthsci.testing.figures import draw_figure, png_bytes, write_hf_repo

MSEARTH_REPOS = MappingProxyType({**{repo: (kind, "official") for kind, repo in DATASETS.items()}, **{repo: (kind, "reupload") for kind, repo in REUPLOADS.items()}})
_SINGLE = "Single Image Question Answering"
_MULTI = "Single Sub-image Question Answering in Multi-image Figure"
_CROSS = "Multi Sub-image Question Answering in Multi-image Figure"


def _mcq_query(caption: str, question: str, options: Sequence[str], newline: bool) -> str:
    opts = "\n".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(options))
    return f"<image>Caption:{chr(10) if newline else ''}{caption}\nQuestion:\n{question}\nOptions:\n{opts}"


# (question_id, caption, question, options, gold letter, primary_sphere, vqa_type, question_category)
_MCQ = (
    ("N000101", "Monthly rainfall at two stations (a) and (b).", "Which month is wettest at station (a)?", ("January", "April", "July", "October"), "C", "Atmospheric Sciences", _MULTI, "Perception"),
    ("N000102", "Groundwater levels in a confined aquifer.", "What drives the rise after 2010?", ("Pumping stopped", "Sea-level rise", "Drought", "Irrigation"), "A", "Hydrology", _SINGLE, "Discovery"),
    ("E000103", "Seismic velocity profile beneath the ridge.", "Where is the low-velocity zone?", ("Above 5 km", "At 10-20 km", "Below 60 km", "Nowhere"), "B", "Solid Earth Geophysics", _CROSS, "Discovery"),
    ("E000104", "Glacier front positions 1990-2020.", "How did the front move?", ("Advanced", "Stayed", "Retreated", "Oscillated"), "C", "Polar Science", _MULTI, "Discovery"),
    ("H000105", "Sediment core grain sizes.", "Which unit is coarsest?", ("Unit 1", "Unit 2", "Unit 3", "Unit 4"), "D", "Geology", _SINGLE, "Perception"),
    ("N000106", "Coastal land-use map.", "Which class grew most?", ("Urban", "Forest", "Wetland", "Cropland"), "A", "Energy Systems", _SINGLE, "Discovery"),
)
_OE = (
    ("ON000201", "Discharge of the river over a year.", "When does discharge peak?", "Late spring", "Hydrology", _SINGLE),
    ("OE000202", "Map of two dynasties' walls.", "Which dynasties built the walls?", "Han and Tang dynasties", "Geography", _MULTI),
    ("OH000203", "Temperature anomaly panels (a)-(c).", "Which panel shows cooling?", "Panel (b)", "Atmospheric Sciences", _CROSS),
    ("ON000204", "Plankton counts by depth.", "Which depth has most plankton?", "Surface layer", "Oceanography", _SINGLE),
)
_CAPTIONS = (
    ("C000301", "Bar chart of annual precipitation at five stations.", "Annual precipitation at five stations, highest at the coastal station and lowest inland.", "Hydrology"),
    ("C000302", "Line plot of sea surface temperature.", "Sea surface temperature rising steadily from 1980 to 2020 with seasonal oscillation.", "Oceanography"),
    ("C000303", "Scatter of grain size versus depth.", "Grain size decreases with depth in the core, with scatter around the trend.", "Geology"),
)
CAPTION_QUERIES = ("Describe the scene depicted in the image in detail.", "Generate a comprehensive caption for the image.")


def _meta(variant: str, value: dict):
    """Dict columns: JSON strings on the MSEarth/ uploads, structs (dicts) on the re-uploads."""
    return json.dumps(value) if variant == "official" else value


def msearth_features(kind: str, variant: str):
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only when fixtures are written

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

