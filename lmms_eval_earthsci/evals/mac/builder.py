"""``lmms-eval-earthsci mac build``: a new MAC snapshot from the user's covers and stories (spec §3.3-3.6).

Read and clean the collection (:mod:`.collection`), embed covers and stories with real models
(:mod:`.embedders`, cached per file), rank each question's candidates within its journal and choose the
distractors (:mod:`.distractors`), then write, under ``--out``:

- the four CSVs in the official schema (``image2text_info.csv`` ...), paths ``MAC_Bench/<Publisher>/...``
  as the released ones;
- the covers (and stories) the rows name, laid out as the Hub repo: ``<Publisher>/Cover/<Journal>/<id>.png``;
- ``stats.json`` (spec §3.4: relative rank of the true pair per model, embedding-only accuracy),
  ``build.json`` (inputs, models, seed, counts) and ``manifest.csv`` (the cleaned collection);
- ``tasks/``: ``lmms-eval --include_path <out>/tasks --tasks <name>`` runs the snapshot with the MAC-2025
  tasks' prompts and scoring; its ``snapshot.py`` finds the snapshot next to it, wherever it is moved;
- with ``--ocr``: text-free covers under ``<Publisher>/OCRed_Cover/`` and ``*_ocr.csv`` + tasks
  (spec §3.5).

The same inputs, models and seed give byte-identical CSVs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from lmms_eval_earthsci import TASKS_DIR
from lmms_eval_earthsci.core.yamls import versioned
from lmms_eval_earthsci.evals.mac import distractors as mac_distractors
from lmms_eval_earthsci.evals.mac import embedders as mac_embedders
from lmms_eval_earthsci.evals.mac import ocr as mac_ocr
from lmms_eval_earthsci.evals.mac.benchmark import BENCHMARK
from lmms_eval_earthsci.evals.mac.collection import BuildInputError, Issue, clean, in_window, parse_month, publisher_counts, read_input
from lmms_eval_earthsci.evals.mac.yamls import MAC_DIRECTIONS, mac_task_yaml

QUESTIONS = MappingProxyType({
    "i2t": "Which of the following options best describe the cover image?",
    "t2i": "Which of the following options best describe the cover story?",
})
VARIANTS = (("i2t", "info"), ("i2t", "option"), ("t2i", "info"), ("t2i", "option"))
CSV_NAMES = MappingProxyType({v: f"{'image2text' if v[0] == 'i2t' else 'text2image'}_{v[1]}.csv" for v in VARIANTS})
PREFIX = "MAC_Bench"
COLUMNS = ("journal", "id", "question", "cover_image", "answer", *(f"option_{x}{s}" for x in mac_distractors.LETTERS for s in ("", "_path", "_embedding_name", "_embedding_id")), "split")
TASK_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
BUILD_INFO = "build.json"


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lmms_eval_earthsci", "mac_embeddings")


@dataclass
class BuildOptions:
    input: str
    out: str
    start: str | None = None  # YYYY-MM
    end: str | None = None
    seed: int = 0
    text_models: Sequence[str] = mac_embedders.DEFAULT_TEXT_MODELS
    image_models: Sequence[str] = mac_embedders.DEFAULT_IMAGE_MODELS
    device: str | None = None
    ocr: bool = False
    name: str = "mac_custom"
    drop_blank: bool = False
    cache_dir: str | None = None
    batch_size: int = 32
    progress: bool = True


@dataclass
class Embeddings:
    """Per model key: the pool's story vectors and (image models) cover vectors, rows in pool order."""

    text: dict[str, np.ndarray] = field(default_factory=dict)
    image: dict[str, np.ndarray] = field(default_factory=dict)
    encoded: dict[str, int] = field(default_factory=dict)  # vectors computed now (not from the cache)


# --------------------------------------------------------------------------- paths


def repo_path(issue: Issue, folder: str = "Cover") -> str:
    """The issue's cover (or ``OCRed_Cover``) path inside the snapshot, from its parts: never by
    substring replacement (a journal may be called "Cover Reports")."""
    return "/".join((issue.publisher, folder, issue.journal, issue.id + issue.cover_ext))


def story_repo_path(issue: Issue) -> str:
    return "/".join((issue.publisher, "Story", issue.journal, issue.id + ".txt"))


def csv_path(rel: str) -> str:
    return f"{PREFIX}/{rel}"


# --------------------------------------------------------------------------- embedding


