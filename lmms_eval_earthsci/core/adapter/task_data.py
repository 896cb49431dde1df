"""lmms-eval's task objects meet our data here: ``ConfigurableTask.download`` routed to the local mirror
(:func:`..data.loading.prepare_load`), the Hub route checked before ``datasets`` retries, what was loaded
recorded in the task's ``metadata.earthsci_data``; every record checked at load time (:func:`validate_task`,
the benchmark's :func:`..data.loading.record_check`) and all tasks' problems raised at once before the first
request is built (the record gate). Inventory entries "local mirror" and "bad-record gate"."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from lmms_eval_earthsci.core.adapter.inventory import ENTRIES
from lmms_eval_earthsci.core.data.loading import (
    BAD_RECORDS_ENV,
    LISTED_BAD_RECORDS,
    BadRecordsError,
    MirrorError,
    NoDataRouteError,
    ensure_hub_route,
    hub_refusal,
    logger,
    prepare_load,
    record_problems,
    undecoded,
)
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.settings import read_setting
from lmms_eval_earthsci.core.upstream import taps
from lmms_eval_earthsci.core.upstream.patching import installed, task_class, where, wrap_task_method


def install_mirror_hook() -> bool:
    """Route ``ConfigurableTask.download`` through :func:`prepare_load`, validate every record and record
    what was loaded. Idempotent; False if the lmms-eval internals it relies on are gone."""
    install_record_gate()

    def download(call: Callable[..., Any], self: Any, dataset_kwargs: Mapping[str, Any] | None = None, *args: Any, **kwargs: Any) -> Any:
        path = getattr(self, "DATASET_PATH", None)
        record = None
        if path:
            try:
                local, dataset_kwargs, record = prepare_load(path, dataset_kwargs)
            except MirrorError as exc:  # a run stops with one line and exit 2, as with no route (lmms-eval would print a traceback and exit 0)
                if current().data_only:
                    raise
                raise NoDataRouteError.said(f"lmms-eval-earthsci: {getattr(self.config, 'task', path)}: {exc}") from exc
            if local != path:
                logger.info("lmms_eval_earthsci: loading %s from the local mirror %s", path, local)
                self.DATASET_PATH = local
            elif record.get("source") == "hub" and path in current().datasets:  # ours: other tasks load as they do
                ensure_hub_route(str(path), record.get("revision"))
        try:
            out = call(self, dataset_kwargs, *args, **kwargs)
        except Exception as exc:  # lmms-eval retries the load (tenacity): surface the real error, URL and all
            last = getattr(getattr(exc, "last_attempt", None), "exception", lambda: None)()
            refused = hub_refusal(last or exc, path, (record or {}).get("revision"))
            if refused is not None:
                raise refused from (last or exc)
            if path and local != path and isinstance(last or exc, FileNotFoundError):
                raise NoDataRouteError.said(f"lmms-eval-earthsci: {getattr(self.config, 'task', path)}: {_incomplete_copy(str(path), local, last or exc)}") from (last or exc)
            if last is not None:
                raise last from exc
            raise
        if getattr(getattr(self.config, "process_results", None), "record_check", None) is not None:  # ours
            leave_images_undecoded(self)
        bad = validate_task(self)
        if record is not None:
            if bad:
                record["bad_records"] = bad
            _record_loaded(self, record)
        return out

    cls = task_class()
    if cls is None or not hasattr(cls, "DATASET_PATH"):
        return False
    return taps.subscribe("task download", cls, "download", "local mirror", download, entry=ENTRIES["local mirror"]) is not None


def _incomplete_copy(repo: str, local: str, exc: BaseException) -> str:
    """The line for a mirror copy that lacks a file the dataset's configuration names."""
    missing = re.search(r"'([^']+)'", str(exc))
    what = os.path.relpath(missing.group(1), local) if missing and missing.group(1).startswith(local) else str(exc).splitlines()[0][:200]
    root = local[: -len(repo)].rstrip(os.sep) if local.endswith(repo) else os.path.dirname(local)
    return f"the mirror's copy of {repo} ({local}) lacks {what}: the copy is incomplete; on a machine with Hub access run `lmms-eval-earthsci mirror {root}` again and copy it here"


def _record_loaded(task: Any, record: dict) -> None:
    try:
        record["dataset_name"] = getattr(task, "DATASET_NAME", None)
        record["rows"] = {str(split): len(ds) for split, ds in (getattr(task, "dataset", None) or {}).items()}
        describe = getattr(getattr(getattr(task.config, "process_results", None), "record_check", None), "describe", None)
        if describe is not None:
            record["repo_files"] = describe(_task_kwargs(task))
        if not isinstance(task.config.metadata, dict):
            task.config.metadata = {}
        task.config.metadata["earthsci_data"] = record
        logger.info("lmms_eval_earthsci: %s loaded %s", getattr(task.config, "task", "?"), record)
    except Exception:  # bookkeeping must never stop a run
        logger.exception("lmms_eval_earthsci: could not record what %s loaded", getattr(task.config, "task", "?"))


