"""``lmms-eval-earthsci check-model --model CLASS --model_args ARGS``: does each of our prompt layouts reach
this model class as written? Exit 0: every layout as written; 1: a layout is lost; 2: the check could not run or could not observe a layout.

Two docs per layout task (each benchmark's ``layout_tasks``, on the sample mirror the package ships:
offline, made-up docs in the upstream schemas; EMMA's second docs carry the repeated placeholder and the
option images) go through the user's class via lmms-eval's own CLI, in this process, generating one
token. Two views per layout, both read from what the class handed its transformers processor:

- the run's layout probe (``metadata.earthsci_layout``, :mod:`..core.boundary.observe`): one probe request per task
  through the class's own ``generate_until``, stopped at its processor;
- what the class handed its processor during the run (``core.boundary.capture``): the prompt text, its image
  token once per image, and the images (positional or keyword calls, PIL, data URLs, paths).

A class that holds no transformers processor (API and server classes) is answered by the probe alone.
Prints a table (layout, as written / what is lost, fix) and the class's figure budget (the size a 4608 x 3456
figure reached the model at, :mod:`..core.boundary.budget`). Whatever raises inside the run ends the check
with exit 2 and the reason in one line (the table first, when the probe had observed the layouts).

``--against B --against_args ARGS``: the same check on a second class or backend of one checkpoint, each in its
own process (two engines never share one), then what differs: the figure budget (with the argument observed
to align B with A: B tries the candidate settings read from A's processor on the same probe figures), and per
task the rendered text, the layout and the visual tokens per image. Exit 0 when both deliver every layout as
written and identically, 1 when a layout is lost on either side or the two differ, 2 when either cannot run.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.core.adapter.harness import output_to, run_lmms_eval
from lmms_eval_earthsci.core.boundary import capture
from lmms_eval_earthsci.core.boundary.budget import NOT_OBSERVED, OBSERVED, PROBE_SIZE, SERVER_DECIDES, align
from lmms_eval_earthsci.core.boundary.layout_verdict import check_prompt, fix_for
from lmms_eval_earthsci.core.boundary.observe import SIDE
from lmms_eval_earthsci.core.boundary.probe import budget_line
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream.ledger import known_cause
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
    ap.add_argument("--log", default=None, help="lmms-eval's log goes here (default: a temporary file, kept and named only when the check cannot run)")
    ap.add_argument("--against", default=None, metavar="B", help="compare with this class or backend on the same probe (its own process): rendered text, image order, visual tokens per image")
    ap.add_argument("--against_args", default="", metavar="ARGS", help="--model_args of --against (--tasks and --log apply to both)")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write what was observed (verdicts, figure budget) to this JSON file")
    ap.add_argument("--align_to", default=None, metavar="PATH", help=argparse.SUPPRESS)  # --against: the other side's --json, whose budget this side tries to match
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


def run_hint(reason: str, model_args: str) -> str:
    """The argument that lets a class that stopped on its device run: ``device=cpu`` where torch has no CUDA
    (the classes' default device is ``cuda``), ``device_map`` where transformers 5 refuses their default ``""``."""
    if "not compiled with CUDA" in reason or "no NVIDIA driver" in reason or "CUDA driver" in reason:
        return " (this machine has no CUDA and the class's default device is cuda: add device=cpu" + ("" if "device_map" in model_args else ",device_map=cpu") + " to --model_args)"
    if "device_map" in reason:
        return " (this class's default device_map=\"\" is refused by transformers 5: add device_map=auto on a GPU, device=cpu,device_map=cpu on CPU, to --model_args)"
    return ""


def budget_of(results: dict[str, Any], tasks: Sequence[str]) -> dict[str, Any] | None:
    """The class's figure budget as the run recorded it (every task carries the same one)."""
    for task in tasks:
        found = ((results.get("configs", {}).get(task) or {}).get("metadata") or {}).get("earthsci_budget")
        if isinstance(found, dict):
            return {k: v for k, v in found.items() if k != "figures"}
    return None


def budget_says(b: dict[str, Any] | None) -> str:
    """The budget line check-model prints."""
    if not b:
        return "Figures: the run recorded no figure budget."
    probe = " x ".join(str(x) for x in b.get("probe") or PROBE_SIZE)
    if b.get("status") == OBSERVED:
        return f"Figures: a {probe} figure reaches the model {budget_line(b)}, observed."
    if b.get("status") == SERVER_DECIDES:
        return f"Figures: sent at full size; the server's processor decides their size ({b.get('why')})."
    return f"Figures: the size a figure reaches the model at could not be observed ({b.get('why')})."


def main(argv: Sequence[str] | None = None) -> int:
    """The check in a temporary folder, removed when it ends; lmms-eval's log in it (without ``--log``) is
    kept, and said, only when the check could not run (exit 2)."""
    args = parser().parse_args(argv)
    work = tempfile.mkdtemp(prefix="earthsci-check-model-")
    code = 2
    try:
        code = against(args, work) if args.against else check(args, work)
        return code
    finally:
        log = os.path.join(work, "lmms-eval.log")
        if code == 2 and not args.log and os.path.exists(log):
            for path in (os.path.join(work, name) for name in os.listdir(work) if name != "lmms-eval.log"):
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)
            print(f"check-model: lmms-eval's log kept: {log}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def check(args: argparse.Namespace, work: str) -> int:
    tasks = args.tasks.split(",") if args.tasks else list(layout_tasks())
    log = args.log or os.path.join(work, "lmms-eval.log")
    mirror = sample_mirror_root()
    os.environ.update({"EARTHSCI_DATA_MIRROR": mirror, "HF_DATASETS_OFFLINE": "1"})
    capture.install()  # lmms-eval runs in this process: what its model got is in capture.records()
    capture.install_expected(limit=LIMIT)
    aligned: dict[str, Any] = {}
    if args.align_to:
        with open(args.align_to) as f:
            target = (json.load(f) or {}).get("budget") or {}
        current().before_evaluate.append(lambda lm, _tasks: aligned.update(result=align(lm, target)))
    lmms_args = ["--model", args.model, *(["--model_args", args.model_args] if args.model_args else []), "--tasks", ",".join(tasks), "--limit", str(LIMIT), "--gen_kwargs", "max_new_tokens=1",
                 "--batch_size", "1", "--output_path", os.path.join(work, "out"), "--verbosity", "DEBUG"]
    if args.force_simple:
        lmms_args.append("--force_simple")
    label = args.model + (" --force_simple" if args.force_simple else "")
    current().verdicts.clear()
    print(f"check-model: {len(tasks)} layouts through --model {args.model}" + (f"; lmms-eval's log: {log}" if args.log else ""), flush=True)
    try:
        with output_to(log):
            code = run_lmms_eval(lmms_args)
    except (Exception, SystemExit) as exc:  # whatever raised inside the run: the check could not finish (2)
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if current().verdicts:  # the probe observed the layouts before lmms-eval stopped: show them
            text, _ = table(analyse([], {"configs": {t: {"metadata": {"earthsci_layout": v}} for t, v in current().verdicts.items()}}, tasks), label, simple=args.force_simple)
            print(text)
        hint = run_hint(reason, args.model_args) + (known_cause(exc) if isinstance(exc, Exception) else "")
        print(f"check-model: lmms-eval stopped: {reason}{hint} (see {log}); a run with this class and these arguments stops too", file=sys.stderr)
        return 2
    found = sorted(glob.glob(os.path.join(work, "out", "**", "*_results.json"), recursive=True))
    if code or not found:
        print(f"check-model: lmms-eval wrote no results (exit {code}); see {log}", file=sys.stderr)
        return 2
    with open(found[-1]) as f:
        results = json.load(f)
    rows = analyse(capture.records(), results, tasks)
    text, lost = table(rows, label, simple=args.force_simple)
    print(text)
    figure_budget = budget_of(results, tasks)
    print("\n" + budget_says(figure_budget))
    unseen = [r["task"] for r in rows if not lost_of(r) and r["probe"].get("status") not in ("as written", "lost") and r["captured"] != []]
    code = 1 if lost else 2 if unseen else 0
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "model_args": args.model_args, "label": label, "exit": code, "budget": figure_budget,
                       "tasks": {r["task"]: {**r["probe"], "lost": lost_of(r), "captured": r["captured"]} for r in rows}, "align": aligned.get("result")}, f, indent=1)
    if lost:
        print("\nSome layouts do not reach the model as the authors wrote them: numbers from those tasks are not comparable with the papers.")
        return 1
    if unseen:
        print(f"\ncheck-model: what reaches the model could not be observed for {len(unseen)} layout(s) ({', '.join(unseen)}): see the table", file=sys.stderr)
        return 2
    print("\nEvery layout reaches the model as written.")
    return 0


