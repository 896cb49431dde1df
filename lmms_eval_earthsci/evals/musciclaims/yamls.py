"""MuSciClaims' task YAMLs: D / RD / IRD in both prompt families, the input ablations, THRD; the group."""

from __future__ import annotations

from lmms_eval_earthsci.core.yamls import HEADER, group_yaml
from lmms_eval_earthsci.evals.musciclaims import benchmark as musciclaims


def musciclaims_files() -> dict[str, str]:
    def metrics(ird: bool) -> str:
        names = [musciclaims.METRIC, *musciclaims.CLASSIFICATION_AGGREGATIONS] + (list(musciclaims.PANEL_AGGREGATIONS) if ird else [])
        lines = ["metric_list:"]
        for name in names:
            fn = musciclaims.CLASSIFICATION_AGGREGATIONS.get(name) or musciclaims.PANEL_AGGREGATIONS.get(name) or musciclaims.METRIC_AGGREGATION
            agg = musciclaims.TASKS_MODULE + "." + fn
            lines += [f"  - metric: {name}", f"    aggregation: !function {agg}", f"    higher_is_better: {str(name not in musciclaims.LOWER_IS_BETTER).lower()}"]
        return "\n".join(lines) + "\n"

    labels = {"d": "D", "rd": "RD", "ird": "IRD", "thrd": "THRD (gold panels as a text hint)"}
    tasks = {}
    for family in ("json", "kv"):
        for prompt in ("d", "rd", "ird"):
            tasks[f"musciclaims_{prompt}" + ("_kv" if family == "kv" else "")] = (prompt, family, "figure+caption", f"MuSciClaims {labels[prompt]} ({family.upper()} prompts)")
    for inputs, name in (("caption", "caption_only"), ("figure", "figure_only")):
        for prompt in ("d", "rd"):
            tasks[f"musciclaims_{name}_{prompt}"] = (prompt, "json", inputs, f"MuSciClaims {labels[prompt]}, {name.replace('_', ' ')} (ours: minimal edit of the JSON prompt)")
    tasks["musciclaims_thrd"] = ("thrd", "json", "figure+caption", f"MuSciClaims {labels['thrd']} (ours: hint line added to JSON RD)")
    files = {}
    for task, (prompt, family, inputs, alias) in tasks.items():
        ird = prompt == "ird"
        files[f"{task}.yaml"] = (
            HEADER
            + "include: _template_yaml\n"
            + f"task: {task}\n"
            + f'task_alias: "{alias}"\n'
            + ("process_results: !function lmms_eval_earthsci.evals.musciclaims.tasks.process_results_ird\n" if ird else "")
            + "lmms_eval_specific_kwargs:\n  default:\n"
            + f"    prompt: {prompt}\n    family: {family}\n    inputs: {inputs}\n"
            + "    max_pixels: null  # e.g. 4000000 to downscale figures (or EARTHSCI_MUSCICLAIMS_MAX_PIXELS)\n"
            + "    strip_figure_refs: false  # true: drop inline 'Figure 2A' references from claims (ours)\n"
            + ("" if prompt == "d" else "generation_kwargs:\n  max_new_tokens: 1024\n  temperature: 0\n  do_sample: false\n  num_beams: 1\n  until: []\n")
            + metrics(ird)
        )
    # each task reports its own numbers: no cross-task average of F1 (the paper reports none)
    files["musciclaims.yaml"] = group_yaml("musciclaims", ["musciclaims_d", "musciclaims_rd", "musciclaims_ird"], alias="MuSciClaims (D, RD, IRD; each task reports its own F1)")
    return files
