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
(``span``, a regex) and which images were passed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