def embed_pool(pool: list[Issue], text_specs, image_specs, opts: BuildOptions, log) -> Embeddings:
    """Every pool issue's story with every model, and its cover with the image models: one model loaded
    at a time, cached per file content."""
    device = opts.device or mac_embedders.default_device()
    cache_dir = opts.cache_dir or default_cache_dir()
    out = Embeddings()
    texts = [(it.story_sha, it.story) for it in pool]
    covers = [(it.cover_sha, it.cover) for it in pool]
    for spec in [*text_specs, *image_specs]:
        is_image = spec in image_specs
        cache = mac_embedders.EmbeddingCache(cache_dir, mac_embedders.model_id(spec))
        loaded: list[mac_embedders.Encoder] = []

        def encoder(spec=spec, loaded=loaded) -> mac_embedders.Encoder:
            """The model, loaded at the first batch the cache does not hold (a warm cache loads none)."""
            if not loaded:
                loaded.append(mac_embedders.load_encoder(spec, device))
            return loaded[0]

        try:
            t0 = time.time()
            out.text[spec.key], n_t = mac_embedders.embed(lambda batch: encoder().texts(batch), "text", texts, cache, opts.batch_size, f"{spec.key} stories" if opts.progress else None)
            n_i = 0
            if is_image:
                out.image[spec.key], n_i = mac_embedders.embed(lambda batch: encoder().images(batch), "image", covers, cache, opts.batch_size, f"{spec.key} covers" if opts.progress else None)
            out.encoded[spec.key] = n_t + n_i
            log(f"embedded with {spec.text} ({spec.key}): {n_t} stories and {n_i} covers encoded now, the rest from the cache ({time.time() - t0:.1f} s)")
            loaded.clear()  # one model in memory at a time
        finally:
            cache.close()
    return out


# --------------------------------------------------------------------------- questions


@dataclass
class Journal:
    name: str
    publisher: str
    issues: list[Issue]  # the journal's pool, in id order
    rows: list[int]  # pool indices of its issues
    questions: list[int]  # positions (in ``issues``) of the questions


def journals_of(pool: list[Issue], questions: set[tuple[str, str]]) -> list[Journal]:
    by_name: dict[str, list[tuple[int, Issue]]] = defaultdict(list)
    for n, it in enumerate(pool):
        by_name[it.journal].append((n, it))
    out = []
    for name in sorted(by_name):
        members = sorted(by_name[name], key=lambda p: p[1].id)
        publishers = sorted({it.publisher for _, it in members})
        if len(publishers) > 1:
            raise BuildInputError(f"journal {name!r} appears under several publishers ({', '.join(publishers)}); a journal name must be unique")
        issues = [it for _, it in members]
        qs = [k for k, it in enumerate(issues) if it.key in questions]
        out.append(Journal(name, publishers[0], issues, [n for n, _ in members], qs))
    return out


def _sims(emb: Embeddings, j: Journal, variant: tuple[str, str], key: str) -> np.ndarray:
    """questions x candidates similarity of one model in one journal (spec §3.3, the query per setting)."""
    rows = np.asarray(j.rows)
    q = rows[j.questions]
    if variant == ("i2t", "info"):
        return emb.image[key][q] @ emb.text[key][rows].T
    if variant == ("i2t", "option"):
        return emb.text[key][q] @ emb.text[key][rows].T
    if variant == ("t2i", "info"):
        return emb.text[key][q] @ emb.image[key][rows].T
    return emb.image[key][q] @ emb.image[key][rows].T


def build_rows(journals: list[Journal], emb: Embeddings, text_keys: list[str], image_keys: list[str], seed: int) -> tuple[dict, Counter, dict]:
    """{variant: [row dicts]}, the count of questions dropped per reason, and (from the same similarity
    matrices) the relative ranks of the true pairs for :func:`self_validation`: {image model key or
    "average": {"i2t": [...], "t2i": [...]}} (I2T: cover -> the journal's stories; T2I: story -> its covers)."""
    rows: dict[tuple[str, str], list[dict]] = {v: [] for v in VARIANTS}
    dropped: Counter = Counter()
    ranks: dict[str, dict[str, list[float]]] = {k: {"i2t": [], "t2i": []} for k in [*image_keys, "average"]}
    for j in journals:
        if not j.questions:
            continue
        if len(j.issues) < len(mac_distractors.LETTERS):
            dropped["journal has fewer than 4 issues"] += len(j.questions) * len(VARIANTS)
            continue
        for variant in VARIANTS:
            keys = text_keys if variant == ("i2t", "option") else image_keys
            sims = {k: _sims(emb, j, variant, k) for k in keys}
            for qi, k_issue in enumerate(j.questions):
                if variant[1] == "info":
                    for k in keys:
                        ranks[k][variant[0]].append(mac_distractors.relative_rank(sims[k][qi], k_issue))
                    ranks["average"][variant[0]].append(mac_distractors.average_relative_rank([sims[k][qi] for k in keys], k_issue))
                lists = {k: mac_distractors.ranked(sims[k][qi], k_issue) for k in keys}
                picked = mac_distractors.select(lists, mac_distractors.average_rank_list(list(lists.values())))
                if picked is None:
                    dropped["fewer than 3 distractors"] += 1
                    continue
                rows[variant].append(_row(j, k_issue, picked, variant, seed))
    return rows, dropped, ranks


