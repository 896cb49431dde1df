"""The shared engine, one module a concern; it names no benchmark (``tests/test_layers.py`` checks):

- :mod:`.benchmark`  what a benchmark declares (its folder's ``benchmark.py``) and how ``report`` lays it out
- :mod:`.messages`   prompt + images -> lmms-eval chat messages / simple-backend visuals and text
- :mod:`.extraction` reading answers out of model output (each extractor says which rule fired)
- :mod:`.similarity` sentence-embedding choice matching (all-MiniLM-L6-v2, loaded once per process)
- :mod:`.metrics`    accuracy with breakdowns, precision/recall/F1, calibration; :mod:`.textmetrics`
- :mod:`.stats`      bootstrap intervals and paired comparisons
- :mod:`.judge`      the one LLM-judge engine (config, cache, transport, client); :mod:`.judge_pass`
- :mod:`.data`       Hub/mirror dataset resolution, record validation, image decoding; :mod:`.repo_files`
- :mod:`.patching`, :mod:`.hooks` where we meet lmms-eval's internals; :mod:`.harness` its CLI in-process
- :mod:`.yamls`, :mod:`.papers`, :mod:`.releases` YAML writing, model names, released-output readers
"""
