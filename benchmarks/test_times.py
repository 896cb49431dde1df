"""Where each test tier's time goes, and each budget beside its total, from one run (so a growing suite shows up
the day it grows, not the day CI's limit is crossed).

    .venv/bin/python benchmarks/test_times.py run [--readme] [TARGET ...]   # make TARGET for each (default: test test-fast)
    .venv/bin/python benchmarks/test_times.py report DIR [--readme]        # what a run wrote to DIR (.ci/run does this)

Each tier's pytest session writes what it cost into ``PYTEST_TIMES_DIR`` (``tests/conftest.py``: its wall time, each
test's set-up, call and teardown; ``PYTEST_TIER`` names the tier, each make target sets it); ``run`` and ``.ci/run``
write each make target's wall time beside them (``walls.txt``: ``<target> <seconds>``). The report, per tier:

- **wall**: the make target, start to end (a tier's venv set-up included: ``make test-oldest`` builds its venv once);
- **outside pytest**: the wall minus pytest's own (venv set-up, installs);
- **fixtures** and **test bodies**: the set-up (+ teardown) and call seconds of its tests, summed (with two workers the
  sums exceed the wall: they are where the time goes, not how long one waits);
- the budgets (``make test`` <= 480 s, ``make test-fast`` < 90 s, ``.ci/run`` <= 1,800 s) beside the totals, and the
  five slowest tests of each tier.

``--readme`` writes the table into the README between its ``test-times`` markers: the table is this command's.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
#: the lines we hold the loop to (README, "Tests"); a total past its line is printed as OVER
BUDGETS = {"make test": 480.0, "make test-fast": 90.0, "ci total": 1800.0}
START, END = "<!-- test-times: written by `make test-times` / .ci/run's report; do not edit by hand -->", "<!-- test-times: end -->"


def load(folder: str) -> tuple[dict[str, dict], dict[str, float]]:
    """({tier: {"wall": pytest's seconds, "tests": {nodeid: phases}}}, {target: the make target's wall seconds})."""
    tiers: dict[str, dict] = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            got = json.load(f)
        tier = tiers.setdefault(got["tier"], {"wall": 0.0, "tests": {}})
        tier["wall"] += got.get("wall") or 0.0
        tier["tests"].update(got["tests"])
    walls: dict[str, float] = {}
    path = os.path.join(folder, "walls.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                name, _, seconds = line.strip().rpartition(" ")
                if name:
                    walls[name] = float(seconds)
    return tiers, walls


def rows(tiers: dict[str, dict], walls: dict[str, float]) -> list[dict]:
    out = []
    for name in sorted(set(tiers) | {w for w in walls if w.startswith("make ")}, key=lambda n: (n != "make test", n)):
        tier = tiers.get(name, {"wall": 0.0, "tests": {}})
        tests = tier["tests"]
        fixtures = sum(p.get("setup", 0.0) + p.get("teardown", 0.0) for p in tests.values())
        bodies = sum(p.get("call", 0.0) for p in tests.values())
        wall = walls.get(name, tier["wall"])
        slowest = sorted(((sum(p.values()), t) for t, p in tests.items()), reverse=True)[:5]
        out.append({"tier": name, "wall": wall, "pytest": tier["wall"], "outside": max(wall - tier["wall"], 0.0) if tier["wall"] else None,
                    "fixtures": fixtures, "bodies": bodies, "tests": len(tests), "slowest": slowest, "budget": BUDGETS.get(name)})
    return out


def _s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f} s"


def table(found: list[dict], total: float | None) -> str:
    lines = ["| tier | wall | outside pytest (venv set-up) | fixtures (summed) | test bodies (summed) | tests | budget |", "|---|---|---|---|---|---|---|"]
    for r in found:
        budget = f"<= {r['budget']:,.0f} s" if r["budget"] else ""
        lines.append(f"| `{r['tier']}` | {_s(r['wall'])} | {_s(r['outside'])} | {_s(r['fixtures'])} | {_s(r['bodies'])} | {r['tests']:,} | {budget} |")
    if total is not None:
        lines.append(f"| `.ci/run` total | {_s(total)} | | | | | <= {BUDGETS['ci total']:,.0f} s |")
    return "\n".join(lines)


def report(folder: str, readme: bool = False) -> int:
    tiers, walls = load(folder)
    found = rows(tiers, walls)
    total = walls.get("ci total")
    print(table(found, total))
    print()
    for r in found:
        if r["budget"] is not None:
            print(f"budget: {r['tier']} {_s(r['wall'])} of {_s(r['budget'])}" + ("  OVER" if r["wall"] > r["budget"] else ""))
    if total is not None:
        print(f"budget: .ci/run {_s(total)} of {_s(BUDGETS['ci total'])}" + ("  OVER" if total > BUDGETS["ci total"] else ""))
    for r in found:
        if r["slowest"]:
            print(f"\nslowest of {r['tier']} (set-up + call + teardown):")
            for seconds, test in r["slowest"]:
                print(f"{seconds:8.1f}  {test}")
    if readme:
        write_readme(table(found, total))
    return 0


def write_readme(text: str) -> None:
    with open(README, encoding="utf-8") as f:
        doc = f.read()
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(doc):
        raise SystemExit(f"{README} has no test-times markers")
    stamp = time.strftime("%Y-%m-%d")
    with open(README, "w", encoding="utf-8") as f:
        f.write(pattern.sub(lambda _: f"{START}\n{text}\n\nMeasured {stamp} on a 2-core machine.\n{END}", doc))


def run(targets: list[str], readme: bool) -> int:
    """``make TARGET`` for each, timed, with the sessions writing their tests' times; then the report."""
    status = 0
    with tempfile.TemporaryDirectory() as folder:
        for target in targets:
            t0 = time.time()
            code = subprocess.run(["make", target], cwd=ROOT, env={**os.environ, "PYTEST_TIMES_DIR": folder}).returncode
            with open(os.path.join(folder, "walls.txt"), "a") as f:
                f.write(f"make {target} {time.time() - t0:.1f}\n")
            status = status or code
        report(folder, readme)
    return status


def main(argv: list[str]) -> int:
    readme = "--readme" in argv
    args = [a for a in argv if a != "--readme"]
    if args[:1] == ["report"] and len(args) == 2:
        return report(args[1], readme)
    if args[:1] == ["run"]:
        return run(args[1:] or ["test", "test-fast"], readme)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
