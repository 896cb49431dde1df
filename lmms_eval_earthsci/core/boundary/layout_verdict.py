"""Does a prompt reach the model in the layout a task wrote it? A task's chat messages (``doc_to_messages``:
a system turn, then text and image parts in order) are the layout; what a model class made of them is a
rendered prompt (the chat template's text, or the decoded input ids) with one span per image, and the
list of images it passed. :func:`check_prompt` compares the two and names what was lost:

- ``system prompt dropped``: a system text is not in the prompt;
- ``N of M images``: images passed or spans in the prompt differ from the image parts;
- ``images first`` / ``labels cut off from their figures`` / ``image moved``: the order of text and
  images differs (a template that puts every image before the text; a label no longer directly before
  its figure);
- ``placeholder text left``: a literal ``<image_k>`` / ``<image k>`` reached the model as text;
- ``text changed``: a text part is not in the prompt as written.

Nothing here names a benchmark or a model class: the caller says how an image appears in the prompt
(``span``, a regex) and which images were passed. The verdicts the probe gives are made here too, so that its data go
one way (``probe`` asks ``observe`` what reached the processor, then this module what that means):
:func:`verdict_of` (an observation), :func:`simple_verdict` (a simple class's known handling), :func:`fix_for`
(the fix for what was lost).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.core.boundary import observe
from lmms_eval_earthsci.core.boundary.interleave import numbered_form

_SENTINEL = "\x00"
# placeholders of our prompts and of lmms-eval's simple classes, as text
_PLACEHOLDER_TEXT = re.compile(r"<image[ _]\d+>|<image>")
# a text part that only labels the image after it: "A) ", "(B)", "Option C:", "1."
_LABEL = re.compile(r"^\W*(?:option\s*|figure\s*|image\s*)?[A-Ha-h0-9]\W*$", re.IGNORECASE)


@dataclass(frozen=True)
class Layout:
    """A chat layout: the system texts and the user-side parts, ``("text", s)`` or ``("image", i)`` with
    ``i`` the image's index among the messages' images (repeats of one image are separate parts)."""

    system: tuple[str, ...]
    parts: tuple[tuple[str, Any], ...]

    @property
    def images(self) -> int:
        return sum(1 for kind, _ in self.parts if kind == "image")

    def shape(self) -> str:
        """``T I T I`` -like: the order of text and image parts."""
        return " ".join("I" if kind == "image" else "T" for kind, _ in self.parts)


def layout_of(messages: Sequence[Mapping[str, Any]]) -> Layout:
    """The layout of lmms-eval chat messages (``{"role", "content": [{"type": "text"|"image", ...}]}``)."""
    system: list[str] = []
    parts: list[tuple[str, Any]] = []
    n = 0
    for message in messages:
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        for item in items:
            kind = item.get("type")
            if message.get("role") == "system":
                if kind == "text" and str(item.get("text", "")).strip():
                    system.append(str(item["text"]))
            elif kind == "text":
                if str(item.get("text", "")).strip():
                    parts.append(("text", str(item["text"])))
            elif kind == "image":
                parts.append(("image", n))
                n += 1
    return Layout(tuple(system), tuple(parts))


@dataclass
class Verdict:
    """What :func:`check_prompt` found: ``lost`` is empty when the layout arrived as written."""

    lost: list[str] = field(default_factory=list)
    expected: str = ""
    received: str = ""
    observed: bool = False  # read from what the class handed its processor (not from a model of the class)
    rendered: str | None = None  # the prompt as observed, each image one "<image>" (check-model --against compares it)
    tokens: list[int] | None = None  # visual tokens per image, where the processor's output shows them

    @property
    def ok(self) -> bool:
        return not self.lost

    def says(self) -> str:
        return "as written" if self.ok else "; ".join(self.lost)


def _norm(text: str) -> str:
    return " ".join(text.split())


def check_prompt(layout: Layout, prompt: str, span: str, images_passed: int | None = None) -> Verdict:
    """Compare ``layout`` with ``prompt``, in which each image is one match of the regex ``span``.
    ``images_passed``: how many images the class handed to its processor (None: not known)."""
    verdict = Verdict(expected=layout.shape())
    spans = list(re.finditer(span, prompt))
    marked = re.sub(span, _SENTINEL, prompt)
    flat = _norm(marked.replace(_SENTINEL, f" {_SENTINEL} "))
    for s in layout.system:
        if _norm(s) not in flat:
            verdict.lost.append("system prompt dropped")
            break
        flat = flat.replace(_norm(s), " ", 1)  # the user-side order is read without it
    want = layout.images
    if len(spans) != want:
        verdict.lost.append(f"{len(spans)} of {want} images in the prompt")
    elif images_passed is not None and images_passed != want:
        verdict.lost.append(f"{images_passed} of {want} images passed")
    left = _PLACEHOLDER_TEXT.findall(marked)
    if left:
        verdict.lost.append(f"placeholder text left ({', '.join(sorted(set(left)))})")

    # positions of the text parts (in order, each after the previous) and of the image spans
    located: list[tuple[int, str]] = []
    cursor = 0
    changed = False
    for kind, value in layout.parts:
        if kind != "text":
            continue
        needle = _norm(value)
        at = flat.find(needle, cursor)
        if at < 0:
            at = flat.find(needle)
        if at < 0:
            changed = True
            continue
        located.append((at, "T"))
        cursor = at + len(needle)
    located += [(m.start(), "I") for m in re.finditer(_SENTINEL, flat)]
    received = [kind for _, kind in sorted(located)]
    verdict.received = " ".join(received)
    if changed:
        verdict.lost.append("text changed")
    elif verdict.received != verdict.expected and len(spans) == want:
        verdict.lost.append(_order_problem(layout, received))
    return verdict


def _labels(layout: Layout) -> list[int]:
    """Indexes of the parts that label the image right after them (a short text such as ``A) ``)."""
    parts = layout.parts
    return [i for i, ((k, v), (k2, _)) in enumerate(zip(parts, parts[1:])) if k == "text" and k2 == "image" and _LABEL.match(str(v))]


def _order_problem(layout: Layout, received: list[str]) -> str:
    expected = [("I" if kind == "image" else "T") for kind, _ in layout.parts]
    labels = _labels(layout)
    first_text = received.index("T") if "T" in received else len(received)
    if first_text == layout.images and expected.index("T") < layout.images:
        return "images first" + (", labels cut off from their figures" if labels else "")
    if labels and any(received[i : i + 2] != ["T", "I"] for i in labels):
        return "labels cut off from their figures"
    return "image moved"


def image_order(expected: Sequence[Sequence[float]], passed: Sequence[Sequence[float]], tolerance: float = 12.0) -> str | None:
    """Whether the images passed are the expected ones in order, by their mean colours (robust to the
    resizing a processor does): None when they are, else what differs. Each passed image is matched
    to the nearest expected one; a match farther than ``tolerance`` (0-255 scale) is a foreign image."""
    if len(expected) != len(passed):
        return f"{len(passed)} of {len(expected)} images passed"
    order: list[int] = []
    for sig in passed:
        dist = [max(abs(a - b) for a, b in zip(sig, e)) for e in expected]
        best = min(range(len(expected)), key=dist.__getitem__)
        if dist[best] > tolerance:
            return "an image passed is none of the doc's"
        order.append(best)
    def nearest(sig: Sequence[float]) -> int:
        return min(range(len(expected)), key=lambda j: max(abs(a - b) for a, b in zip(sig, expected[j])))

    want = [nearest(e) for e in expected]
    return None if order == want else f"images reordered (received {order}, expected {want})"


def mean_colour(image: Any) -> tuple[float, float, float]:
    """The mean RGB of a PIL image (or an array in HWC/CHW layout, 0-255 or 0-1 scale)."""
    import numpy as np  # noqa: PLC0415 - numpy (~80 ms), only when images are compared

    if hasattr(image, "convert"):
        arr = np.asarray(image.convert("RGB"), dtype=np.float64)
    else:
        arr = np.asarray(image, dtype=np.float64)
        if arr.ndim == 3 and arr.shape[0] in (1, 3) and arr.shape[-1] not in (1, 3):
            arr = np.moveaxis(arr, 0, -1)
        if arr.max(initial=0.0) <= 1.0:
            arr = arr * 255.0
    if arr.ndim == 2:
        arr = np.stack([arr] * 3, axis=-1)
    m = arr.reshape(-1, arr.shape[-1])[:, :3].mean(axis=0)
    return float(m[0]), float(m[1]), float(m[2])


# --------------------------------------------------------------------------- the probe's verdicts

#: what reached the model could not be observed (and no fallback knew the class): one warning per run
NOT_OBSERVED = "not observed"
#: the observed prompt kept in a verdict (``rendered``), at most
RENDERED_CHARS = 6000
#: the fix for each kind of loss: on a simple route, and through a chat class
FIXES = MappingProxyType({
    "images first": ("the class's chat route (drop --force_simple; with qwen2_5_vl/qwen3_vl simple, interleave_visuals=True interleaves placeholder prompts)",
                     "a class whose chat template keeps images where the messages put them (qwen2_5_vl, qwen3_vl, internvl_hf): this family's template puts them first"),
    "labels cut off from their figures": ("the class's chat route; the paper reports no number for models without interleaved input",
                                          "a class that interleaves (qwen2_5_vl, qwen3_vl, internvl_hf); the paper reports no number for models without interleaved input"),
    "system prompt dropped": ("the class's chat route", "a class that keeps the task's system turn"),
    "placeholder text left": ("the class's chat route (our chat messages carry no placeholder text)", "report it: our chat messages carry no placeholder text"),
    "images": ("the class's chat route", "a class that passes every image of the messages"),
})


def fix_for(verdict: Verdict | Sequence[str], simple: bool = False) -> str:
    """The fix for what ``verdict`` (or a list of losses) says was lost."""
    lost = verdict.lost if isinstance(verdict, Verdict) else list(verdict)
    for key, (on_simple, on_chat) in FIXES.items():
        if any(key in x for x in lost):
            return on_simple if simple else on_chat
    return "the class's chat route" if simple else "lmms-eval-earthsci check-model names what is lost"


_SPAN = "\x01IMG\x01"


def simple_verdict(handling: str, layout: Layout, text: str, n_images: int, system: str | None = None) -> Verdict:
    """What a simple class with ``handling`` makes of ``text`` and ``n_images`` images."""
    if handling == "interleave":  # interleave_visuals=True with our rewrite: <image i> is the i-th image
        prompt = re.sub(r"<image \d+>", _SPAN, numbered_form(text, lambda: n_images))
    elif handling == "strip":
        prompt = _SPAN * n_images + text.replace("<image>", "")
    else:
        prompt = text.replace("<image>", _SPAN) if "<image>" in text else _SPAN * n_images + "\n" + text
    return check_prompt(layout, (system or "") + "\n" + prompt, re.escape(_SPAN), images_passed=n_images)


def verdict_of(seen: observe.Observation, layout: Layout, expected: Sequence[Sequence[float]]) -> Verdict | dict[str, Any]:
    """What an observation says of ``layout`` (``expected``: the probe colours of its images in order)."""
    if seen.error:
        return {"status": NOT_OBSERVED, "why": f"the class's processor call raised {seen.error}: the run will fail on its first doc", "broken": True}
    if not seen.seen:
        return {"status": NOT_OBSERVED, "why": seen.why or "nothing reached a processor"}
    marker = seen.marker()
    if marker is None:
        return {"status": NOT_OBSERVED, "why": f"no image token of the processor occurs once per image in its text ({len(seen.images)} images)"}
    verdict = check_prompt(layout, str(seen.text), re.escape(marker), images_passed=len(seen.images))
    if verdict.ok and expected:
        images = [observe.load_any_image(i) for i in seen.images]
        if all(i is not None for i in images):
            order = image_order(expected, [mean_colour(i) for i in images])
            if order:
                verdict.lost.append(order)
    verdict.observed = True
    verdict.rendered = canonical_prompt(seen)[:RENDERED_CHARS]
    verdict.tokens = (seen.sizes or {}).get("per_image")
    return verdict


def canonical_prompt(seen: observe.Observation) -> str:
    """The observed prompt with each image's tokens as one ``<image>``: every run of the image tokens that
    occur once per image (``<|vision_start|><|image_pad|><|vision_end|>``), so that two classes or backends
    that name an image by different ones of its tokens compare equal."""
    text, n = str(seen.text), len(seen.images)
    once = [m for m in seen.markers if n and text.count(m) == n] or [m for m in [seen.marker()] if m]
    if not once:
        return text
    run = "(?:" + "|".join(re.escape(m) for m in sorted(once, key=len, reverse=True)) + ")+"
    return re.sub(run, "<image>", text)
