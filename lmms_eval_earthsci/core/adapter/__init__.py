"""The lmms-eval adapter: every place we wrap an lmms-eval object or read its internals, listed in
:data:`.patching.INVENTORY` (checked against the installed lmms-eval by ``tests/core/adapter/test_patch_targets.py``).
When lmms-eval changes, this package is what breaks; the code it calls (scoring, data, the judge, prompts)
knows nothing of lmms-eval's internals.

- :mod:`.patching`      the inventory and the one primitive that wraps a method once
- :mod:`.task_manager`  our task folders in every ``TaskManager``, names checked, tasks that cannot load left out
- :mod:`.hooks`         the run's hooks, installed once per process whatever route started it
- :mod:`.task_data`     ``ConfigurableTask.download`` through the mirror, records checked at load, the record gate
- :mod:`.judge_hook`    the judge pass after a task's filters, over lmms-eval's instances
- :mod:`.unavailable`   a metric's reason for null, after lmms-eval aggregates
- :mod:`.run_status`    a run that did not do everything it was asked ends non-zero
- :mod:`.harness`       lmms-eval's CLI in this process, the task dict's leaves
- :mod:`.replay`        what ``rescore``'s replay model needs (task YAMLs, the model base class, the registry)
- :mod:`.observe`, :mod:`.capture`, :mod:`.layout_probe`  what a model class hands its model, before the first doc
- :mod:`.budget`        at what size figures reach the model (the probe figure), the task's figures against it
- :mod:`.figures_seen`  at what size each doc's figures reached the model, read from the run's own requests (per sample)
- :mod:`.interleave`, :mod:`.passthrough`  our placeholders for the simple classes' ``interleave_visuals``;
  a dataset image's stored bytes sent as they are on server routes
"""