def _row(j: Journal, k_issue: int, picked: list[tuple[str, int]], variant: tuple[str, str], seed: int) -> dict:
    direction, domain = variant
    issue = j.issues[k_issue]
    letters = mac_distractors.letters_for(seed, f"{direction}_{domain}", j.name, issue.id)
    entries = [(letters[0], "groundtruth", issue)] + [(letters[n + 1], key, j.issues[c]) for n, (key, c) in enumerate(picked)]
    row = {"journal": j.name, "id": issue.id, "question": QUESTIONS[direction]}
    row["cover_image"] = csv_path(repo_path(issue)) if direction == "i2t" else issue.story
    row["answer"] = letters[0]
    for letter, key, src in sorted(entries, key=lambda e: e[0]):
        image = csv_path(repo_path(src))
        row[f"option_{letter}"] = src.story if direction == "i2t" else image
        row[f"option_{letter}_path"] = csv_path(story_repo_path(src)) if direction == "i2t" else image
        row[f"option_{letter}_embedding_name"] = key
        row[f"option_{letter}_embedding_id"] = f"{src.id}.txt"
    row["split"] = "test"
    return row


# --------------------------------------------------------------------------- self-validation (§3.4)


def option_keys(row: dict) -> list[tuple[str, str]]:
    """The (journal, id) of a row's options A-D (from ``option_X_embedding_id`` = ``<id>.txt``)."""
    return [(row["journal"], row[f"option_{x}_embedding_id"][: -len(".txt")]) for x in mac_distractors.LETTERS]


def self_validation(ranks: dict, emb: Embeddings, image_keys: list[str], rows: dict, pool_index: dict) -> dict:
    """Relative rank of the true pair (``ranks`` from :func:`build_rows`), mean and median per image model
    and for the average-rank model; embedding-only accuracy of each built variant (the most similar
    option; the average model: the best mean rank)."""
    out: dict = {"relative_rank": {}, "embedding_accuracy": {}}
    for k, by_dir in ranks.items():
        out["relative_rank"][k] = {d: {"mean": _r(np.mean(v)), "median": _r(np.median(v)), "n": len(v)} if v else None for d, v in by_dir.items()}
    for variant, rs in rows.items():
        acc: dict[str, list[bool]] = {k: [] for k in [*image_keys, "average"]}
        for row in rs:
            q = pool_index[(row["journal"], row["id"])]
            opts = [pool_index[key] for key in option_keys(row)]
            gold = mac_distractors.LETTERS.index(row["answer"])
            per_model = []
            for k in image_keys:
                if variant[0] == "i2t":
                    s = emb.text[k][opts] @ emb.image[k][q]
                else:
                    s = emb.image[k][opts] @ emb.text[k][q]
                per_model.append(s)
                acc[k].append(mac_distractors.embedding_pick(s) == gold)
            acc["average"].append(mac_distractors.average_pick(per_model) == gold)
        out["embedding_accuracy"][CSV_NAMES[variant][: -len(".csv")]] = {k: (_r(100.0 * float(np.mean(v))) if v else None) for k, v in acc.items()}
    return out


def _r(x) -> float:
    return round(float(x), 4)


# --------------------------------------------------------------------------- writing


