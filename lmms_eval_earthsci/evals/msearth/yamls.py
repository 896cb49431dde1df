"""MSEarth's task YAMLs: MCQ (with and without the original caption), open-ended, captioning; the group."""

from __future__ import annotations

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.core.yamls import HEADER, JUDGE_FAILED, JUDGED_MEAN, MEAN_PRESENT, group_yaml, metric_list
from lmms_eval_earthsci.evals.msearth import benchmark as msearth
from lmms_eval_earthsci.evals.msearth.benchmark import DATASETS


def msearth_files() -> dict[str, str]:
    text = [(f"{{p}}_{m}", MEAN_PRESENT, True) for m in ("rouge1", "rouge2", "rougeL", "bleu", "meteor")]
    bert = ("{p}_bertscore", "!function lmms_eval_earthsci.evals.msearth.tasks.bertscore", True)
    failed = ("{p}_judge_failed", JUDGE_FAILED, False)

    def extra(prefix, items):
        return [(name.format(p=prefix), agg, hib) for name, agg, hib in items]

    tasks = {
        "msearth_mcq": ("mcq", "MSEarth MCQ (with original caption)", DATASETS["mcq"], "process_results_mcq", msearth.MCQ_METRIC, [(msearth.MCQ_STRICT, MEAN_PRESENT, True)], True, None),
        "msearth_mcq_nocap": ("mcq", "MSEarth MCQ (w/o original caption)", DATASETS["mcq"], "process_results_mcq", msearth.MCQ_METRIC, [(msearth.MCQ_STRICT, MEAN_PRESENT, True)], False, None),
        "msearth_open": ("open", "MSEarth open-ended", DATASETS["open"], "process_results_open", msearth.OE_METRIC, extra("msearth_oe", [failed, *text, bert]), True, None),
        "msearth_caption": ("caption", "MSEarth captioning", DATASETS["caption"], "process_results_caption", msearth.CAP_METRIC, extra("msearth_cap", [failed, *text, bert]), True, 2048),
    }
    files = {}
    for task, (kind, alias, path, pr, main, more, with_caption, max_tokens) in tasks.items():
        judged_main = kind in ("open", "caption")
        files[f"{task}.yaml"] = (
            HEADER
            + "include: _template_yaml\n"
            + f"task: {task}\n"
            + f'task_alias: "{alias}"\n'
            + f"dataset_path: {path}\n"
            + f"process_results: !function lmms_eval_earthsci.evals.msearth.tasks.{pr}\n"
            + "lmms_eval_specific_kwargs:\n  default:\n"
            + f"    kind: {kind}\n    prompt: open_source  # or: closed (the closed-model scripts' wording)\n"
            + f"    with_caption: {str(with_caption).lower()}\n"
            + (f"generation_kwargs:\n  max_new_tokens: {max_tokens}\n  temperature: 0\n  do_sample: false\n  until: []\n" if max_tokens else "")
            + metric_list(main, msearth.BREAKDOWN_PREFIX, msearth.breakdowns(kind), more, main_agg=JUDGED_MEAN if judged_main else MEAN_PRESENT)
        )
    # the CoT variant (paper Fig. 6, MSEarth-mini's ablation, here on the full MCQ set): the CoT prompt, 8
    # candidates at temperature 0.7 (ours: the paper gives none), the voting curves; not in the `msearth` group
    curves = [(name, MEAN_PRESENT, True) for name in msearth.CURVES.voting()]
    files["msearth_mcq_cot.yaml"] = (
        HEADER
        + "include: _template_yaml\n"
        + "task: msearth_mcq_cot\n"
        + 'task_alias: "MSEarth MCQ (CoT, 8 samples at T=0.7, majority vote)"\n'
        + f"dataset_path: {DATASETS['mcq']}\n"
        + "process_results: !function lmms_eval_earthsci.evals.msearth.tasks.process_results_mcq_cot\n"
        + "lmms_eval_specific_kwargs:\n  default:\n    kind: mcq\n    prompt: cot\n    with_caption: true\n"
        + "repeats: 8\n"
        + "filter_list:\n  - name: none\n    filter:\n      - function: !function lmms_eval_earthsci.core.scoring.scaling.KeepSamples\n"
        + "generation_kwargs:\n  max_new_tokens: 2048\n  temperature: 0.7\n  do_sample: true\n  until: []\n"
        + metric_list(msearth.MCQ_METRIC, msearth.BREAKDOWN_PREFIX, msearth.breakdowns("mcq"), [(msearth.MCQ_STRICT, MEAN_PRESENT, True), *curves])
    )
    ctasks = {"msearth_mcq_circular": ("msearth_mcq", "MSEarth MCQ (with original caption, circular)"), "msearth_mcq_nocap_circular": ("msearth_mcq_nocap", "MSEarth MCQ (w/o original caption, circular)")}
    for task, (official, alias) in ctasks.items():
        files[f"{task}.yaml"] = circular.task_yaml(official=official, task=task, alias=alias, module="lmms_eval_earthsci.evals.msearth.circular", header=HEADER)
    files["msearth_circular.yaml"] = group_yaml("msearth_circular", list(ctasks), alias="MSEarth MCQ (circular)")
    files["msearth.yaml"] = group_yaml("msearth", list(tasks), alias="MSEarth")
    return files
