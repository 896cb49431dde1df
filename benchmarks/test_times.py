"""The test suite's time per file and its slowest tests, from one run (so a new slow test is noticed the
day it lands). Extra arguments go to pytest (e.g. ``-n 2 --dist loadscope``, as ``make test`` runs).

    .venv/bin/python benchmarks/test_times.py [PYTEST_ARGS...]

Per file: the summed setup + call + teardown seconds of its tests (with several workers the sum exceeds
the wall time), the number of tests, and how many are marked e2e / slow; then the 15 slowest tests. The
fast tier is what is marked neither (``make test-fast``)."""

import collections
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    with tempfile.TemporaryDirectory() as d:
        xml = os.path.join(d, "junit.xml")
        t0 = time.time()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", "-o", "junit_family=xunit2", *argv, "tests"], cwd=ROOT)
        wall = time.time() - t0
        cases = ET.parse(xml).getroot().iter("testcase")
        per_file = collections.defaultdict(lambda: [0.0, 0])
        tests = []
        for c in cases:
            path = c.get("classname", "").replace(".", "/") + ".py"
            t = float(c.get("time") or 0)
            per_file[path][0] += t
            per_file[path][1] += 1
            tests.append((t, f"{path}::{c.get('name')}"))
    marks = _marks()
    print(f"\n{'seconds':>8}  {'tests':>5}  {'e2e':>4}  {'slow':>4}  file")
    for path, (t, n) in sorted(per_file.items(), key=lambda kv: -kv[1][0]):
        e2e, slow = marks.get(path, (0, 0))
        print(f"{t:8.1f}  {n:5d}  {e2e:4d}  {slow:4d}  {path}")
    print(f"{sum(t for t, _ in per_file.values()):8.1f}  {sum(n for _, n in per_file.values()):5d}              summed over files; wall time {wall:.0f} s")
    print("\nslowest tests:")
    for t, name in sorted(tests, reverse=True)[:15]:
        print(f"{t:8.1f}  {name}")
    return proc.returncode


def _marks() -> dict:
    """{file: (tests marked e2e, tests marked slow)} from pytest's own collection."""
    out = {}
    for marker in ("e2e", "slow"):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", "-m", marker, "tests"], cwd=ROOT, capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            if "::" in line:
                path = line.split("::", 1)[0]
                e2e, slow = out.get(path, (0, 0))
                out[path] = (e2e + (marker == "e2e"), slow + (marker == "slow"))
    return out


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
