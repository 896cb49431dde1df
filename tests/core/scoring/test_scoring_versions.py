"""A task's comparability version must move when its scoring moves.

Every task of ours is loaded through lmms-eval (fixture mirror), and scored on its fixture docs with a
fixed set of responses: ``process_results`` outputs, the aggregation of every metric, and for judged
tasks the judge request text and the parse of fixed replies. The SHA-256 of all that is recorded per
task beside its version in ``scoring_fingerprints.json``. The test fails when a fingerprint changes
while the version stays (bump the benchmark's ``version`` / ``task_versions`` in its ``benchmark.py``, regenerate the YAMLs), and when
a version moved without the record (then record it):

    .venv/bin/python tests/core/scoring/test_scoring_versions.py --update
"""

import hashlib
import json
import math
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(HERE, "scoring_fingerprints.json")
DOCS_PER_TASK = 8
RESPONSES = (
    "",
    "A",
    "The answer is (B).",
    "So the answer is \\boxed{C}",
    "\\boxed{3}",
    '{"answer": "Late spring", "decision": "SUPPORT"}',
    '```json\n{"decision": "CONTRADICT", "reasoning": "panel B"}\n```',
    "A: 0.7, B: 0.1, C: 0.1, D: 0.1",
    "Precipitation rises at every station.",
)
JUDGE_REPLIES = ("Correct", "Incorrect", '{"is_correct": true}', '{"score": 4}', "A", "garbage")


def _canon(value):
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return type(value).__name__  # images and other objects: their kind, not their address


def _fingerprint(task) -> str:
    from lmms_eval_earthsci.core.data.loading import undecoded

    docs = list(task.test_docs() if task.has_test_docs() else task.validation_docs())[:DOCS_PER_TASK]
    outputs, per_metric = [], {}
    spec = getattr(task.config.process_results, "judge_spec", None)
    for doc in docs:
        for resp in RESPONSES:
            out = task.process_results(doc, [resp])
            outputs.append(_canon(out))
            for k, v in out.items():
                per_metric.setdefault(k, []).append(v)
        if spec is not None:
            for resp in RESPONSES[2:4]:
                try:
                    msgs = spec.build(doc, spec.text_of(resp), lambda d=doc: undecoded(d))
                    outputs.append(_canon([m.get("content") if isinstance(m.get("content"), str) else [p.get("text") for p in m.get("content", []) if isinstance(p, dict)] for m in msgs]))
                except Exception as exc:  # noqa: BLE001 - the failure's kind is part of the behaviour
                    outputs.append(type(exc).__name__)
    if spec is not None:
        for reply in JUDGE_REPLIES:
            try:
                outputs.append(_canon(spec.parse(reply)))
            except ValueError:
                outputs.append("ValueError")
    aggs = {m: task.aggregation()[m] for m in per_metric if m in task.aggregation()}
    outputs.append({m: _canon(fn(per_metric[m])) for m, fn in sorted(aggs.items())})
    return hashlib.sha256(json.dumps(outputs, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def current() -> dict:
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_eval_earthsci.registration import register
    from lmms_eval_earthsci.yamlgen import task_yaml_paths

    register()  # our task folder and the mirror hook, as the entry point does in a real run
    names = sorted(task_yaml_paths())
    tm = TaskManager()
    tasks = get_task_dict(names, tm)
    out = {}
    for name in names:
        task = tasks[name]
        out[name] = {"version": task.config.metadata.get("version"), "sha256": _fingerprint(task)}
    return out


@pytest.fixture(scope="module")
def fingerprints(mirror, hf_home):
    """Computed in a fresh interpreter: scoring must not depend on what earlier tests left in this one."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("EARTHSCI_JUDGE", "EARTHSCI_DAD"))}
    env.update(EARTHSCI_DATA_MIRROR=mirror, HF_HOME=hf_home, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--json"], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_scoring_changes_move_the_task_version(fingerprints):
    with open(RECORD) as f:
        record = json.load(f)
    problems = []
    for task, now in fingerprints.items():
        was = record.get(task)
        if was is None:
            problems.append(f"{task}: not recorded")
        elif str(was["version"]) != str(now["version"]):
            problems.append(f"{task}: version {was['version']} -> {now['version']}: record the new fingerprint")
        elif was["sha256"] != now["sha256"]:
            problems.append(f"{task}: its scoring outputs on the fixtures changed but its version ({now['version']}) did not: bump it in its benchmark.py (version / task_versions)")
    gone = sorted(set(record) - set(fingerprints))
    problems += [f"{t}: recorded but no longer a task" for t in gone]
    assert not problems, "\n".join(problems) + "\nthen: .venv/bin/python tests/core/scoring/test_scoring_versions.py --update"
    assert len(fingerprints) > 50  # premise: every task was fingerprinted


@pytest.mark.slow
def test_fingerprint_is_stable_and_sensitive(mirror, hf_home, monkeypatch):
    """The same scoring twice gives the same fingerprint; one changed extraction rule changes it."""
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_eval_earthsci.evals.emma import tasks as emma
    from lmms_eval_earthsci.registration import register

    monkeypatch.setenv("EARTHSCI_DATA_MIRROR", mirror)
    monkeypatch.setenv("HF_HOME", hf_home)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    register()
    task = get_task_dict(["emma_mini_math"], TaskManager())["emma_mini_math"]
    first = _fingerprint(task)
    assert _fingerprint(task) == first
    original = emma.fast_extract_answer

    def broken(response):
        got = original(response)
        return original("") if "boxed" in str(response) else got

    emma.fast_extract_answer = broken
    try:
        assert _fingerprint(task) != first
    finally:
        emma.fast_extract_answer = original


if __name__ == "__main__" and "--json" in sys.argv:
    print(json.dumps(current()))

if __name__ == "__main__" and "--update" in sys.argv:
    import tempfile

    sys.path.insert(0, HERE)
    from lmms_eval_earthsci.testing.fixtures import write_mirror

    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(EARTHSCI_DATA_MIRROR=write_mirror(os.path.join(tmp, "mirror")), HF_HOME=os.path.join(tmp, "hf"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
        for k in list(os.environ):
            if k.startswith(("EARTHSCI_JUDGE", "EARTHSCI_DAD")):
                os.environ.pop(k)
        fp = current()
    with open(RECORD, "w") as f:
        json.dump(fp, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"recorded {len(fp)} tasks in {RECORD}")