def raise_pending_bad_records() -> None:
    """Raise one :class:`BadRecordsError` for every task of the run with invalid records (found while
    the tasks were loaded), before any request is built or sent."""
    rt = current()
    with rt.lock:
        reports = list(rt.pending_bad.values())
        rt.pending_bad.clear()
    if reports:
        raise BadRecordsError(
            f"{len(reports)} task(s) have invalid records; nothing was sent to the model. Fix the data, or set "
            f"{BAD_RECORDS_ENV}=skip to leave them out (counted and listed in the results):\n" + "\n".join(reports)
        )


def install_record_gate() -> bool:
    """Raise the run's bad-record report when lmms-eval first builds a task's requests (after every task
    was loaded, before inference), so that all tasks' problems are reported at once."""
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def build_all_requests(self: Any, *args: Any, **kwargs: Any) -> Any:
            raise_pending_bad_records()
            return original(self, *args, **kwargs)

        return build_all_requests

    return wrap_task_method("build_all_requests", make, entry=ENTRIES["bad-record gate"])


def leave_images_undecoded(task: Any) -> None:
    """Our task's splits read with their images undecoded: each image is decoded once, by our hook
    (:func:`load_image`), whatever route reads the row."""
    splits = getattr(task, "dataset", None)
    if splits is None or not hasattr(splits, "items"):
        return
    for split, table in list(splits.items()):
        splits[split] = undecoded(table)


def _bad_records_mode() -> str:
    mode = read_setting(BAD_RECORDS_ENV).lower() or "raise"
    if mode not in ("raise", "skip"):
        raise ValueError(f"{BAD_RECORDS_ENV} must be raise or skip, not {mode!r}")
    return mode


def _task_kwargs(task: Any) -> dict:
    kw = getattr(task.config, "lmms_eval_specific_kwargs", None) or {}
    return dict(kw.get("default", kw)) if isinstance(kw, Mapping) else {}


def validate_task(task: Any) -> dict | None:
    """Check every record of ``task``'s evaluation split(s) with its benchmark's :func:`record_check`.
    All problems at once: raise :class:`BadRecordsError` naming each record, field and problem (default),
    or with ``EARTHSCI_BAD_RECORDS=skip`` drop those records from the task and return
    ``{"count", "records"}``. Returns None when every record is fine (or the task has no check)."""
    check = getattr(getattr(task.config, "process_results", None), "record_check", None)
    dataset = getattr(task, "dataset", None)
    if check is None or not dataset:
        return None
    mode = _bad_records_mode()
    kwargs = _task_kwargs(task)
    name = getattr(task.config, "task", "?")
    splits = [s for s in (task.config.test_split, task.config.validation_split) if s and s in dataset]
    source = f"{getattr(task, 'DATASET_PATH', '?')}" + (f" ({task.DATASET_NAME})" if getattr(task, "DATASET_NAME", None) else "")
    problems: list[str] = []
    bad_rows: dict[str, list[int]] = {}
    for split in splits:
        for i, exc in record_problems(dataset[split], check, kwargs):
            problems.append(f"{exc} [split {split!r}, row {i}]")
            bad_rows.setdefault(split, []).append(i)
    if not problems:
        return None
    # dropped in both modes: lmms-eval decodes a task's first doc while building it, and the other
    # tasks must still load so that the run's report lists every task's problems at once
    for split, rows in bad_rows.items():
        drop = set(rows)
        keep = [i for i in range(len(dataset[split])) if i not in drop]
        task.dataset[split] = task.dataset[split].select(keep)
        no_media = getattr(task, "dataset_no_image", None)
        if no_media is not None and no_media is not task.dataset and split in no_media:
            no_media[split] = no_media[split].select(keep)
    empty = any(len(task.dataset[split]) == 0 for split in bad_rows)
    if mode == "raise" or empty:
        report = f"{name}: {len(problems)} invalid record(s) in {source}" + (" (no valid record left)" if empty else "") + ":\n  " + "\n  ".join(problems)
        logger.error("lmms_eval_earthsci: %s", report)
        rt = current()
        with rt.lock:
            rt.pending_bad[name] = report
        cls = task_class()
        if empty or cls is None or not installed(ENTRIES["bad-record gate"], where(cls, "build_all_requests")):  # lmms-eval cannot build an empty task; no later hook: stop here
            raise_pending_bad_records()
        return None
    logger.warning("lmms_eval_earthsci: %s: %d invalid record(s) left out (%s=skip):\n  %s", name, len(problems), BAD_RECORDS_ENV, "\n  ".join(problems))
    return {"count": len(problems), "records": problems[:LISTED_BAD_RECORDS]}

