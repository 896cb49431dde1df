"""The shared engine, grouped by concern; it names no benchmark (``tests/core/test_layers.py`` checks).

- :mod:`.upstream`   what every part that touches another library stands on: the one patch primitive and its
                     records, the inventory's entry type, one tap per upstream callable, the run's ledger
- :mod:`.adapter`    the integration with lmms-eval: what it needs to index, load, run, judge and replay our tasks
- :mod:`.hardening`  run-wide hardening a lab may turn off (``EARTHSCI_HARDENING=0``): exit codes, the libyaml
                     index, response-cache recovery, token redaction, teardown, image pass-through
- :mod:`.boundary`   the model boundary: what a model class hands its model (probe, capture, interleave rewrite),
                     the layout and budget verdicts, each doc's figure sizes
- :mod:`.activation` the one call of registration and of a benchmark
- :mod:`.runtime`    the process's one runtime object (what is ours, what a run holds while it runs)
- :mod:`.scoring`    answers read out of model output, metrics, intervals and tests, circular variants, model names
- :mod:`.judge`      the one LLM-judge engine (config, cache, transport, client), the task's judge pass and the
                     lines a run with judge failures ends with
- :mod:`.data`       Hub/mirror dataset resolution, record validation, image decoding, repo files, released
                     outputs
- :mod:`.prompts`    prompt text + images -> lmms-eval chat messages / simple-backend input
- :mod:`.benchmark`  what a benchmark declares (its folder's ``benchmark.py``) and how ``report`` lays it out;
  :mod:`.yamls` the task and group YAMLs written from it
- :mod:`.settings`   every ``EARTHSCI_*`` setting, and the run's own command line

Who may import whom (``tests/core/test_layers.py``), bottom to top: ``runtime`` nothing of ours (every other part
may import it); ``settings`` the runtime; ``data`` the settings; ``scoring`` and ``prompts`` data; ``judge`` scoring,
data, prompts; ``benchmark`` and ``yamls`` scoring; ``upstream`` the settings and data; the ``adapter`` any of them;
``hardening`` and ``boundary`` the adapter and upstream, neither the other; ``activation`` the three. Only upstream,
the adapter, the hardening and the boundary import or read (``sys.modules``) lmms-eval beyond the modules a task
author uses (``tests/core/test_layers.py``'s allowlist). Of the module names
from before this layout only ``core.metrics`` and ``core.adapter.hooks`` still import (:mod:`.._legacy`).
"""
