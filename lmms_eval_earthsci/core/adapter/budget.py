"""At what size a figure reaches the model, observed for the class in use (``metadata.earthsci_budget``).

One model class and one checkpoint can hand the same figure to the model at very different sizes: lmms-eval's
HF ``qwen2_5_vl`` class resizes it to its own ``max_pixels`` first, its ``vllm`` class sends it at full size
and the engine applies the checkpoint's preprocessor config, a server applies its own. Nothing here knows
a class, a family or a resize rule:

- **The budget** (:func:`observe_budget`, once per class and run): one large probe figure
  (:data:`PROBE_SIZE`, one solid colour) goes through the class's own request path as the layout probe's
  requests do (:mod:`.observe`) and is read where it reaches the model: the processor's output (its image
  token's count in the ids, its grid of patches or its ``pixel_values``), or what a vLLM engine built (its
  placeholders and grid). A server class is sent nothing: it sends the figure at full size and the
  server's processor decides.
- **The task's figures** (:func:`figure_stats`): the size of every figure each evaluated doc sends, read
  from image headers (the data layer's ``sizes_only``: nothing decoded), held against the observed budget:
  how many docs had a figure with more pixels, and by how much it was shrunk (the pixel-area ratio).

:func:`budget_for` is the record for one task; the layout probe writes it beside ``earthsci_layout``.
"""

from __future__ import annotations

import logging
import statistics
from typing import Any

from lmms_eval_earthsci.core.adapter import observe
from lmms_eval_earthsci.core.adapter.interleave import applies as interleaves
from lmms_eval_earthsci.core.adapter.interleave import numbered_form
from lmms_eval_earthsci.core.data.loading import sizes_only, undecoded

logger = logging.getLogger("lmms_eval_earthsci")

OBSERVED, SERVER_DECIDES, NOT_OBSERVED = "observed", "decided by the server", "not observed"
#: the probe figure (W, H): 15.9 MP, above the budget of every checkpoint config we have seen (Qwen2.5-VL's
#: 12.8 MP); a figure that reaches the model unshrunk says the budget is at least this
PROBE_SIZE = (4608, 3456)
#: a figure counts as shrunk below this share of its pixels (processors round sizes to their patch grid:
#: 4000 x 3000 reaches Qwen2.5-VL as 4004 x 2996)
SHRUNK_BELOW = 0.9
#: docs whose figure sizes are read per task at most (evenly spaced beyond that: the record says so)
MAX_DOCS = 2000
SERVER_WHY = "the class sends each figure at its full size; the server's processor (its checkpoint's preprocessor config, its max_pixels) decides what the model sees"


def probe_figure() -> Any:
    from PIL import Image  # noqa: PLC0415 - PIL, only when a run probes

    return Image.new("RGB", PROBE_SIZE, observe.PALETTE[3])


def _request(lm: Any, figure: Any) -> tuple[Any, ...]:
    """The budget probe's request: one figure, then one word (no system turn: a template that accepts a
    task's messages accepts it)."""
    if getattr(lm, "is_simple", False):
        text = "Q"
        if interleaves(lm):
            text = numbered_form(text, lambda: 1)
        return observe.request_args(True, text, [figure])
    return observe.request_args(False, "Q", [{"role": "user", "content": [{"type": "image", "url": figure}, {"type": "text", "text": "Q"}]}])


def budget_of(seen: observe.Observation, cls: str) -> dict[str, Any]:
    """The budget record of one probe observation."""
    out: dict[str, Any] = {"class": cls, "probe": list(PROBE_SIZE)}
    if seen.error or not seen.seen:
        return {**out, "status": NOT_OBSERVED, "why": seen.error or seen.why or "nothing reached a processor"}
    sizes = seen.sizes or {}
    per_image, reached = sizes.get("per_image"), sizes.get("reached")
    tokens = per_image[0] if per_image else sizes.get("tokens")
    if tokens is None and not reached:
        return {**out, "status": NOT_OBSERVED, "why": "the processor's output shows neither visual tokens nor a resized size"}
    size = reached[0] if reached else None
    capped = None if size is None else size[0] * size[1] < SHRUNK_BELOW * PROBE_SIZE[0] * PROBE_SIZE[1]
    return {**out, "status": OBSERVED, "reached": size, "tokens": tokens, "capped": capped, "max_pixels": size[0] * size[1] if capped and size else None}


