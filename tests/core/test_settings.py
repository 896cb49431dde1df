"""Every EARTHSCI_* setting is declared once (core.settings, a benchmark's Benchmark.settings) and checked
before the work that uses it: a wrong value is one line naming the variable, the value and the valid
values, and the process stops with exit status 2 whatever --verbosity is; an unknown EARTHSCI_ name is a
warning naming the nearest known one."""

import glob
import os
import re
import sys
import time

import forkserver
import pytest
from conftest import ROOT, cli_env, openai_args

from lmms_eval_earthsci import registry
from lmms_eval_earthsci.cli import main as cli_main
from lmms_eval_earthsci.core import settings as core_settings

FOLDER = os.path.dirname(os.path.abspath(__file__))
NO_SUCH = "/nonexistent/earthsci/folder"

# per setting: values that must pass, values that must fail (a test per variable: a setting missing
# here fails test_every_setting_has_a_case)
CASES = {
    "EARTHSCI_BENCHMARKS": (["my_lab.bench", "a.b:BENCH, c.d"], ["my lab", "a.b:", "1abc", ",,"]),
    # /proc/nope/x: root passes every permission check there, and creating it fails (found by trying)
    "EARTHSCI_CACHE_DIR": ([FOLDER, "{tmp}/new/sub"], [FOLDER + "/test_settings.py/sub", FOLDER + "/test_settings.py", "/proc/nope/x"]),
    "EARTHSCI_DATA_MIRROR": ([FOLDER], [NO_SUCH, FOLDER + "/test_settings.py"]),
    "EARTHSCI_BAD_RECORDS": (["raise", "skip", "SKIP"], ["skipp", "ignore"]),
    "EARTHSCI_RECOVER_RESPONSE_CACHE": (["0", "1", "false", "On"], ["2", "nah"]),
    "EARTHSCI_HARDENING": (["0", "1", "off", "Yes"], ["2", "lmms"]),
    "EARTHSCI_PATCH_RECORDS": (["{tmp}/records"], ["/proc/nope/x"]),
    "EARTHSCI_JUDGE_ON_FAILURE": (["wrong", "raise"], ["boom", "skip"]),
    "EARTHSCI_WORDNET": ([FOLDER], [NO_SUCH]),
    "EARTHSCI_BERTSCORE_MODEL": (["roberta-large", "FacebookAI/roberta-large", FOLDER], [NO_SUCH, "./missing", "a/b/c", "bad name"]),
    "EARTHSCI_BERTSCORE_LAYERS": (["17", "1"], ["0", "-1", "17.5", "seventeen"]),
    "EARTHSCI_SIMILARITY_MODEL": (["sentence-transformers/all-MiniLM-L6-v2", FOLDER], [NO_SUCH, "~/no/such/model"]),
    "EARTHSCI_MAC_IMAGE_MAX_SIDE": (["512", "0", "none", "Null"], ["-3", "big", "1.5"]),
    "EARTHSCI_MUSCICLAIMS_MAX_PIXELS": (["0", "1000000"], ["-1", "1e6", "none"]),
}
JUDGE_CASES = {
    "BASE_URL": (["http://judge:8000/v1", "https://api.example.com/v1"], ["judge:8000", "ftp://x/y", "http://"]),
    "MODEL": (["gpt-4o", "any thing"], []),
    "API_KEY": (["sk-x"], []),
    "API_TYPE": (["openai", "azure", "Azure"], ["vllm", "open-ai"]),
    "CONCURRENCY": (["1", "64"], ["0", "-2", "many", "1.5"]),
    "TIMEOUT": (["0.5", "120"], ["0", "-1", "nan", "inf", "soon"]),
    "MAX_RETRIES": (["0", "5"], ["-1", "x"]),
    "MAX_TOKENS": (["0", "512"], ["-5", "lots"]),
    "CACHE": (["off", "NONE", "0", "{tmp}/judge"], [FOLDER + "/test_settings.py/cache"]),
    "CACHE_JOURNAL": (["wal", "DELETE", "truncate", "persist"], ["memory", "wall"]),
    "BREAKER": (["0", "5"], ["-1", "never"]),
    "REASONING_EFFORT": (["low", "high"], []),
    "CA_BUNDLE": ([os.path.abspath(__file__)], [NO_SUCH, FOLDER]),
}
for _prefix in ("EARTHSCI_JUDGE", "EARTHSCI_DAD", "EARTHSCI_RM", "EARTHSCI_SCALAR_RM"):
    for _suffix, _case in JUDGE_CASES.items():
        CASES[f"{_prefix}_{_suffix}"] = _case

