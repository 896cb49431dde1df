"""The hardening's inventory: each lmms-eval, loguru and torch object it wraps or registers on (what an entry is:
:mod:`..upstream.inventory`)."""

from __future__ import annotations

from lmms_eval_earthsci.core.upstream.inventory import Entry, Inventory

ENTRIES = Inventory(
    "hardening",
    Entry(
        "task index on libyaml",
        "wraps",
        "lmms_eval.utils:yaml",
        "lmms_eval_earthsci.core.hardening.libyaml",
        "every TaskManager parses each task YAML lmms-eval ships with PyYAML's pure-Python loader (~2 s of every run's start); lmms_eval.utils' yaml "
        "is given libyaml's C parser for full_load (the same documents: tests/core/adapter/test_registration.py), where PyYAML has it",
        attrs=("yaml", "load_yaml_config"),
    ),
    Entry(
        "task-name typos",
        "wraps",
        "lmms_eval.tasks:TaskManager.match_tasks",
        "lmms_eval_earthsci.core.hardening.exit_codes",
        "lmms-eval reports a task name it does not know with 'Tasks not found' and exits 0 (DEBUG: 1); a name with one of our prefixes that is none of "
        "our tasks stops the run with exit 2 and 'did you mean', before the model loads; in a run with tasks of ours any other unknown name stops it there with "
        "exit 3, one line naming ours; the names of ours are noted for the run's end",
        params=("task_list",),
    ),
    Entry(
        "upstream tasks that cannot load",
        "subscribes",
        "lmms_eval.tasks:TaskManager._load_individual_task_or_group",
        "lmms_eval_earthsci.core.hardening.exit_codes",
        "in a CLI run with tasks of ours, a task not ours that cannot load is left out the same way and the process ends with exit 3 (lmms-eval: the whole run stops, exit 0)",
        params=("name_or_config",),
    ),
    Entry(
        "nothing left to run",
        "wraps",
        "lmms_eval.tasks:TaskManager.load_task_or_group",
        "lmms_eval_earthsci.core.hardening.exit_codes",
        "when every requested task of ours was left out, the run stops with exit 2 before the first doc",
        params=("task_list",),
    ),
    Entry(
        "run outcome",
        "wraps",
        "lmms_eval.evaluator:simple_evaluate",
        "lmms_eval_earthsci.core.hardening.exit_codes",
        "what stops a run outside the evaluation of our tasks (a model that cannot load, ...) is printed by lmms-eval, which exits 0; in a CLI run with "
        "tasks of ours it is noted, and a run that never got to its end exits 3 with one line naming ours (installed when the run asks for them)",
        params=("model", "tasks", "task_manager"),
        installed_by="a run",
    ),
    Entry(
        "results written",
        "wraps",
        "lmms_eval.loggers.evaluation_tracker:EvaluationTracker.save_results_aggregated",
        "lmms_eval_earthsci.core.hardening.exit_codes",
        "lmms-eval logs a warning and goes on when it cannot write the results file; rank 0's run counts as done once the file is there",
        params=("results", "samples", "datetime_str"),
        installed_by="a run",
    ),
    Entry(
        "response-cache recovery",
        "wraps",
        "lmms_eval.caching.response_cache:ResponseCache.create",
        "lmms_eval_earthsci.core.hardening.response_cache",
        "a killed --use_cache run leaves unmerged shards; the merge must happen before lmms-eval opens the cache",
        since="0.7.3",
        params=("cache_root",),
        attrs=("_LAYERED_RUNS_DIRNAME", "_LAYERED_MERGED_MARKER", "_LAYERED_LOCK_DIRNAME", "_merge_lock"),
    ),
    Entry("HF token redaction", "registers", "loguru:logger.configure", "lmms_eval_earthsci.core.hardening.redaction", "lmms-eval logs the HF token in clear at INFO; a loguru patcher (the previous one kept) masks it", params=("patcher",)),
    Entry("process group at exit", "registers", "torch.distributed:destroy_process_group", "lmms_eval_earthsci.core.hardening.teardown", "lmms-eval never destroys its gloo/NCCL group; an atexit handler does, after its final barrier"),
    Entry(
        "exit status",
        "registers",
        "atexit:register",
        "lmms_eval_earthsci.core.hardening.exit_status",
        "lmms-eval's CLI exits 0 whatever went wrong; an atexit handler ends a run of ours with the ledger's code (core.upstream.ledger) and its last lines",
        installed_by="registration",
    ),
    Entry(
        "image pass-through",
        "wraps",
        "lmms_eval.protocol:ChatMessages.encode_image",
        "lmms_eval_earthsci.core.hardening.passthrough",
        "server routes re-encode every image as PNG (LMMS_IMAGE_ENCODE_FORMAT) in the event loop that sends the requests; an image of ours decoded from "
        "a dataset cell and returned unchanged is sent as its stored bytes when they are already in that format (the same pixels, no encode)",
        params=("image",),
    ),
)
