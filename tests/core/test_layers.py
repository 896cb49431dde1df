"""The package's layers, read from its own imports (function-local ones included): no import circle; the
core imports no benchmark and no command; a benchmark imports the core and its own folder, never
another benchmark or a command; inside the core each concern imports only the ones below it, and only the
lmms-eval adapter (``core/adapter``) imports or reads lmms-eval beyond the modules a task author uses."""

import ast
import os
import re

import lmms_eval_earthsci

PKG = "lmms_eval_earthsci"
ROOT = os.path.dirname(os.path.abspath(lmms_eval_earthsci.__file__))
# the layers above the benchmarks: the registry and the commands on it
COMMANDS = ("commands", "registry", "registration", "yamlgen", "sample_mirror", "cli", "testing.fixtures")


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
    assert {f"{PKG}.core.judge.client", f"{PKG}.evals.mac.tasks", f"{PKG}.commands.report.sections", f"{PKG}.registry"} <= set(GRAPH)
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
    """Its declaration, fixtures, report spec and YAML generator (what the registry, tests, ``report`` and
    ``yamlgen`` import) reach neither its task module (the functions lmms-eval calls, and their imports) nor what
    installs the hooks (``core.activation``): the names they share live where nothing is installed, cheap to
    import. ``yamlgen`` too, with the generators it imports by name (``Benchmark.yaml_files``)."""
    from lmms_eval_earthsci import registry

    hooked = {f"{PKG}.core.activation"} | {m for m in GRAPH if m.endswith(".tasks") and layer(m).startswith("bench:")}
    assert len(hooked) >= 6 and hooked <= set(GRAPH)  # its premise: the hooks and the five task modules, all walked
    bad = {}
    for m in GRAPH:
        if layer(m).startswith("bench:") and m.rsplit(".", 1)[1] in ("benchmark", "fixtures", "report", "yamls"):
            if reach(m) & hooked:
                bad[m] = sorted(reach(m) & hooked)
    generators = {b.yaml_files.partition(":")[0] for b in registry.builtin() if b.yaml_files}
    assert generators == {m for m in GRAPH if m.endswith(".yamls") and layer(m).startswith("bench:")}  # its premise: each benchmark's, walked
    yamlgen = reach(f"{PKG}.yamlgen").union(generators, *map(reach, generators))
    if yamlgen & hooked:
        bad[f"{PKG}.yamlgen"] = sorted(yamlgen & hooked)
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


# --------------------------------------------------------------------------- the core by concern

CORE = f"{PKG}.core"
# each part of the core -> the parts it may import (core/__init__.py and the contributors' README draw this)
MAY_IMPORT = {
    "runtime": set(),
    "settings": {"runtime"},
    "data": {"settings", "runtime"},
    "scoring": {"settings", "data", "runtime"},
    "prompts": {"settings", "data", "runtime"},
    "judge": {"settings", "data", "scoring", "prompts", "runtime"},
    "benchmark": {"settings", "scoring"},
    "yamls": {"scoring"},
    # what every part that touches upstream stands on: the patch primitive, its records and audit, the taps, the
    # inventory's entry type, the run's ledger
    "upstream": {"runtime", "settings", "data"},
    # the integration with lmms-eval: what running our tasks needs
    "adapter": {"runtime", "settings", "data", "scoring", "prompts", "judge", "benchmark", "yamls", "upstream"},
    # run-wide hardening and the model boundary: each on the integration, neither on the other
    "hardening": {"runtime", "settings", "data", "adapter", "upstream"},
    "boundary": {"runtime", "settings", "data", "prompts", "adapter", "upstream"},
    # the one call of registration and of a benchmark: the three parts installed, and every part's inventory
    "activation": {"runtime", "settings", "data", "adapter", "hardening", "boundary", "upstream"},
}
# the parts that may import or read lmms-eval's internals
LMMS_EVAL_PARTS = ("adapter", "hardening", "boundary", "upstream")


