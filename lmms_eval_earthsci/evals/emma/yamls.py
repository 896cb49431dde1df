"""EMMA's task YAMLs: per set (mini, full), strategy (CoT, Direct, CoT + LLM judge) and subject, with
the breakdown metrics of each subject's labels, and a group per set and strategy."""

from __future__ import annotations

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.core.yamls import HEADER, JUDGE_FAILED, JUDGED_MEAN, MEAN_PRESENT, group_yaml, metric_list
from lmms_eval_earthsci.evals.emma import benchmark as emma
from lmms_eval_earthsci.evals.emma.benchmark import DATASET_FULL, DATASET_MINI

# The test-time-scaling tasks sample as the authors' generations did (GPT-4o: temperature 0.7, 2048 tokens);
# T = 16 for every subject is ours (they drew 16 for Math, 8 for the others): one run gives every N of Table 3.
TTS_SAMPLES = 16
TTS_SETTINGS = (
    "process_results: !function lmms_eval_earthsci.evals.emma.tasks.process_results_tts\n"
    f"repeats: {TTS_SAMPLES}\n"
    "generation_kwargs:\n  max_new_tokens: 2048\n  temperature: 0.7\n  do_sample: true\n  until: []\n"
)


REPLY_CAUSES = "!function lmms_eval_earthsci.core.judge.reward.reply_causes"


def emma_files() -> dict[str, str]:
    failed = ("emma_judge_failed", JUDGE_FAILED, False)
    curves = emma.CURVES
    # the curves at every N (lmms-eval drops a metric its YAML does not declare); None above the run's T
    voting = [(name, MEAN_PRESENT, True) for name in curves.voting()]
    scaling = [(emma.MAJ, MEAN_PRESENT, True), (emma.PASS, MEAN_PRESENT, True), (emma.MAJ_NORMALIZED, MEAN_PRESENT, True), *voting]
    best_of_n = [(name, JUDGED_MEAN, True) for name in curves.reward_model()] + [(curves.rm_replies, REPLY_CAUSES, False), (curves.rm_failed, JUDGE_FAILED, False)]
    files: dict[str, str] = {}
    sets = {"mini": (DATASET_MINI, emma.REVISION_MINI), "full": (DATASET_FULL, emma.REVISION_FULL)}
    variants = (("CoT", "", "CoT"), ("Direct", "_direct", "Direct"), ("CoT", "_judge", "CoT, LLM judge"))
    for size, (path, revision) in sets.items():
        # the test-time-scaling tasks: EMMA-mini only, as the paper's Tables 3 and 7
        tts = (("CoT", "_tts", f"CoT, {TTS_SAMPLES} samples at T=0.7"),) if size == "mini" else ()
        for strategy, suffix, label in variants + tts:
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
                    metrics = metric_list(emma.METRIC, emma.BREAKDOWN_PREFIX, emma.breakdowns(subject), [(emma.LENIENT, MEAN_PRESENT, True), *scaling, *(best_of_n if suffix == "_tts" else [])])
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
                    + (TTS_SETTINGS if suffix == "_tts" else "")
                    + metrics
                )
            # `emma_acc` also pools `emma_acc_lenient`, and `emma_maj@1` also `emma_maj@16` (lmms-eval matches group
            # metrics by substring): each pooled the same way, size-weighted
            group_metrics = [emma.METRIC, emma.MAJ, emma.PASS, emma.MAJ_NORMALIZED, *(name for name, _, _ in voting)] + ([emma.JUDGE_METRIC] if judge else [])
            if suffix == "_tts":
                group_metrics += [name for name, _, _ in best_of_n[:-2]]
            files[f"{group}.yaml"] = group_yaml(group, tasks, group_metrics, alias=f"EMMA-{size} ({label})")
        # circular variants of the CoT tasks: the multiple-choice questions, once per rotation
        ctasks = [f"emma_{size}_{subject.lower()}_circular" for subject in emma.SUBJECTS]
        for subject, task in zip(emma.SUBJECTS, ctasks):
            files[f"{task}.yaml"] = circular.task_yaml(official=f"emma_{size}_{subject.lower()}", task=task, alias=f"EMMA-{size} {subject} (CoT, multiple choice, circular)",
                                                       module="lmms_eval_earthsci.evals.emma.circular", positions="ABCDE", header=HEADER)
        files[f"emma_{size}_circular.yaml"] = group_yaml(f"emma_{size}_circular", ctasks, alias=f"EMMA-{size} (CoT, multiple choice, circular)")
    return files
