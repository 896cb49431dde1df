"""``lmms-eval-earthsci``: small helpers around the ``lmms-eval`` CLI.

- ``lmms-eval-earthsci tasks-dir``: print the folder holding our task YAMLs (for ``--include_path``).
- ``lmms-eval-earthsci run ARGS...``: run ``lmms-eval ARGS...`` with our tasks on the include path,
  a fallback for when automatic registration is unavailable.
- ``lmms-eval-earthsci write-fixtures DIR``: write the synthetic local mirror used by the tests.
- ``lmms-eval-earthsci demo [--model M --model_args A --tasks T --limit N --data sample|hub]``: the
  offline demo (tiny local VLM, bundled sample mirror, real lmms-eval run, report).
- ``lmms-eval-earthsci report OUTPUT_PATH... [--out DIR] [--paper-model NAME]``: Markdown tables and PNG
  charts from one or several lmms-eval output folders, with the papers' numbers as reference.
"""

from __future__ import annotations

import sys
from typing import Sequence

USAGE = __doc__


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    cmd, rest = args[0], args[1:]
    if cmd == "tasks-dir":
        from lmms_eval_earthsci import TASKS_DIR

        print(TASKS_DIR)
        return 0
    if cmd == "run":
        from lmms_eval_earthsci import TASKS_DIR

        if "--include_path" not in rest:
            rest = ["--include_path", TASKS_DIR, *rest]
        sys.argv = ["lmms-eval", *rest]
        from lmms_eval.cli.dispatch import main as lmms_main

        return lmms_main() or 0
    if cmd == "demo":
        from lmms_eval_earthsci.demo import main as demo_main

        return demo_main(rest)
    if cmd == "report":
        import argparse

        from lmms_eval_earthsci.report import ReportError, write_report

        ap = argparse.ArgumentParser(prog="lmms-eval-earthsci report")
        ap.add_argument("paths", nargs="+")
        ap.add_argument("--out", default=None)
        ap.add_argument("--paper-model", default=None)
        a = ap.parse_args(rest)
        try:
            path, text = write_report(a.paths, a.out, a.paper_model)
        except ReportError as exc:
            print(f"lmms-eval-earthsci report: {exc}", file=sys.stderr)
            return 2
        print(text)
        print(f"\nreport: {path}")
        return 0
    if cmd == "write-fixtures":
        from lmms_eval_earthsci.testing.fixtures import write_mirror

        print(write_mirror(rest[0] if rest else "earthsci_fixture_mirror"))
        return 0
    print(f"unknown command {cmd!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
