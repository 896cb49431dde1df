"""Module names from before a layout move that files outside this package still name, and only those.

A user's MAC snapshot (the ``tasks/`` folder ``lmms-eval-earthsci mac build`` writes into the user's
folder, run with ``--include_path``) keeps the ``!function`` paths of the version that built it. Every
snapshot built before the core was grouped by concern (``tests/data/mac_snapshot_v0_1`` is one; git log
has when) names exactly two of our old module names:

- ``lmms_eval_earthsci.mac`` (``!function lmms_eval_earthsci.mac.tasks.*`` in ``_template_yaml`` and the
  MAC aggregations of each task YAML), written up to the one-folder-per-benchmark move: now
  ``lmms_eval_earthsci.evals.mac``;
- ``lmms_eval_earthsci.core.metrics`` (``aggregation: !function lmms_eval_earthsci.core.metrics.mean_present``,
  the breakdowns and the lenient accuracy of each task YAML): now ``lmms_eval_earthsci.core.scoring.metrics``.

One more is kept for a lab's code: the contributors' README told a lab's benchmark to call
``lmms_eval_earthsci.core.adapter.hooks.ensure_runtime_hooks()`` at the end of its task module (from the move by
concern to the adapter's split into integration, hardening and model boundary); that module is now
``lmms_eval_earthsci.core.activation``, which keeps ``ensure_runtime_hooks`` beside the one call that replaces it
(``activate``).

``report`` reads those aggregation names from the snapshot's YAMLs (the run's ``--include_path``) and looks
their kernels up (``core.scoring.stats.kernels()``, a benchmark's kernels) under :func:`today_name`'s names
(``yamlgen.metric_aggregations`` translates them). Results
files carry no module name of ours: lmms-eval writes a task's functions into them as ``str(function)``
(``"<function mean_present at 0x...>"``). Our shipped task YAMLs are regenerated with the package, and the
contributors' README names only today's modules. No other old name is aliased (the other 23 modules that
left ``core``'s top level in that move import only under their new names).

Importing an old name gives the module that lives on under its new name (the same module object, so its
state is shared, and its ``__spec__`` stays the new one); :func:`today_name` maps a dotted name written under
an old name (an aggregation in a snapshot's YAML, a kernel key) to the new one."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import MappingProxyType

# old module name (a prefix: its submodules follow) -> new one
ALIASES = MappingProxyType({
    "lmms_eval_earthsci.mac": "lmms_eval_earthsci.evals.mac",
    "lmms_eval_earthsci.core.metrics": "lmms_eval_earthsci.core.scoring.metrics",
    # what the contributors' README told a lab's task module to call, until activate()
    "lmms_eval_earthsci.core.adapter.hooks": "lmms_eval_earthsci.core.activation",
})


def today_name(dotted: str) -> str:
    """``dotted`` (``module.attr``, ``module:attr`` or a module) under today's module names."""
    for old, new in ALIASES.items():
        if dotted == old or dotted.startswith((old + ".", old + ":")):
            return new + dotted[len(old):]
    return dotted


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        target_name = today_name(fullname)
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
