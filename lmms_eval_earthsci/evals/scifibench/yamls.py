"""SciFIBench's task YAMLs: the four splits (rules; + LLM answer extractor), the alignment variants, the
groups."""

from __future__ import annotations

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.core.yamls import HEADER, JUDGE_FAILED, JUDGED_MEAN, MEAN_PRESENT, group_yaml, metric_list
from lmms_eval_earthsci.evals.scifibench import benchmark as scifibench
from lmms_eval_earthsci.evals.scifibench.benchmark import SPLITS


def scifibench_files() -> dict[str, str]:
    no_answer = (scifibench.NO_ANSWER, MEAN_PRESENT, False)
    failed = ("scifibench_judge_failed", JUDGE_FAILED, False)
    files: dict[str, str] = {}
    groups: dict[str, list[str]] = {"scifibench_f2c": [], "scifibench_c2f": [], "scifibench_judge": [], "scifibench_alignment": [], "scifibench_circular": []}
    names = {"f2c": "Figure->Caption", "c2f": "Caption->Figure"}

    def task_yaml(task, alias, subset, direction, split, extra_kwargs="", judge=False):
        known = scifibench.known_breakdowns(subset, direction)
        more = [no_answer] + ([(scifibench.JUDGE_METRIC, JUDGED_MEAN, True), failed] if judge else [])
        return (
            HEADER
            + "include: _template_yaml\n"
            + f"task: {task}\n"
            + f'task_alias: "{alias}"\n'
            + f"test_split: {split}\n"
            + f'dataset_kwargs:\n  data_files:\n    {split}: "data/{split}-*.parquet"\n'
            + f"process_docs: !function lmms_eval_earthsci.evals.scifibench.tasks.process_docs_{subset}_{direction}\n"
            + ("process_results: !function lmms_eval_earthsci.evals.scifibench.tasks.process_results_judge\n" if judge else "")
            + "lmms_eval_specific_kwargs:\n  default:\n"
            + f"    direction: {direction}\n    prompt: default  # or: paper_appendix, reasoning\n"
            + extra_kwargs
            + metric_list(scifibench.METRIC, scifibench.BREAKDOWN_PREFIX, known, more)
        )

    for (subset, direction), split in SPLITS.items():
        task = f"scifibench_{subset}_{direction}"
        label = f"SciFIBench {subset.upper() if subset == 'cs' else 'General'} {names[direction]}"
        files[f"{task}.yaml"] = task_yaml(task, label, subset, direction, split)
        groups[f"scifibench_{direction}"].append(task)
        files[f"{task}_judge.yaml"] = task_yaml(f"{task}_judge", label + " (+ LLM extractor)", subset, direction, split, judge=True)
        groups["scifibench_judge"].append(f"{task}_judge")
        files[f"{task}_circular.yaml"] = circular.task_yaml(official=task, task=f"{task}_circular", alias=label + " (circular)", module="lmms_eval_earthsci.evals.scifibench.circular",
                                                            process_docs=f"process_docs_{subset}_{direction}", positions="ABCDE", header=HEADER)
        groups["scifibench_circular"].append(f"{task}_circular")
    # alignment variants (spec §1.4): built from CS F->C, <Correct> tag on the right or a wrong option
    for mark in ("correct", "incorrect"):
        for inst in (False, True):
            task = f"scifibench_cs_f2c_marked_{mark}" + ("_inst" if inst else "")
            extra = f"    mark: {mark}\n    instruction: {str(inst).lower()}\n"
            alias = f"SciFIBench CS Figure->Caption, <Correct> on the {'right' if mark == 'correct' else 'a wrong'} option" + (", 'ignore'" if inst else "")
            files[f"{task}.yaml"] = task_yaml(task, alias, "cs", "f2c", SPLITS[("cs", "f2c")], extra)
            groups["scifibench_alignment"].append(task)
    aliases = {
        "scifibench_f2c": "SciFIBench Figure->Caption (CS + General = paper's Overall)",
        "scifibench_c2f": "SciFIBench Caption->Figure (CS + General = paper's Overall)",
        "scifibench_judge": "SciFIBench with the paper's LLM answer extractor",
        "scifibench_alignment": "SciFIBench alignment variants (CS F->C)",
        "scifibench_circular": "SciFIBench, the four splits, circular (each task reports its own numbers)",
    }
    for g, tasks in groups.items():
        metrics = [] if g == "scifibench_circular" else [scifibench.METRIC, scifibench.NO_ANSWER] + ([scifibench.JUDGE_METRIC] if g == "scifibench_judge" else [])
        files[f"{g}.yaml"] = group_yaml(g, tasks, metrics, alias=aliases[g])
    files["scifibench.yaml"] = group_yaml("scifibench", ["scifibench_f2c", "scifibench_c2f"], [scifibench.METRIC, scifibench.NO_ANSWER], alias="SciFIBench, all four splits (our pooled number; the paper reports none)")
    return files
