"""Prompt text with image placeholders -> lmms-eval inputs, for chat and simple backends.

A prompt may reference images with numbered placeholders ``<image_k>`` (EMMA: any order, repeats
allowed, numbering need not start at 1) or with bare ``<image>`` (the i-th one is the i-th image).

- Chat backends (``doc_to_messages``): :func:`chat_messages` interleaves text and images in
  placeholder order, one user turn, repeats kept, literal placeholder text never shown; an optional
  system message. A prompt with no placeholder gets its images before or after the text
  (``images_first``).
- Simple backends (``doc_to_visual`` + ``doc_to_text``): :func:`simple_visuals` gives each referenced
  image once, ordered by number (``<image_k>``) or by position (``<image>``); the text keeps the
  placeholders as written (so the model can tell which image is which option) unless
  ``image_token`` replaces them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from lmms_eval_earthsci.core.data.loading import doc_key
from lmms_eval_earthsci.core.runtime import current

PLACEHOLDER_RE = re.compile(r"<image_(\d+)>|<image>")
# numbered placeholders only: a prompt holding free text (a reward model's candidates) where "<image>" is text
NUMBERED_RE = re.compile(r"<image_(\d+)>")

Resolver = Callable[[int], Any]
"""Maps a placeholder's key to an image: ``<image_k>`` -> ``resolve(k)``; the i-th ``<image>`` ->
``resolve(i)`` (1-based)."""


def split_placeholders(text: str, numbered_only: bool = False) -> list[tuple[str, Any]]:
    """``[("text", str) | ("image", k)]`` in order of occurrence. Text fragments are kept verbatim
    (not stripped); whitespace-only fragments are dropped, as the official EMMA interleaving does.
    ``numbered_only``: a bare ``<image>`` is text."""
    parts: list[tuple[str, Any]] = []
    pos = 0
    bare = 0
    for m in (NUMBERED_RE if numbered_only else PLACEHOLDER_RE).finditer(text):
        if text[pos : m.start()].strip():
            parts.append(("text", text[pos : m.start()]))
        if m.group(1) is not None:
            parts.append(("image", int(m.group(1))))
        else:
            bare += 1
            parts.append(("image", bare))
        pos = m.end()
    if text[pos:].strip():
        parts.append(("text", text[pos:]))
    return parts


def referenced_images(text: str) -> list[int]:
    """Distinct placeholder keys in ``text``: numbered ones sorted by number, bare ones by position."""
    keys = {key for kind, key in split_placeholders(text) if kind == "image"}
    return sorted(keys)


def once(resolve: Resolver) -> Resolver:
    """``resolve`` remembering what it returned for each key."""
    seen: dict[Any, Any] = {}

    def resolve_once(key: Any) -> Any:
        if key not in seen:
            seen[key] = resolve(key)
        return seen[key]

    return resolve_once


def content_parts(text: str, resolve: Resolver, images_first: bool = True, extra_images: Sequence[Any] = (), numbered_only: bool = False) -> list[dict]:
    """lmms-eval chat ``content`` for one turn. ``extra_images`` are images not referenced in the text,
    placed before (``images_first``) or after it."""
    content: list[dict] = []
    resolve = once(resolve)  # a repeated placeholder is the same image, decoded once
    for kind, value in split_placeholders(text, numbered_only):
        if kind == "text":
            content.append({"type": "text", "text": value})
        else:
            content.append({"type": "image", "url": resolve(value)})
    if extra_images:
        extra = [{"type": "image", "url": img} for img in extra_images]
        content = extra + content if images_first else content + extra
    if not content:
        content.append({"type": "text", "text": text})
    return content


class Messages(list):
    """A task's chat messages. lmms-eval 0.7.3's ``qwen3_vl`` chat class inserts its default system turn
    ("You are a helpful assistant.") at index 0 of whatever ``doc_to_messages`` returned, and Qwen3-VL's
    template renders only the first system turn: a task's own system prompt never reached the model.
    Inserting a system turn before a list that already starts with the task's own is ignored here, so
    the task's instructions stay the system prompt (the class's default is not the authors' request).
    ``core.activation.INVENTORY`` lists this as "task system turn"."""

    keeps_own_system = True

    def insert(self, index, item):  # type: ignore[no-untyped-def]  # list.insert's own signature
        if index == 0 and isinstance(item, Mapping) and item.get("role") == "system" and self and isinstance(self[0], Mapping) and self[0].get("role") == "system":
            return
        super().insert(index, item)


def chat_messages(
    text: str,
    resolve: Resolver | None = None,
    *,
    images: Sequence[Any] = (),
    images_first: bool = True,
    system: str | None = None,
) -> list[dict]:
    """``doc_to_messages`` output: optional system turn + one user turn.

    With placeholders in ``text``, ``resolve`` supplies the images; ``images`` are the images of a
    prompt without placeholders (placed first or last).
    """
    if resolve is None:
        resolve = _no_placeholders(text)
    messages: list[dict] = []
    if system:
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    messages.append({"role": "user", "content": content_parts(text, resolve, images_first, images)})
    return Messages(messages)


def interleaved_messages(segments: Iterable[Any], system: str | None = None) -> list[dict]:
    """One user turn from already-ordered segments: ``str`` -> text part, anything else -> image part
    (for prompts assembled piecewise, e.g. ``"A) ", img_a, "B) ", img_b, ..., question``)."""
    content = [{"type": "text", "text": s} if isinstance(s, str) else {"type": "image", "url": s} for s in segments if not (isinstance(s, str) and s == "")]
    messages: list[dict] = []
    if system:
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    messages.append({"role": "user", "content": content})
    return Messages(messages)


def simple_visuals(text: str, resolve: Resolver) -> list:
    """``doc_to_visual`` output: each referenced image once (see :func:`referenced_images`)."""
    return [resolve(k) for k in referenced_images(text)]


def simple_text(text: str, image_token: str | None = None) -> str:
    """``doc_to_text`` output: placeholders kept verbatim, or each replaced by ``image_token``."""
    if image_token is None:
        return text
    return PLACEHOLDER_RE.sub(lambda _m: image_token, text)


def _no_placeholders(text: str) -> Resolver:
    def resolve(key: int) -> Any:
        raise ValueError(f"prompt references image {key} but no image resolver was given")

    return resolve


def fill_fields(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced in one pass: a value is never scanned
    again (a story that contains ``{options}`` stays as written) and other braces are left alone (the
    prompts carry literal JSON examples)."""
    if not values:
        return template
    pattern = re.compile("|".join(re.escape("{" + k + "}") for k in sorted(values, key=len, reverse=True)))
    return pattern.sub(lambda m: values[m.group(0)[1:-1]], template)


# --------------------------------------------------------------------------- which route a doc took

@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """Inside the block ``doc_to_messages`` records no route (the layout probe reads a doc's messages on
    any route)."""
    thread = current().thread
    before = getattr(thread, "unrecorded", False)
    thread.unrecorded = True
    try:
        yield
    finally:
        thread.unrecorded = before


def note_chat(doc: Mapping[str, Any]) -> None:
    """Record that ``doc`` was prompted through ``doc_to_messages`` (a chat backend) in this process."""
    rt = current()
    if getattr(rt.thread, "unrecorded", False):
        return
    key = doc_key(doc)
    with rt.lock:
        rt.chat_docs.add(key)


def route_of(doc: Mapping[str, Any]) -> str:
    """``chat`` if this process prompted ``doc`` through ``doc_to_messages``, else ``simple``
    (``doc_to_visual`` + ``doc_to_text``), for the logged sample."""
    rt = current()
    with rt.lock:
        return "chat" if doc_key(doc) in rt.chat_docs else "simple"
