"""One folder per benchmark: everything specific to it, nothing another benchmark or a command needs to
name. Each folder holds ``benchmark.py`` (the declaration the registry lists: name, tasks' YAML
generator, datasets and fixture writers, release importers, report spec, versions, suite membership),
``tasks.py`` (the lmms-eval hooks its YAMLs name: prompts, record mapping, extraction, scoring),
``yamls.py``, ``report.py``, ``fixtures.py``, ``paper_numbers.json`` and a ``README.md``.

Named ``evals`` as inspect_evals names its per-eval folders (``inspect_evals/<eval>/``); the repository's
top-level ``benchmarks/`` holds performance scripts, a different thing.
"""
