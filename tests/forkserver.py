"""A fork server for the suite's CLI runs: each run is still its own process (its own exit code, atexit handlers,
process group, stdout and stderr), forked from a server that has already imported what every run imports
(torch, transformers, datasets, evaluate: ~6 s of the ~11 s a minimal `lmms-eval` run takes on 2 cores), instead
of a new interpreter importing them again.

Nothing of lmms-eval or of ours is imported by the server: the child runs the venv's own console script
(``lmms-eval``, ``lmms-eval-earthsci``) from its start, so our registration, hooks and settings are made in the
child, from the child's environment. What the preloaded libraries read from the environment at import (the
Hugging Face folders and offline flags, PYTHONPATH, thread counts) is fixed when the server starts: a run whose
such variables differ from the server's starts a real process instead (:func:`run`), as does every run when
``EARTHSCI_TEST_FORK=0``.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

PRELOAD = ("torch", "transformers", "transformers.processing_utils", "transformers.pipelines", "datasets", "evaluate", "accelerate", "PIL.Image", "numpy",
           "pandas", "pyarrow", "loguru", "openai", "httpx", "yaml", "jinja2", "tqdm")
#: variables a preloaded library reads at import: a run must have the server's values to be forked
IMPORT_TIME = ("HF_", "HUGGINGFACE", "TRANSFORMERS", "DATASETS", "TORCH", "PYTORCH", "PYTHON", "OMP_", "MKL_", "CUDA", "LD_", "TOKENIZERS", "XDG_", "HOME")


def import_time_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME)}


# --------------------------------------------------------------------------- the server (its own process)

SERVER = r'''
import importlib, json, os, runpy, signal, socket, sys, threading, traceback

for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
    except Exception:
        pass
assert threading.active_count() == 1, threading.enumerate()  # forking is safe only from one thread
parent = os.getppid()
sock = socket.socket(socket.AF_UNIX)
sock.bind(sys.argv[1])
sock.listen(16)
sock.settimeout(0.2)
waiting = {}  # child pid -> its connection
sys.stdout.flush(); sys.stderr.flush()
print("ready", flush=True)
while os.getppid() == parent:
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            break
        conn = waiting.pop(pid)
        try:
            conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
        except OSError:
            pass
        conn.close()
    try:
        conn, _ = sock.accept()
    except socket.timeout:
        continue
    conn.settimeout(None)
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    job = json.loads(data)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid:
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        waiting[pid] = conn
        continue
    # the child: a process of its own, as a new interpreter would start it
    code = 1
    try:
        sock.close()
        conn.close()
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, job["stdout"], os.O_WRONLY), (2, job["stderr"], os.O_WRONLY)):
            f = os.open(path, flags)
            os.dup2(f, fd)
            os.close(f)
        sys.argv = list(job["argv"])
        try:
            runpy.run_path(job["script"], run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else (print(exc.code, file=sys.stderr) or 1))
        except BaseException:
            traceback.print_exc()
            code = 1
        threading._shutdown()
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush(); sys.stderr.flush()
        finally:
            os._exit(code)
'''


class ForkServer:
    """One server per pytest process (started at the first run it can take, stopped at exit)."""

    def __init__(self, env: dict[str, str]):
        self.dir = tempfile.mkdtemp(prefix="earthsci-fork-")
        self.path = os.path.join(self.dir, "sock")
        self.key = import_time_env(env)
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, self.path, json.dumps(PRELOAD)], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError("the fork server did not start")

    def run(self, script: str, argv: list[str], env: dict[str, str], cwd: str, timeout: float | None) -> subprocess.CompletedProcess:
        stem = os.path.join(self.dir, f"{threading.get_ident()}-{time.monotonic_ns()}")
        out, err = stem + ".out", stem + ".err"
        for p in (out, err):
            open(p, "w").close()
        conn = socket.socket(socket.AF_UNIX)
        conn.connect(self.path)
        conn.sendall(json.dumps({"script": script, "argv": argv, "env": env, "cwd": cwd, "stdout": out, "stderr": err}).encode() + b"\n")
        reader = conn.makefile("r")
        pid = json.loads(reader.readline())["pid"]
        conn.settimeout(timeout)
        try:
            line = reader.readline()
        except TimeoutError:
            os.killpg(pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired(argv, timeout) from None
        finally:
            conn.close()
        code = json.loads(line)["exit"]
        with open(out, errors="replace") as f, open(err, errors="replace") as g:
            stdout, stderr = f.read(), g.read()
        os.remove(out)
        os.remove(err)
        return subprocess.CompletedProcess([script, *argv[1:]], code, stdout, stderr)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _console_script(path: str) -> bool:
    """A Python console script of this venv (not the interpreter, not a launcher such as torchrun's binary)."""
    try:
        with open(path, "rb") as f:
            first = f.readline()
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


_SERVERS: dict[tuple, ForkServer] = {}  # one per import-time environment (the fixtures' HF_HOME, a test's own)
_LOCK = threading.Lock()
MAX_SERVERS = 3


def _server(env: dict[str, str]) -> ForkServer:
    key = tuple(sorted(import_time_env(env).items()))
    with _LOCK:
        server = _SERVERS.pop(key, None)
        if server is None:
            if len(_SERVERS) >= MAX_SERVERS:  # the least recently used goes
                _SERVERS.pop(next(iter(_SERVERS))).close()
            server = ForkServer(env)
        _SERVERS[key] = server
        return server


def _close_all() -> None:
    for server in _SERVERS.values():
        server.close()


atexit.register(_close_all)


def run(cmd: list[str], env: dict[str, str], cwd: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)``, forked from a
    server with the run's import-time environment when ``cmd[0]`` is a Python console script of this venv
    (``lmms-eval``, ``lmms-eval-earthsci``); anything else (the interpreter, a launcher) runs as given."""
    script = cmd[0]
    if os.environ.get("EARTHSCI_TEST_FORK", "1") != "0" and os.path.dirname(os.path.abspath(script)) == os.path.dirname(sys.executable) and _console_script(script):
        return _server(env).run(script, [script, *cmd[1:]], env, cwd, timeout)
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def subprocess_run(cmd, **kw):
    """``subprocess.run`` as the suite calls it: a console script captured as text goes through :func:`run`."""
    if isinstance(cmd, list) and kw.get("capture_output") and kw.get("text") and set(kw) <= {"env", "cwd", "capture_output", "text", "timeout"}:
        return run([str(c) for c in cmd], dict(kw.get("env") or os.environ), str(kw.get("cwd") or os.getcwd()), kw.get("timeout"))
    return subprocess.run(cmd, **kw)
