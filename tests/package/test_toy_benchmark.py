"""A sixth benchmark that nobody ships, registered the way a lab registers its own on our core: a package
in a folder of its own (its tasks, its task YAMLs, its fixture writer, its report spec) with an entry
point in the ``lmms_eval_earthsci.benchmarks`` group, on ``PYTHONPATH`` of fresh processes. Without a
line of ours changed, it is written into the fixture mirror, indexed by lmms-eval, run through the real
CLI, gets its own report section (chart and interval), its own fields in the sample browser, and is
rescored."""

import json
import os
import textwrap
from importlib.metadata import version

import forkserver
import pytest
from conftest import VENV_BIN, cli_env, openai_args, read_outputs, run_cli
from packaging.version import Version

from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer, text_of

pytestmark = pytest.mark.e2e

DOCS = [{"id": f"t{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i), "kind": "even" if i % 2 == 0 else "odd"} for i in range(10)]

FILES = {
    "toy_bench/__init__.py": "",
    "toy_bench/benchmark.py": """
        import os
        from lmms_eval_earthsci.core.benchmark import Benchmark

        HERE = os.path.dirname(os.path.abspath(__file__))
        BENCHMARK = Benchmark(
            name="toybench",
            title="ToyBench",
            folder=HERE,
            report="toy_bench.report:ToyReport",
            task_dir=os.path.join(HERE, "tasks"),
            datasets=("toylab/ToyBench",),
            fixtures={"toylab/ToyBench": "toy_bench.fixtures:write"},
        )
    """,
    "toy_bench/tasks.py": """
        from lmms_eval_earthsci.core.activation import activate
        from lmms_eval_earthsci.core.prompts.messages import chat_messages
        from lmms_eval_earthsci.core.scoring.metrics import percent
        from toy_bench.benchmark import BENCHMARK

        activate(BENCHMARK)

        def doc_to_text(doc, lmms_eval_specific_kwargs=None):
            return doc["question"] + " Answer with a number."

        def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
            return chat_messages(doc_to_text(doc))

        def doc_to_visual(doc):
            return []

        def doc_to_target(doc):
            return doc["answer"]

        def process_results(doc, results):
            score = percent(results[0].strip() == doc["answer"])
            record = {"score": score, "answer": results[0].strip(), "level": "easy" if int(doc["answer"]) < 10 else "hard"}
            return {"toy_acc": record, f"toy_kind_{doc['kind']}": score}
    """,
    "toy_bench/report.py": """
        from lmms_eval_earthsci.core.benchmark import ChartSpec, ReportSpec

        class ToyReport(ReportSpec):
            headline_metric = "toy_acc"
            breakdown_fields = ("kind",)  # toy_kind_even: the browser's field "kind"
            record_fields = ("level",)  # a field of the per-doc record
            answer_field = "answer"

            def charts(self, view):
                return [ChartSpec("toybench_by_kind", "ToyBench by kind", tuple((k, (("", t, f"toy_kind_{k}"),)) for t in view.tasks() for k in ("even", "odd")))]
    """,
    "toy_bench/fixtures.py": f"""
        import json, os

        DOCS = {json.dumps(DOCS)}

        def write(root, repo):
            d = os.path.join(root, *repo.split("/"), "data")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "test.jsonl"), "w") as f:
                f.write("".join(json.dumps(r) + "\\n" for r in DOCS))
            return root
    """,
    "toy_bench/tasks/toybench_qa.yaml": """
        task: toybench_qa
        dataset_path: toylab/ToyBench
        test_split: test
        output_type: generate_until
        doc_to_text: !function toy_bench.tasks.doc_to_text
        doc_to_messages: !function toy_bench.tasks.doc_to_messages
        doc_to_visual: !function toy_bench.tasks.doc_to_visual
        doc_to_target: !function toy_bench.tasks.doc_to_target
        process_results: !function toy_bench.tasks.process_results
        generation_kwargs:
          max_new_tokens: 16
          temperature: 0
          do_sample: false
        metric_list:
          - metric: toy_acc
            aggregation: !function lmms_eval_earthsci.core.scoring.metrics.mean_present
            higher_is_better: true
          - metric: toy_kind_even
            aggregation: !function lmms_eval_earthsci.core.scoring.metrics.mean_present
            higher_is_better: true
          - metric: toy_kind_odd
            aggregation: !function lmms_eval_earthsci.core.scoring.metrics.mean_present
            higher_is_better: true
        metadata:
          version: 0.3
    """,
    # what `pip install` of the lab's package leaves on sys.path: its metadata and entry point
    "toy_bench-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toy-bench\nVersion: 0.1\n",
    "toy_bench-0.1.dist-info/entry_points.txt": "[lmms_eval_earthsci.benchmarks]\ntoybench = toy_bench.benchmark:BENCHMARK\n",
}


def reply(body):
    """Right on the docs whose number is below 6, wrong on the rest."""
    q = text_of(body)
    n = int(q.split("What is ", 1)[1].split(" ", 1)[0])
    return str(2 * n) if n < 6 else "7"


def _cmd(env, cwd, *args, timeout=600):
    proc = forkserver.subprocess_run([os.path.join(VENV_BIN, "lmms-eval-earthsci"), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def test_a_lab_benchmark_registered_from_outside_runs_reports_and_rescores(hf_home, tmp_path):
    lab = tmp_path / "lab"
    for rel, text in FILES.items():
        path = lab / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    mirror = tmp_path / "mirror"
    env = cli_env(str(mirror), hf_home, PYTHONPATH=str(lab))
    # write-fixtures iterates the registry: the lab's writer runs beside ours
    _cmd(env, str(tmp_path), "write-fixtures", str(mirror))
    assert (mirror / "toylab" / "ToyBench" / "data" / "test.jsonl").exists() and (mirror / "luckychao" / "EMMA-mini").is_dir()

    # lmms-eval finds the task through the entry point alone (no --include_path), in a fresh process
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=reply) as srv:
        run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", "toybench_qa", "--output_path", str(out), "--log_samples"], env, str(tmp_path))
        assert len(srv.requests) == len(DOCS)
    res, samples = read_outputs(str(out))
    assert res["results"]["toybench_qa"]["toy_acc,none"] == pytest.approx(60.0)
    assert res["results"]["toybench_qa"]["toy_kind_even,none"] == pytest.approx(60.0)  # 0, 2, 4 of 0..8
    assert len(samples["toybench_qa"]) == len(DOCS)
    assert res["configs"]["toybench_qa"]["metadata"]["earthsci_data"]["source"] == "mirror"

    # its own report section, headline row with an interval, its own chart
    rep = tmp_path / "report"
    printed = _cmd(env, str(tmp_path), "report", str(out), "--out", str(rep), "--resamples", "500").stdout
    assert "| ToyBench | toybench_qa | toy_acc |" in printed  # the terminal's headline has it too
    text = (rep / "report.md").read_text()
    lines = text.splitlines()
    row = next(ln for ln in lines if ln.startswith("| ToyBench | toybench_qa | toy_acc |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "60.00" and "–" in cells[4] and cells[4] != "–"  # value and its 95% CI
    assert "## ToyBench" in lines and (rep / "toybench_by_kind.png").stat().st_size > 1000
    assert sorted(p.name for p in rep.glob("*.png")) == ["toybench_by_kind.png"]
    # the sample browser: the lab's own fields and answers, with no line of commands/report/ naming them
    index = (rep / "browser" / "index.js").read_text()
    (entry,) = [t for t in json.loads(index[index.index("(") + 1 : index.rindex(")")])["tasks"] if t["name"] == "toybench_qa"]
    data = (rep / entry["file"]).read_text()
    docs = json.loads(data[data.index(",") + 1 : data.rindex(")")])["docs"]
    by_id = {int(d["id"]): d for d in docs}
    for i, doc in enumerate(DOCS):
        d = by_id[i]
        assert d["fields"] == {"kind": doc["kind"], "level": "easy" if 2 * i < 10 else "hard"}
        assert (d["runs"][0]["answer"], d["runs"][0]["verdict"]) == (reply({"messages": [{"role": "user", "content": doc["question"]}]}), "right" if i < 6 else "wrong")

    # rescore: the logged responses scored again, no model (rescore needs lmms-eval >= 0.7.3's model registry)
    if Version(version("lmms-eval")) < Version("0.7.3"):
        return
    again = tmp_path / "rescored"
    _cmd(env, str(tmp_path), "rescore", str(out), "--out", str(again))
    res2, samples2 = read_outputs(str(again))
    assert res2["results"]["toybench_qa"]["toy_acc,none"] == pytest.approx(60.0)
    assert [s["toy_acc"] for s in samples2["toybench_qa"]] == [s["toy_acc"] for s in samples["toybench_qa"]]
    assert res2["rescore"]["source"]["kind"] == "lmms-eval run"
