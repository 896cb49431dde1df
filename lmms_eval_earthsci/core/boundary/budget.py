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

import base64
import contextlib
import dataclasses
import inspect
import io
import json
import logging
import statistics
from collections.abc import Callable, Iterator
from typing import Any

from lmms_eval_earthsci.core.boundary import observe
from lmms_eval_earthsci.core.boundary.interleave import applies as interleaves
from lmms_eval_earthsci.core.boundary.interleave import numbered_form
from lmms_eval_earthsci.core.boundary.inventory import ENTRIES
from lmms_eval_earthsci.core.data.loading import sizes_only, undecoded
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream.patching import patch

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
SERVER_WHY = "its checkpoint's preprocessor config and its own settings (max_pixels)"


def probe_figure() -> Any:
    from PIL import Image  # noqa: PLC0415 - PIL, only when a run probes

    return Image.new("RGB", PROBE_SIZE, observe.PALETTE[3])


def small_figure() -> Any:
    """The budget probe's small figure (64 x 64): a class may enlarge it (its ``min_pixels``)."""
    return observe.probe_image(observe.PALETTE[3])


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
    return {**out, "status": OBSERVED, "reached": size, "tokens": tokens, "capped": capped, "max_pixels": size[0] * size[1] if capped and size else None,
            "settings": sizes.get("settings") or {}}


def observe_budget(lm: Any, server: bool = False) -> dict[str, Any]:
    """The class's budget: the probe figure sent through ``lm``'s own request path and read where it
    reaches the model (kept for the run: the runtime's ``seen_of(lm)``). ``server``: a class that sends its messages to a
    server (nothing is sent)."""
    seen = current().seen_of(lm)
    cached = seen.get("budget")
    if isinstance(cached, dict):
        return cached
    cls = type(lm).__name__
    if server:
        budget: dict[str, Any] = {"class": cls, "probe": list(PROBE_SIZE), "status": SERVER_DECIDES, "reached": list(PROBE_SIZE), "tokens": None,
                                  "capped": None, "max_pixels": None, "why": SERVER_WHY}
    else:
        budget = budget_of(observe.observe(lm, _request(lm, probe_figure())), cls)
        if budget["status"] == OBSERVED:  # and a small figure: a class may enlarge it (its min_pixels)
            budget["tokens_small"] = _tokens(observe.observe(lm, _request(lm, small_figure())))
    seen["budget"] = budget
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
        if budget.get("capped") is False and largest and largest[0] * largest[1] <= PROBE_SIZE[0] * PROBE_SIZE[1]:
            out["above"] = 0  # no figure larger than the probe figure, which reached the model whole
        else:
            out["why"] = "a figure larger than the unshrunk probe figure" if budget.get("capped") is False else "the processor's output shows no resized size"
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


# --------------------------------------------------------------------------- aligning two backends (check-model --against)


def _candidates(target: dict[str, Any]) -> list[dict[str, int]]:
    """Pixel settings that may give this class the target's budget: each of the target processor's own cap
    settings (``max_pixels``, ``longest_edge``: uninterpreted, so each is tried, then the pixels it reached),
    with its floor (``min_pixels`` or ``shortest_edge``) where it has one."""
    settings = target.get("settings") or {}
    caps = [settings.get(k) for k in ("max_pixels", "longest_edge")] + [target.get("max_pixels")]
    floor = next((v for v in (settings.get("min_pixels"), settings.get("shortest_edge")) if isinstance(v, int) and v > 0), None)
    out = []
    for cap in dict.fromkeys(v for v in caps if isinstance(v, int) and v > 0):
        out.append({"max_pixels": cap, **({"min_pixels": floor} if floor else {})})
    return out


@contextlib.contextmanager
def _pixel_settings(image_processor: Any, kwargs: dict[str, int]) -> Iterator[None]:
    """``image_processor`` with its cap and floor set for the block (``size.longest_edge`` /
    ``shortest_edge`` and ``max_pixels`` / ``min_pixels``, whichever it holds), then restored."""
    size = getattr(image_processor, "size", None)
    edges = {"longest_edge": kwargs["max_pixels"], **({"shortest_edge": kwargs["min_pixels"]} if "min_pixels" in kwargs else {})}
    undo: list[Callable[[], None]] = []

    def tried(key: str, value: Any) -> None:
        undo.append(patch(image_processor, key, value, entry=ENTRIES["budget: the processor's cap tried"]))

    try:
        if isinstance(size, dict):
            tried("size", {**size, **edges})
        elif dataclasses.is_dataclass(size) and not isinstance(size, type) and hasattr(size, "longest_edge"):
            tried("size", dataclasses.replace(size, **edges))
        for key in kwargs:
            if getattr(image_processor, key, None) is not None:
                tried(key, kwargs[key])
        yield
    finally:
        for step in reversed(undo):
            step()


def _engine_of(lm: Any) -> Any:
    return next((m for m in observe.observable(lm)[1] if observe.is_engine(m)), None)


def _tokens(seen: observe.Observation) -> int | None:
    per_image = (seen.sizes or {}).get("per_image")
    return per_image[0] if per_image else None


def align(lm: Any, target: dict[str, Any]) -> dict[str, Any] | None:
    """The argument that gives ``lm`` the ``target`` budget (another class's or backend's, observed on the
    same probe figures), observed: each candidate (:func:`_candidates`) is applied for the two budget probes
    (a vLLM engine: the request's ``mm_processor_kwargs``; a class whose constructor takes ``max_pixels``:
    its processor's settings), and the first that gives the target's visual tokens for both is named. None
    when the budgets already agree or either was not observed; ``{"argument": None, "tried": [...]}`` when
    no candidate aligned them."""
    mine = observe_budget(lm)
    want = (target.get("tokens"), target.get("tokens_small"))
    if mine.get("status") != OBSERVED or target.get("status") != OBSERVED or want[0] is None or (mine.get("tokens"), mine.get("tokens_small")) == want:
        return None
    tried: list[dict[str, Any]] = []
    engine = _engine_of(lm)
    processors = [p for p in observe.observable(lm)[0] if getattr(p, "image_processor", None) is not None]
    accepted = inspect.signature(type(lm).__init__).parameters
    figures = (probe_figure(), small_figure())
    for kwargs in _candidates(target):
        if engine is not None:
            argument = "mm_processor_kwargs=" + json.dumps(kwargs, separators=(",", ":"))
            got = tuple(_tokens(observe.engine_observation(engine, "chat", ([_conversation(f)],), {"mm_processor_kwargs": kwargs})) for f in figures)
        elif processors and "max_pixels" in accepted:
            kwargs = {k: v for k, v in kwargs.items() if k in accepted}
            argument = ",".join(f"{k}={v}" for k, v in kwargs.items())
            with _pixel_settings(processors[0].image_processor, kwargs):
                got = tuple(_tokens(observe.observe(lm, _request(lm, f))) for f in figures)
        else:
            break
        tried.append({"argument": argument, "tokens": list(got)})
        if got[0] == want[0] and (want[1] is None or got[1] == want[1]):
            return {"argument": argument, "tokens": list(got), "tried": tried}
    return {"argument": None, "tried": tried}


def _conversation(figure: Any) -> list[dict[str, Any]]:
    """The budget probe as OpenAI-style messages, the figure as a data URL (what lmms-eval's vllm class sends)."""
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": _data_url(figure)}}, {"type": "text", "text": "Q"}]}]


def _data_url(image: Any) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