SETTINGS = {s.name: s for s in registry.settings()}


def test_every_setting_has_a_case_and_every_name_the_code_reads_is_a_setting():
    assert set(SETTINGS) == set(CASES)
    # the names in the package's source: each is a declared setting (or a prefix of a family)
    names = set()
    for path in glob.glob(os.path.join(ROOT, "lmms_eval_earthsci", "**", "*.py"), recursive=True):
        with open(path) as f:
            names |= set(re.findall(r"[\"'](EARTHSCI_[A-Z0-9_]*[A-Z0-9])[\"']", f.read()))
    families = {"EARTHSCI_JUDGE", "EARTHSCI_DAD", "EARTHSCI_RM", "EARTHSCI_SCALAR_RM"}
    assert names - families <= set(SETTINGS), sorted(names - families - set(SETTINGS))
    assert len(names) > 10  # the scan found the code's names


def _setting_reads_outside_the_reader(source: str) -> list[str]:
    """``os.environ.get(X)`` / ``os.environ[X]`` reads in ``source`` whose key is an ``EARTHSCI_`` setting: a
    literal, or a name bound to one (in the module or imported as ``*_ENV``/``ENV``); stores and deletes
    (``mirror_env`` restores a previous value) are not reads."""
    import ast

    tree = ast.parse(source)
    consts = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and str(n.value.value).startswith("EARTHSCI_") for t in n.targets if isinstance(t, ast.Name)}
    consts |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names if (a.asname or a.name).endswith("ENV")}

    def is_setting(key: ast.AST) -> bool:
        return (isinstance(key, ast.Constant) and str(key.value).startswith("EARTHSCI_")) or (isinstance(key, ast.Name) and key.id in consts)

    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"

    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and is_environ(n.func.value) and n.args and is_setting(n.args[0]):
            out.append(f"line {n.lineno}: {ast.unparse(n)}")
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and is_environ(n.value) and is_setting(n.slice):
            out.append(f"line {n.lineno}: {ast.unparse(n)}")
    return out


def test_the_package_reads_settings_through_the_reader():
    assert _setting_reads_outside_the_reader('import os\nX = "EARTHSCI_X"\na = os.environ.get(X, "")\nb = os.environ["EARTHSCI_Y"]\nos.environ[X] = "1"\n') == [
        'line 3: os.environ.get(X, \'\')', "line 4: os.environ['EARTHSCI_Y']"]
    found = {}
    for path in glob.glob(os.path.join(ROOT, "lmms_eval_earthsci", "**", "*.py"), recursive=True):
        if path.endswith(os.path.join("core", "settings.py")):
            continue
        with open(path) as f:
            source = f.read()
        reads = _setting_reads_outside_the_reader(source)
        if path.endswith(os.path.join("core", "data", "loading.py")):  # mirror_env saves the raw value to restore it
            reads = [r for r in reads if "os.environ.get(MIRROR_ENV)" not in r]
        if reads:
            found[os.path.relpath(path, ROOT)] = reads
    assert not found, f"read these through core.settings.read_setting: {found}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_setting_accepts_its_valid_values_and_names_a_wrong_one_in_one_line(name, tmp_path):
    setting = SETTINGS[name]
    good, bad = CASES[name]
    for value in good:
        assert setting.problem(value.format(tmp=tmp_path)) is None, (name, value)
    assert setting.problem("") is None and setting.problem("  ") is None  # empty: unset
    for value in bad:
        line = setting.problem(value)
        assert line == f"{name}={value!r} is not valid: expected {setting.valid}", (name, value, line)
        assert "\n" not in line and setting.valid


