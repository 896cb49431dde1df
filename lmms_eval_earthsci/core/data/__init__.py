"""Data: what a task reads, from the Hub or a local mirror, checked record by record; imports nothing of
lmms-eval (the hooks that route a task's download through it live in :mod:`..adapter.task_data`).

- :mod:`.loading`    dataset resolution (Hub or mirror), record validation, image decoding, a doc's key
- :mod:`.hub`        is the Hub there (once per process), is a dataset in a cache
- :mod:`.repo_files` files a dataset's rows name by path inside its repo (fetched once per machine)
- :mod:`.releases`   released output files (the authors', a run's) read into per-doc records

``lmms_eval_earthsci.core.data`` was one module before the core was grouped by concern; what a benchmark
uses of it is still importable from here (``require``, ``load_image``, ``record_check``, ``declare_datasets``,
...). Its lmms-eval hooks (``install_mirror_hook``, ``install_record_gate``, ``validate_task``) moved to
:mod:`..adapter.task_data`.
"""

from lmms_eval_earthsci.core.data.loading import *  # noqa: F403 - the module this package was: its public names
from lmms_eval_earthsci.core.data.loading import __all__  # noqa: F401
