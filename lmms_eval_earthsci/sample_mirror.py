"""The sample mirror the demo runs on: each benchmark keeps its few synthetic docs (written by its fixture
writer, in the Hub repo's own layout) in its folder, ``<benchmark folder>/sample_mirror/<org>/<name>/``;
:func:`sample_mirror_root` assembles them into one ``<org>/<name>`` tree of links (under
``$EARTHSCI_CACHE_DIR/sample_mirror``), the folder ``EARTHSCI_DATA_MIRROR`` points at. The files read
are the folders' own, byte for byte; the links are refreshed when a benchmark's folder moves (a new
install), so the tree never points at stale data."""

from __future__ import annotations

import os

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.core.settings import cache_dir


def sample_repos() -> dict[str, str]:
    """``{"org/name": the benchmark's copy}`` of every registered benchmark's sample data."""
    out = {}
    for b in registry.benchmarks():
        base = os.path.join(b.folder, "sample_mirror")
        if not os.path.isdir(base):
            continue
        for org in sorted(os.listdir(base)):
            for name in sorted(os.listdir(os.path.join(base, org))):
                repo = f"{org}/{name}"
                if repo in out:
                    raise registry.RegistryError(f"sample repo {repo} is shipped by two benchmarks ({out[repo]}, {b.name})")
                out[repo] = os.path.join(base, org, name)
    return out


def sample_mirror_root(root: str | None = None) -> str:
    """The assembled tree (made or refreshed now); returns its root."""
    root = root or cache_dir("sample_mirror")
    for repo, target in sample_repos().items():
        link = os.path.join(root, *repo.split("/"))
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.islink(link) and os.readlink(link) == target:
            continue
        if os.path.islink(link):
            os.unlink(link)
        elif os.path.exists(link):
            raise FileExistsError(f"{link} exists and is not a link to the sample data; remove it")
        tmp = f"{link}.{os.getpid()}.tmp"
        os.symlink(target, tmp, target_is_directory=True)
        os.replace(tmp, link)  # atomic: two demos starting at once both end with the right link
    return root