def test_each_process_checks_the_settings_it_reads():
    def scoped(scope):
        return {n for n, s in SETTINGS.items() if core_settings.in_scope(s, scope)}

    run = scoped("run")
    assert run == set(SETTINGS)  # a run reads every one of them
    assert scoped("report") == {"EARTHSCI_BENCHMARKS", "EARTHSCI_CACHE_DIR"}  # the figures' thumbnails
    assert scoped("check-mirror") == {"EARTHSCI_BENCHMARKS", "EARTHSCI_MAC_IMAGE_MAX_SIDE", "EARTHSCI_MUSCICLAIMS_MAX_PIXELS"}
    assert scoped("rescore") == run and scoped("demo") == run


def test_unknown_names_warn_with_the_nearest_known_one():
    env = {"EARTHSCI_BAD_RECORD": "skip", "EARTHSCI_JUDGE_URL": "x", "EARTHSCI_DAD_ON_FAILURE": "raise", "EARTHSCI_ZZZ": "1", "EARTHSCI_JUDGE_MODEL": "m", "PATH": "/bin"}
    warnings = core_settings.unknown(registry.settings(), env)
    assert warnings == [
        "EARTHSCI_BAD_RECORD is not a setting of lmms_eval_earthsci (did you mean EARTHSCI_BAD_RECORDS?); it is ignored",
        "EARTHSCI_DAD_ON_FAILURE is not a setting of lmms_eval_earthsci (did you mean EARTHSCI_JUDGE_ON_FAILURE?); it is ignored",
        "EARTHSCI_JUDGE_URL is not a setting of lmms_eval_earthsci (did you mean EARTHSCI_JUDGE_BASE_URL?); it is ignored",
        'EARTHSCI_ZZZ is not a setting of lmms_eval_earthsci (README, "Settings", lists them); it is ignored',
    ]


