"""Module names from before the one-folder-per-benchmark layout that files outside this package still
name: the YAMLs of every MAC snapshot built by ``lmms-eval-earthsci mac build`` up to 0.1.0 point at
``lmms_eval_earthsci.mac.tasks.*``. Importing such a name gives the module that lives on under its new
name (the same module object, so its state is shared); nothing else is aliased."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# old module prefix -> new one
ALIASES = {"lmms_eval_earthsci.mac": "lmms_eval_earthsci.evals.mac"}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        for old, new in ALIASES.items():
            if fullname == old or fullname.startswith(old + "."):
                target_name = new + fullname[len(old):]
                is_package = importlib.util.find_spec(target_name) is not None and fullname == old
                return importlib.util.spec_from_loader(fullname, self, origin=target_name, is_package=is_package)
        return None

    def create_module(self, spec):
        return importlib.import_module(spec.origin)

    def exec_module(self, module):
        pass  # already executed under its new name


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())  # before the path finder, which would load a second copy
