"""``rescore --from emma-tts-release FILE...``: the EMMA authors' released test-time-scaling files
(``results/test-time-compute/`` of their development repository; layouts: spec §0.5) scored by our
majority vote, subsets, reward-model prompt, parser and selection rule, into their ``*_result.json`` shape
(spec §9) beside each method's per-question picks.

Each file is one JSON object keyed by pid. Its layout is read from its fields:

- raw (``response_0`` ... ``response_{T-1}``, T from the file name's ``_<T>``): every curve point N <= T
  (``maj@N``, ``pass@N``, ``pass_unbiased@N``) with the authors' seeded subsets;
- pass@1 (one candidate, renumbered ``response_0``): ``pass@1``;
- Qwen2.5-Math-RM (``score_list`` of floats): raw (all T by raw index: ``bon_scalar@N`` for every N <= T) or
  a chosen file (``..._<N>.json``: the N chosen renumbered, their scores in subset order, drawn from T = 16);
- majority vote (``extraction_list``): the N candidates it holds, voted in file order (no second draw);
- Best-of-N (``scoring_query`` / ``scoring_response``; T from the file name's ``_<T>``, N from the folder
  ``*-best-of-<N>`` or the prompt's labels): our rebuilt reward-model prompt must equal the one they sent,
  byte for byte (else an error naming the question and the first differing character); their recorded
  reply is then read with our parser and selection rule.

Questions are scored from the file's own fields (``answer``, ``gt_content``, ``type``, ``category``,
``task``): the development repository's question set differs from the EMMA-mini release in 14 of 400 pids.
Their InternVL reward-model files (``internvl-best-of-<N>/``) were made by an older selection rule (spec
§5.6: every tied slot, none filtered by T): those are read with it, named in the output (:data:`LEGACY`); a pick
>= T that the file does not hold is wrong, as their run's KeyError made it.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval_earthsci.core.data.loading import MIRROR_ENV, mirror_root, prepare_load
from lmms_eval_earthsci.core.data.releases import RescoreError, _open_text
from lmms_eval_earthsci.core.scoring import scaling
from lmms_eval_earthsci.evals.emma.benchmark import DATASET_MINI, REVISION_MINI
from lmms_eval_earthsci.evals.emma.scaling import SCORING_PROMPT, extract_answer_dev
from lmms_eval_earthsci.evals.emma.tasks import build_query, is_equal

_RESPONSE = re.compile(r"^response_(\d+)$")
# the methods of a raw file, named as in the output's file names
METHODS = scaling.CurveNames(maj="maj@{}", pass_="pass@{}", pass_unbiased="pass_unbiased@{}")
_LABEL = re.compile(r"\nResponse\{(\d+)\}:\nke")


def read_release(path: str) -> dict[str, dict]:
    """One released file: ``{pid: record}``; an error names the file when it is not that."""
    try:
        with _open_text(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise RescoreError(f"{path}: not a JSON file ({exc})") from exc
    if not isinstance(data, dict) or not data or not all(isinstance(v, dict) and "pid" in v for v in data.values()):
        raise RescoreError(f"{path}: not an EMMA test-time-scaling file (one JSON object keyed by pid, each record with pid)")
    return data


def _responses(rec: Mapping[str, Any]) -> dict[int, Any]:
    return {int(m.group(1)): v for k, v in rec.items() if (m := _RESPONSE.match(k))}


def _name_number(path: str, pattern: str) -> int | None:
    m = re.search(pattern, path.replace("\\", "/"))
    return int(m.group(1)) if m else None


def layout_of(path: str, data: Mapping[str, Mapping[str, Any]]) -> str:
    first = next(iter(data.values()))
    if "scoring_query" in first or "scoring_response" in first:
        return "best-of-n"
    if "extraction_list" in first:
        return "majority-vote"
    if "score_list" in first:  # Qwen2.5-Math-RM's scores (spec §6): all T by raw index, or the N chosen renumbered
        return "scalar-raw" if "best_response" not in first else "scalar-chosen"
    if all(len(_responses(r)) == 1 for r in data.values()):  # pass@1/: the subset's first candidate, as response_0
        return "single"
    return "raw"


#: the selection rule of the authors' code before commit aa44bc9 (spec §5.6): every tied slot, none filtered by T
LEGACY = "before aa44bc9 (no i < T filter)"


def is_legacy_selection(path: str) -> bool:
    """Their InternVL reward-model runs (``internvl-best-of-<N>/``) were all selected by the older rule."""
    return bool(re.search(r"(^|/)internvl-best-of-\d+/", path.replace("\\", "/")))


def correct(rec: Mapping[str, Any], extraction: str | None) -> bool:
    """The development repository's verdict, from the file's own ``answer`` and ``gt_content``."""
    if extraction is None:
        return False
    return is_equal(extraction, str(rec.get("answer", "")), words=False) or is_equal(extraction, str(rec.get("gt_content", "")), words=False)


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"character {i}: ours {a[i:i + 30]!r}, theirs {b[i:i + 30]!r}"


def score_file(path: str) -> dict[str, dict[str, dict]]:
    """``{method: {pid: {"correct": bool, ...}}}`` for one file (method: ``maj@N``, ``pass@N``,
    ``pass_unbiased@N``, ``bon@N``, ``bon_scalar@N``, ``pass@1``); a file that does not fit its layout
    (an N above its T, scores that do not match its candidates) is an error naming it."""
    try:
        return _score_file(path)
    except (ValueError, TypeError) as exc:
        raise RescoreError(f"{path}: does not fit its layout ({exc})") from exc


def _score_file(path: str) -> dict[str, dict[str, dict]]:
    data = read_release(path)
    layout = layout_of(path, data)
    out: dict[str, dict[str, dict]] = {}
    if layout == "majority-vote":
        for pid, rec in data.items():
            cands = _responses(rec)
            n = len(cands)
            vote = scaling.majority_vote([extract_answer_dev(cands[i]) for i in range(n)])
            out.setdefault(f"maj@{n}", {})[pid] = {"correct": correct(rec, vote.pick), "pick": vote.pick, "votes": [extract_answer_dev(cands[i]) for i in range(n) if cands[i]]}
        return out
    if layout == "single":
        for pid, rec in data.items():
            (response,) = _responses(rec).values()
            ext = extract_answer_dev(response)
            out.setdefault("pass@1", {})[pid] = {"correct": correct(rec, ext), "pick": ext}
        return out
    total = _name_number(path, r"_(\d+)(?:_raw)?\.json(?:\.gz)?$")
    if layout.startswith("scalar"):
        return _scalar_file(path, data, layout, total)
    if layout == "raw":
        for pid, rec in data.items():
            cands = _responses(rec)
            t = total or len(cands)
            responses = [cands.get(i) for i in range(t)]
            items = scaling.curve_items(responses, extract_answer_dev, lambda e, rec=rec: correct(rec, e), METHODS)
            for method, item in items.items():
                if method != "candidates" and item is not None:
                    # pass_unbiased@N's value is the estimate (0-1), the others' 0 or 1
                    out.setdefault(method, {})[pid] = {"correct": item["score"] > 0, "value": item["score"] / 100, "pick": item.get("pick")}
        return out
    n_from_folder = _name_number(path, r"best-of-(\d+)/")
    legacy = is_legacy_selection(path)
    for pid, rec in data.items():
        cands = _responses(rec)
        t = total or len(cands)
        query, sent = rec.get("scoring_query"), rec.get("scoring_response")
        n = n_from_folder or len(_LABEL.findall(query or ""))
        if not query:
            out.setdefault(f"bon@{n}", {})[pid] = {"correct": False, "pick": None, "why": "no reward-model prompt in the file (their run failed on it)"}
            continue
        sub = scaling.subset(t, n)
        rebuilt = scaling.reward_prompt(str(rec.get("query", "")), {i: (v or None) for i, v in cands.items()}, sub.nums, SCORING_PROMPT)
        if rebuilt != query:
            raise RescoreError(f"{path}, question {pid}: our reward-model prompt differs from the one they sent at {_first_difference(rebuilt, query)}")
        pick = scaling.select_best(scaling.parse_final_scores(sent), sub, below_t=not legacy)
        why = pick.why
        if pick.index is not None and pick.index not in cands:  # their code raised KeyError: no best response, wrong
            why = f"the pick, response_{pick.index}, is not in the file (their run: KeyError)"
        ok = pick.index is not None and correct(rec, extract_answer_dev(cands.get(pick.index)))
        out.setdefault(f"bon@{n}", {})[pid] = {"correct": ok, "pick": pick.index, "tied": pick.tied, "why": why, **({"selection": LEGACY} if legacy else {})}
    return out


# the Qwen reward-model runs drew their subsets from the 16 Math candidates (spec §6); a scored file's name gives N
SCALAR_T = 16


def _scores(rec: Mapping[str, Any], pid: str, path: str) -> list[float]:
    raw = rec.get("score_list")
    values = ast.literal_eval(raw) if isinstance(raw, str) else raw
    if not isinstance(values, list) or not all(isinstance(v, (int, float)) for v in values):
        raise RescoreError(f"{path}, question {pid}: score_list is not a list of numbers ({str(raw)[:60]!r})")
    return [float(v) for v in values]


def _scalar_file(path: str, data: Mapping[str, Mapping[str, Any]], layout: str, number: int | None) -> dict[str, dict[str, dict]]:
    """Qwen2.5-Math-RM files: raw (the T scores by raw index: every Best-of-N point N <= T, the authors'
    subsets and pick) or chosen (``..._<N>.json``: the N chosen candidates renumbered, their scores in subset
    order; the pick among them as the authors' rule makes it)."""
    out: dict[str, dict[str, dict]] = {}
    for pid, rec in data.items():
        cands = _responses(rec)
        values = _scores(rec, pid, path)
        if layout == "scalar-raw":
            t = number or len(cands)
            for n in scaling.SIZES:
                if n <= t:
                    sub = scaling.subset(t, n)
                    pick = scaling.select_best_scalar([values[i] for i in sub.nums], sub)
                    out.setdefault(f"bon_scalar@{n}", {})[pid] = {"correct": correct(rec, extract_answer_dev(cands.get(pick.index))), "pick": pick.index, "tied": pick.tied}
            continue
        n = number or len(cands)
        sub = scaling.subset(SCALAR_T, n)
        pick = scaling.select_best_scalar(values, sub)
        position = sub.nums.index(pick.index) if pick.index is not None else None
        chosen = cands.get(position) if position is not None else None
        out.setdefault(f"bon_scalar@{n}", {})[pid] = {"correct": correct(rec, extract_answer_dev(chosen)), "pick": pick.index, "position": position, "tied": pick.tied}
    return out


def _cell(c: float, n: int) -> dict:
    return {"accuracy": c / n if n else 0, "correct": c, "total": n}


def result_json(data: Mapping[str, Mapping[str, Any]], verdicts: Mapping[str, Mapping[str, Any]]) -> dict:
    """The authors' ``*_result.json`` (``calculate_acc.py``, spec §9) over every question of the file: a
    question without a verdict counts as wrong."""
    groups: dict[tuple, list[float]] = {}

    def add(key: tuple, ok: float) -> None:
        groups.setdefault(key, []).append(ok)

    for pid, rec in data.items():
        v = verdicts.get(pid, {})
        ok = float(v.get("value", bool(v.get("correct"))))
        subject = str(rec.get("subject", ""))
        add(("average",), ok)
        add(("subject", subject), ok)
        add(("question_type", str(rec.get("type", "")).lower()), ok)
        cats = [c.strip() for c in str(rec.get("category", "")).split(";")] if subject == "Coding" else [str(rec.get("category", ""))]
        for c in cats:
            add(("category", subject, c), ok)
        if rec.get("task"):
            add(("task", f"{subject}_{rec['task']}"), ok)
    out: dict[str, Any] = {"average": {}, "subject": {}, "question_type": {}, "category": {}, "task": {}}
    for key, oks in groups.items():
        right = sum(oks)
        cell = _cell(int(right) if float(right).is_integer() else right, len(oks))
        if key[0] == "average":
            out["average"] = cell
        elif key[0] == "category":
            out["category"].setdefault(key[1], {})[key[2]] = cell
        else:
            out[key[0]][key[1]] = cell
    return out


def score_files(paths: Sequence[str], out_dir: str) -> list[tuple[str, str, dict]]:
    """Every file's methods scored; ``<out>/<file>.<method>_result.json`` (their shape) and
    ``<out>/<file>.<method>.jsonl`` (per question: verdict, pick) written. Returns (file, method, result)."""
    os.makedirs(out_dir, exist_ok=True)
    done = []
    for path in paths:
        data = read_release(path)
        name = re.sub(r"\.json(?:\.gz)?$", "", os.path.basename(path))
        folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
        for method, verdicts in score_file(path).items():
            result = result_json(data, verdicts)
            stem = os.path.join(out_dir, f"{folder}.{name}.{method}")
            with open(stem + "_result.json", "w") as f:
                json.dump(result, f, indent=2)
            with open(stem + ".jsonl", "w") as f:
                for pid in data:
                    f.write(json.dumps({"pid": pid, **verdicts.get(pid, {"correct": False, "why": "no verdict"})}, ensure_ascii=False) + "\n")
            done.append((path, method, result))
    return done


def task_questions(subject: str) -> tuple[dict[str, dict] | None, str]:
    """EMMA-mini's questions of ``subject`` from the mirror (images left out), or None and why not."""
    if not mirror_root():
        return None, f"{MIRROR_ENV} is not set: the file's questions were not checked against EMMA-mini's"
    try:
        import datasets  # noqa: PLC0415 - heavy (datasets, ~1 s), only when a mirror is there to read

        path, kwargs, _ = prepare_load(DATASET_MINI, {"revision": REVISION_MINI})
        ds = datasets.load_dataset(path, subject, split="test", **kwargs)
        ds = ds.remove_columns([c for c in ds.column_names if c.startswith("image_")])
        return {str(r["pid"]): dict(r) for r in ds}, ""
    except Exception as exc:  # a mirror without this subject: scored from the file alone, said
        return None, f"EMMA-mini {subject} could not be read from the mirror ({type(exc).__name__}: {str(exc)[:200]})"


def check_against_task(data: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Lines naming what the task data says of a file's questions: those EMMA-mini lacks (scored from the
    file's own fields), those whose CoT query or answer differs from the one our task builds."""
    subjects = sorted({str(r.get("subject", "")) for r in data.values()})
    lines = []
    for subject in subjects:
        docs, why = task_questions(subject)
        if docs is None:
            lines.append(why)
            continue
        pids = [p for p, r in data.items() if r.get("subject") == subject]
        missing = [p for p in pids if p not in docs]
        if missing:
            lines.append(f"{len(missing)} of {len(pids)} {subject} questions are not in EMMA-mini (scored from the file's own fields): {', '.join(missing[:20])}" + (" ..." if len(missing) > 20 else ""))
        for p in pids:
            if p not in docs:
                continue
            ours, theirs = build_query(docs[p], "CoT"), str(data[p].get("query", ""))
            if ours != theirs:
                lines.append(f"{subject} question {p}: the task's CoT query differs from the file's at {_first_difference(ours, theirs)}")
            if str(docs[p].get("answer")).strip() != str(data[p].get("answer")).strip():
                lines.append(f"{subject} question {p}: answer {data[p].get('answer')!r} in the file, {docs[p].get('answer')!r} in EMMA-mini (the file's is used)")
    return lines


def rescore_files(paths: Sequence[str], out_dir: str, options: Mapping[str, Any]) -> int:
    """The ``rescore --from emma-tts-release`` command: scores, writes, prints a line per file and method,
    and what EMMA-mini's data says of the file's questions (with a mirror)."""
    for path in paths:
        for line in check_against_task(read_release(path)):
            print(f"{path}: {line}")
    for path, method, result in score_files(paths, out_dir):
        avg = result["average"]
        rule = f" (selection rule {LEGACY})" if method.startswith("bon@") and is_legacy_selection(path) else ""
        print(f"{path}: {method} {avg['correct']}/{avg['total']} = {100 * avg['accuracy']:.2f}{rule}")
    print(f"written to {out_dir}")
    return 0


rescore_files.scores_files = True  # type: ignore[attr-defined]  # rescore calls it with every FILE, not for a replay plan
