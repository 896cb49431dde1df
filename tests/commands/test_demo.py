"""The demo on a subset (tiny local VLM, bundled sample mirror, real lmms-eval CLI, report), and the
bundled mirror itself."""

import glob
import json
import os
import re

import forkserver
import pytest
from conftest import VENV_BIN, cli_env

from lmms_eval_earthsci.sample_mirror import sample_mirror_root, sample_repos

pytestmark = pytest.mark.e2e


def test_bundled_mirror_is_the_fixture_writer_output(tmp_path):
    import datasets

    SAMPLE_MIRROR = sample_mirror_root(str(tmp_path / "sample"))
    # one tree of every benchmark's sample repos, each a link to the data in its benchmark's folder
    assert sorted(f"{o}/{n}" for o in os.listdir(SAMPLE_MIRROR) for n in os.listdir(os.path.join(SAMPLE_MIRROR, o))) == sorted(sample_repos())
    assert {"luckychao/EMMA-mini", "MSEarth/MSEarth_MCQ", "jonathan-roberts1/SciFIBench", "StonyBrookNLP/MuSciClaims", "mhjiang0408/MAC_Bench"} <= set(sample_repos())
    assert sample_repos()["luckychao/EMMA-mini"].endswith(os.path.join("evals", "emma", "sample_mirror", "luckychao", "EMMA-mini"))
    assert sample_mirror_root(SAMPLE_MIRROR) == SAMPLE_MIRROR  # again: links kept as they are

    from lmms_eval_earthsci.evals.emma import fixtures as emma
    from lmms_eval_earthsci.evals.mac import benchmark as mac_benchmark
    from lmms_eval_earthsci.evals.mac import fixtures as mac_fx
    from lmms_eval_earthsci.evals.msearth import fixtures as msearth
    from lmms_eval_earthsci.evals.musciclaims import benchmark as musciclaims_benchmark
    from lmms_eval_earthsci.evals.musciclaims import fixtures as musciclaims
    from lmms_eval_earthsci.evals.scifibench import fixtures as scifibench

    expected = {
        "luckychao/EMMA-mini/Math": emma.emma_rows()["Math"],
        "MSEarth/MSEarth_MCQ": msearth.msearth_rows("mcq"),
        "jonathan-roberts1/SciFIBench/CS_Caption2Figure": scifibench.scifibench_rows("CS_Caption2Figure"),
    }
    for key, rows in expected.items():
        parts = key.split("/")
        repo = os.path.join(SAMPLE_MIRROR, parts[0], parts[1])
        if parts[0] == "luckychao":
            ds = datasets.load_dataset(repo, parts[2], split="test")
        elif parts[0] == "MSEarth":
            ds = datasets.load_dataset(repo, split="train")
        else:
            ds = datasets.load_dataset(repo, data_files={parts[2]: f"data/{parts[2]}-*.parquet"}, split=parts[2])
        got = [{k: v for k, v in r.items() if not k.lower().startswith("image")} for r in ds]
        want = [{k: v for k, v in r.items() if not k.lower().startswith("image")} for r in rows]
        assert got == want, key
    # MuSciClaims: rows as JSON lines, figures as repo files, byte for byte
    rows, figures = musciclaims.musciclaims_rows()
    repo = os.path.join(SAMPLE_MIRROR, *musciclaims_benchmark.DATASET.split("/"))
    assert [dict(r) for r in datasets.load_dataset(repo, split="test")] == rows
    from PIL import Image

    for rel, img in figures.items():
        assert list(Image.open(os.path.join(repo, *rel.split("/"))).size) == list(img.size), rel
    # MAC: the four CSVs as the fixture writer makes them, covers as repo files
    mac = os.path.join(SAMPLE_MIRROR, *mac_benchmark.DATASET.split("/"))
    for direction, domain, name in (("i2t", "info", "image2text_info"), ("t2i", "option", "text2image_option")):
        got = [dict(r) for r in datasets.load_dataset(mac, data_files={"test": f"{name}.csv"}, split="test")]
        assert [{k: str(v) for k, v in r.items()} for r in got] == [{k: str(v) for k, v in r.items()} for r in mac_fx.mac_rows(direction, domain)]


