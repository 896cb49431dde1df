"""The integration with lmms-eval: what lmms-eval needs to index, load, run, judge and replay our tasks, and
nothing more. Every place it wraps an lmms-eval object or reads its internals is an entry of :data:`.inventory.ENTRIES`,
made through the primitive of :mod:`..upstream` (which records it). When lmms-eval changes,
this package (with the two parts beside it) is what breaks; the code it calls (scoring, data, the judge, prompts)
knows nothing of lmms-eval's internals.

- :mod:`.inventory`     this part's inventory entries
- :mod:`.task_manager`  our task folders in every ``TaskManager``; a task of ours that cannot load left out with its line
- :mod:`.integration`   the run's integration hooks: log forwarding, data hooks, judge pass, aggregation reasons
- :mod:`.task_data`     ``ConfigurableTask.download`` through the mirror, records checked at load, the record gate
- :mod:`.judge_hook`    the judge pass after a task's filters, over lmms-eval's instances
- :mod:`.unavailable`   a metric's reason for null, after lmms-eval aggregates
- :mod:`.harness`       lmms-eval's CLI in this process, the task dict's leaves
- :mod:`.replay`        what ``rescore``'s replay model needs (task YAMLs, the model base class, the registry)

Beside it: :mod:`..hardening` (run-wide changes a lab may turn off, ``EARTHSCI_HARDENING=0``) and
:mod:`..boundary` (the model boundary: what a model class hands its model). :mod:`..activation` installs the
three. README.md beside this file shows the part in ten lines.
"""
