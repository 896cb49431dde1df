"""EMMA's task YAMLs: per set (mini, full), strategy (CoT, Direct, CoT + LLM judge) and subject, with
the breakdown metrics of each subject's labels, and a group per set and strategy."""

from __future__ import annotations

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.core.yamls import HEADER, JUDGE_FAILED, JUDGED_MEAN, MEAN_PRESENT, group_yaml, metric_list
from lmms_eval_earthsci.evals.emma import benchmark as emma
from lmms_eval_earthsci.evals.emma.benchmark import DATASET_FULL, DATASET_MINI


def emma_files() -> dict[str, str]:
    failed = ("emma_judge_failed", JUDGE_FAILED, False)
    scaling = [(emma.MAJ, MEAN_PRESENT, True), (emma.PASS, MEAN_PRESENT, True)]
    files: dict[str, str] = {}
    sets = {"mini": (DATASET_MINI, emma.REVISION_MINI), "full": (DATASET_FULL, emma.REVISION_FULL)}
    variants = (("CoT", "", "CoT"), ("Direct", "_direct", "Direct"), ("CoT", "_judge", "CoT, LLM judge"))
    for size, (path, revision) in sets.items():
        for strategy, suffix, label in variants:
            group = f"emma_{size}{suffix}"
            judge = suffix == "_judge"
            tasks = []
            for subject in emma.SUBJECTS:
                task = f"{group}_{subject.lower()}"
                tasks.append(task)
                if judge:
                    # breakdowns of emma_judge_acc (emma_acc's own are in the non-judge tasks)
                    metrics = metric_list(emma.JUDGE_METRIC, emma.BREAKDOWN_PREFIX, emma.breakdowns(subject), [(emma.METRIC, MEAN_PRESENT, True), (emma.LENIENT, MEAN_PRESENT, True), *scaling, failed], main_agg=JUDGED_MEAN)
                else:
                    metrics = metric_list(emma.METRIC, emma.BREAKDOWN_PREFIX, emma.breakdowns(subject), [(emma.LENIENT, MEAN_PRESENT, True), *scaling])
                files[f"{task}.yaml"] = (
                    HEADER
                    + "include: _template_yaml\n"
                    + f"task: {task}\n"
                    + f'task_alias: "EMMA-{size} {subject} ({label})"\n'
                    + f"dataset_path: {path}\n"
                    + f"dataset_name: {subject}\n"
                    + f"dataset_kwargs:\n  revision: {revision}\n"
                    + f"lmms_eval_specific_kwargs:\n  default:\n    strategy: {strategy}\n"
                    + ("process_results: !function lmms_eval_earthsci.evals.emma.tasks.process_results_judge\n" if judge else "")
                    + metrics
                )
            # `emma_acc` also pools `emma_acc_lenient` (lmms-eval matches group metrics by substring)
            group_metrics = [emma.METRIC, emma.MAJ, emma.PASS] + ([emma.JUDGE_METRIC] if judge else [])
            files[f"{group}.yaml"] = group_yaml(group, tasks, group_metrics, alias=f"EMMA-{size} ({label})")
        # circular variants of the CoT tasks: the multiple-choice questions, once per rotation
        ctasks = [f"emma_{size}_{subject.lower()}_circular" for subject in emma.SUBJECTS]
        for subject, task in zip(emma.SUBJECTS, ctasks):
            files[f"{task}.yaml"] = circular.task_yaml(official=f"emma_{size}_{subject.lower()}", task=task, alias=f"EMMA-{size} {subject} (CoT, multiple choice, circular)",
                                                       module="lmms_eval_earthsci.evals.emma.circular", positions="ABCDE", header=HEADER)
        files[f"emma_{size}_circular.yaml"] = group_yaml(f"emma_{size}_circular", ctasks, alias=f"EMMA-{size} (CoT, multiple choice, circular)")
    return files
