"""The fixture mirror: every registered benchmark's fixture repos (its ``fixtures`` writers, in
``evals/<benchmark>/fixtures.py``) written under one root in the Hub's own layout
(``<root>/<org>/<name>/``), the folder ``EARTHSCI_DATA_MIRROR`` points at. Tests, the demo and the
performance scripts run the real task loading code on it, the same ``datasets.load_dataset`` call as
the Hub path. Nothing in it is copied from any dataset: questions, options and figures are made up."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.core.benchmark import resolve_ref


def writers() -> dict[str, Callable[[str], str]]:
    """``{Hub repo: writer(root, repo)}`` of every registered benchmark."""
    return {repo: resolve_ref(ref) for b in registry.benchmarks() for repo, ref in b.fixtures.items()}


def write_mirror(root: str, repos: Sequence[str] | None = None, on_repo: Callable[[str, str], None] | None = None) -> str:
    """Write fixture copies of ``repos`` (default: every benchmark's repos) under ``root``; ``on_repo(repo,
    its folder)`` after each (the command's one line per repo)."""
    table = writers()
    unknown = sorted(set(repos or ()) - set(table))
    if unknown:
        raise KeyError(f"no fixture writer for {', '.join(unknown)} (known: {', '.join(sorted(table))})")
    for repo in repos or list(table):
        table[repo](root, repo)
        if on_repo is not None:
            on_repo(repo, os.path.join(root, *repo.split("/")))
    return root


if __name__ == "__main__":  # python -m lmms_eval_earthsci.testing.fixtures OUT_DIR
    import sys

    print(write_mirror(sys.argv[1] if len(sys.argv) > 1 else "earthsci_fixture_mirror"))
