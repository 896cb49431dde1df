"""MAC's task YAMLs: the MAC-2025 variants and their DAD twins, the groups; and the task YAML of a
snapshot built by ``lmms-eval-earthsci mac build``."""

from __future__ import annotations

from types import MappingProxyType

from lmms_eval_earthsci.core.scoring import circular
from lmms_eval_earthsci.core.yamls import HEADER, JUDGE_FAILED, MEAN_PRESENT, group_yaml, metric_list
from lmms_eval_earthsci.evals.mac import benchmark as mac
from lmms_eval_earthsci.evals.mac.benchmark import BREAKDOWNS

MAC_DIRECTIONS = MappingProxyType({"i2t": "Image2Text", "t2i": "Text2Image"})
MAC_FN = "!function lmms_eval_earthsci.evals.mac.tasks."


def _mac_extra_metrics() -> list[tuple[str, str, bool]]:
    return [("mac_ece", MAC_FN + "mac_ece", False), ("mac_nll", MAC_FN + "mac_nll", False), ("mac_rms", MAC_FN + "mac_rms", False), ("mac_unparsable", MAC_FN + "mac_unparsable", False), (mac.LENIENT, MEAN_PRESENT, True)]


def mac_task_yaml(task: str, alias: str, csv: str, direction: str, domain: str, header: str = HEADER, snapshot: bool = False, text_free: bool = False) -> str:
    """One MAC task over ``csv`` (the MAC-2025 variants; and the tasks of a snapshot built by
    ``lmms-eval-earthsci mac build``, whose folder ``snapshot.ROOT`` gives as rows and covers root);
    ``text_free``: every cover shown is its painted copy, made by `mirror`'s step named in the YAML."""
    extra = _mac_extra_metrics()
    return (
        header
        + "include: _template_yaml\n"
        + f"task: {task}\n"
        + f'task_alias: "{alias}"\n'
        + f'dataset_kwargs:\n  data_files:\n    test: "{csv}"\n'
        + "lmms_eval_specific_kwargs:\n  default:\n"
        + f"    direction: {direction}\n    domain: {domain}\n"
        + f"    image_max_side: {mac.DEFAULT_IMAGE_MAX_SIDE}  # the authors' detail: low; null = full size (or {mac.IMAGE_MAX_SIDE_ENV})\n"
        + ("    snapshot_root: !function snapshot.ROOT  # this snapshot's folder, wherever it is moved\n" if snapshot else "")
        + (
            "    covers: text_free  # each cover's copy with its text painted out (OCRed_Cover/)\n"
            "    earthsci_mirror_step: lmms_eval_earthsci.evals.mac.textfree:mirror_step  # what paints them: a step of `lmms-eval-earthsci mirror`\n"
            if text_free else ""
        )
        + metric_list(mac.METRIC, mac.BREAKDOWN_PREFIX, BREAKDOWNS, extra, main_agg=MAC_FN + "mac_acc")
    )


def mac_files() -> dict[str, str]:
    extra = _mac_extra_metrics()
    files, tasks = {}, []
    for (direction, domain), csv in mac.CSV.items():
        task = f"mac2025_{direction}_{domain}"
        tasks.append(task)
        files[f"{task}.yaml"] = mac_task_yaml(task, f"MAC-2025 {MAC_DIRECTIONS[direction]}, {domain} domain", csv, direction, domain)
        dad = f"mac2025_dad_{direction}_{domain}"
        files[f"{dad}.yaml"] = (
            HEADER
            + "include: _template_yaml\n"
            + f"task: {dad}\n"
            + f'task_alias: "MAC-2025 {MAC_DIRECTIONS[direction]}, {domain} domain, DAD (stage 2: EARTHSCI_DAD_* reasoner)"\n'
            + f'dataset_kwargs:\n  data_files:\n    test: "{csv}"\n'
            + "doc_to_messages: !function lmms_eval_earthsci.evals.mac.dad.doc_to_messages\n"
            + "doc_to_text: !function lmms_eval_earthsci.evals.mac.dad.doc_to_text\n"
            + "process_results: !function lmms_eval_earthsci.evals.mac.dad.process_results\n"
            + "lmms_eval_specific_kwargs:\n  default:\n"
            + f"    direction: {direction}\n    domain: {domain}\n"
            + f"    image_max_side: {mac.DEFAULT_IMAGE_MAX_SIDE}  # the authors' detail: low; null = full size (or {mac.IMAGE_MAX_SIDE_ENV})\n"
            + "# stage 1 is a long description (\"the more the better\")\n"
            + "generation_kwargs:\n  max_new_tokens: 2048\n  temperature: 0\n  do_sample: false\n  num_beams: 1\n  until: []\n"
            + metric_list(mac.METRIC, mac.BREAKDOWN_PREFIX, BREAKDOWNS, [*extra, ("mac_dad_failed", JUDGE_FAILED, False)], main_agg=MAC_FN + "mac_acc")
        )
    # each task reports its own numbers (as the paper's Table 1): no group average
    files["mac2025_dad.yaml"] = group_yaml("mac2025_dad", [f"mac2025_dad_{d}_{m}" for d, m in mac.CSV], alias="MAC-2025 with DAD (each task reports its own numbers)")
    files["mac2025.yaml"] = group_yaml("mac2025", tasks, alias="MAC-2025 (each task reports its own numbers)")
    for (direction, domain) in mac.CSV:
        task = f"mac2025_{direction}_{domain}"
        files[f"{task}_circular.yaml"] = circular.task_yaml(official=task, task=f"{task}_circular", alias=f"MAC-2025 {MAC_DIRECTIONS[direction]}, {domain} domain (circular)",
                                                            module="lmms_eval_earthsci.evals.mac.circular", ece=True, header=HEADER)
    # Table 6's text-free covers: the four variants, each cover shown (I2T's question cover, T2I's four
    # options) without its printed text
    for (direction, domain), csv in mac.CSV.items():
        task = f"mac2025_{direction}_{domain}_textfree"
        files[f"{task}.yaml"] = mac_task_yaml(task, f"MAC-2025 {MAC_DIRECTIONS[direction]}, {domain} domain, text-free covers", csv, direction, domain, text_free=True)
    files["mac2025_textfree.yaml"] = group_yaml("mac2025_textfree", [f"mac2025_{d}_{m}_textfree" for d, m in mac.CSV], alias="MAC-2025, text-free covers (each task reports its own numbers)")
    files["mac2025_circular.yaml"] = group_yaml("mac2025_circular", [f"{t}_circular" for t in tasks], alias="MAC-2025 (circular; each task reports its own numbers)")
    return files
