"""EMMA fixture data: a few made-up questions per subject in the Hub dataset's exact schema (one config
per subject, ``image_1``..``image_5``), figures drawn here."""

from __future__ import annotations

import os
from collections.abc import Sequence

from lmms_eval_earthsci.evals.emma.benchmark import DATASET_MINI
from lmms_eval_earthsci.testing.figures import draw_figure, png_bytes, write_hf_repo


def emma_features():
    import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only when fixtures are written

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


def write_emma(root: str, repo_id: str = DATASET_MINI) -> str:
    repo_dir = os.path.join(root, *repo_id.split("/"))
    rows = emma_rows()
    write_hf_repo(repo_dir, {s: {"test": r} for s, r in rows.items()}, emma_features(), lambda c, s: f"{c}/{s}-00000-of-00001.parquet")
    return repo_dir

