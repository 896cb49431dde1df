"""Every ``EARTHSCI_*`` setting we read, checked before the work that uses it.

A setting is declared once (:class:`Setting`: its name, what values are valid, which processes read
it). The core declares its own below (:data:`CORE`, the judge's family by :func:`judge_family`); a
benchmark declares its own in its ``Benchmark.settings`` (MAC's image side and its ``EARTHSCI_DAD_*``
judge family, MuSciClaims' pixel cap). The registry collects them all (``registry.settings()``).

Where they are checked (:func:`enforce`):

- an lmms-eval run, before any task is built: by our entry point (every setting a run reads, and a
  warning for an ``EARTHSCI_`` name we do not read, with the nearest one we do); on the routes without
  it (``--include_path``), by each benchmark's task module as lmms-eval imports it (the core's settings
  and that benchmark's);
- each command at its start (``report``, ``rescore``, ``check-mirror``, ``demo``, ...): the settings it
  or the run it starts reads.

A wrong value is one line naming the variable, the value and the valid values; the process stops with
exit status 2 whatever ``--verbosity`` is (a ``SystemExit``: lmms-eval catches task errors, not that).
An empty value counts as unset everywhere.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import urlparse

from lmms_eval_earthsci.core.runtime import current

PREFIX = "EARTHSCI_"
ALL = "*"  # scope of a setting every process reads


@dataclass(frozen=True)
class Setting:
    """One environment variable: ``valid`` says in words what ``check`` accepts (the stripped, non-empty
    value); ``scopes``: the processes that read it (``run``: an lmms-eval run of our tasks, which
    ``rescore`` and ``demo`` start too; or a command's name; ``*``: all)."""

    name: str
    valid: str
    check: Callable[[str], bool]
    scopes: frozenset = frozenset({"run"})

    def problem(self, value: str) -> str | None:
        """The one-line error for ``value``, or None when it is valid (an empty value is unset)."""
        v = value.strip()
        if not v:
            return None
        try:
            ok = self.check(v)
        except Exception:
            ok = False
        return None if ok else f"{self.name}={value!r} is not valid: expected {self.valid}"


class SettingsError(SystemExit):
    """A setting with a wrong value: ``str()`` is the message (one line per setting); exit status 2."""

    def __init__(self, lines: Sequence[str]):
        super().__init__(2)
        self.lines = list(lines)

    def __str__(self) -> str:
        return "\n".join(self.lines)


# --------------------------------------------------------------------------- value checks


def integer(low: int | None = None) -> Callable[[str], bool]:
    return lambda v: re.fullmatch(r"[+-]?\d+", v) is not None and (low is None or int(v) >= low)


def positive_number(v: str) -> bool:
    x = float(v)
    return math.isfinite(x) and x > 0


def choice(*options: str) -> Callable[[str], bool]:
    return lambda v: v.lower() in options


FLAG_VALUES = MappingProxyType({"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False})


def read_setting(name: str) -> str:
    """The value of the setting ``name`` as this process sees it, stripped; ``""`` when unset or empty
    (an empty value counts as unset everywhere). Every ``EARTHSCI_*`` read goes through here (ruff bans
    ``os.getenv``; ``tests/core/test_settings.py`` finds no other read of a setting)."""
    return os.environ.get(name, "").strip()


def cache_dir(*parts: str) -> str:
    """Where we keep what we make once per machine: ``$EARTHSCI_CACHE_DIR`` (default
    ``~/.cache/lmms_eval_earthsci``), joined with ``parts``: ``judge/`` (verdict cache), ``wordnet-3.0/``
    (the staged WordNet METEOR reads), ``tiny-llava/`` (the demo's tiny model)."""
    root = read_setting("EARTHSCI_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "lmms_eval_earthsci")
    return os.path.join(root, *parts)


def read_flag(name: str, default: bool) -> bool:
    """A yes/no setting's value (see :func:`flag`)."""
    return flag(read_setting(name), default)


def flag(value: str | None, default: bool) -> bool:
    """A yes/no setting's value (``1/true/yes/on``, ``0/false/no/off``; empty: ``default``)."""
    v = (value or "").strip().lower()
    return FLAG_VALUES.get(v, default) if v else default


def existing_folder(v: str) -> bool:
    return os.path.isdir(os.path.expanduser(v))


def writable_folder(v: str) -> bool:
    """A folder this process can create and write in, found by doing it (creating the folder and a file
    in it), not by reading permissions: root passes every permission check, and a path under /proc or a
    read-only mount says no only when written to."""
    path = os.path.abspath(os.path.expanduser(v))
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".earthsci-write-test-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError:
        return False
    return True


def http_url(v: str) -> bool:
    u = urlparse(v)
    return u.scheme in ("http", "https") and bool(u.netloc)


def model_source(v: str) -> bool:
    """A local model folder, or a Hugging Face model id (``name`` or ``org/name``)."""
    if existing_folder(v):
        return True
    looks_like_path = v.startswith(("/", "./", "../", "~")) or v.count("/") > 1
    return not looks_like_path and re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?", v) is not None


def module_list(v: str) -> bool:
    items = [x.strip() for x in v.split(",") if x.strip()]
    return bool(items) and all(re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?", x) for x in items)


# --------------------------------------------------------------------------- the core's settings

RUN = frozenset({"run"})
FOLDER = "a folder this process can create and write in"
MODEL = "a local model folder that exists, or a Hugging Face model id (org/name)"

CORE: tuple[Setting, ...] = (
    Setting("EARTHSCI_BENCHMARKS", "comma-separated Python modules (module or module:ATTR) each defining a Benchmark", module_list, frozenset({ALL})),
    # every command that keeps something there: a run (judge verdicts, WordNet), the demo (its tiny
    # model), rescore (verdicts), report (the figures' thumbnails)
    Setting("EARTHSCI_CACHE_DIR", FOLDER, writable_folder, frozenset({"run", "demo", "report"})),
    Setting("EARTHSCI_DATA_MIRROR", "an existing folder laid out as <org>/<name>/ per dataset repo (README, \"Offline\")", existing_folder),
    Setting("EARTHSCI_BAD_RECORDS", "raise or skip (a malformed record stops the run, or is left out and counted)", choice("raise", "skip")),
    Setting("EARTHSCI_RECOVER_RESPONSE_CACHE", "1 or 0 (also true/false, yes/no, on/off)", lambda v: v.lower() in FLAG_VALUES),
    Setting("EARTHSCI_PATCH_RECORDS", "a folder: each process writes the patches it made there at exit (tests/core/adapter/test_patch_records_e2e.py)", writable_folder),
    Setting("EARTHSCI_HARDENING", "1 or 0 (also true/false, yes/no, on/off); 0: lmms-eval's own exit codes and run-wide behaviour", lambda v: v.lower() in FLAG_VALUES),
    Setting("EARTHSCI_JUDGE_ON_FAILURE", "wrong or raise (a doc the judge could not judge scores wrong, or fails the task)", choice("wrong", "raise")),
    Setting("EARTHSCI_WORDNET", "an existing folder holding WordNet 3.0's files (data.noun, index.noun, ...)", existing_folder),
    Setting("EARTHSCI_BERTSCORE_MODEL", MODEL, model_source),
    Setting("EARTHSCI_BERTSCORE_LAYERS", "an integer >= 1, at most the model's layer count (roberta-large: 24)", integer(1)),
    Setting("EARTHSCI_SIMILARITY_MODEL", MODEL + " for sentence-transformers", model_source),
)

# the judge's settings, one family per prefix (EARTHSCI_JUDGE_*; MAC's DAD declares EARTHSCI_DAD_*)
JUDGE_SUFFIXES: tuple[tuple[str, str, Callable[[str], bool]], ...] = (
    ("BASE_URL", "an http:// or https:// URL, e.g. http://judge-node:8000/v1", http_url),
    ("MODEL", "the model name the judge server knows (any text)", lambda v: True),
    ("API_KEY", "the judge's key (any text)", lambda v: True),
    ("API_TYPE", "openai or azure", choice("openai", "azure")),
    ("CONCURRENCY", "an integer >= 1 (requests in flight)", integer(1)),
    ("TIMEOUT", "a number of seconds > 0", positive_number),
    ("MAX_RETRIES", "an integer >= 0", integer(0)),
    ("MAX_TOKENS", "an integer >= 0 (0: not sent)", integer(0)),
    ("CACHE", f"off (or none, 0), or {FOLDER}", lambda v: v.lower() in ("off", "none", "0") or writable_folder(v)),
    ("CACHE_JOURNAL", "wal, delete, truncate or persist", choice("wal", "delete", "truncate", "persist")),
    ("BREAKER", "an integer >= 0 (consecutive failed docs that stop a pass; 0: never)", integer(0)),
    ("REASONING_EFFORT", "the reasoning effort the judge server accepts (any text, e.g. low, medium, high)", lambda v: True),
    ("CA_BUNDLE", "an existing file of PEM certificates (the CA that signed the judge's TLS certificate)", lambda v: os.path.isfile(os.path.expanduser(v))),
)


def judge_family(prefix: str, scopes: frozenset = frozenset({"run", "demo"})) -> tuple[Setting, ...]:
    """The judge's settings under ``prefix`` (``EARTHSCI_JUDGE``: the core's; ``EARTHSCI_RM``: the reward model's;
    ``EARTHSCI_DAD``: MAC's)."""
    return tuple(Setting(f"{prefix}_{suffix}", valid, check, scopes) for suffix, valid, check in JUDGE_SUFFIXES)


CORE += judge_family("EARTHSCI_JUDGE")
# a generative reward model (Best-of-N, core/judge/reward.py): each EARTHSCI_RM_<S> falls back to EARTHSCI_JUDGE_<S>
CORE += judge_family("EARTHSCI_RM")


# --------------------------------------------------------------------------- checking


def in_scope(s: Setting, scope: str) -> bool:
    """``run`` settings are read by ``rescore`` and ``demo`` too (both start a run)."""
    return ALL in s.scopes or scope in s.scopes or ("run" in s.scopes and scope in ("rescore", "demo"))


def problems(settings: Iterable[Setting], scope: str, environ: Mapping[str, str] | None = None, ignore: Iterable[str] = ()) -> list[str]:
    env = os.environ if environ is None else environ
    skip = set(ignore)
    out = []
    for s in settings:
        if s.name in skip or s.name not in env or not in_scope(s, scope):
            continue
        p = s.problem(env[s.name])
        if p:
            out.append(p)
    return out


def unknown(settings: Iterable[Setting], environ: Mapping[str, str] | None = None) -> list[str]:
    """A warning per ``EARTHSCI_`` variable no setting has, naming the nearest known one."""
    env = os.environ if environ is None else environ
    known = sorted({s.name for s in settings})
    out = []
    for name in sorted(n for n in env if n.startswith(PREFIX) and n not in known):
        # compared without the common prefix, which would make every name look near every other
        near = difflib.get_close_matches(name[len(PREFIX) :], [k[len(PREFIX) :] for k in known], n=1, cutoff=0.6)
        out.append(f"{name} is not a setting of lmms_eval_earthsci" + (f" (did you mean {PREFIX}{near[0]}?)" if near else " (README, \"Settings\", lists them)") + "; it is ignored")
    return out


def enforce(settings: Sequence[Setting], scope: str, *, complete: bool = False, ignore: Iterable[str] = (), who: str = "lmms-eval-earthsci") -> None:
    """Check ``settings`` for ``scope``: every wrong value is printed as one line on stderr and a
    :class:`SettingsError` (exit status 2) raised. ``complete``: ``settings`` are all there are, so an
    unknown ``EARTHSCI_`` name is warned about (once per process)."""
    if complete:
        for w in unknown(settings):
            if current().first_time(f"setting: {w}"):
                print(f"{who}: warning: {w}", file=sys.stderr, flush=True)
    bad = problems(settings, scope, ignore=ignore)
    if bad:
        lines = [f"{who}: {p}" for p in bad]
        print("\n".join(lines), file=sys.stderr, flush=True)
        raise SettingsError(lines)


def declare_settings(settings: Sequence[Setting]) -> None:
    """A benchmark's task module declares its settings (on the runtime) as lmms-eval imports it; once the run's
    hooks are in (the runtime says so: :mod:`lmms_eval_earthsci.core.activation`) they are checked at once (the
    routes that bypass our entry point: ``--include_path``)."""
    rt = current()
    with rt.lock:
        new = [s for s in settings if s not in CORE and s not in rt.settings]
        rt.settings.extend(new)
    if new and rt.run_hooks:
        enforce(new, "run")


def declared() -> list[Setting]:
    """The core's settings, then those the benchmarks declared, in order."""
    return [*CORE, *current().settings]


# --------------------------------------------------------------------------- the run's command line


def cli_value(argv: Sequence[str], flag: str) -> str | None:
    """The value ``argv`` gives ``flag`` (``--flag VALUE`` or ``--flag=VALUE``; the last one wins, as with
    argparse), or None."""
    value = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


def is_cli_run(argv: Sequence[str] | None = None) -> bool:
    """Whether this process runs lmms-eval's CLI (its argv names ``--tasks``): not a test process, a Python
    caller of ``simple_evaluate`` or a command around a run."""
    return cli_value(sys.argv if argv is None else argv, "--tasks") is not None