# --------------------------------------------------------------------------- --against: two classes or backends of one checkpoint


def _side(args: argparse.Namespace, model: str, model_args: str, out: str, log: str, align_to: str | None = None) -> int:
    """One side of ``--against`` in its own process (two engines never share one), printing its table."""
    argv = [sys.executable, "-m", "lmms_eval_earthsci.cli", "check-model", "--model", model, "--model_args", model_args, "--log", log, "--json", out]
    argv += ["--tasks", args.tasks] if args.tasks else []
    argv += ["--force_simple"] if args.force_simple and align_to is None else []  # the other flags apply to A
    argv += ["--align_to", align_to] if align_to else []
    print(f"\n== {model} ({model_args or 'no --model_args'})", flush=True)
    return subprocess.run(argv).returncode


def _sized(b: dict[str, Any] | None) -> str:
    if not b or b.get("status") == NOT_OBSERVED:
        return "not observed"
    if b.get("status") == SERVER_DECIDES:
        return "sent at full size (the server decides)"
    size, tokens = b.get("reached"), b.get("tokens")
    return ", ".join(filter(None, [f"{size[0]} x {size[1]}" if size else "", f"{tokens:,} visual tokens" if tokens is not None else ""]))


def _first_difference(a: str, b: str) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"from character {at}: A {a[max(0, at - 20):at + 40]!r}, B {b[max(0, at - 20):at + 40]!r}"


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two check-model observations of one probe: the figure budget (with the
    argument observed to align them, where one was), and per task the rendered text, the image order and
    the visual tokens per image."""
    out = []
    ba, bb = a.get("budget") or {}, b.get("budget") or {}
    if _sized(ba) != _sized(bb):
        probe = " x ".join(str(x) for x in ba.get("probe") or bb.get("probe") or PROBE_SIZE)
        line = f"the same {probe} figure reaches the model at {_sized(ba)} through A ({a['label']}) and {_sized(bb)} through B ({b['label']})"
    elif ba.get("tokens_small") != bb.get("tokens_small"):
        line = f"the same {SIDE} x {SIDE} figure becomes {ba.get('tokens_small')} visual tokens through A ({a['label']}) and {bb.get('tokens_small')} through B ({b['label']})"
    else:
        line = ""
    if line:
        fix = (b.get("align") or {}).get("argument")
        tried = (b.get("align") or {}).get("tried") or []
        if fix:
            line += f". Aligns them (observed): add {fix} to B's --model_args"
        elif tried:
            line += ". No argument tried aligned them (" + "; ".join(f"{t['argument']}: {t['tokens']} tokens" for t in tried) + ")"
        if ba.get("tokens_small") != bb.get("tokens_small") and f"{SIDE} x {SIDE}" not in line:
            line += f"; a {SIDE} x {SIDE} figure: {ba.get('tokens_small')} visual tokens through A, {bb.get('tokens_small')} through B"
        out.append(line)
    for task in dict.fromkeys([*a.get("tasks", {}), *b.get("tasks", {})]):
        va, vb = a.get("tasks", {}).get(task) or {}, b.get("tasks", {}).get(task) or {}
        if va.get("status") != vb.get("status") or va.get("lost") != vb.get("lost"):
            out.append(f"{task}: the layout reaches A {va.get('status', 'unchecked')}{' (' + '; '.join(va['lost']) + ')' if va.get('lost') else ''}, "
                       f"B {vb.get('status', 'unchecked')}{' (' + '; '.join(vb['lost']) + ')' if vb.get('lost') else ''}")
        ra, rb = va.get("rendered"), vb.get("rendered")
        if ra is not None and rb is not None and ra != rb:
            out.append(f"{task}: the rendered text differs {_first_difference(ra, rb)}")
        elif (ra is None) != (rb is None):
            out.append(f"{task}: the rendered text is observed on one side only ({'B' if ra is None else 'A'}: {(vb if ra is None else va).get('why') or 'rendered by its server'})")
        if va.get("visual_tokens") is not None and vb.get("visual_tokens") is not None and va["visual_tokens"] != vb["visual_tokens"]:
            out.append(f"{task}: visual tokens per image differ: A {va['visual_tokens']}, B {vb['visual_tokens']}")
    return out


def against(args: argparse.Namespace, work: str) -> int:
    """``--against``: A, then B aligned to A's budget where an argument is observed to do it, each in its own
    process; the differences. Exit 0: both deliver every layout as written and identically; 1: a layout is
    lost on either side, or the two differ; 2: either side could not run."""
    log = args.log or os.path.join(work, "lmms-eval.log")
    paths = os.path.join(work, "a.json"), os.path.join(work, "b.json")
    codes = [_side(args, args.model, args.model_args, paths[0], log)]
    codes.append(_side(args, args.against, args.against_args, paths[1], log, align_to=paths[0] if os.path.exists(paths[0]) else None))
    if any(c not in (0, 1) for c in codes) or not all(os.path.exists(p) for p in paths):
        print(f"\ncheck-model --against: {'A' if codes[0] not in (0, 1) else 'B'} could not run (exit {max(codes)}); see {log}", file=sys.stderr)
        return 2
    a, b = (json.load(open(p)) for p in paths)
    diffs = differences(a, b)
    print(f"\n== A: {a['label']} against B: {b['label']}")
    if diffs:
        print("Not the same input:\n" + "\n".join(f"- {d}" for d in diffs))
    if any(codes) or diffs:
        return 1
    print("Both deliver every layout as written, the same text, the same images in the same order, at the same size.")
    return 0
