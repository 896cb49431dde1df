"""``lmms-eval-earthsci check-model --model CLASS --model_args ARGS``: does each of our prompt layouts reach
this model class as written? Exit 0: every layout as written; 1: a layout is lost; 2: the check could not run or could not observe a layout.

Two docs per layout task (each benchmark's ``layout_tasks``, on the sample mirror the package ships:
offline, made-up docs in the upstream schemas; EMMA's second docs carry the repeated placeholder and the
option images) go through the user's class via lmms-eval's own CLI, in this process, generating one
token. Two views per layout, both read from what the class handed its transformers processor:

- the run's layout probe (``metadata.earthsci_layout``, :mod:`.core.observe`): one probe request per task
  through the class's own ``generate_until``, stopped at its processor;
- what the class handed its processor during the run (``core.adapter.capture``): the prompt text, its image
  token once per image, and the images (positional or keyword calls, PIL, data URLs, paths).

A class that holds no transformers processor (API and server classes) is answered by the probe alone.
Prints a table (layout, as written / what is lost, fix). Whatever raises inside the run ends the check
with exit 2 and the reason in one line (the table first, when the probe had observed the layouts).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.core.adapter import capture, layout_probe
from lmms_eval_earthsci.core.adapter.harness import output_to, run_lmms_eval
from lmms_eval_earthsci.core.adapter.layout_probe import fix_for
from lmms_eval_earthsci.core.prompts.layout import check_prompt
from lmms_eval_earthsci.sample_mirror import sample_mirror_root

#: docs per layout task: EMMA's physics and chemistry docs with a repeat and option images come second
LIMIT = 2


def layout_tasks() -> dict[str, str]:
    """Every registered benchmark's ``{task: its layout in words}``."""
    return {t: d for b in registry.benchmarks() for t, d in b.layout_tasks.items()}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="lmms-eval-earthsci check-model", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="lmms-eval's --model (qwen2_5_vl, qwen3_vl, internvl_hf, llava_hf, openai, ...)")
    ap.add_argument("--model_args", default="", help="lmms-eval's --model_args (pretrained=..., device=...)")
    ap.add_argument("--tasks", default=None, help="our tasks whose layouts to check (default: one task per layout we ship)")
    ap.add_argument("--force_simple", action="store_true", help="check the class's simple route, as lmms-eval --force_simple runs it")
    ap.add_argument("--log", default=None, help="lmms-eval's log goes here (default: a file in a temporary folder; its path is printed)")
    return ap


def analyse(records: list[dict[str, Any]], results: dict[str, Any], tasks: Sequence[str]) -> list[dict[str, Any]]:
    """One row per task: the probe's verdict and, where a processor call was captured, its own."""
    calls = capture.calls(records)
    rows = []
    for task in tasks:
        probe = ((results.get("configs", {}).get(task) or {}).get("metadata") or {}).get("earthsci_layout") or {"status": "not checked", "why": "the run recorded no verdict"}
        row: dict[str, Any] = {"task": task, "probe": probe, "captured": None}
        lost: list[str] = []
        for exp in (r for r in records if r["event"] == "expected" and r["task"] == task):
            layout = capture.expected_layout(exp)
            call = capture.match(calls, exp)
            if call is None or not call.get("image_token"):
                continue
            seen = check_prompt(layout, " ".join(call["text"]), re.escape(call["image_token"]), images_passed=len(call["images"]))
            lost += [x for x in seen.lost if x not in lost]
            row["captured"] = lost
        rows.append(row)
    return rows


def lost_of(row: dict[str, Any]) -> list[str]:
    lost = list(row["probe"].get("lost") or [])
    for item in row["captured"] or []:
        if item not in lost:
            lost.append(item)
    return lost


def table(rows: list[dict[str, Any]], model: str, simple: bool = False) -> tuple[str, bool]:
    """The printed table and whether any layout was lost."""
    described = layout_tasks()
    lines = [f"Layouts through --model {model}:", "", "| task | layout | reaches the model | fix |", "|---|---|---|---|"]
    any_lost = False
    for row in rows:
        lost = lost_of(row)
        status = row["probe"].get("status", "not checked")
        if lost:
            any_lost = True
            says = "LOST: " + "; ".join(lost)
        elif status == "lost":
            any_lost = True
            says = "LOST"
        elif status == "as written" or row["captured"] == []:
            says = "as written"
        else:
            says = status + (f" ({row['probe']['why']})" if row["probe"].get("why") else "")
        fix = row["probe"].get("fix") or (fix_for(lost, simple) if lost else "")
        lines.append(f"| {row['task']} | {described.get(row['task'], '')} | {says} | {fix} |")
    return "\n".join(lines), any_lost


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    tasks = args.tasks.split(",") if args.tasks else list(layout_tasks())
    work = tempfile.mkdtemp(prefix="earthsci-check-model-")
    log = args.log or os.path.join(work, "lmms-eval.log")
    mirror = sample_mirror_root()
    os.environ.update({"EARTHSCI_DATA_MIRROR": mirror, "HF_DATASETS_OFFLINE": "1"})
    capture.install()  # lmms-eval runs in this process: what its model got is in capture.RECORDS
    capture.install_expected(limit=LIMIT)
    lmms_args = ["--model", args.model, *(["--model_args", args.model_args] if args.model_args else []), "--tasks", ",".join(tasks), "--limit", str(LIMIT), "--gen_kwargs", "max_new_tokens=1",
                 "--batch_size", "1", "--output_path", os.path.join(work, "out"), "--verbosity", "DEBUG"]
    if args.force_simple:
        lmms_args.append("--force_simple")
    label = args.model + (" --force_simple" if args.force_simple else "")
    layout_probe.VERDICTS.clear()
    print(f"check-model: {len(tasks)} layouts through --model {args.model}; lmms-eval's log: {log}", flush=True)
    try:
        with output_to(log):
            code = run_lmms_eval(lmms_args)
    except (Exception, SystemExit) as exc:  # whatever raised inside the run: the check could not finish (2)
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if layout_probe.VERDICTS:  # the probe observed the layouts before lmms-eval stopped: show them
            text, _ = table(analyse([], {"configs": {t: {"metadata": {"earthsci_layout": v}} for t, v in layout_probe.VERDICTS.items()}}, tasks), label, simple=args.force_simple)
            print(text)
        hint = " (this class's default device_map=\"\" is refused by transformers 5: add device_map=auto on a GPU, device_map=cpu on CPU, to --model_args)" if "device_map" in reason else ""
        print(f"check-model: lmms-eval stopped: {reason}{hint} (see {log}); a run with this class and these arguments stops too", file=sys.stderr)
        return 2
    found = sorted(glob.glob(os.path.join(work, "out", "**", "*_results.json"), recursive=True))
    if code or not found:
        print(f"check-model: lmms-eval wrote no results (exit {code}); see {log}", file=sys.stderr)
        return 2
    with open(found[-1]) as f:
        results = json.load(f)
    rows = analyse(list(capture.RECORDS), results, tasks)
    text, lost = table(rows, label, simple=args.force_simple)
    print(text)
    unseen = [r["task"] for r in rows if not lost_of(r) and r["probe"].get("status") not in ("as written", "lost") and r["captured"] != []]
    if lost:
        print("\nSome layouts do not reach the model as the authors wrote them: numbers from those tasks are not comparable with the papers.")
        return 1
    if unseen:
        print(f"\ncheck-model: what reaches the model could not be observed for {len(unseen)} layout(s) ({', '.join(unseen)}): see the table", file=sys.stderr)
        return 2
    print("\nEvery layout reaches the model as written.")
    return 0
