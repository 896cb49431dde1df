"""The model boundary: what a model class hands its model, observed on the class itself, and the verdicts on it.

- :mod:`.observe`        one probe request through the class's own ``generate_until``, stopped where it reaches
  a transformers processor (or a vLLM engine renders it): what the class made of a layout;
- :mod:`.probe`          before a run's first doc, each task's layout and the figure budget observed
  (``metadata.earthsci_layout`` / ``earthsci_budget``, one warning per lost layout);
- :mod:`.layout_verdict` a rendered prompt against the layout its chat messages wrote (what was lost);
- :mod:`.budget`         at what size a figure reaches the model, and the task's figures against it;
- :mod:`.interleave`     our placeholders for the simple classes' ``interleave_visuals``;
- :mod:`.figures_seen`   at what size each doc's figures reached the model (per logged sample);
- :mod:`.capture`        every processor call and ``generate`` of a run, for ``check-model`` and the model tier.

``lmms-eval-earthsci check-model`` (``lmms_eval_earthsci.commands.check_model``) is this part's command.

What this part may touch: a run's model object and its processor and engine classes, lmms-eval's
``evaluator.evaluate`` and ``_process_document_results``, and the task methods that hand a class its docs, each
through :func:`..upstream.patching.patch` under its inventory entry, and restored where the entry says the patch
is for one probe request. It notes an evaluation that raised in the ledger (:mod:`..upstream.ledger`) and
reads the runtime; it changes no score. README.md beside this file shows the part in ten lines.
"""

from __future__ import annotations

from lmms_eval_earthsci.core.boundary.inventory import ENTRIES
from lmms_eval_earthsci.core.boundary.probe import install_layout_probe
from lmms_eval_earthsci.core.upstream.inventory import warn_missing


def install() -> None:
    """The probe before a run's first doc (which installs the rest of the part on the run's model)."""
    if not install_layout_probe():
        warn_missing(ENTRIES["layout probe"], "the run does not check that each task's layout reaches the model (lmms-eval-earthsci check-model does)")
