"""MuSciClaims fixture data: made-up claim pairs over panel figures, with the dataset card and the
repo-file figures laid out as the Hub repo has them."""

from __future__ import annotations

import json
import os
from typing import Any

from lmms_eval_earthsci.evals.musciclaims.benchmark import DATASET
from lmms_eval_earthsci.testing.figures import draw_figure

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

# (paper_id, domain, figure file prefix, ((claim, contradicting edit, gold panels, figure no.), ...))
_MUSCICLAIMS_PAPERS = (
    ("PIIS0092867400000001", "biology", "bio_PIIS0092867400000001_images_figure_", (
        ("Knockdown of GENE1 lowers migration in panel A and C.", "Knockdown of GENE1 raises migration in panel A and C.", ("Panel A", "Panel C"), 1),
        ("Treated mice lived longer than controls (Figure 2).", "Treated mice lived shorter than controls (Figure 2).", ("Full Figure",), 2),
    )),
    ("10.1021_jacs.0c00001", "chemistry", "chem_10.1021_jacs.0c00001_figure_", (
        ("Yield rises with temperature up to 80 C.", "Yield falls with temperature up to 80 C.", ("(b)", "(c)"), 1),
    )),
)


def draw_panels(seed: int, labels: str = "ABC", size: tuple[int, int] = (360, 150)):
    """A multi-panel figure: one drawn plot per panel, each labelled with its letter in the corner."""
    from PIL import Image, ImageDraw  # noqa: PLC0415 - PIL, only when figures are drawn

    w, h = size
    fig = Image.new("RGB", size, (255, 255, 255))
    pw = w // len(labels)
    for i, letter in enumerate(labels):
        panel = draw_figure(seed * 10 + i, size=(pw - 6, h - 6))
        fig.paste(panel, (i * pw + 3, 3))
        ImageDraw.Draw(fig).text((i * pw + 6, 4), letter, fill=(0, 0, 0))
    return fig


def claim_variants(common: dict, claim: str, contra: str, panels: list[str], own: tuple[str, int, str], other: tuple[str, int, str], other_ref: str) -> list[dict]:
    """A base claim's three rows in the dataset's order: SUPPORT and CONTRADICT (the contradicting text)
    on its own figure, NEUTRAL (the claim) on another figure, ``other_ref`` naming where that one came
    from. ``own`` and ``other``: (figure path, figure number, caption); ``common``: the claim's shared
    fields (base_claim_id, paper_id, domain)."""
    (own_path, own_no, own_caption), (other_path, other_no, other_caption) = own, other
    mine = {"associated_figure_filepath": own_path, "associated_figure_number": str(own_no), "associated_figure_panels": panels, "caption": own_caption}
    return [
        {**common, "claim_id": f"{common['base_claim_id']}_support", "claim_text": claim, "label_3class": "SUPPORT", "label_2class": "SUPPORT",
         **mine, "claim_from_which_random_figure_is_taken": None},
        {**common, "claim_id": f"{common['base_claim_id']}_contra", "claim_text": contra, "label_3class": "CONTRADICT", "label_2class": "NON_SUPPORT",
         **mine, "claim_from_which_random_figure_is_taken": None},
        {**common, "claim_id": f"{common['base_claim_id']}_neutral", "claim_text": claim, "label_3class": "NEUTRAL", "label_2class": "NON_SUPPORT",
         "associated_figure_filepath": other_path, "associated_figure_number": str(other_no), "associated_figure_panels": panels,
         "caption": other_caption, "claim_from_which_random_figure_is_taken": other_ref},
    ]


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
            rows += claim_variants(
                common, claim, contra, list(panels), (own, fig_no, caption), (f"paper_figures/{prefix}{other_no}.jpg", other_no, other_caption), f"{paper}_{other_no}"
            )
    return rows, figures


def write_musciclaims(root: str, repo_id: str = DATASET) -> str:
    """``test_set.jsonl``, the card, and the figures as files under ``paper_figures/`` (JPEG)."""
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
