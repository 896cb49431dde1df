"""Every task of ours, loaded by lmms-eval on the fixture mirror and scored on its fixture docs: the per-doc
`score` lmms-eval's `--baseline` and `score_key` read is the first field of the doc's results and its
headline value / 100 (a circular variant's: its rotation right or wrong); MuSciClaims (macro F1, a corpus metric) and a judged task without a judge have
none; MAC's accuracy record carries its score, its calibration record does not."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # lmms-eval builds every task, in a fresh interpreter (our hooks installed there)

RESPONSES = ("", "A", '{"answer": "B"}', "So the answer is \\boxed{C}", "A: 0.7, B: 0.1, C: 0.1, D: 0.1", '{"decision": "SUPPORT"}')


def check() -> None:
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_eval_earthsci import registry
    from lmms_eval_earthsci.registration import register
    from lmms_eval_earthsci.yamlgen import task_yaml_paths

    register()
    names = sorted(n for n in task_yaml_paths() if "_dad_" not in n)  # DAD needs a reasoner to score at all
    tasks = get_task_dict(names, TaskManager())
    checked = {}
    for name, task in sorted(tasks.items()):
        spec = registry.benchmark_of(name).report_spec()
        headline = spec.headline_metrics(name)[0]
        docs = list(task.test_docs() if task.has_test_docs() else task.validation_docs())[:4]
        for doc in docs:
            for resp in RESPONSES:
                out = task.process_results(doc, [resp])
                if name.endswith("_circular"):  # a rotation's doc: its score is whether this rotation was right
                    assert next(iter(out)) == "score" and out["score"] == (1.0 if out["circular_acc"]["correct"] else 0.0), (name, resp)
                    checked[name] = "score"
                    continue
                value = out.get(headline)
                value = value.get("score") if isinstance(value, dict) else value
                if registry.benchmark_of(name).name == "musciclaims" or value is None:
                    assert "score" not in out, (name, resp)
                    checked[name] = checked.get(name, "none")
                    continue
                assert next(iter(out)) == "score" and out["score"] == pytest.approx(value / 100), (name, resp)
                checked[name] = "score"
        if name.startswith("mac") and not name.endswith("_circular"):
            assert "score" in out["mac_acc"] and "score" not in out["mac_ece"]
    judged = {n for n in checked if any(j in registry.benchmark_of(n).report_spec().headline_metrics(n) for j in registry.benchmark_of(n).report_spec().judged_metrics)}
    assert {checked[n] for n in judged} == {"none"}  # no judge here: no verdict, no score
    assert all(checked[n] == "score" for n in checked if n not in judged and not n.startswith("musciclaims")), checked
    assert len([n for n in checked if checked[n] == "score"]) >= 20
    print(f"checked {len(checked)} tasks")


def test_the_per_doc_score_leads_and_is_the_headline_over_100(mirror, hf_home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EARTHSCI_JUDGE", "EARTHSCI_DAD"))}
    env.update(EARTHSCI_DATA_MIRROR=mirror, HF_HOME=hf_home, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    proc = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "checked" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]


if __name__ == "__main__":
    check()
