"""The integration's inventory: each lmms-eval object it wraps, each handler it registers, each internal it reads
(the entries :func:`..upstream.patching.patch` records its patches under; what an entry is: :mod:`..upstream.inventory`).
A read owned by a module outside the three parts (the qwen3_vl system turn, read by our message list type) is listed
here, with its owner."""

from __future__ import annotations

from lmms_eval_earthsci.core.upstream.inventory import Entry, Inventory

ENTRIES = Inventory(
    "adapter",
    Entry(
        "registration",
        "wraps",
        "lmms_eval.tasks:TaskManager.initialize_tasks",
        "lmms_eval_earthsci.core.adapter.task_manager",
        "lmms-eval indexes tasks from its own folder and --include_path only; wrapping the indexer adds ours to every TaskManager (the CLI, simple_evaluate, a hand-built one)",
        params=("include_path",),
    ),
    Entry(
        "tasks of ours that cannot load",
        "subscribes",
        "lmms_eval.tasks:TaskManager._load_individual_task_or_group",
        "lmms_eval_earthsci.core.adapter.task_manager",
        "lmms-eval stops the whole run at the first task that cannot load and exits 0; in a CLI run a task of ours that cannot load is left out with its line (a group that lost one, its group score), the others run",
        params=("name_or_config",),
    ),
    Entry(
        "local mirror",
        "subscribes",
        "lmms_eval.api.task:ConfigurableTask.download",
        "lmms_eval_earthsci.core.adapter.task_data",
        "datasets are loaded inside download(); no hook lets a plugin point a task at local files (EARTHSCI_DATA_MIRROR; without the hook a run with it set would read other data, so it stops)",
        missing="fails",
    ),
    Entry(
        "bad-record gate",
        "wraps",
        "lmms_eval.api.task:ConfigurableTask.build_all_requests",
        "lmms_eval_earthsci.core.adapter.task_data",
        "the first call after every task is loaded and before inference: all tasks' invalid records are reported at once",
    ),
    Entry(
        "judge pass",
        "wraps",
        "lmms_eval.api.task:ConfigurableTask.apply_filters",
        "lmms_eval_earthsci.core.adapter.judge_hook",
        "process_results sees one doc at a time; right after a task's filters every response is known, so the judge runs concurrently over the task",
    ),
    Entry(
        "aggregation",
        "wraps",
        "lmms_eval.evaluator_utils:TaskOutput.calculate_aggregate_metric",
        "lmms_eval_earthsci.core.adapter.unavailable",
        "a metric's reason for null and the per-doc paired score's empty entry are only reachable after lmms-eval aggregates a task",
    ),
    Entry(
        "CLT errors of a null metric",
        "wraps",
        "lmms_eval.evaluator_utils:TaskOutput.calculate_clt_aggregate_metric",
        "lmms_eval_earthsci.core.adapter.unavailable",
        "lmms-eval computes <metric>_stderr_clt from the per-doc scores even where the metric aggregated to null (0.0 beside it); it is set to N/A there",
        since="0.7.3",
    ),
    Entry(
        "quiet torchvision fallback",
        "registers",
        "transformers.utils.import_utils:logger",
        "lmms_eval_earthsci.core.adapter.integration",
        "transformers warns, for every image processor, that it falls back to its PIL backend without torchvision, which CPU machines remove on purpose (README, Install); a logging filter on that logger drops that one message",
    ),
    Entry(
        "old module names",
        "registers",
        "sys:meta_path",
        "lmms_eval_earthsci.registration",
        "the YAMLs of MAC snapshots built before the layout moves name lmms_eval_earthsci.mac.tasks.* and core.metrics.*, and a lab's task module may call "
        "core.adapter.hooks.ensure_runtime_hooks(); an import alias (lmms_eval_earthsci._legacy, installed by our entry point and our commands) gives the "
        "modules under their new names; registration records it",
        installed_by="registration",
    ),
    Entry(
        "task system turn",
        "reads",
        "lmms_eval.models.chat.qwen3_vl:Qwen3_VL.generate_until",
        "lmms_eval_earthsci.core.prompts.messages",
        "qwen3_vl inserts its default system turn at index 0 of doc_to_messages' list, displacing the task's own (its template renders one); our list type ignores "
        "that insert when the task has a system turn (core.prompts.messages.Messages); tests/models/test_model_classes.py sees the system text reach the model",
        since="0.7.3",
    ),
    Entry(
        "reasoning tags",
        "reads",
        "lmms_eval.api.reasoning:parse_reasoning_tags_config",
        "lmms_eval_earthsci.core.adapter.judge_hook",
        "the judge must see a response as process_results will (reasoning blocks stripped); the CLI's default tags are copied (a test compares them)",
        since="0.7.3",
        params=("cli_value", "task_value"),
    ),
    Entry("reasoning stripping", "reads", "lmms_eval.api.reasoning:strip_reasoning_tags", "lmms_eval_earthsci.core.adapter.judge_hook", "as above: the same stripping lmms-eval applies before process_results", since="0.7.3"),
    Entry("token usage log", "reads", "lmms_eval.models.model_utils.usage_metrics:log_usage", "lmms_eval_earthsci.core.adapter.judge_hook", "the judge's tokens go into lmms-eval's usage summary beside the model's", since="0.7.3"),
    Entry("instances", "reads", "lmms_eval.api.instance:Instance", "lmms_eval_earthsci.core.adapter.judge_hook", "the judge pass reads each instance's doc_id, filtered_resps and metadata (and token_counts where present)"),
    Entry(
        "undecoded docs", "reads", "lmms_eval.api.task:ConfigurableTask.eval_docs_no_media", "lmms_eval_earthsci.core.adapter.judge_hook", "the judge pass reads docs without decoding their figures, and decodes only the ones a judge sees"
    ),
    Entry("CLI", "reads", "lmms_eval.__main__:cli_evaluate", "lmms_eval_earthsci.core.adapter.harness", "`lmms-eval-earthsci run/demo/rescore` start lmms-eval's own CLI in-process", params=("args",)),
    Entry("YAML loader", "reads", "lmms_eval.utils:load_yaml_config", "lmms_eval_earthsci.core.adapter.replay", "rescore reads a run's task YAMLs as lmms-eval does (its !function tags included)"),
    Entry("replay model", "reads", "lmms_eval.models:MODEL_REGISTRY_V2", "lmms_eval_earthsci.core.adapter.replay", "rescore registers a model that replays a run's logged responses", since="0.7.3"),
)
