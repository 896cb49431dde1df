"""The shared engine, grouped by concern; it names no benchmark (``tests/core/test_layers.py`` checks).

- :mod:`.adapter`   the lmms-eval boundary: every wrap of an lmms-eval object and every read of its internals,
                    beside the inventory of them (:mod:`.adapter.patching`), as thin adapters calling into the rest
- :mod:`.scoring`   answers read out of model output, metrics, intervals and tests, circular variants, model names
- :mod:`.judge`     the one LLM-judge engine (config, cache, transport, client), the task's judge pass and the
                    lines a run with judge failures ends with
- :mod:`.data`      Hub/mirror dataset resolution, record validation, image decoding, repo files, released
                    outputs
- :mod:`.prompts`   prompt text + images -> lmms-eval chat messages / simple-backend input, and the layout check
- :mod:`.benchmark` what a benchmark declares (its folder's ``benchmark.py``) and how ``report`` lays it out;
  :mod:`.yamls` the task and group YAMLs written from it
- :mod:`.settings`  every ``EARTHSCI_*`` setting, and the run's own command line

Who may import whom (``tests/core/test_layers.py``), bottom to top: ``settings`` nothing of ours; ``data`` the
settings; ``scoring`` and ``prompts`` data; ``judge`` scoring, data, prompts; ``benchmark`` and ``yamls``
scoring; the ``adapter`` any of them, and none of them the adapter. Only the adapter imports or reads (``sys.modules``) lmms-eval beyond the modules a task author uses
(``tests/core/test_layers.py``'s allowlist). Of the module names from before this layout only ``core.metrics`` still imports (old MAC snapshots name it: :mod:`.._legacy`).
"""
