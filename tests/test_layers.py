"""The package's layers, read from its own imports (function-local ones included): no import circle; the
core imports no benchmark and no command; a benchmark imports the core and its own folder, never
another benchmark or a command."""

import ast
import os
import re

import lmms_eval_earthsci

PKG = "lmms_eval_earthsci"
ROOT = os.path.dirname(os.path.abspath(lmms_eval_earthsci.__file__))
# the layers above the benchmarks: the registry and the commands on it
COMMANDS = ("registry", "registration", "yamlgen", "report", "rescore", "mirror", "mirror_build", "sample_mirror", "demo", "model_check", "cli", "testing.fixtures")


def modules() -> dict[str, str]:
    out = {}
    for base, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__")) and d != "sample_mirror"]
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(base, name), ROOT)[: -len(".py")].replace(os.sep, ".")
                mod = PKG if rel == "__init__" else f"{PKG}.{rel.removesuffix('.__init__')}"
                out[mod] = os.path.join(base, name)
    return out


def imports(mods: dict[str, str]) -> dict[str, set[str]]:
    """Each module's imports of our modules (a ``from A import B`` of submodule B counts as A.B)."""
    graph = {}
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module for a in node.names]
            else:
                continue
            targets |= {n for n in names if n in mods and n != mod}
        graph[mod] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layer(mod: str) -> str:
    rest = mod[len(PKG) + 1 :]
    if rest.startswith("core"):
        return "core"
    if rest.startswith("evals."):
        return "bench:" + rest.split(".")[1]
    if any(rest == c or rest.startswith(c + ".") for c in COMMANDS):
        return "command"
    return "base"  # the package root, _legacy, tinyvlm, testing helpers


GRAPH = imports(modules())


def test_the_walk_sees_the_package():
    # its own premise: the modules and the edges we know are there
    assert {f"{PKG}.core.judge.client", f"{PKG}.evals.mac.tasks", f"{PKG}.report.sections", f"{PKG}.registry"} <= set(GRAPH)
    assert f"{PKG}.core.judge.cache" in GRAPH[f"{PKG}.core.judge.client"]
    assert f"{PKG}.evals.mac.scoring" in GRAPH[f"{PKG}.evals.mac.tasks"]
    # a circle in a toy graph is found
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    assert cycles(GRAPH) == []


def test_the_core_imports_no_benchmark_and_no_command():
    bad = [f"{m} -> {t}" for m, ts in GRAPH.items() if layer(m) == "core" for t in ts if layer(t) not in ("core", "base")]
    assert bad == []


def test_a_benchmark_imports_the_core_and_its_own_folder_only():
    bad = [f"{m} -> {t}" for m, ts in GRAPH.items() if layer(m).startswith("bench:") for t in ts if layer(t) not in ("core", "base", layer(m))]
    assert bad == []


def test_base_modules_import_nothing_above_them():
    bad = [f"{m} -> {t}" for m, ts in GRAPH.items() if layer(m) == "base" for t in ts if layer(t) != "base"]
    assert bad == []


def reach(start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others (function-local imports included)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for t in GRAPH.get(todo.pop(), ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_a_benchmarks_names_import_without_installing_hooks():
    """Its declaration, fixtures and report spec (what the registry, tests and ``report`` import) reach
    neither its task module nor the hooks: importing a task module installs the run hooks inside lmms-eval
    (``core.hooks.ensure_runtime_hooks``), so the names they share live where nothing is installed."""
    hooked = {f"{PKG}.core.hooks"} | {m for m in GRAPH if m.endswith(".tasks") and layer(m).startswith("bench:")}
    assert len(hooked) >= 6  # its premise: the hooks and the five task modules
    bad = {}
    for m in GRAPH:
        if layer(m).startswith("bench:") and m.rsplit(".", 1)[1] in ("benchmark", "fixtures", "report"):
            if reach(m) & hooked:
                bad[m] = sorted(reach(m) & hooked)
    assert bad == {}


def test_each_dataset_repo_id_is_written_once():
    """A Hub repo id a benchmark declares is spelled in one module of the package (its benchmark.py),
    the others import it."""
    from lmms_eval_earthsci import registry

    repos = {r for b in registry.builtin() for r in b.datasets}
    assert len(repos) >= 10
    where: dict[str, list[str]] = {r: [] for r in repos}
    for mod, path in modules().items():
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in where:
                where[node.value].append(mod)
    assert {r: ms for r, ms in where.items() if len(ms) != 1} == {}


# a ruff noqa comment: its codes, then whatever follows them on the line
NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)(.*)$")


def test_each_function_local_import_says_why():
    """A function-local import (ruff's PLC0415, on in pyproject.toml) stays only to keep start-up cheap, to
    break an import circle or to reach a module that may be absent, and its line says which: ``# noqa: PLC0415 - <why>``."""
    said, bare = [], []
    for path in modules().values():
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = NOQA.search(line)
                if m and "PLC0415" in re.split(r"\s*,\s*", m.group(1)):
                    (said if re.match(r"\s*-\s*\S", m.group(2)) else bare).append(f"{os.path.relpath(path, ROOT)}:{n}")
    assert said  # its premise: the package has such imports, and the scan sees them
    assert bare == []
