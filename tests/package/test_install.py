"""`make setup` on a CPU machine whose pip knows no local torch gets a CPU torch from a PyTorch-style CPU
wheel index (the Makefile's TORCH_CPU_INDEX), never the ordinary index's CUDA build.

The index is a loopback PEP 503 server holding this machine's CPU wheel; every pip setting of this
machine is switched off (no config file, no PIP_* variable, ``--isolated``), so the only torch pip can
find is the index's. It installs a full venv (several minutes): `make test-install` runs it (CI does),
`make test` does not (the `install` marker is skipped unless --run-install is given)."""

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from urllib.parse import unquote

import pytest
from conftest import ROOT

from lmms_eval_earthsci.testing.loopback import LoopbackServer, QuietHandler

pytestmark = pytest.mark.install

TORCH_VERSION = "2.13.0"


class WheelIndex(LoopbackServer):
    """A PEP 503 "simple" index of the wheels in one folder, logging every request path."""

    def __init__(self, folder):
        super().__init__()
        self.folder = folder
        self.requests = []
        self._lock = threading.Lock()

    def handler_class(self):
        index = self

        class Handler(QuietHandler):
            def do_GET(self):
                path = unquote(self.path.split("?")[0])
                with index._lock:
                    index.requests.append(path)
                files = sorted(os.listdir(index.folder))
                parts = path.strip("/").split("/")
                if parts == ["simple"]:
                    projects = sorted({f.split("-")[0].lower() for f in files})
                    return self._send(200, "text/html", "".join(f'<a href="{p}/">{p}</a>\n' for p in projects).encode())
                if len(parts) == 2 and parts[0] == "simple":
                    links = [f for f in files if f.split("-")[0].lower() == parts[1].lower()]
                    if not links:
                        return self._send(404, "text/plain", b"not here")
                    html = "".join(f'<a href="/files/{f}#sha256={index.sha256(f)}">{f}</a>\n' for f in links)
                    return self._send(200, "text/html", html.encode())
                if len(parts) == 2 and parts[0] == "files" and parts[1] in files:
                    with open(os.path.join(index.folder, parts[1]), "rb") as f:
                        return self._send(200, "application/octet-stream", f.read())
                return self._send(404, "text/plain", b"not here")

            def _send(self, status, ctype, body):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def sha256(self, name, _cache={}):  # noqa: B006 - the dict is the memo, shared on purpose
        if name not in _cache:
            h = hashlib.sha256()
            with open(os.path.join(self.folder, name), "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            _cache[name] = h.hexdigest()
        return _cache[name]


def isolated_env():
    """This process's environment without any pip setting: no PIP_* variable, no config file at all
    (PIP_CONFIG_FILE=/dev/null makes pip skip its global, user and site files)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def test_make_setup_takes_cpu_torch_from_the_cpu_index(tmp_path):
    # this machine's CPU wheel, found with this machine's pip settings (skip where there is none)
    wheels = tmp_path / "index"
    wheels.mkdir()
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-index", "-d", str(wheels), f"torch=={TORCH_VERSION}"], capture_output=True, text=True)
    found = [f for f in os.listdir(wheels) if f.startswith("torch-") and "+cpu" in f]
    if got.returncode != 0 or not found:
        pytest.skip(f"no local CPU wheel of torch {TORCH_VERSION} on this machine to serve: {got.stderr[-300:]}")
    (wheel,) = found

    # premise: with the machine's settings off, pip cannot find torch without an index
    env = isolated_env()
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True)
    no_index = subprocess.run([str(bare / "bin" / "python"), "-m", "pip", "--isolated", "download", "-q", "--no-deps", "--no-index", "-d", str(tmp_path / "none"), f"torch=={TORCH_VERSION}"], env=env, capture_output=True, text=True)
    assert no_index.returncode != 0, "pip still finds a local torch with every setting off: the test would prove nothing"

    venv = tmp_path / "venv"
    with WheelIndex(str(wheels)) as index:
        make = subprocess.run(
            ["make", "-C", ROOT, "setup", f"VENV={venv}", f"TORCH_CPU_INDEX=http://127.0.0.1:{index.port}/simple", "PIP_OPTS=--isolated"],
            env=env, capture_output=True, text=True, timeout=3000,
        )
        assert make.returncode == 0, make.stdout[-3000:] + make.stderr[-5000:]
        log = list(index.requests)
    assert "/simple/torch/" in log, log
    assert f"/files/{wheel}" in log, log

    py = str(venv / "bin" / "python")
    listed = subprocess.run([py, "-m", "pip", "--isolated", "list", "--format=freeze"], env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    names = {line.split("==")[0].lower(): line.split("==")[1] for line in listed if "==" in line}
    assert names["torch"] == f"{TORCH_VERSION}+cpu", names.get("torch")
    assert not [n for n in names if n.startswith("nvidia-") or n == "triton"], sorted(names)
    assert "torchvision" not in names
    # the CPU build works, its dependencies came with the package, and our tasks register
    probe = subprocess.run([py, "-c", "import torch, lmms_eval_earthsci; assert torch.version.cuda is None; print(torch.ones(2).sum().item())"], env=env, capture_output=True, text=True)
    assert probe.returncode == 0 and probe.stdout.strip() == "2.0", probe.stderr[-3000:]
    shutil.rmtree(venv, ignore_errors=True)
