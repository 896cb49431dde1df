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


@pytest.fixture(scope="module")
def setup_venv(tmp_path_factory):
    """``make setup`` into a new venv with every pip setting off, torch from a loopback CPU index: (venv, the
    index's request log, the wheel it served)."""
    tmp_path = tmp_path_factory.mktemp("install")
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
    yield venv, log, wheel
    shutil.rmtree(venv, ignore_errors=True)


def installed(py, env):
    listed = subprocess.run([py, "-m", "pip", "--isolated", "list", "--format=freeze"], env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    return {line.split("==")[0].lower().replace("_", "-"): line.split("==")[1] for line in listed if "==" in line}


def test_make_setup_takes_cpu_torch_from_the_cpu_index(setup_venv):
    venv, log, wheel = setup_venv
    env = isolated_env()
    assert "/simple/torch/" in log, log
    assert f"/files/{wheel}" in log, log

    py = str(venv / "bin" / "python")
    names = installed(py, env)
    assert names["torch"] == f"{TORCH_VERSION}+cpu", names.get("torch")
    assert not [n for n in names if n.startswith("nvidia-") or n == "triton"], sorted(names)
    assert "torchvision" not in names
    # the CPU build works, its dependencies came with the package, and our tasks register
    probe = subprocess.run([py, "-c", "import torch, lmms_eval_earthsci; assert torch.version.cuda is None; print(torch.ones(2).sum().item())"], env=env, capture_output=True, text=True)
    assert probe.returncode == 0 and probe.stdout.strip() == "2.0", probe.stderr[-3000:]


def test_a_labs_venv_takes_the_clone_then_the_wheel_with_the_readmes_lines(setup_venv, mirror, tmp_path):
    """A lab's own CPU venv that already holds lmms-eval (``make setup``'s, with our package taken out): the
    README's lines install the package from the clone, then from a wheel over it. The clone's install brings PyPI's
    torchvision back (lmms-eval requires it): plain ``lmms-eval`` then stops in its own imports (before any
    code of ours runs: the README says so), ``lmms-eval-earthsci run`` with one line naming the fix; after
    the README's ``pip uninstall -y torchvision`` the run works. The wheel of the same version replaces it only with
    ``--force-reinstall --no-deps`` (the README's line; it resolves nothing). The same CPU torch throughout."""
    venv, _, _ = setup_venv
    env = isolated_env()
    py, pip = str(venv / "bin" / "python"), [str(venv / "bin" / "python"), "-m", "pip", "--isolated"]
    subprocess.run([*pip, "uninstall", "-y", "-q", "lmms_eval_earthsci"], env=env, check=True, capture_output=True)
    lab = installed(py, env)
    assert "lmms-eval" in lab and "lmms-eval-earthsci" not in lab and "torchvision" not in lab, sorted(lab)  # premise: a lab's venv
    run_env = {**env, "EARTHSCI_DATA_MIRROR": mirror, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}

    def run(name, cli="lmms-eval"):
        args = ["run"] if cli == "lmms-eval-earthsci" else []
        return subprocess.run([str(venv / "bin" / cli), *args, "--model", "dummy", "--tasks", "msearth_mcq", "--limit", "1", "--output_path", str(tmp_path / name)],
                              env=run_env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900)

    dist = tmp_path / "dist"
    cpu = tmp_path / "cpu.txt"  # the README's constraint: without it the torchvision pip brings back is the newest, which upgrades torch to a CUDA build
    cpu.write_text(f"torch=={TORCH_VERSION}\n")
    steps = {
        "clone": ([*pip, "install", "-q", "-c", str(cpu), "."], None),
        # over an install of the same version pip keeps the old one ("Requirement already satisfied"): the README's line for it
        "wheel": ([*pip, "install", "-q", "--force-reinstall", "--no-deps", str(dist / "*.whl")], [*pip, "wheel", "-q", "--no-deps", "-w", str(dist), "."]),
    }
    for source, (install, build) in steps.items():
        if build:
            subprocess.run(build, env=env, cwd=ROOT, check=True, capture_output=True, timeout=900)
            (whl,) = dist.glob("lmms_eval_earthsci-*.whl")
            install[-1] = str(whl)
        done = subprocess.run(install, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, (source, done.stderr[-3000:])
        now = installed(py, env)
        assert now["torch"] == lab["torch"] and "lmms-eval-earthsci" in now, (source, now.get("torch"))
        origin = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.distribution('lmms_eval_earthsci').read_text('direct_url.json'))"], env=env, capture_output=True, text=True).stdout
        assert (whl.name if build else "file://" + ROOT) in origin, (source, origin)  # this install, not the one before
        if build:  # --no-deps: ours replaced, nothing resolved, no torchvision brought back
            assert "torchvision" not in now, (source, sorted(now))
            ok = run(source)
            assert ok.returncode == 0 and "Traceback" not in ok.stderr, (source, ok.stderr[-5000:])
            continue
        assert "torchvision" in now, (source, sorted(now))  # the trap the README names is there to meet
        # plain lmms-eval stops in its own imports, before any code of ours is loaded: its traceback (README);
        # our commands end with one line naming the fix, exit 2
        plain = run(f"{source}-plain")
        assert plain.returncode != 0 and plain.stderr.rstrip().endswith("RuntimeError: operator torchvision::nms does not exist"), (source, plain.stderr[-3000:])
        ours = run(f"{source}-ours", cli="lmms-eval-earthsci")
        last = ours.stderr.rstrip().splitlines()[-1]
        assert ours.returncode == 2 and last.startswith("lmms-eval-earthsci run: RuntimeError: operator torchvision::nms does not exist; ") and "`pip uninstall -y torchvision`" in last, (source, ours.stderr[-3000:])
        assert "Traceback" not in ours.stderr, (source, ours.stderr[-3000:])
        subprocess.run([*pip, "uninstall", "-y", "-q", "torchvision"], env=env, check=True, capture_output=True)
        ok = run(source)
        assert ok.returncode == 0 and "Traceback" not in ok.stderr, (source, ok.stderr[-5000:])
        assert list((tmp_path / source).glob("**/*_results.json")), source
