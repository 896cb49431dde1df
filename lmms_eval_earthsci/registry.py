"""The benchmarks every command serves: ours (one line each below), then those registered from outside.

A lab registers its own benchmark on our core without touching this package, in either of two ways:

- an entry point in its package's metadata (installed with it)::

      [project.entry-points."lmms_eval_earthsci.benchmarks"]
      my_bench = "my_lab.my_bench.benchmark:BENCHMARK"

- or ``EARTHSCI_BENCHMARKS=my_lab.my_bench.benchmark`` (comma-separated modules, each defining
  ``BENCHMARK``), e.g. for a module on ``PYTHONPATH``.

Its ``Benchmark.task_dir`` names the folder of its task YAMLs; lmms-eval indexes it beside ours
(:mod:`.registration`). See README.md, "Adding a benchmark".
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import cast

from lmms_eval_earthsci.core.benchmark import Benchmark, resolve_ref
from lmms_eval_earthsci.core.settings import CORE, Setting, enforce, read_setting

# ours, in report order: one line per benchmark
BUILTIN = (
    "lmms_eval_earthsci.evals.emma.benchmark",
    "lmms_eval_earthsci.evals.msearth.benchmark",
    "lmms_eval_earthsci.evals.scifibench.benchmark",
    "lmms_eval_earthsci.evals.musciclaims.benchmark",
    "lmms_eval_earthsci.evals.mac.benchmark",
)
ENTRY_POINT_GROUP = "lmms_eval_earthsci.benchmarks"
ENV = "EARTHSCI_BENCHMARKS"


class RegistryError(RuntimeError):
    """A registered benchmark that cannot be loaded or clashes with another; the message names it."""


def _load(ref: str, source: str) -> Benchmark:
    if ":" not in ref:
        ref += ":BENCHMARK"
    try:
        spec = resolve_ref(ref)
    except Exception as exc:
        raise RegistryError(f"benchmark {ref!r} ({source}) cannot be imported: {type(exc).__name__}: {exc}") from exc
    if not isinstance(spec, Benchmark):
        raise RegistryError(f"benchmark {ref!r} ({source}) is a {type(spec).__name__}, not a lmms_eval_earthsci.core.benchmark.Benchmark")
    return spec


def _external() -> Iterable[tuple[str, str]]:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        yield ep.value, f"entry point {ep.name!r} of group {ENTRY_POINT_GROUP}"
    for module in read_setting(ENV).split(","):
        if module.strip():
            yield module.strip(), f"{ENV}"


@functools.cache
def _benchmarks(env: str) -> tuple[Benchmark, ...]:
    out: list[Benchmark] = [_load(ref, "built in") for ref in BUILTIN]
    for ref, source in _external():
        spec = _load(ref, source)
        if any(b.name == spec.name for b in out):
            if any(b is spec for b in out):
                continue  # registered twice (entry point and variable)
            raise RegistryError(f"benchmark {spec.name!r} ({source}) has the name of one already registered")
        if not spec.task_dir or not os.path.isdir(spec.task_dir):
            raise RegistryError(f"benchmark {spec.name!r} ({source}): task_dir {spec.task_dir!r} is not a folder (its task YAMLs go there)")
        out.append(spec)
    return tuple(out)


def benchmarks() -> tuple[Benchmark, ...]:
    """Every registered benchmark, ours first (loaded once per process and ``EARTHSCI_BENCHMARKS``)."""
    return _benchmarks(read_setting(ENV))


def builtin() -> tuple[Benchmark, ...]:
    return benchmarks()[: len(BUILTIN)]


def get(name: str) -> Benchmark:
    for b in benchmarks():
        if b.name == name:
            return b
    raise KeyError(name)


def benchmark_of(task: str) -> Benchmark | None:
    """The benchmark that owns ``task`` (by its name prefix or pattern), or None."""
    for b in benchmarks():
        if b.owns(task):
            return b
    return None


def external_task_dirs() -> list[str]:
    """The task folders of the benchmarks registered from outside (ours are all under TASKS_DIR)."""
    return [cast(str, b.task_dir) for b in benchmarks()[len(BUILTIN):]]  # _benchmarks checked each is a folder


def settings() -> list[Setting]:
    """Every ``EARTHSCI_*`` setting: the core's, then each benchmark's (ours alone when one registered
    from outside cannot be loaded: that error is reported where the benchmarks are used)."""
    try:
        bs = benchmarks()
    except RegistryError:
        bs = tuple(_load(ref, "built in") for ref in BUILTIN)
    out = list(CORE)
    for b in bs:
        out += [s for s in b.settings if s not in out]
    return out


def enforce_settings(scope: str, ignore: Iterable[str] = (), who: str = "lmms-eval-earthsci") -> None:
    """Check every setting ``scope`` reads (``run``, or a command's name) and warn about unknown
    ``EARTHSCI_`` names: a wrong value raises ``core.settings.SettingsError`` (exit status 2)."""
    enforce(settings(), scope, complete=True, ignore=ignore, who=who)