def observe_budget(lm: Any, server: bool = False) -> dict[str, Any]:
    """The class's budget: the probe figure sent through ``lm``'s own request path and read where it
    reaches the model (cached on ``lm`` for the run). ``server``: a class that sends its messages to a
    server (nothing is sent)."""
    cached = getattr(lm, "_earthsci_budget", None)
    if isinstance(cached, dict):
        return cached
    cls = type(lm).__name__
    if server:
        budget: dict[str, Any] = {"class": cls, "probe": list(PROBE_SIZE), "status": SERVER_DECIDES, "reached": list(PROBE_SIZE), "tokens": None,
                                  "capped": None, "max_pixels": None, "why": SERVER_WHY}
    else:
        budget = budget_of(observe.observe(lm, _request(lm, probe_figure())), cls)
    try:
        lm._earthsci_budget = budget
    except Exception:
        pass
    return budget


def _docs(task: Any, limit: Any) -> tuple[Any, int, list[int]]:
    """The task's docs (image columns undecoded), how many the run evaluates (``--limit``: the first N, or
    that share) and the indices whose figures are read (all, or :data:`MAX_DOCS` evenly spaced)."""
    docs = undecoded(task.eval_docs)
    n = len(docs)
    if limit is not None:
        n = min(n, int(limit * n) if isinstance(limit, float) and limit < 1.0 else int(limit))
    return docs, n, list(range(0, n, max(1, -(-n // MAX_DOCS))))


def figure_sizes(task: Any, limit: Any = None) -> tuple[int, list[list[tuple[int, int]]]]:
    """``(docs evaluated, [the sizes of each read doc's figures])``: what the task's ``doc_to_visual`` sends
    for each doc, read from headers (nothing decoded). A doc whose figures cannot be read is left out."""
    docs, n, indices = _docs(task, limit)
    out: list[list[tuple[int, int]]] = []
    with sizes_only():
        for i in indices:
            try:
                visuals = task.doc_to_visual(docs[i]) or []
                out.append([(int(v.size[0]), int(v.size[1])) for v in visuals if hasattr(v, "size")])
            except Exception:  # a doc our record check would name; its figures are not counted here
                continue
    return n, out


def figure_stats(sizes: list[list[tuple[int, int]]], budget: dict[str, Any], docs: int) -> dict[str, Any]:
    """How many of the docs had a figure with more pixels than the budget, and its shrink factor (figure
    pixels / budget pixels) over them: median and largest."""
    with_figures = [s for s in sizes if s]
    largest = max((size for s in with_figures for size in s), key=lambda wh: wh[0] * wh[1], default=None)
    out: dict[str, Any] = {"docs": docs, "read": len(sizes), "with_figures": len(with_figures), "largest": list(largest) if largest else None,
                           "above": None, "median_shrink": None, "max_shrink": None, "why": None}
    cap = budget.get("max_pixels")
    if not with_figures:
        out["why"] = "no figures"
    elif budget.get("status") != OBSERVED:
        out["why"] = budget.get("why") or budget.get("status")
    elif not cap:
        out["why"] = "the probe figure was not shrunk: no figure above it" if budget.get("capped") is False else "the processor's output shows no resized size"
        if budget.get("capped") is False and largest and largest[0] * largest[1] <= PROBE_SIZE[0] * PROBE_SIZE[1]:
            out.update(above=0, why=None)
    else:
        factors = [max(w * h for w, h in s) / cap for s in with_figures]
        shrunk = [f for f in factors if f > 1 / SHRUNK_BELOW]
        out.update(above=len(shrunk), median_shrink=round(statistics.median(shrunk), 2) if shrunk else None, max_shrink=round(max(shrunk), 2) if shrunk else None)
    return out


def budget_for(lm: Any, task: Any, limit: Any = None, server: bool = False) -> dict[str, Any]:
    """The ``earthsci_budget`` record of ``task`` under ``lm``: the class's budget and the task's figures
    held against it."""
    budget = dict(observe_budget(lm, server))
    docs, sizes = figure_sizes(task, limit)
    budget["figures"] = figure_stats(sizes, budget, docs)
    return budget
