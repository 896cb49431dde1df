"""Module names from before a layout move, which files outside this package still name:

- the YAMLs of every MAC snapshot built by ``lmms-eval-earthsci mac build`` up to 0.1.0 point at
  ``lmms_eval_earthsci.mac.tasks.*`` (before the one-folder-per-benchmark layout), and every snapshot,
  task YAML or results file written before the core was grouped by concern names
  ``lmms_eval_earthsci.core.<module>.*`` (``!function`` metrics and aggregations);
- a lab's benchmark imports ``core.hooks``, ``core.messages``, ``core.metrics``, ... (the contributors'
  README invited it).

Importing an old name gives the module that lives on under its new name (the same module object, so its
state is shared, and its ``__spec__`` stays the new one); :func:`current` maps a dotted name written under
an old name (a results file's aggregation, a kernel key) to the new one. Nothing else is aliased.
``core.data`` and ``core.judge`` kept their names (``core.data`` is now a package whose ``__init__``
re-exports what a benchmark used of the module). The lmms-eval hooks that left a module for the adapter are
not aliased back: ``core.data``'s ``install_mirror_hook`` / ``install_record_gate`` / ``validate_task``
(now ``core.adapter.task_data``), ``core.judge_pass``'s ``install_judge_hook`` / ``run_task_pass`` /
``after_filters`` (now ``core.adapter.judge_hook``), ``core.passthrough``'s ``remember`` (now
``core.data.loading``)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

_CORE = "lmms_eval_earthsci.core"
# old module name (a prefix: its submodules follow) -> new one
ALIASES = {
    "lmms_eval_earthsci.mac": "lmms_eval_earthsci.evals.mac",
    # the core grouped by concern (adapter, scoring, data, prompts, judge)
    **{f"{_CORE}.{old}": f"{_CORE}.adapter.{old}" for old in ("capture", "harness", "hooks", "interleave", "layout_probe", "observe", "passthrough", "patching", "run_status", "unavailable")},
    **{f"{_CORE}.{old}": f"{_CORE}.scoring.{old}" for old in ("circular", "extraction", "metrics", "papers", "similarity", "stats", "textmetrics")},
    **{f"{_CORE}.{old}": f"{_CORE}.data.{old}" for old in ("hub", "releases", "repo_files")},
    **{f"{_CORE}.{old}": f"{_CORE}.prompts.{old}" for old in ("layout", "messages")},
    f"{_CORE}.judge_pass": f"{_CORE}.judge.task_pass",
    f"{_CORE}.judge_failures": f"{_CORE}.judge.failures",
}


def current(dotted: str) -> str:
    """``dotted`` (``module.attr``, ``module:attr`` or a module) under today's module names."""
    for old, new in ALIASES.items():
        if dotted == old or dotted.startswith((old + ".", old + ":")):
            return new + dotted[len(old):]
    return dotted


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        target_name = current(fullname)
        if target_name == fullname:
            return None
        real = importlib.util.find_spec(target_name)
        is_package = real is not None and real.submodule_search_locations is not None  # a module stays a module
        return importlib.util.spec_from_loader(fullname, self, origin=target_name, is_package=is_package)

    def create_module(self, spec):
        module = importlib.import_module(spec.origin)
        spec.loader_state = module.__spec__  # the import system sets the alias's spec on the module next
        return module

    def exec_module(self, module):
        # already executed under its new name: its own spec back
        own = getattr(module.__spec__, "loader_state", None)
        if own is not None:
            module.__spec__ = own


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())  # before the path finder, which would load a second copy
