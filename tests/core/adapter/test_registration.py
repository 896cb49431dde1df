import os
import warnings

import pytest

import lmms_eval_earthsci
from lmms_eval_earthsci import registration
from lmms_eval_earthsci.core.hardening.libyaml import LibYaml


@pytest.fixture(scope="module")
def indexes():
    """(upstream index, our index, a TaskManager built after registration)."""
    import lmms_eval.tasks as lt

    registration.register()
    tm = lt.TaskManager("ERROR")
    upstream_dir = os.path.dirname(os.path.abspath(lt.__file__)) + "/"
    return tm._get_task_and_group(upstream_dir), tm._get_task_and_group(lmms_eval_earthsci.TASKS_DIR), tm


def _yaml_task_names():
    import yaml

    names = set()
    for dirpath, _, files in os.walk(lmms_eval_earthsci.TASKS_DIR):
        for f in files:
            if f.endswith(".yaml"):
                with open(os.path.join(dirpath, f)) as fh:
                    cfg = yaml.load(fh, Loader=yaml.BaseLoader)  # tags ignored, like lmms-eval's index pass
                names.add(cfg.get("task") if isinstance(cfg.get("task"), str) else cfg["group"])
    return names


@pytest.mark.slow
def test_every_yaml_is_registered(indexes):
    _, ours, tm = indexes
    expected = _yaml_task_names()
    assert {"emma_mini", "emma_mini_math", "emma_full_direct", "emma_full_direct_coding"} <= expected
    assert expected == set(ours)
    assert expected <= set(tm.all_tasks)


@pytest.mark.slow
def test_no_name_shadowed_by_upstream(indexes):
    upstream, ours, _ = indexes
    reserved = {"emma", "emma-mini"}  # upstream's EMMA tasks: names we must never reuse
    from importlib.metadata import version

    if not version("lmms-eval").startswith("0.6."):  # 0.6.1's PyPI wheel ships no task YAMLs
        assert reserved <= set(upstream)
    assert not set(ours) & (set(upstream) | reserved)
    # VLMEvalKit's unrelated "MaCBench": no task of ours may be mistaken for it
    assert not [name for name in ours if "macbench" in name.lower()]


@pytest.mark.slow
def test_register_is_idempotent_and_returns_no_models(indexes):
    import lmms_eval.tasks as lt

    assert registration.register() == []
    assert registration.register() == []
    assert registration.is_registered()
    # patched exactly once: our folder appears once in the include paths
    seen = []
    original = lt.TaskManager._get_task_and_group

    class Probe(lt.TaskManager):
        def _get_task_and_group(self, task_dir):
            seen.append(task_dir)
            return {}

    Probe("ERROR", include_path=[lmms_eval_earthsci.TASKS_DIR])
    assert seen.count(lmms_eval_earthsci.TASKS_DIR) == 1
    assert lt.TaskManager._get_task_and_group is original


def test_loud_warning_when_internals_change():
    class NoHook:
        pass

    class OtherSignature:
        def initialize_tasks(self, paths):
            return {}

    with pytest.warns(registration.RegistrationWarning, match="include_path"):
        assert registration.patch_task_manager(NoHook) is False
    with pytest.warns(registration.RegistrationWarning, match="no longer takes `include_path`"):
        assert registration.patch_task_manager(OtherSignature) is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Fine:
            def initialize_tasks(self, include_path=None, include_defaults=True):
                return include_path

        assert registration.patch_task_manager(Fine) is True
        assert Fine().initialize_tasks(None) == [lmms_eval_earthsci.TASKS_DIR]
        assert Fine().initialize_tasks("/x") == ["/x", lmms_eval_earthsci.TASKS_DIR]


def test_generated_yamls_are_current():
    from lmms_eval_earthsci import yamlgen

    assert yamlgen.main(["--check"]) == 0


@pytest.mark.slow
def test_sweep_groups_hold_each_benchmarks_headline_task(indexes):
    """`earthsci` = the headline task of every benchmark; `earthsci_nojudge` = those needing no judge;
    neither averages across benchmarks (no aggregate_metric_list)."""
    from lmms_eval_earthsci.yamlgen import SUITE_VERSION, suite_tasks

    EARTHSCI, EARTHSCI_NOJUDGE = suite_tasks(), suite_tasks(nojudge=True)

    _, ours, tm = indexes
    assert {"earthsci", "earthsci_nojudge"} <= set(ours)
    with open(os.path.join(lmms_eval_earthsci.TASKS_DIR, "earthsci", "earthsci.yaml")) as f:
        text = f.read()
    assert "aggregate_metric_list" not in text and f"version: {SUITE_VERSION}" in text
    assert set(EARTHSCI) == {"emma_mini", "msearth_mcq", "msearth_open", "msearth_caption", "scifibench", "musciclaims_rd", "mac2025"}
    assert set(EARTHSCI_NOJUDGE) == set(EARTHSCI) - {"msearth_open", "msearth_caption"}


