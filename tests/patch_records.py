"""What the processes of a real run patched, as they recorded it (``EARTHSCI_PATCH_RECORDS``), checked against
``core.activation.INVENTORY`` (every part's entries): every record is an entry (its kind, its owner, a target the entry covers), no
process holds code of ours in an upstream module or class that no record names, and every entry a run of the
tier installs was seen. Used by tests/core/adapter/test_patch_records_e2e.py and the model and vLLM tiers."""

from __future__ import annotations

import glob
import json
import os
import re
from importlib.metadata import version

from packaging.version import Version

from lmms_eval_earthsci.core.activation import INVENTORY
from lmms_eval_earthsci.core.upstream.inventory import resolve


def load(folder: str) -> list[dict]:
    """Each process's dump: {"argv", "records", "unrecorded"}."""
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            out.append(json.load(f))
    return out


def covers(entry_target: str, record_target: str) -> bool:
    """Whether an entry's target covers what a record says was patched: the same target, or the same attribute
    on a subclass (a processor class wrapped for the run, the run's model class), or an instance's attribute or
    held mapping of a subclass of the entry's class."""
    if record_target == entry_target:
        return True
    rmod, _, rqual = record_target.partition(":")
    rqual = re.sub(r"\[.*\]$", "", rqual)  # an item of a mapping the instance holds
    rcls, _, rattr = rqual.rpartition(".")
    try:
        rclass = resolve(f"{rmod}:{rcls.removesuffix('()')}")
        target = resolve(entry_target)
    except Exception:
        return False
    if not isinstance(rclass, type):
        return False
    if isinstance(target, type):  # an instance's attribute, or a mapping it holds
        return issubclass(rclass, target) and rcls.endswith("()")
    owner, _, attr = entry_target.rpartition(".")
    try:
        owner_class = resolve(owner)
    except Exception:
        return False
    return isinstance(owner_class, type) and issubclass(rclass, owner_class) and rattr == attr


def check(dumps: list[dict], installs: set[str]) -> dict[str, set[str]]:
    """Assert the records of ``dumps`` against the inventory, and that every entry installed by the runs named in
    ``installs`` (``Entry.installed_by``) and present in this lmms-eval was recorded. One tap per upstream target: in
    each process no callable is wrapped under two entries (the parts that need the same one subscribe to its tap).
    Returns {entry: targets}."""
    assert dumps, "no process wrote its records"
    seen: dict[str, set[str]] = {}
    bad = []
    for dump in dumps:
        assert dump["unrecorded"] == [], f"patched without a record ({' '.join(dump['argv'][:3])}): {dump['unrecorded']}"
        wrapped: dict[str, set[str]] = {}
        for r in dump["records"]:
            if r["kind"] == "wraps":
                wrapped.setdefault(r["target"], set()).add(r["entry"])
        twice = {target: sorted(entries) for target, entries in wrapped.items() if len(entries) > 1}
        assert twice == {}, f"wrapped under more than one entry ({' '.join(dump['argv'][:3])}): {twice}"
        for r in dump["records"]:
            t = INVENTORY[r["entry"]]
            if r["kind"] != t.kind or r["owner"] != t.owner or not covers(t.target, r["target"]):
                bad.append((r, (t.kind, t.owner, t.target)))
            seen.setdefault(r["entry"], set()).add(r["target"])
    assert bad == [], bad
    installed = Version(version("lmms-eval"))
    expected = {t.name for t in INVENTORY if t.kind != "reads" and t.installed_by in installs and installed >= Version(t.since)}
    assert expected - set(seen) == set(), f"inventory entries no run recorded: {sorted(expected - set(seen))}"
    return seen
