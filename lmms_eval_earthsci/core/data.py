"""Dataset resolution (Hub or local mirror), record validation and image decoding.

Every task loads its data from the Hugging Face Hub exactly as the benchmark's authors publish it, at a
pinned revision (``dataset_kwargs.revision`` in the task YAML). For air-gapped clusters one variable,
``EARTHSCI_DATA_MIRROR``, points at a local folder holding copies of those repos in the Hub's own file
layout (``$EARTHSCI_DATA_MIRROR/<org>/<name>/...``, e.g. made with ``huggingface-cli download --repo-type
dataset``). Any task whose ``dataset_path`` has a copy there loads it from disk, through the same
``datasets.load_dataset`` call as the Hub path.

A missing or malformed record or image raises :class:`RecordError`, one message naming the dataset,
the record id and the field.
"""

from __future__ import annotations

import io
import logging
import os
from typing import Any, Mapping

logger = logging.getLogger("lmms_eval_earthsci")

MIRROR_ENV = "EARTHSCI_DATA_MIRROR"

# Hub repos our tasks read. With the mirror variable set, a missing copy of one of these is an error
# (falling back to the Hub would hang on an air-gapped node); other repos fall back silently.
KNOWN_DATASETS: frozenset[str] = frozenset(
    {
        "luckychao/EMMA",
        "luckychao/EMMA-mini",
        "MSEarth/MSEarth_MCQ",
        "MSEarth/MSEarth_Open_Ended",
        "MSEarth/MSEarth_Captioning",
        "MSEarth-Data/MSEarth-Benchmark-MCQ",
        "MSEarth-Data/MSEarth-Benchmark-OpenQA",
        "MSEarth-Data/MSEarth-Benchmark-Captioning",
        "jonathan-roberts1/SciFIBench",
    }
)

# dataset_kwargs that only make sense for the Hub
_HUB_ONLY_KWARGS = ("revision", "token", "force_download")


class RecordError(ValueError):
    """A dataset record (or its image) is missing or malformed."""

    def __init__(self, dataset: str, record_id: Any, field: str, problem: str):
        self.dataset, self.record_id, self.field, self.problem = dataset, record_id, field, problem
        super().__init__(f"{dataset}: record {record_id!r}, field {field!r}: {problem}")


class MirrorError(FileNotFoundError):
    pass


def mirror_root() -> str | None:
    root = os.environ.get(MIRROR_ENV, "").strip()
    return os.path.abspath(os.path.expanduser(root)) if root else None


def mirror_path(dataset_path: str | None) -> str | None:
    """The local copy of ``dataset_path`` under the mirror, or None to use ``dataset_path`` as is."""
    root = mirror_root()
    if not root or not dataset_path or os.path.isabs(dataset_path) or "/" not in dataset_path:
        return None
    local = os.path.join(root, *dataset_path.split("/"))
    if os.path.isdir(local):
        return local
    if dataset_path in KNOWN_DATASETS:
        raise MirrorError(
            f"{MIRROR_ENV}={root} is set but holds no copy of {dataset_path!r}: expected the Hub repo's "
            f"files under {local} (e.g. `huggingface-cli download --repo-type dataset {dataset_path} "
            f"--local-dir {local}` on a machine with Hub access)"
        )
    return None


def resolve_dataset(dataset_path: str, dataset_kwargs: Mapping[str, Any] | None) -> tuple[str, dict]:
    """(path, kwargs) to hand to ``datasets.load_dataset``: the mirror copy when there is one."""
    kwargs = dict(dataset_kwargs or {})
    local = mirror_path(dataset_path)
    if local is None:
        return dataset_path, kwargs
    for key in _HUB_ONLY_KWARGS:
        kwargs.pop(key, None)
    return local, kwargs


def install_mirror_hook() -> bool:
    """Route ``ConfigurableTask.download`` through :func:`resolve_dataset`. Idempotent; False if the
    lmms-eval internals it relies on are gone."""
    from lmms_eval_earthsci.registration import wrap_task_method

    def make(original):
        def download(self, dataset_kwargs=None, *args, **kwargs):
            path = getattr(self, "DATASET_PATH", None)
            if path and mirror_root():
                local, dataset_kwargs = resolve_dataset(path, dataset_kwargs)
                if local != path:
                    logger.info("lmms_eval_earthsci: loading %s from the local mirror %s", path, local)
                    self.DATASET_PATH = local
            return original(self, dataset_kwargs, *args, **kwargs)

        return download

    return wrap_task_method("download", "_earthsci_mirror", make, requires=("DATASET_PATH",))


def require(record: Mapping[str, Any], field: str, *, dataset: str, record_id: Any, types: type | tuple = object, allow_none: bool = False):
    """``record[field]``, or a :class:`RecordError` that says exactly what is wrong."""
    if field not in record:
        raise RecordError(dataset, record_id, field, "missing")
    value = record[field]
    if value is None:
        if allow_none:
            return None
        raise RecordError(dataset, record_id, field, "is None")
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise RecordError(dataset, record_id, field, f"expected {names}, got {type(value).__name__}")
    return value


def load_image(value: Any, *, dataset: str, record_id: Any, field: str):
    """Decode an image cell as ``datasets`` may hand it over: a PIL image, a ``{"bytes", "path"}``
    struct (undecoded parquet), raw bytes, or a file path. Returns an RGB PIL image."""
    from PIL import Image, UnidentifiedImageError

    if value is None:
        raise RecordError(dataset, record_id, field, "image is missing (None)")
    try:
        if isinstance(value, Image.Image):
            img = value
        elif isinstance(value, Mapping):
            if value.get("bytes"):
                img = Image.open(io.BytesIO(value["bytes"]))
            elif value.get("path"):
                img = Image.open(value["path"])
            else:
                raise RecordError(dataset, record_id, field, "image struct has neither bytes nor path")
        elif isinstance(value, (bytes, bytearray)):
            img = Image.open(io.BytesIO(value))
        elif isinstance(value, (str, os.PathLike)):
            img = Image.open(value)
        else:
            raise RecordError(dataset, record_id, field, f"not an image ({type(value).__name__})")
        return img if img.mode == "RGB" else img.convert("RGB")
    except RecordError:
        raise
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise RecordError(dataset, record_id, field, f"image cannot be decoded ({exc})") from exc

