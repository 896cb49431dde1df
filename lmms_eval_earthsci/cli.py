"""``lmms-eval-earthsci``: small helpers around the ``lmms-eval`` CLI (``lmms-eval-earthsci COMMAND --help``); each
command's module is in :mod:`lmms_eval_earthsci.commands`, imported only when that command runs."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from collections.abc import Sequence
from types import MappingProxyType

from lmms_eval_earthsci import TASKS_DIR, registry
from lmms_eval_earthsci.core.adapter.harness import cli_value, output_to, run_lmms_eval
from lmms_eval_earthsci.core.settings import SettingsError
from lmms_eval_earthsci.testing.fixtures import write_mirror
from lmms_eval_earthsci.yamlgen import looks_ours_but_unknown, our_names

COMMANDS = MappingProxyType({
    "tasks-dir": "print the folder holding our task YAMLs (for `lmms-eval --include_path`)",
    "run": "run `lmms-eval ARGS...` with our tasks and hooks in, without relying on the entry point",
    "demo": "the offline demo: a tiny local VLM on the bundled sample mirror, then a report",
    "report": "Markdown tables and PNG charts from lmms-eval output folders, beside the papers' numbers",
    "mirror": "make a local mirror of our datasets (on a machine with the Hub): every benchmark's repos at their pins, then check-mirror",
    "check-mirror": "check a local mirror: repos present, revisions against our pins, every record valid",
    "write-fixtures": "write the small synthetic mirror the tests use",
    "rescore": "score a finished --log_samples / --predict_only run again (judge pass included) without the model, or import the authors' released outputs (--from)",
    "check-model": "does each of our prompt layouts reach this model class as written, and at what size do figures reach it? one doc per layout, one token each; exit 1 when a layout is lost (--against B: two classes or backends compared)",
    "mac": "`mac build INPUT --out DIR ...`: build a new MAC snapshot (CSVs, covers, stats, task folder) from your covers and stories",
})


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="lmms-eval-earthsci",
        description="Helpers around lmms-eval for the MSEarth, EMMA, SciFIBench, MuSciClaims and MAC tasks of lmms_eval_earthsci.",
        epilog="Run `lmms-eval-earthsci COMMAND --help` for a command's options.",
    )
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    sub.add_parser("tasks-dir", help=COMMANDS["tasks-dir"], description=COMMANDS["tasks-dir"])
    p = sub.add_parser("run", help=COMMANDS["run"], description=COMMANDS["run"] + " (every argument is passed to lmms-eval)", add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)
    sub.add_parser("demo", help=COMMANDS["demo"], add_help=False).add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("report", help=COMMANDS["report"], description=COMMANDS["report"])
    p.add_argument("paths", nargs="+", metavar="OUTPUT_PATH", help="lmms-eval --output_path folders or results files; the results of one model (split jobs) make one run")
    p.add_argument("--out", default=None, help="where report.md and the charts go (default: OUTPUT_PATH-report/ beside the first run folder)")
    p.add_argument("--paper-model", default=None, help="the paper model whose numbers sit beside ours (any spelling; default GPT-4o)")
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples for the 95%% intervals and paired comparisons (default 10000; 0: none)")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    p.add_argument("--no-html", action="store_true", help="write report.md and the charts only, not report.html and its sample browser")
    p.add_argument("--no-images", action="store_true", help="report.html without the docs' figures (no dataset is loaded)")
    p.add_argument(
        "--figure-budget", type=float, default=None, metavar="MB",
        help="disk for the figures' large copies (the overlay opened by clicking a figure), docs where runs disagree first, then docs some run got wrong (default 500; 0: thumbnails only)",
    )
    p.add_argument("--baseline", default=None, metavar="RUN", help="the run every other run is compared with (a label or a run folder; default: the first in order)")
    p.add_argument("--order", default=None, metavar="RUN,RUN,...", help="these runs first, in this order (labels or run folders); the rest after, by training step and name")
    p.add_argument("--label", action="append", default=[], metavar="FOLDER=NAME", help="name the run of FOLDER (a run folder, results file or label); repeatable")
    p.add_argument("--keep-reruns", action="store_true", help="a task run twice by the same model makes two runs (default: the newest results file is used, the other set aside and named)")
    p.add_argument("--verbose", action="store_true", help="print the whole report.md and the log (by default: where the outputs are and the headline; the log goes to report.log)")
    sub.add_parser("mirror", help=COMMANDS["mirror"], add_help=False).add_argument("args", nargs=argparse.REMAINDER)
    sub.add_parser("check-model", help=COMMANDS["check-model"], add_help=False).add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("check-mirror", help=COMMANDS["check-mirror"], description=COMMANDS["check-mirror"])
    p.add_argument("mirror", metavar="DIR", help="the mirror root (the folder EARTHSCI_DATA_MIRROR points at)")
    p.add_argument("--tasks", default=None, help="comma-separated task names (default: every task whose repo is in DIR)")
    p = sub.add_parser("rescore", help=COMMANDS["rescore"], add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("mac", help=COMMANDS["mac"], description=COMMANDS["mac"] + " (`lmms-eval-earthsci mac build --help` for its options)")
    p.add_argument("subcommand", choices=["build"])
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("write-fixtures", help=COMMANDS["write-fixtures"], description=COMMANDS["write-fixtures"])
    p.add_argument("dir", nargs="?", default="earthsci_fixture_mirror", metavar="DIR", help="target folder (default ./earthsci_fixture_mirror)")
    return ap


def _check_settings(argv: list[str]) -> int | None:
    """The EARTHSCI_* settings the command (and the run it may start) reads, at its start: 2 after one
    line per wrong value (core.settings), None when all is well. Help never stops on them."""
    if not argv or argv[0] not in COMMANDS or {"-h", "--help"} & set(argv):
        return None
    scope = argv[0]
    # the demo's own data (--data sample, its default) replaces EARTHSCI_DATA_MIRROR for its run
    ignore = ("EARTHSCI_DATA_MIRROR",) if scope == "demo" and not {"hub", "--data=hub"} & set(argv) else ()
    try:
        registry.enforce_settings(scope, ignore=ignore, who=f"lmms-eval-earthsci {scope}")
        if scope not in ("run", "tasks-dir", "mac"):  # the commands that iterate the benchmarks
            registry.benchmarks()  # one registered from outside that cannot be loaded: one line, here
    except SettingsError:
        return 2  # the lines are printed
    except registry.RegistryError as exc:
        print(f"lmms-eval-earthsci {scope}: {exc}", file=sys.stderr)
        return 2
    return None


def _typos(args: list[str]) -> list[str]:
    """A line per ``--tasks`` name that looks like one of ours (a benchmark's prefix: ``emma_...``) but is
    none of our tasks or groups, with the nearest of ours: lmms-eval itself says "Tasks not found" and
    exits 0. Other names (lmms-eval's own tasks, upstream ``emma``) pass untouched."""
    value = cli_value(args, "--tasks")
    if not value:
        return []
    ours = our_names()
    return [f"{name} is none of our tasks or groups ({hint})" for name in (x.strip() for x in value.split(",")) if (hint := looks_ours_but_unknown(name, ours))]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except Exception as exc:
        from lmms_eval_earthsci.core.upstream.ledger import in_one_line, known_cause  # noqa: PLC0415 - only when a command failed

        cause = known_cause(exc)
        if not cause:
            raise
        # an error whose cause and fix we know (the torchvision a later `pip install` brought back): one line, exit 2
        command = " ".join(["lmms-eval-earthsci", *argv[:1]])
        print(f"{command}: {in_one_line(exc)}{cause}", file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    from lmms_eval_earthsci import registration  # noqa: PLC0415 - the registry and the YAML generator (~30 ms): not for `--help` of the entry point alone

    status = _check_settings(argv)
    if status is not None:
        return status
    registration.start()  # our commands start the runtime (an import of ours installs nothing)
    if argv[:2] == ["mac", "build"]:
        from lmms_eval_earthsci.evals.mac.builder import main as build_main  # noqa: PLC0415 - heavy (numpy, the embedders): each command imports only what it runs

        return build_main(argv[2:])
    if argv[:1] == ["rescore"]:
        from lmms_eval_earthsci.commands.rescore import main as rescore_main  # noqa: PLC0415 - heavy (the judge and the data layer, ~50 ms): each command imports only what it runs

        return rescore_main(argv[1:])
    if argv[:1] == ["mirror"]:
        from lmms_eval_earthsci.commands.mirror import main as mirror_main  # noqa: PLC0415 - heavy (yaml, the data layer, ~50 ms): each command imports only what it runs

        return mirror_main(argv[1:])  # its own parser: `mirror --help` is its help
    if argv[:1] == ["check-model"]:
        from lmms_eval_earthsci.commands.check_model import main as check_main  # noqa: PLC0415 - heavy (the capture, lmms-eval when it runs): each command imports only what it runs

        return check_main(argv[1:])  # its own parser: `check-model --help` is its help
    if argv[:1] == ["demo"]:
        from lmms_eval_earthsci.commands.demo import main as demo_main  # noqa: PLC0415 - heavy (the judge client, ~40 ms): each command imports only what it runs

        return demo_main(argv[1:])  # its own parser: `demo --help` is its help
    if argv[:1] == ["run"] and argv[1:2] in (["-h"], ["--help"]):
        print(f"usage: lmms-eval-earthsci run LMMS_EVAL_ARGS...\n\n{COMMANDS['run']}: every argument is passed to lmms-eval, with\n--include_path {TASKS_DIR}\nadded unless given. `lmms-eval --help` lists lmms-eval's options.")
        return 0
    if argv[:1] == ["run"]:
        # passed on verbatim: argparse's REMAINDER would reject a leading --option
        a = argparse.Namespace(command=argv[0], args=argv[1:])
    else:
        a = _parser().parse_args(argv)
    if a.command == "tasks-dir":
        print(TASKS_DIR)
        return 0
    if a.command == "run":
        rest = list(a.args)
        typos = _typos(rest)
        if typos:
            print("\n".join(f"lmms-eval-earthsci run: {t}" for t in typos), file=sys.stderr)
            return 2
        if "--include_path" not in rest:
            rest = ["--include_path", TASKS_DIR, *rest]
        registration.register()  # what our entry point does, should this lmms-eval not load it
        return run_lmms_eval(rest)
    if a.command == "report":
        from lmms_eval_earthsci.commands.report import ReportError, default_out, terminal_summary, write_report  # noqa: PLC0415 - heavy (numpy, the report's modules, ~100 ms): each command imports only what it runs

        notes: list[str] = []
        out = a.out or default_out(a.paths[0])
        log = os.path.join(out, "report.log")
        made = not os.path.exists(out)
        os.makedirs(out, exist_ok=True)
        try:
            # lmms-eval's task index and dataset loads (the browser's figures) log to the terminal: to report.log
            with contextlib.nullcontext() if a.verbose else output_to(log):
                path, text = write_report(
                    a.paths, out, a.paper_model, resamples=a.resamples, seed=a.seed, html=not a.no_html, images=not a.no_images,
                    labels=a.label, order=[x for x in (a.order or "").split(",") if x.strip()], baseline_run=a.baseline, keep_reruns=a.keep_reruns,
                    figure_budget_mb=a.figure_budget, notes=notes,
                )
        except ReportError as exc:
            if made and os.listdir(out) in ([], ["report.log"]):
                shutil.rmtree(out, ignore_errors=True)
            print(f"lmms-eval-earthsci report: {exc}", file=sys.stderr)
            return 2
        print(text if a.verbose else terminal_summary(text))
        print(f"\nreport: {path}" + ("" if a.no_html else f"\nwith its sample browser: {os.path.join(os.path.dirname(path), 'report.html')} (open it from disk)"))
        print(f"summary: {os.path.join(os.path.dirname(path), 'summary.csv')} (and summary.json)" + ("" if a.verbose else f"\nlog: {log}"))
        for note in notes:
            print(note)
        return 0
    if a.command == "check-mirror":
        from lmms_eval_earthsci.commands.check_mirror import check_mirror  # noqa: PLC0415 - heavy (yaml, the data layer, ~50 ms): each command imports only what it runs

        if not os.path.isdir(a.mirror):
            print(f"lmms-eval-earthsci check-mirror: {a.mirror}: no such folder", file=sys.stderr)
            return 2
        status, text = check_mirror(a.mirror, a.tasks.split(",") if a.tasks else None)
        print(text if status != 2 else f"lmms-eval-earthsci check-mirror: {text}", file=sys.stdout if status == 0 else sys.stderr)
        return status
    if a.command == "write-fixtures":
        import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s): only write-fixtures loads it

        from lmms_eval_earthsci.core.data import fingerprint  # noqa: PLC0415 - the data layer (~35 ms): each command imports only what it runs

        datasets.disable_progress_bars()  # one line per repo, not one bar per parquet file

        def said(repo: str, folder: str) -> None:
            fp = fingerprint(folder)
            print(f"  {repo}: {fp['files']} files, {fp['bytes'] / 1e3:.0f} kB", flush=True)

        print(f"fixture mirror {os.path.abspath(a.dir)}:", flush=True)
        write_mirror(a.dir, on_repo=said)
        return 0
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    raise SystemExit(main())
