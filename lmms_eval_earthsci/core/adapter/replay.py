"""What ``rescore`` needs of lmms-eval to replay a run's logged responses as a model: a task YAML read as
lmms-eval reads it (its includes and ``!function`` tags: inventory "YAML loader"), lmms-eval's model base class,
and its model registry (inventory "replay model"). The replay model itself is :mod:`lmms_eval_earthsci.commands.rescore`'s."""

from __future__ import annotations

from typing import Any


def task_config(path: str) -> dict:
    """The task YAML at ``path`` as lmms-eval reads it (``mode="simple"``: includes resolved, nothing imported)."""
    from lmms_eval.utils import load_yaml_config  # noqa: PLC0415 - lmms-eval's utils (~1 s), only when a rescore runs

    return load_yaml_config(path, mode="simple")


def model_base() -> Any:
    """lmms-eval's model base class (``lmms_eval.api.model.lmms``)."""
    from lmms_eval.api.model import lmms  # noqa: PLC0415 - lmms-eval's model API (~1 s), only when a rescore runs

    return lmms


class NoModelRegistry(ImportError):
    """lmms-eval before 0.7.3: no model registry to add a model to."""


def register_model(model_id: str, class_path: str) -> None:
    """``model_id`` in lmms-eval's model registry, served by the class at ``class_path``;
    :class:`NoModelRegistry` before lmms-eval 0.7.3."""
    try:
        from lmms_eval.models import MODEL_REGISTRY_V2  # noqa: PLC0415 - lmms-eval's models (seconds); absent before 0.7.3
        from lmms_eval.models.registry_v2 import ModelManifest  # noqa: PLC0415 - lmms-eval's models (seconds); absent before 0.7.3
    except ImportError as exc:
        raise NoModelRegistry(str(exc)) from exc
    MODEL_REGISTRY_V2.register_manifest(ModelManifest(model_id=model_id, simple_class_path=class_path), overwrite=True)