def part(mod: str) -> str | None:
    """The part of the core ``mod`` belongs to (its subpackage, or the top-level module), None outside it."""
    if not mod.startswith(CORE + "."):
        return None
    return mod[len(CORE) + 1 :].split(".")[0]


def test_the_core_reads_as_its_parts():
    # its premise: every module of the core is in one of the parts, and every part has modules
    parts = {part(m) for m in GRAPH if m.startswith(CORE + ".")}
    assert parts == set(MAY_IMPORT)
    assert {f"{CORE}.upstream.patching", f"{CORE}.upstream.taps", f"{CORE}.upstream.ledger", f"{CORE}.scoring.metrics", f"{CORE}.data.loading", f"{CORE}.judge.task_pass", f"{CORE}.prompts.messages",
            f"{CORE}.hardening.exit_codes", f"{CORE}.boundary.probe", f"{CORE}.runtime", f"{CORE}.activation"} <= set(GRAPH)


def test_each_part_of_the_core_imports_only_the_parts_below_it():
    bad = [f"{m} -> {t}" for m, ts in GRAPH.items() if part(m) for t in ts if part(t) and part(t) != part(m) and part(t) not in MAY_IMPORT[part(m)]]
    assert bad == []


def test_no_import_circles_between_the_parts_of_the_core():
    parts: dict[str, set[str]] = {}
    for m, ts in GRAPH.items():
        if part(m):
            parts.setdefault(part(m), set()).update(part(t) for t in ts if part(t) and part(t) != part(m))
    assert cycles(parts) == []


# the lmms-eval modules a task author's code uses (a task folder's utils.py, a metric, a filter): any layer may
# import them; everything else of lmms-eval is its internals, reached only from core/adapter
PUBLIC_LMMS_EVAL = ("lmms_eval.api.registry", "lmms_eval.api.metrics", "lmms_eval.api.instance", "lmms_eval.filters", "lmms_eval.tasks._task_utils")


def _is_public(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PUBLIC_LMMS_EVAL)