@pytest.mark.parametrize(
    "command, var, value",
    [
        (["report", "{tmp}"], "EARTHSCI_BENCHMARKS", "my lab"),
        (["check-mirror", "{tmp}"], "EARTHSCI_MAC_IMAGE_MAX_SIDE", "-3"),
        (["rescore", "{tmp}", "--out", "{tmp}/x"], "EARTHSCI_JUDGE_ON_FAILURE", "boom"),
        (["demo", "--out", "{tmp}/demo"], "EARTHSCI_BAD_RECORDS", "skipp"),
        (["write-fixtures", "{tmp}/fx"], "EARTHSCI_BENCHMARKS", "a b"),
        # every command that keeps something in the cache folder (report: the figures' thumbnails)
        (["report", "{tmp}", "--out", "{tmp}/x"], "EARTHSCI_CACHE_DIR", "/proc/nope/x"),
        (["rescore", "{tmp}", "--out", "{tmp}/x"], "EARTHSCI_CACHE_DIR", "/proc/nope/x"),
        (["demo", "--out", "{tmp}/demo"], "EARTHSCI_CACHE_DIR", "/proc/nope/x"),
    ],
)
def test_commands_stop_at_their_start_on_a_wrong_value(command, var, value, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(var, value)
    monkeypatch.setenv("EARTHSCI_BAD_RECORD", "1")  # a typo'd name warns, it does not stop
    t0 = time.time()
    status = cli_main([c.format(tmp=tmp_path) for c in command])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and time.time() - t0 < 5
    assert err[-1] == f"lmms-eval-earthsci {command[0]}: {SETTINGS[var].problem(value)}", err
    assert any("EARTHSCI_BAD_RECORD is not a setting" in line and "EARTHSCI_BAD_RECORDS?" in line for line in err)
    assert not os.path.exists(tmp_path / "demo") and not os.path.exists(tmp_path / "x") and not os.path.exists(tmp_path / "fx")  # no work done


def test_help_never_stops_on_settings(monkeypatch, capsys):
    monkeypatch.setenv("EARTHSCI_JUDGE_TIMEOUT", "soon")
    with pytest.raises(SystemExit) as exc:
        cli_main(["report", "--help"])
    assert exc.value.code == 0


def test_a_broken_outside_benchmark_stops_a_command_in_one_line(monkeypatch, capsys):
    monkeypatch.setenv("EARTHSCI_BENCHMARKS", "no_such_lab.bench")
    assert cli_main(["report", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["lmms-eval-earthsci report: benchmark 'no_such_lab.bench:BENCHMARK' (EARTHSCI_BENCHMARKS) cannot be imported: ModuleNotFoundError: No module named 'no_such_lab'"]


# --------------------------------------------------------------------------- through lmms-eval

# an lmms-eval that does not load our entry point: our `run` command (lmms-eval's CLI in its process, --include_path
# added) is the route, and it starts what the entry point would
HIDDEN_ENTRY_POINT = """
import importlib.metadata as md, sys
_load = md.EntryPoint.load
md.EntryPoint.load = lambda self: (lambda: []) if self.value.startswith("lmms_eval_earthsci") else _load(self)
from lmms_eval_earthsci.cli import main
sys.exit(main(["run", *sys.argv[1:]]))
"""


@pytest.mark.e2e
@pytest.mark.parametrize("route", ["entry point", "include_path"])
def test_an_lmms_eval_run_stops_before_inference_without_debug_verbosity(route, mirror, hf_home, tmp_path):
    """lmms-eval exits 0 on task errors unless --verbosity DEBUG: a wrong setting still stops the run, with
    status 2 and its one line, before the model is asked anything. The entry point checks every setting; with
    it hidden, our `run` command does (a benchmark's own, MuSciClaims' pixel cap, among them): a task module's
    import installs and checks nothing."""
    from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

    var, value, task = ("EARTHSCI_JUDGE_ON_FAILURE", "boom", "emma_mini_math") if route == "entry point" else ("EARTHSCI_MUSCICLAIMS_MAX_PIXELS", "-1", "emma_mini_math,musciclaims_d")
    with FakeOpenAIServer(responder=lambda body: "B") as srv:
        env = cli_env(mirror, hf_home, **{var: value})
        args = ["--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", task, "--output_path", str(tmp_path / "o"), "--limit", "2"]
        if route == "entry point":
            cmd = [os.path.join(os.path.dirname(sys.executable), "lmms-eval"), *args]
        else:
            cmd = [sys.executable, "-c", HIDDEN_ENTRY_POINT, *args]
        proc = forkserver.subprocess_run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
        asked = list(srv.requests)
    line = f"lmms-eval-earthsci{'' if route == 'entry point' else ' run'}: {SETTINGS[var].problem(value)}"
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert line in proc.stderr.splitlines(), proc.stderr[-3000:]
    assert asked == [] and not os.path.exists(tmp_path / "o")


@pytest.mark.slow
def test_a_benchmarks_settings_are_checked_when_declared_inside_an_lmms_eval_run():
    """A benchmark's task module declares its settings as lmms-eval imports it (the --include_path route):
    once the run's hooks are in (the runtime says so: registration installed them) a wrong value stops the
    process there; outside a run (a command importing the module) nothing is checked. A fresh interpreter
    each: the state is global."""
    import subprocess

    code = (
        "import sys\n"
        "from lmms_eval_earthsci.core.runtime import current\n"
        "from lmms_eval_earthsci.core.settings import Setting, declare_settings, integer\n"
        "if sys.argv[1] == 'run':\n"
        "    current().run_hooks = True  # what core.activation.install_run_hooks sets in a run\n"
        "declare_settings([Setting('EARTHSCI_TOY_LIMIT', 'a whole number >= 1', integer(1))])\n"
        "print('declared')\n"
    )
    env = {**os.environ, "EARTHSCI_TOY_LIMIT": "0"}
    inside = subprocess.run([sys.executable, "-c", code, "run"], env=env, capture_output=True, text=True, timeout=120)
    outside = subprocess.run([sys.executable, "-c", code, "command"], env=env, capture_output=True, text=True, timeout=120)
    assert (inside.returncode, inside.stdout) == (2, "") and "EARTHSCI_TOY_LIMIT='0' is not valid" in inside.stderr
    assert (outside.returncode, outside.stdout) == (0, "declared\n")
