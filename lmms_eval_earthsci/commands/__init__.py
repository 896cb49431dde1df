"""The ``lmms-eval-earthsci`` verbs, one module each, named after it (:mod:`lmms_eval_earthsci.cli` parses the
command line and imports the one it runs, lazily):

- ``report``        :mod:`.report` (a package: the Markdown, the charts, ``summary.csv``, ``html/`` the sample browser)
- ``rescore``       :mod:`.rescore`
- ``demo``          :mod:`.demo`
- ``check-model``   :mod:`.check_model`
- ``mirror``        :mod:`.mirror`
- ``check-mirror``  :mod:`.check_mirror`

``tasks-dir``, ``run`` and ``write-fixtures`` are a few lines of ``cli.py``; ``mac build`` is
:mod:`lmms_eval_earthsci.evals.mac.builder`.

A command may import the core, the registry and what sits beside it at the package's top level
(``registration``, ``yamlgen``, ``sample_mirror``, ``tinyvlm``, ``testing``), and another command (``mirror``
ends with ``check-mirror``'s check, ``demo`` and ``rescore`` with the report's); it reaches the benchmarks
through the registry, not by importing their modules. Nothing below the commands imports them
(``tests/core/test_layers.py``). This module imports nothing: ``import lmms_eval_earthsci.commands`` stays cheap.
"""
