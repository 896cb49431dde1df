"""The task index on libyaml (inventory: "task index on libyaml"): every ``TaskManager`` parses each task YAML
lmms-eval ships with PyYAML's pure-Python loader (~2 s of every run's start on 2 cores); ``lmms_eval.utils``
gets libyaml's C parser for ``full_load`` instead, where PyYAML has it (the same documents:
tests/core/adapter/test_registration.py loads every YAML lmms-eval and we ship both ways)."""

from __future__ import annotations

from typing import Any

from lmms_eval_earthsci.core.hardening.inventory import ENTRIES
from lmms_eval_earthsci.core.upstream.patching import installed, patch


class LibYaml:
    """PyYAML as ``lmms_eval.utils`` uses it, its ``full_load`` on libyaml's C parser (``yaml.CFullLoader``: the
    same constructors and resolver as ``FullLoader``, the same documents); everything else is PyYAML's own. A
    constructor lmms-eval adds (``!function``) is added to the C loader too."""

    def __init__(self, yaml: Any) -> None:
        self._yaml = yaml

    def __getattr__(self, name: str) -> Any:
        return getattr(self._yaml, name)

    def full_load(self, stream: Any) -> Any:
        loader = self._yaml.CFullLoader(stream)
        # the pure-Python Reader's name, which lmms-eval's !function constructor reads (the YAML's folder)
        loader.name = getattr(stream, "name", "<file>") if not isinstance(stream, (str, bytes)) else "<unicode string>" if isinstance(stream, str) else "<byte string>"
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()

    def add_constructor(self, tag: str, constructor: Any, Loader: Any = None) -> None:  # noqa: N803 - PyYAML's own keyword
        self._yaml.add_constructor(tag, constructor, Loader=Loader)
        if Loader is None:
            self._yaml.add_constructor(tag, constructor, Loader=self._yaml.CFullLoader)


def index_on_libyaml() -> bool:
    """Every ``TaskManager`` parses each task YAML lmms-eval ships (~2,000 files, ~3,400 loads with their
    includes) with PyYAML's pure-Python loader: ~2 s of each run's start on 2 cores. Where PyYAML has libyaml,
    ``lmms_eval.utils`` gets the C parser instead (~0.3 s; tests/core/adapter/test_registration.py loads every YAML lmms-eval
    and we ship both ways and finds the same documents). Returns whether it is in place."""
    import yaml  # noqa: PLC0415 - PyYAML, which lmms-eval has imported already
    from lmms_eval import utils  # noqa: PLC0415 - lmms-eval's task-config loader

    if installed(ENTRIES["task index on libyaml"]):
        return True
    if getattr(utils, "yaml", None) is not yaml or not getattr(yaml, "__with_libyaml__", False):
        return False
    patch(utils, "yaml", LibYaml(yaml), entry=ENTRIES["task index on libyaml"])
    return True