def test_demo_subset_writes_report(hf_home, tmp_path):
    out = tmp_path / "demo"
    env = cli_env(str(tmp_path / "unused"), hf_home, EARTHSCI_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("EARTHSCI_DATA_MIRROR")  # the demo sets it itself
    cmd = [os.path.join(VENV_BIN, "lmms-eval-earthsci"), "demo", "--out", str(out), "--tasks", "emma_mini_math,msearth_mcq,scifibench_cs_c2f,musciclaims_d"]
    proc = forkserver.subprocess_run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "random noise" in proc.stdout and "report:" in proc.stdout
    # a terminal a person reads: a line per stage, the headline numbers, where every output is (last);
    # lmms-eval's and the report's logs in the log file, the report in report.md
    lines = proc.stdout.splitlines() + proc.stderr.splitlines()
    assert len(lines) <= 40 and "## Headline" not in proc.stdout and "| DEBUG" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-5:] == [
        "outputs:",
        f"  lmms-eval's results JSON and samples JSONL: {out / 'runs'}",
        f"  lmms-eval's log (and the report's): {out / 'lmms_eval.log'}",
        f"  report: {out / 'report' / 'report.md'} (PNG charts and summary.csv beside it)",
        f"  every sample: {out / 'report' / 'report.html'} (open it from disk)",
    ]
    assert any(line.startswith("  EMMA ") and "emma_mini_math" in line for line in lines)
    assert "lmms_eval_earthsci" in (out / "lmms_eval.log").read_text()  # the logs went there
    from test_report import no_ci

    report = "\n".join(no_ci((out / "report" / "report.md").read_text()))  # intervals: tests/commands/test_report.py
    results = json.load(open(glob.glob(str(out / "runs" / "**" / "*_results.json"), recursive=True)[0]))["results"]
    # it says what it is, then leads with the headline table: ours beside the paper's (GPT-4o)
    sections = re.findall(r"^## (.+)$", report, re.MULTILINE)
    assert sections[:2] == ["What you are looking at", "Headline"] and "untrained" in report
    # every number in the tables is the one in the results JSON
    for task, metric, paper in (("emma_mini_math", "emma_acc", "27.00"), ("msearth_mcq", "msearth_acc", "57.97"), ("msearth_mcq", "msearth_acc_strict", "–"), ("scifibench_cs_c2f", "scifibench_acc", "–")):
        value = results[task][f"{metric},none"]
        assert f"| {task} | {metric} | {value:.2f} | {paper} |" in report
    assert re.search(r"\| emma_mini_math \| tiny-llava \(runs\) \| 3 \| \d+ \| 0 \| – \| – \|", report)
    assert f"| musciclaims_d | musciclaims_macro_f1 | {results['musciclaims_d']['musciclaims_macro_f1,none']:.2f} | 52.00 § |" in report
    for name in ("EMMA", "MSEarth", "SciFIBench", "MuSciClaims", "Paper tables", "Paper reference"):
        assert f"## {name}" in report
    # the papers' own tables with the demo's run in them, each number the results JSON's, at the paper's scale
    mcq = results["msearth_mcq"]
    assert f"| **run: tiny-llava (runs)** | ✓ | {mcq['msearth_image_single,none']:.2f} |" in report
    assert "| **run: tiny-llava (runs)** | D | another slice |" not in report  # the run has the biology slice
    assert f"{results['musciclaims_d']['musciclaims_macro_f1_biology,none'] / 100:.2f} |" in report
    assert (out / "report" / "paper_tables" / "emma_table_2.csv").exists()
    assert "[]" not in report
    assert (out / "report" / "emma_mini_by_subject.png").stat().st_size > 1000 and (out / "report" / "scifibench_by_split.png").exists()
    assert os.path.exists(tmp_path / "cache" / "tiny-llava" / "model.safetensors")
    # the page and its sample browser, every doc's figures from the sample mirror the run read
    page = (out / "report" / "report.html").read_text()
    data = sorted(p.name for p in (out / "report" / "browser" / "data").glob("t*.js"))
    assert "browser/index.js" in page and data == ["t0.js", "t0_r0.js", "t1.js", "t1_r0.js", "t2.js", "t2_r0.js", "t3.js", "t3_r0.js"]  # a task's list, its run's details
    assert len(list((out / "report" / "browser" / "img").glob("*.jpg"))) >= 3 + 6 + 15
    # every doc of the demo under the default budget: a large copy beside each thumbnail
    assert sorted(p.name for p in (out / "report" / "browser" / "large").glob("*.jpg")) == sorted(p.name for p in (out / "report" / "browser" / "img").glob("*.jpg"))
    _check_figures_seen(out, tmp_path, env)


def _check_figures_seen(out, tmp_path, env):
    """Every sample says at what size each of its figures reached the model (read from the run's own
    processor calls), the page shows it, and a rescore of the run keeps it."""
    import datasets
    from PIL import Image
    from transformers import AutoProcessor

    samples = {p.rsplit("_samples_", 1)[1][: -len(".jsonl")]: [json.loads(line) for line in open(p)] for p in glob.glob(str(out / "runs" / "**" / "*_samples_*.jsonl"), recursive=True)}
    processor = AutoProcessor.from_pretrained(str(tmp_path / "cache" / "tiny-llava"))
    crop = [processor.image_processor.crop_size["width"], processor.image_processor.crop_size["height"]]
    mcq = datasets.load_dataset(os.path.join(sample_mirror_root(str(tmp_path / "sample")), "MSEarth", "MSEarth_MCQ"), split="train")
    # one image's visual tokens, counted in the ids the processor makes for it
    ids = processor(images=[Image.new("RGB", (96, 72))], text="<image>")["input_ids"][0]
    one = sum(1 for i in ids if i == processor.tokenizer.convert_tokens_to_ids("<image>"))
    assert one > 0
    for s in samples["msearth_mcq"]:
        image = mcq[s["doc_id"]]["image"]
        assert s["earthsci_figures"] == [{"sent": list(image.size), "reached": crop, "tokens": one}], s["earthsci_figures"]
    assert [len(s["earthsci_figures"]) for s in samples["scifibench_cs_c2f"]] == [5] * len(samples["scifibench_cs_c2f"])  # the five candidate figures
    for task in ("emma_mini_math", "musciclaims_d", "scifibench_cs_c2f"):
        assert samples[task] and all(f["reached"] == crop for s in samples[task] for f in s["earthsci_figures"]), task
    # the sample browser's details carry them (app.js writes "figure k reached the model at W x H")
    details = "".join(p.read_text() for p in (out / "report" / "browser" / "data").glob("t*_r0.js"))
    assert details.count('"figures":[{"sent":') == sum(len(v) for v in samples.values())
    # rescore replays them from the run into its own samples
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval-earthsci"), "rescore", str(out / "runs"), "--out", str(tmp_path / "re")], env=env, cwd=str(tmp_path),
                                     capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = {p.rsplit("_samples_", 1)[1][: -len(".jsonl")]: [json.loads(line) for line in open(p)] for p in glob.glob(str(tmp_path / "re" / "**" / "*_samples_*.jsonl"), recursive=True)}
    assert {t: {s["doc_id"]: s["earthsci_figures"] for s in v} for t, v in again.items()} == {t: {s["doc_id"]: s["earthsci_figures"] for s in v} for t, v in samples.items()}