def lmms_eval_reaches(source: str, path: str = "<source>") -> list[tuple[int, str]]:
    """``(line, lmms-eval module)`` for each import of an lmms-eval module in ``source`` and each read of one
    by name: ``sys.modules[...]``, ``sys.modules.get(...)``, ``... in sys.modules``, ``importlib.import_module(...)``,
    ``__import__(...)``, ``find_spec(...)``."""
    out = []

    def named(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"lmms_eval(\.\w+)*", node.value):
            return node.value
        return None

    def is_sys_modules(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys"

    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name == "lmms_eval" or a.name.startswith("lmms_eval.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (node.module == "lmms_eval" or node.module.startswith("lmms_eval.")):
            out += [(node.lineno, f"{node.module}.{a.name}" if node.module == "lmms_eval" else node.module) for a in node.names]
        elif isinstance(node, ast.Subscript) and is_sys_modules(node.value) and (name := named(node.slice)):
            out.append((node.lineno, name))
        elif isinstance(node, ast.Compare) and any(is_sys_modules(c) for c in node.comparators) and (name := named(node.left)):
            out.append((node.lineno, name))
        elif isinstance(node, ast.Call) and node.args and (name := named(node.args[0])):
            f = node.func
            callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if callee in ("import_module", "__import__", "find_spec") or (callee == "get" and isinstance(f, ast.Attribute) and is_sys_modules(f.value)):
                out.append((node.lineno, name))
    return out


def test_the_scan_sees_every_way_of_reaching_lmms_eval():
    # its premise: each form is found, public modules are told apart, and the adapter's reaches are seen
    source = (
        "import sys, importlib\nimport lmms_eval.evaluator\nfrom lmms_eval import utils\nfrom lmms_eval.api.registry import register_metric\n"
        "a = sys.modules.get('lmms_eval.tasks')\nb = 'lmms_eval.api.task' in sys.modules\nc = sys.modules['lmms_eval.models']\n"
        "d = importlib.import_module('lmms_eval.caching')\ne = 'lmms_eval_earthsci.core' in sys.modules\nf = ['-m', 'lmms_eval']\n"
    )
    found = lmms_eval_reaches(source)
    assert found == [(2, "lmms_eval.evaluator"), (3, "lmms_eval.utils"), (4, "lmms_eval.api.registry"), (5, "lmms_eval.tasks"), (6, "lmms_eval.api.task"), (7, "lmms_eval.models"), (8, "lmms_eval.caching")]
    assert [m for _, m in found if not _is_public(m)] == ["lmms_eval.evaluator", "lmms_eval.utils", "lmms_eval.tasks", "lmms_eval.api.task", "lmms_eval.models", "lmms_eval.caching"]
    adapter = {m for m, path in modules().items() if part(m) in LMMS_EVAL_PARTS for _, m in lmms_eval_reaches(open(path, encoding="utf-8").read(), path)}
    assert {"lmms_eval.tasks", "lmms_eval.api.task", "lmms_eval.evaluator", "lmms_eval.utils", "lmms_eval.protocol"} <= adapter


def test_only_the_adapter_imports_or_reads_lmms_eval_internals():
    bad = []
    for mod, path in modules().items():
        if part(mod) in LMMS_EVAL_PARTS:
            continue
        with open(path, encoding="utf-8") as f:
            bad += [f"{os.path.relpath(path, ROOT)}:{line} {name}" for line, name in lmms_eval_reaches(f.read(), path) if not _is_public(name)]
    assert bad == []


def test_the_public_lmms_eval_modules_exist():
    """The allowlist names modules the installed lmms-eval has (a stale entry would allow nothing real); found
    on disk, not imported (lmms_eval.tasks indexes every task at import)."""
    import importlib.util

    import pytest

    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("lmms-eval is not installed")
    root = list(spec.submodule_search_locations)[0]

    def on_disk(module: str) -> bool:
        rel = os.path.join(root, *module.split(".")[1:])
        return os.path.isfile(rel + ".py") or os.path.isdir(rel)  # a module, or a package (_task_utils has no __init__)

    assert on_disk("lmms_eval.api.task") and not on_disk("lmms_eval.no_such_module")  # its premise
    assert [m for m in PUBLIC_LMMS_EVAL if not on_disk(m)] == []


def test_each_lmms_eval_target_of_the_inventory_is_the_adapters():
    """Every inventory entry on an lmms-eval target is owned by a module of the three parts that may touch it
    (the integration, the hardening, the model boundary); the one exception is a guard in our own list type
    that reads nothing of lmms-eval (the qwen3_vl system turn)."""
    from lmms_eval_earthsci.core.activation import INVENTORY

    outside = [(t.name, t.owner) for t in INVENTORY if t.target.startswith("lmms_eval.") and part(t.owner) not in LMMS_EVAL_PARTS]
    assert outside == [("task system turn", f"{CORE}.prompts.messages")]
    assert all(t.owner in GRAPH for t in INVENTORY)


def test_each_part_that_touches_upstream_shows_itself_in_ten_lines():
    """The README of upstream, the integration, the hardening and the boundary opens with the part in ten lines at
    most: what it wraps or taps, what it subscribes to, what it writes."""
    for name in ("upstream", "adapter", "hardening", "boundary"):
        with open(os.path.join(ROOT, "core", name, "README.md"), encoding="utf-8") as f:
            text = f.read()
        block = re.search(r"^```\n(.*?)\n```", text, re.S | re.M)
        assert block, name
        lines = block.group(1).splitlines()
        heads = {line.split()[0] for line in lines if line and not line.startswith(" ")}
        assert len(lines) <= 10 and {"subscribes", "writes"} <= heads and heads & {"taps", "wraps"}, (name, len(lines), heads)
