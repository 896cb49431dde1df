"""A non-editable wheel in a fresh venv finds every YAML and template and registers our tasks with
no flag and no environment variable."""

import os
import site
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), ROOT], check=True)
    (whl,) = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".whl")]
    return whl


def test_wheel_ships_data_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"lmms_eval_earthsci/evals/{b}/{f}" for b in ("emma", "msearth", "scifibench", "musciclaims", "mac") for f in ("paper_numbers.json", "README.md", "benchmark.py")} <= names
    assert {"lmms_eval_earthsci/evals/musciclaims/sample_mirror/StonyBrookNLP/MuSciClaims/test_set.jsonl", "lmms_eval_earthsci/evals/musciclaims/sample_mirror/StonyBrookNLP/MuSciClaims/README.md"} <= names
    assert any(n.startswith("lmms_eval_earthsci/evals/musciclaims/sample_mirror/StonyBrookNLP/MuSciClaims/paper_figures/chem_10.1021_") for n in names)
    assert "lmms_eval_earthsci/evals/mac/sample_mirror/mhjiang0408/MAC_Bench/text2image_option.csv" in names
    assert "lmms_eval_earthsci/evals/mac/sample_mirror/mhjiang0408/MAC_Bench/ACS/Cover/ACS Fake Materials & Interfaces/2024_1.png" in names
    mirror = {n for n in names if "/sample_mirror/" in n and n.endswith(".parquet")}
    assert any("luckychao/EMMA-mini/Math" in n for n in mirror) and any("MSEarth/MSEarth_MCQ" in n for n in mirror)
    assert any("SciFIBench/data/CS_Caption2Figure" in n for n in mirror)
    assert {"lmms_eval_earthsci/commands/report/html/assets/app.js", "lmms_eval_earthsci/commands/report/html/assets/app.css"} <= names  # report.html's browser


def test_wheel_ships_every_task_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for dirpath, _, files in os.walk(os.path.join(ROOT, "task_yamls")):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
            assert f"lmms_eval_earthsci/{rel}" in names
    assert "lmms_eval_earthsci/task_yamls/emma/_template_yaml" in names


def test_fresh_venv_registers_tasks_without_flags(wheel, tmp_path):
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], check=True)
    # the heavy dependencies (lmms-eval, torch, ...) come from the test environment; our package
    # itself only from the wheel (the fresh venv's site-packages is first on sys.path)
    fresh_site = subprocess.run([py, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(fresh_site, "_deps_from_test_env.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMMS_EVAL_PLUGINS", "EARTHSCI_"))}
    where = subprocess.run([py, "-c", "import lmms_eval_earthsci as m; print(m.TASKS_DIR)"], capture_output=True, text=True, check=True, cwd=str(tmp_path), env=env).stdout.strip()
    assert where == os.path.join(fresh_site, "lmms_eval_earthsci", "task_yamls")
    listing = subprocess.run([py, "-m", "lmms_eval", "--tasks", "list"], capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=600)
    assert listing.returncode == 0, listing.stderr[-3000:]
    for name in ("emma_mini", "emma_mini_math", "emma_mini_direct", "emma_full", "emma_full_direct_coding"):
        assert f" - {name}\n" in listing.stdout + listing.stderr, name