def _write_csv(path: str, rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _ocr_rows(rows: list[dict], direction: str) -> list[dict]:
    """The rows with every cover path pointing at the text-free cover, rebuilt from its parts."""
    out = []
    for row in rows:
        new = dict(row)
        cols = ["cover_image"] if direction == "i2t" else [f"option_{x}{s}" for x in mac_distractors.LETTERS for s in ("", "_path")]
        for c in cols:
            parts = new[c].split("/")  # MAC_Bench / Publisher / Cover / Journal / file
            if len(parts) >= 5 and parts[2] == "Cover":
                parts[2] = "OCRed_Cover"
                new[c] = "/".join(parts)
        out.append(new)
    return out


SNAPSHOT_PY = '''"""Generated by `lmms-eval-earthsci mac build`: the snapshot's folder is the one holding tasks/."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
'''


def task_files(name: str, variants_csv: dict[str, tuple[str, str, str]], group_alias: str) -> dict[str, str]:
    """``tasks/`` of a snapshot: the MAC template with the snapshot as dataset, one YAML per variant, the
    group. ``variants_csv``: {task: (csv, direction, domain)}."""
    header = "# Generated by `lmms-eval-earthsci mac build`.\n"
    with open(os.path.join(TASKS_DIR, "mac", "_template_yaml"), encoding="utf-8") as f:
        template = f.read()
    if "dataset_path: mhjiang0408/MAC_Bench\n" not in template:  # pragma: no cover - guarded by a test
        raise RuntimeError("the MAC task template changed: update the snapshot task writer")
    template = header + template.replace("dataset_path: mhjiang0408/MAC_Bench\n", "dataset_path: !function snapshot.ROOT  # this snapshot's folder, wherever it is moved\n")
    files = {"_template_yaml": template, "snapshot.py": SNAPSHOT_PY}
    for task, (csv_name, direction, domain) in variants_csv.items():
        alias = f"{name} {MAC_DIRECTIONS[direction]}, {domain} domain" + (" (text-free covers)" if "_ocr" in csv_name else "")
        files[f"{task}.yaml"] = versioned(mac_task_yaml(task, alias, csv_name, direction, domain, header=header, snapshot=True), BENCHMARK.version)
    groups: dict[str, list[str]] = defaultdict(list)
    for task, (csv_name, _, _) in variants_csv.items():
        groups[f"{name}_ocr" if "_ocr" in csv_name else name].append(task)
    for group, tasks in groups.items():
        files[f"{group}.yaml"] = versioned(header + f"group: {group}\n" + f'group_alias: "{group_alias}{" (text-free covers)" if group.endswith("_ocr") else ""}"\n' + "task:\n" + "".join(f"  - {t}\n" for t in tasks), BENCHMARK.version)
    return files


def _prepare_out(out: str) -> None:
    """An empty (or new) folder, or one holding an earlier build (its files are replaced)."""
    if os.path.isdir(out) and os.listdir(out):
        info = os.path.join(out, BUILD_INFO)
        if not os.path.isfile(info):
            raise BuildInputError(f"--out {out} is not empty and holds no earlier build ({BUILD_INFO}); give a new or empty folder")
        with open(info, encoding="utf-8") as f:
            old = json.load(f)
        for rel in old.get("written", []):
            path = os.path.join(out, rel)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
    os.makedirs(out, exist_ok=True)


# --------------------------------------------------------------------------- the build


def build(opts: BuildOptions, log: Callable[[str], None] = print) -> dict:
    if not TASK_NAME_RE.match(opts.name):
        raise BuildInputError(f"--name {opts.name!r}: a task prefix is lower-case letters, digits and _, starting with a letter")
    if opts.name.startswith("mac2025"):
        raise BuildInputError(f"--name {opts.name!r}: mac2025* are the released MAC-2025 tasks; choose another prefix")
    start = parse_month(opts.start, "--from") if opts.start else None
    end = parse_month(opts.end, "--to") if opts.end else None
    if start and end and start > end:
        raise BuildInputError(f"--from {opts.start} is after --to {opts.end}")
    text_specs = mac_embedders.parse_specs(opts.text_models)
    image_specs = mac_embedders.parse_specs(opts.image_models)
    if not text_specs or not image_specs:
        raise BuildInputError("at least one text model (--text-models) and one image model (--image-models) are needed")
    clash = {s.key for s in text_specs} & {s.key for s in image_specs}
    if clash:
        raise BuildInputError(f"a text and an image model share the key(s) {', '.join(sorted(clash))}: give distinct models")
    if opts.ocr:
        reader = mac_ocr.load_reader(opts.device or mac_embedders.default_device())

    t0 = time.time()
    issues, report = read_input(opts.input)
    kept = clean(issues, report, drop_blank=opts.drop_blank)
    for line in report.lines():
        log(line)
    if start or end:
        questions = {it.key for it in kept if in_window(it, start, end)}
    else:
        questions = {it.key for it in kept}
    journals = journals_of(kept, questions)
    active = [j for j in journals if j.questions]
    pool = [it for j in active for it in j.issues]
    log(f"kept {len(kept)} pairs in {len(journals)} journals ({publisher_counts(kept)}); {len(questions)} questions in the window from {len(active)} journals; candidate pool {len(pool)} issues")
    if not questions:
        raise BuildInputError("no issue falls in the --from/--to window: nothing to build")

    # pool order = the journals' issues in order, so a journal's rows are one slice
    pool_index = {it.key: n for n, it in enumerate(pool)}
    for j in active:
        j.rows = [pool_index[it.key] for it in j.issues]
    t_read = time.time() - t0
    emb = embed_pool(pool, text_specs, image_specs, opts, log)
    t_embed = time.time() - t0 - t_read
    text_keys, image_keys = [s.key for s in text_specs], [s.key for s in image_specs]
    rows, dropped, ranks = build_rows(active, emb, text_keys, image_keys, opts.seed)
    stats = self_validation(ranks, emb, image_keys, rows, pool_index)
    t_select = time.time() - t0 - t_read - t_embed

    _prepare_out(opts.out)
    written: list[str] = []
    used = sorted({pool_index[key] for rs in rows.values() for r in rs for key in option_keys(r)})
    publishers = sorted({pool[n].publisher for n in used})
    for n in used:
        it = pool[n]
        for rel, src in ((repo_path(it), it.cover), (story_repo_path(it), None)):
            dst = os.path.join(opts.out, *rel.split("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if src is None:
                with open(dst, "w", encoding="utf-8") as f:
                    f.write(it.story)
            else:
                shutil.copyfile(src, dst)
    written += publishers
    variants_csv: dict[str, tuple[str, str, str]] = {}
    for variant in VARIANTS:
        name = CSV_NAMES[variant]
        _write_csv(os.path.join(opts.out, name), rows[variant])
        written.append(name)
        variants_csv[f"{opts.name}_{variant[0]}_{variant[1]}"] = (name, *variant)
    if opts.ocr:
        painted = mac_ocr.write_text_free(reader, [(pool[n].cover, os.path.join(opts.out, *repo_path(pool[n], "OCRed_Cover").split("/"))) for n in used], log=log)
        for variant in VARIANTS:
            name = CSV_NAMES[variant].replace(".csv", "_ocr.csv")
            _write_csv(os.path.join(opts.out, name), _ocr_rows(rows[variant], variant[0]))
            written.append(name)
            variants_csv[f"{opts.name}_ocr_{variant[0]}_{variant[1]}"] = (name, *variant)
        stats["ocr"] = painted
    tasks_dir = os.path.join(opts.out, "tasks")
    os.makedirs(tasks_dir, exist_ok=True)
    window = f"{opts.start or 'start'} to {opts.end or 'end'}"
    for fname, text in task_files(opts.name, variants_csv, f"MAC snapshot {opts.name} ({window}; each task reports its own numbers)").items():
        with open(os.path.join(tasks_dir, fname), "w", encoding="utf-8") as f:
            f.write(text)
    written.append("tasks")

    with open(os.path.join(opts.out, "manifest.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["publisher", "journal", "id", "cover_path", "story_path", "pub_date", "cover_sha256", "in_window"])
        for it in sorted(kept, key=lambda i: (i.publisher, i.journal, i.id)):
            w.writerow([it.publisher, it.journal, it.id, it.cover, it.story_path or "", it.pub_date or "", it.cover_sha, int(it.key in questions)])
    written.append("manifest.csv")
    counts = {CSV_NAMES[v]: len(rows[v]) for v in VARIANTS}
    stats_doc = {"questions": counts, "dropped_questions": dict(dropped), **stats}
    with open(os.path.join(opts.out, "stats.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(stats_doc, indent=2, ensure_ascii=False) + "\n")
    written.append("stats.json")
    info = {
        "name": opts.name,
        "input": os.path.abspath(opts.input),
        "window": {"from": opts.start, "to": opts.end},
        "seed": opts.seed,
        "text_models": mac_embedders.describe_models(text_specs),
        "image_models": mac_embedders.describe_models(image_specs),
        "cleaning": {"read": report.read, "dropped": report.counts(), "kept": len(kept)},
        "questions": counts,
        "dropped_questions": dict(dropped),
        "embedded_now": emb.encoded,
        "seconds": {"read_and_clean": round(t_read, 2), "embed": round(t_embed, 2), "rank_and_select": round(t_select, 2)},
        "written": written + [BUILD_INFO],
    }
    with open(os.path.join(opts.out, BUILD_INFO), "w", encoding="utf-8") as f:
        f.write(json.dumps(info, indent=2, ensure_ascii=False) + "\n")
    log(f"questions: {counts}" + (f"; dropped: {dict(dropped)}" if dropped else ""))
    for k, v in stats["relative_rank"].items():
        log(f"relative rank of the true pair, {k}: " + ", ".join(f"{d} mean {r['mean']:.3f} median {r['median']:.3f}" for d, r in v.items() if r))
    for variant, accs in stats["embedding_accuracy"].items():
        log(f"embedding-only accuracy, {variant}: " + ", ".join(f"{k} {a:.1f}" for k, a in accs.items() if a is not None))
    log(f"snapshot written to {opts.out}; run it with: lmms-eval --include_path {os.path.join(opts.out, 'tasks')} --tasks {opts.name} ...")
    return info


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="lmms-eval-earthsci mac build",
        description="Build a MAC snapshot (the four CSVs, the covers, self-validation stats and an lmms-eval task folder) from your own covers and cover stories. Nothing is downloaded but the embedding models.",
        epilog="Model SPECs: st:<name|path>[#cls] (sentence-transformers; #cls = [CLS] pooling, as the authors embedded all-mpnet-base-v2), open_clip:<arch>:<pretrained tag|checkpoint path>, hf:<name|path> (transformers CLIP/SigLIP). "
        f"Defaults: text {','.join(mac_embedders.DEFAULT_TEXT_MODELS)}; image {','.join(mac_embedders.DEFAULT_IMAGE_MODELS)}. The paper's 2025 setting: --image-models {mac_embedders.SIGLIP2}.",
    )
    ap.add_argument("input", metavar="INPUT", help="a folder <root>/<Publisher>/{Cover,Story}/<Journal>/<id>.{png,txt}, or a manifest CSV (publisher, journal, id, cover_path, story_path, pub_date)")
    ap.add_argument("--out", required=True, metavar="DIR", help="where the snapshot goes (new, empty, or an earlier build's folder, whose files are replaced)")
    ap.add_argument("--from", dest="start", metavar="YYYY-MM", help="first month of the snapshot window (questions; candidates come from each journal's whole history). Needs a manifest with pub_date")
    ap.add_argument("--to", dest="end", metavar="YYYY-MM", help="last month of the snapshot window (included)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the answer letters (default 0): the same inputs and seed give byte-identical CSVs")
    ap.add_argument("--text-models", metavar="SPEC,...", default=",".join(mac_embedders.DEFAULT_TEXT_MODELS), help="text-text models (Image2Text option domain), comma-separated; default the paper's three")
    ap.add_argument("--image-models", metavar="SPEC,...", default=",".join(mac_embedders.DEFAULT_IMAGE_MODELS), help="image-text / image-image models (the other three settings), comma-separated; default the paper's three")
    ap.add_argument("--device", choices=("cpu", "cuda"), default=None, help="where the models run (default: cuda when available)")
    ap.add_argument("--ocr", action="store_true", help="also write text-free covers (EasyOCR boxes with confidence > 0.25 painted white) and *_ocr.csv + tasks")
    ap.add_argument("--name", default="mac_custom", metavar="TASK_PREFIX", help="the task group (default mac_custom), holding <name>_i2t_info, <name>_i2t_option, <name>_t2i_info, <name>_t2i_option")
    ap.add_argument("--drop-blank", action="store_true", help="drop near-blank covers (> 90%% of pixels with mean RGB > 240, the authors' rule)")
    ap.add_argument("--cache-dir", metavar="DIR", default=None, help=f"embedding cache (default {default_cache_dir()}): a rebuild embeds only new files")
    ap.add_argument("--batch-size", type=int, default=32, help="embedding batch size (default 32)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    a = ap.parse_args(argv)
    opts = BuildOptions(
        input=a.input, out=a.out, start=a.start, end=a.end, seed=a.seed,
        text_models=[s for s in a.text_models.split(",") if s.strip()], image_models=[s for s in a.image_models.split(",") if s.strip()],
        device=a.device, ocr=a.ocr, name=a.name, drop_blank=a.drop_blank, cache_dir=a.cache_dir, batch_size=max(1, a.batch_size), progress=not a.no_progress,
    )
    try:
        build(opts, log=lambda m: print(m, flush=True))
    except (BuildInputError, mac_embedders.ModelSpecError) as exc:
        print(f"lmms-eval-earthsci mac build: error: {exc}", file=sys.stderr)
        return 2
    return 0
