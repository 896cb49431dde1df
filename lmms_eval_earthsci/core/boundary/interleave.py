"""lmms-eval's simple classes that carry its ``interleave_visuals`` code (in 0.7.3: ``qwen2_vl``, ``qwen2_5_vl``,
``qwen3_vl`` with ``--force_simple``, ``gemma3``, ``gemma4``, ``llava_onevision1_5``, ``huggingface``) can
interleave images with the text when started with ``interleave_visuals=True``: they place the i-th
image where the text says ``<image i>`` (one space, 1-based) and pass no image the text does not name.
Which classes deliver a rewritten prompt as written is observed by the layout probe, not listed here.
Our simple prompts name images as ``<image_k>`` (EMMA, as the authors write them) or ``<image>`` (SciFIBench
C->F), or not at all: with the flag, such a prompt reached the model with **zero** images and the run
exited 0.

When the flag is on, :func:`install_interleave_fix` rewrites the context of each request of ours into the
form these classes read, before they read it: ``<image_k>`` -> ``<image r>`` (``r``: the rank of ``k``
among the numbers the text names, which is where ``doc_to_visual`` puts that image; a repeat names the
same image again), the i-th ``<image>`` -> ``<image i>``, and a text that names no image gets
``<image 1>`` ... ``<image n>`` before it (where the classes put images without the flag). Other tasks'
requests, and runs without the flag, are untouched. ``core.activation.INVENTORY``: "interleave_visuals".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lmms_eval_earthsci.core.boundary.inventory import ENTRIES
from lmms_eval_earthsci.core.prompts.messages import PLACEHOLDER_RE, referenced_images
from lmms_eval_earthsci.core.upstream.patching import wrap_method


def numbered_form(text: str, n_images: Callable[[], int]) -> str:
    """``text`` with its image placeholders in the ``<image i>`` form (see the module docstring);
    ``n_images()`` is asked only when the text names no image."""
    if PLACEHOLDER_RE.search(text):
        keys = referenced_images(text)
        rank = {k: i + 1 for i, k in enumerate(keys)}
        bare = iter(range(1, len(keys) + 1))

        def sub(m: re.Match[str]) -> str:
            return f"<image {rank[int(m.group(1))]}>" if m.group(1) is not None else f"<image {next(bare)}>"

        return PLACEHOLDER_RE.sub(sub, text)
    n = n_images()
    return "".join(f"<image {i}>" for i in range(1, n + 1)) + text if n else text


def _ours(request: Any) -> Any:
    """The task, when ``request`` is a simple-route request of one of our tasks, else None."""
    args = getattr(request, "arguments", None)
    if not isinstance(args, tuple) or len(args) < 6 or not isinstance(args[0], str):
        return None
    task = getattr(args[2], "__self__", None)
    fn = getattr(getattr(task, "config", None), "doc_to_visual", None)
    if task is None or not str(getattr(fn, "__module__", "")).startswith("lmms_eval_earthsci"):
        return None
    return task


def rewrite(requests: list[Any]) -> int:
    """Rewrite our requests' contexts in place; returns how many changed."""
    changed = 0
    for request in requests:
        task = _ours(request)
        if task is None:
            continue
        args = request.arguments

        def count(task: Any = task, args: tuple = args) -> int:  # reads the row and decodes its images: only for a text that names none
            docs = getattr(task, "dataset", None)
            return len(task.doc_to_visual(docs[args[5]][args[3]]) or []) if docs is not None else 0

        text = numbered_form(args[0], count)
        if text != args[0]:
            request.arguments = (text, *args[1:])
            changed += 1
    return changed


def applies(lm: Any) -> bool:
    """Whether ``lm`` is a simple class started with ``interleave_visuals=True`` (lmms-eval's Qwen, Gemma,
    LLaVA-OneVision-1.5 and ``huggingface`` simple classes share that code; the layout probe observes
    whether a class delivers the rewritten prompt as written)."""
    return bool(getattr(lm, "is_simple", False) and getattr(lm, "interleave_visuals", False) is True)


def install_interleave_fix(lm: Any) -> bool:
    """Wrap ``lm``'s class's ``generate_until`` so that our requests' contexts are rewritten first (see the
    module docstring), when :func:`applies`. Idempotent; called with the run's model object (by the
    layout probe, before the first request). Returns whether the rewrite is in place for ``lm``."""
    if not applies(lm):
        return False

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def generate_until(self: Any, requests: list[Any], *args: Any, **kwargs: Any) -> Any:
            if applies(self):
                rewrite(requests)
            return original(self, requests, *args, **kwargs)

        return generate_until

    return wrap_method(type(lm), "generate_until", make, entry=ENTRIES["interleave_visuals"])