@pytest.mark.e2e
def test_earthsci_nojudge_through_the_cli(mirror, hf_home, tmp_path):
    """`lmms-eval --tasks earthsci_nojudge` runs every leaf of each benchmark's headline task, with no
    judge and no cross-benchmark number."""
    from conftest import cli_env, openai_args, read_outputs, run_cli

    from lmms_eval_earthsci.testing.openai_server import FakeOpenAIServer

    out = tmp_path / "out"
    # the openai backend on a loopback server: every supported lmms-eval has it (0.6.1 has no `dummy`)
    with FakeOpenAIServer(responder=lambda body: "\\boxed{B}") as srv:
        run_cli(["--model", "openai", "--model_args", openai_args(srv.base_url), "--tasks", "earthsci_nojudge", "--limit", "1", "--output_path", str(out)], cli_env(mirror, hf_home), str(tmp_path))
        assert srv.requests and all(b.get("model") == "fake" for b in srv.requests)  # the model only: no judge
    res, _ = read_outputs(str(out))
    leaves = {t for t in res["results"] if t in res.get("configs", {})}
    want = {f"emma_mini_{s}" for s in ("math", "physics", "chemistry", "coding")} | {"msearth_mcq", "musciclaims_rd"} | {f"mac2025_{d}_{m}" for d in ("i2t", "t2i") for m in ("info", "option")}
    assert want <= leaves and {"scifibench_cs_f2c", "scifibench_general_c2f"} <= leaves
    assert not any(t.startswith(("msearth_open", "msearth_caption")) or "judge" in t for t in leaves)
    assert not [k for k in res["results"].get("earthsci_nojudge", {}) if "," in k]  # no cross-benchmark average
    # each task at the version its benchmark declares (the YAMLs are generated from it)
    from lmms_eval_earthsci import registry

    declared = {t: (b := registry.benchmark_of(t)).task_versions.get(t, b.version) for t in leaves}
    assert {t: float(v) for t, v in res["versions"].items() if t in leaves} == declared
    assert declared["msearth_mcq"] == 1.0 and declared["musciclaims_rd"] > 1.0  # not one value for all: the check reads each


@pytest.mark.slow
def test_the_task_index_on_libyaml_reads_the_same_documents(indexes, tmp_path):
    """Registration gives lmms_eval.utils libyaml's C parser (a ~6x faster task index at every run's start):
    every YAML lmms-eval and we ship, loaded by lmms-eval's own load_yaml_config (includes followed, as the
    index does, and in full mode for ours: their !function tags imported), is the same document both ways."""
    import glob

    import yaml
    from lmms_eval import utils

    assert isinstance(utils.yaml, LibYaml)  # in place after register()
    import lmms_eval.tasks as lt

    upstream = os.path.dirname(os.path.abspath(lt.__file__))
    ours = glob.glob(os.path.join(lmms_eval_earthsci.TASKS_DIR, "**", "*.yaml"), recursive=True)
    files = [(f, "simple") for f in sorted(glob.glob(os.path.join(upstream, "**", "*.yaml"), recursive=True))] + [(f, m) for f in sorted(ours) for m in ("simple", "full")]
    assert len(ours) >= 100  # and lmms-eval's own (~2,000 in 0.7.3; the 0.6.1 wheel ships none)

    def plain(value):
        """A document with the nodes simple mode leaves for !function tags as (kind, tag, value), and the
        functions full mode imports as file:name (a file imported twice is two modules)."""
        if callable(value) and hasattr(value, "__code__"):
            return value.__code__.co_filename + ":" + value.__name__
        if isinstance(value, yaml.Node):
            return (type(value).__name__, value.tag, plain(value.value))
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(plain(v) for v in value)
        return value

    def load_all():
        out = []
        for f, mode in files:
            try:
                out.append(plain(utils.load_yaml_config(f, mode=mode)))
            except Exception as exc:  # a file lmms-eval cannot load either way: the same error type both ways
                out.append(type(exc).__name__)
        return out

    # an upstream-style task: `!function utils.f` is the utils.py beside the YAML (the loader's name says where)
    (tmp_path / "utils.py").write_text("def doc_to_text(doc):\n    return doc\n")
    (tmp_path / "t.yaml").write_text("task: t\ndoc_to_text: !function utils.doc_to_text\n")
    files.append((str(tmp_path / "t.yaml"), "full"))

    fast = load_all()
    utils.yaml = yaml
    try:
        slow = load_all()
    finally:
        utils.yaml = LibYaml(yaml)
    assert [f for (f, _), a, b in zip(files, fast, slow) if a != b] == []
    assert fast[-1]["doc_to_text"] == str(tmp_path / "utils.py") + ":doc_to_text"
