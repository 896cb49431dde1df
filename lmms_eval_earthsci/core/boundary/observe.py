"""What a model class hands its model, observed for any class rather than looked up in a table of the
classes we know: one probe request goes through the class's own ``generate_until`` (its simple route or
its message building, its chat template, its handling of ``<image>`` and ``interleave_visuals``) and is
stopped where it reaches a transformers processor, before the model generates.

- **The request** is the task's own for a doc (its text and visuals, or its chat messages) with each
  image replaced by a small image of one solid colour (distinct images, distinct colours; a repeat of
  an image keeps its colour), so that the processor's work is tiny and the images' order can be read.
- **The observation** is what the processor's ``__call__`` was given: its text (whatever the call's shape:
  keywords or positional, bound by the processor's signature) and its images (PIL, arrays, data URLs,
  paths). The processor runs once on it (so a class that breaks its processor is seen to break), then a
  :class:`Observed` stops the request. A class that reaches ``generate`` without a processor call is
  stopped there and "could not be observed".
- **Nothing is left behind**: the wraps (the processor class's ``__call__``, ``GenerationMixin.generate``
  and the class's model objects' ``generate``) are removed when the request stops; :class:`Observed` is
  a ``BaseException`` so that a class that catches ``Exception`` around its processor or ``generate``
  neither swallows nor logs it; what the class prints (its progress bar) goes nowhere; the probe's doc
  is removed from the class's ``task_dict``. ``core.activation.INVENTORY``: "observe: processor call",
  "observe: generate".

A class with no transformers processor or model among its attributes (API and server classes) is never
sent a probe request: it "could not be observed". Names no benchmark and no model class.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import io
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lmms_eval_earthsci.core.boundary.inventory import ENTRIES
from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.upstream import taps
from lmms_eval_earthsci.core.upstream.patching import patch, patch_item

#: the probe's doc in the class's ``task_dict`` (removed after the request); its id is not 0, where
#: classes log the prompt of every hundredth doc
PROBE_TASK, PROBE_SPLIT, PROBE_DOC = "__earthsci_probe__", "probe", 1
#: solid colours of the probe images, far apart in every channel pair (a processor's resize keeps a mean)
PALETTE = ((230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180), (70, 240, 240), (240, 50, 230),
           (128, 128, 0), (0, 0, 128), (170, 110, 40), (128, 0, 0))
#: the probe images' size: above every processor's minimum we know of (Qwen's 28/32 px factors), tiny otherwise
SIDE = 64
#: generation kwargs of the probe request (it stops before generation; if a class generates anyway, one token)
GEN_KWARGS = MappingProxyType({"max_new_tokens": 1, "temperature": 0, "do_sample": False, "until": ()})


def active() -> bool:
    """Whether a probe request is under way in this process (its calls reach the processor and the model alone:
    the subscribers inside the probe's on each tap are skipped)."""
    return current().probing > 0


class Observed(BaseException):  # noqa: N818 - a stop signal, not an error
    """Stops a probe request once its processor input is recorded. A ``BaseException``: a class's
    ``except Exception`` around its processor or ``generate`` does not catch it (nor log it)."""


@dataclass
class Observation:
    """What reached the class's processor: ``text`` (the first sample's), ``images`` (flattened, as
    given), ``markers`` (strings that may stand for an image in the text: the processor's and its
    tokenizer's image tokens, then its special tokens), ``error`` (the processor call raised), ``why``
    (when nothing was observed: the reason)."""

    text: str | None = None
    images: list[Any] = field(default_factory=list)
    markers: list[str] = field(default_factory=list)
    error: str | None = None
    why: str | None = None
    sizes: dict[str, Any] = field(default_factory=dict)  # what the processor or engine made of the images (:func:`processor_sizes`)

    @property
    def seen(self) -> bool:
        return self.text is not None and self.error is None

    def marker(self) -> str | None:
        """The string that stands for one image in :attr:`text`: the first candidate that occurs once per
        image passed (none when no image was passed: then any image token will do, it does not occur)."""
        text = self.text or ""
        n = len(self.images)
        for m in self.markers:
            if n and text.count(m) == n:
                return m
        if not n:
            return self.markers[0] if self.markers else "\x03IMAGE\x03"
        return None


def _ints(value: Any) -> list[Any]:
    """A tensor, array or nested list as nested Python lists."""
    return value.tolist() if hasattr(value, "tolist") else list(value)


def image_token_id(processor: Any) -> int | None:
    """The id of the token that stands for one visual token in a processor's output ids: its
    ``image_token_id``, else its ``image_token`` through its tokenizer."""
    token_id = getattr(processor, "image_token_id", None)
    if isinstance(token_id, int):
        return token_id
    token, tokenizer = getattr(processor, "image_token", None), getattr(processor, "tokenizer", None)
    if isinstance(token, str) and tokenizer is not None:
        try:
            found = tokenizer.convert_tokens_to_ids(token)
            return found if isinstance(found, int) and found != getattr(tokenizer, "unk_token_id", None) else None
        except Exception:
            return None
    return None


def sizes_from(ids: Sequence[int] | None, token_id: int | None, grid: Any, patch: Any, merge: Any, pixel_values: Any, n_images: int) -> dict[str, Any]:
    """What a processor's (or an engine's) output says of the size its images reached the model at:
    ``tokens`` (the image token's count in the ids: every visual token of every image), ``per_image`` (each
    image's tokens, where a grid gives them or one image was passed) and ``reached`` (each image's size in
    px: its grid of patches times the patch size, or the height and width of ``pixel_values`` where it
    holds one picture per image). Read from the output's own fields, whatever the class or family."""
    out: dict[str, Any] = {"tokens": None, "per_image": None, "reached": None}
    if ids is not None and token_id is not None:
        out["tokens"] = sum(1 for i in ids if i == token_id)
    rows = _ints(grid) if grid is not None else None
    if rows and all(len(r) == 3 for r in rows):
        side = patch[0] if isinstance(patch, (list, tuple)) else patch
        if isinstance(side, int):
            out["reached"] = [[int(w) * side, int(h) * side] for _, h, w in rows]
        if isinstance(merge, int) and merge > 0:
            out["per_image"] = [int(t) * int(h) * int(w) // (merge * merge) for t, h, w in rows]
    shape = tuple(getattr(pixel_values, "shape", ()) or ())
    if out["reached"] is None and len(shape) == 4 and shape[0] == n_images and n_images:
        out["reached"] = [[int(shape[3]), int(shape[2])]] * n_images
    if out["per_image"] is None and n_images == 1 and out["tokens"] is not None:
        out["per_image"] = [out["tokens"]]
    return out


def size_settings(image_processor: Any) -> dict[str, Any]:
    """An image processor's own size settings as it holds them (``size``'s fields, ``max_pixels``,
    ``min_pixels``): what decides the size a figure reaches the model at, uninterpreted."""
    out: dict[str, Any] = {}
    size = getattr(image_processor, "size", None)
    if isinstance(size, dict):
        items: Any = size.items()
    elif dataclasses.is_dataclass(size):  # transformers' SizeDict
        items = [(f.name, getattr(size, f.name, None)) for f in dataclasses.fields(size)]
    else:
        items = vars(size).items() if hasattr(size, "__dict__") else ()
    for key, value in items:
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    for key in ("max_pixels", "min_pixels"):
        value = getattr(image_processor, key, None)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    return out


def processor_sizes(processor: Any, output: Any, n_images: int) -> dict[str, Any]:
    """:func:`sizes_from` a transformers processor's output (``input_ids``, ``image_grid_thw``,
    ``pixel_values``) and its image processor's ``patch_size`` and ``merge_size``."""
    try:
        get = output.get if hasattr(output, "get") else (lambda key: None)
        ids = get("input_ids")
        first = _ints(ids)[0] if ids is not None and len(ids) else None
        image_processor = getattr(processor, "image_processor", None)
        sizes = sizes_from(first, image_token_id(processor), get("image_grid_thw"), getattr(image_processor, "patch_size", None), getattr(image_processor, "merge_size", None),
                           get("pixel_values"), n_images)
        return {**sizes, "settings": size_settings(image_processor)}
    except Exception:  # an output of another shape: its sizes are not read, the layout still is
        return {}


def probe_image(colour: tuple[int, int, int]) -> Any:
    from PIL import Image  # noqa: PLC0415 - PIL (~30 ms), only when a run probes

    return Image.new("RGB", (SIDE, SIDE), colour)


def _fingerprint(image: Any) -> Any:
    """The same key for the same picture decoded twice (a task's messages and its visuals are separate
    calls): its size and a 16 x 16 box reduction; identity for what is not a PIL image."""
    try:
        return (image.size, image.convert("RGB").resize((16, 16), 4).tobytes())  # 4: Image.BOX, O(pixels)
    except Exception:
        return id(image)


class Recolour:
    """Replaces each distinct image with a solid probe image of the next colour of :data:`PALETTE` (the
    same picture, the same colour)."""

    def __init__(self) -> None:
        self._by_id: dict[int, Any] = {}
        self._by_key: dict[Any, Any] = {}
        self._kept: list[Any] = []  # the originals, alive while their ids are keys

    def __call__(self, image: Any) -> Any:
        if id(image) in self._by_id:
            return self._by_id[id(image)]
        if any(image is p for p in self._by_key.values()):
            return image
        key = _fingerprint(image)
        if key not in self._by_key:
            self._by_key[key] = probe_image(PALETTE[len(self._by_key) % len(PALETTE)])
        self._kept.append(image)
        self._by_id[id(image)] = self._by_key[key]
        return self._by_key[key]


def colour_of(probe: Any) -> tuple[float, float, float]:
    c = probe.getpixel((0, 0))
    return float(c[0]), float(c[1]), float(c[2])


def recoloured_messages(messages: Sequence[Any], recolour: Recolour) -> tuple[Any, list[tuple[float, float, float]]]:
    """``messages`` (kept as their own list type: a task's may carry behaviour) with every image part's
    ``url`` replaced, and the colours of the user-side images in message order."""
    out = type(messages)() if isinstance(messages, list) else []
    colours: list[tuple[float, float, float]] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image":
                    image = recolour(part.get("url"))
                    part = {**part, "url": image}
                    if message.get("role") != "system":
                        colours.append(colour_of(image))
                parts.append(part)
            message = {**message, "content": parts}
        out.append(message)
    return out, colours


def flatten(images: Any) -> list[Any]:
    """A processor's images argument (one image, a list, or a batch of lists) as one flat list."""
    if images is None:
        return []
    if isinstance(images, (list, tuple)):
        return [x for item in images for x in flatten(item)]
    return [images]


def _first_text(text: Any) -> str | None:
    if isinstance(text, str):
        return text
    if isinstance(text, (list, tuple)) and text and isinstance(text[0], str):
        return text[0]
    return None


def bind_call(function: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``(text, images)`` of a processor call, whatever its shape: positional arguments are bound to the
    processor's own parameter names (``processor(images, prompt)`` and ``processor(text=..., images=...)``
    alike); a signature that does not bind falls back to the types (strings are text)."""
    import inspect  # noqa: PLC0415 - only when a call is read

    try:
        bound = inspect.signature(function).bind(None, *args, **kwargs).arguments
        extra = bound.get("kwargs") or {}
        text = bound.get("text", extra.get("text"))
        images = bound.get("images", extra.get("images"))
        if text is not None or images is not None:
            return text, images
    except (TypeError, ValueError):
        pass
    text, images = kwargs.get("text"), kwargs.get("images")
    for arg in args:
        if text is None and _first_text(arg) is not None:
            text = arg
        elif images is None:
            images = arg
    return text, images


def load_any_image(image: Any) -> Any:
    """A PIL image (or an array) from what a class handed its processor: PIL, an array or tensor, a
    ``data:`` URL, a file path (``file://`` included); None when it cannot be read here (a remote URL)."""
    if hasattr(image, "convert") or hasattr(image, "shape"):
        return image.detach().cpu().numpy() if hasattr(image, "detach") else image
    if isinstance(image, dict):
        for key in ("image", "url", "path", "base64"):
            if key in image:
                return load_any_image(image[key])
        return None
    if isinstance(image, bytes):
        from PIL import Image  # noqa: PLC0415 - PIL, only when an image is read

        return Image.open(io.BytesIO(image))
    if isinstance(image, str):
        from PIL import Image  # noqa: PLC0415 - as above

        if image.startswith("data:"):
            return Image.open(io.BytesIO(base64.b64decode(image.split(",", 1)[1])))
        path = image[len("file://"):] if image.startswith("file://") else image
        try:
            return Image.open(path)
        except OSError:
            return None
    return None


def image_markers(processor: Any) -> list[str]:
    """Strings that may stand for an image in a processor's text: the processor's and its tokenizer's
    string attributes named for images (``image_token``, ``boi_token``, ...) first, then the tokenizer's
    special and added tokens that name an image or vision (``<|vision_start|>``, ``<IMG_CONTEXT>``). Only
    such tokens: a chat token that happens to occur once per image is never taken for one."""
    tokenizer = getattr(processor, "tokenizer", None)
    named: list[str] = []
    for obj in (processor, tokenizer):
        for name, value in sorted(vars(obj).items()) if obj is not None else ():
            if isinstance(value, str) and value and re.search(r"image|img|boi|vision", name, re.I) and "<" in value:
                named.append(value)
    tokens: list[str] = []
    for attr in ("all_special_tokens", "additional_special_tokens"):
        try:
            tokens += [str(t) for t in getattr(tokenizer, attr, None) or []]
        except Exception:
            pass
    try:
        tokens += [str(getattr(t, "content", t)) for t in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values()]
    except Exception:
        pass
    visual = [t for t in tokens if re.search(r"image|img|vision|boi", t, re.I)]
    return list(dict.fromkeys([*named, *visual]))


def _components(lm: Any) -> Iterator[Any]:
    """The objects of ``lm`` (its attributes and the usual properties) and the modules they wrap."""
    seen: set[int] = set()
    values = list(vars(lm).values())
    for name in ("model", "processor", "tokenizer"):
        try:
            values.append(getattr(lm, name, None))
        except Exception:
            pass
    for value in values:
        for obj in (value, getattr(value, "module", None)):  # DDP / FSDP wrappers
            if obj is not None and id(obj) not in seen:
                seen.add(id(obj))
                yield obj


def is_engine(obj: Any) -> bool:
    """Whether ``obj`` is an in-process vLLM engine (``vllm.LLM``), by its type, without importing vLLM."""
    return any(t.__name__ == "LLM" and t.__module__.startswith("vllm.") for t in type(obj).__mro__)


def observable(lm: Any) -> tuple[list[Any], list[Any]]:
    """``(processors, models)``: the transformers processors, and the generating models or vLLM engines,
    among ``lm``'s attributes. Neither: the class could not be observed (no request is sent to it)."""
    if "transformers" not in sys.modules:  # a class that never imported transformers uses none of its objects
        return [], []
    from transformers import ProcessorMixin  # noqa: PLC0415 - already imported by the class (checked above)

    processors, models = [], []
    for obj in _components(lm):
        if isinstance(obj, ProcessorMixin):
            processors.append(obj)
        elif is_engine(obj) or (callable(getattr(obj, "generate", None)) and hasattr(obj, "parameters")):
            models.append(obj)
    return processors, models


@contextlib.contextmanager
def _watching(processors: list[Any], models: list[Any], record: dict[str, Any]) -> Iterator[None]:
    """The processor classes' ``__call__`` and the models' ``generate`` wrapped for one request, then
    restored exactly (an inherited method is removed again, not left as an override)."""
    from transformers.generation.utils import GenerationMixin  # noqa: PLC0415 - already imported (observable)

    undo: list[Callable[[], None]] = []

    def replace(owner: Any, name: str, value: Any, entry: str) -> None:
        undo.append(patch(owner, name, value, entry=ENTRIES[entry]))

    def watch(tap: str, owner: Any, name: str, around: Callable[..., Any], entry: str) -> None:
        leave = taps.subscribe(tap, owner, name, "observe", around, entry=ENTRIES[entry])
        if leave is not None:
            undo.append(leave)

    for cls in dict.fromkeys(type(p) for p in processors):

        def call(rest: taps.Next, self: Any, *args: Any, **kwargs: Any) -> Any:
            _original = rest.original  # the processor itself: a probe request is no call of the run's
            if "text" not in record:
                text, images = bind_call(_original, args, kwargs)
                record.update(text=_first_text(text), images=flatten(images), markers=image_markers(self))
                try:
                    output = _original(self, *args, **kwargs)
                except Exception as exc:  # the class breaks its own processor: the run would too
                    record["error"] = f"{type(exc).__name__}: {exc}"
                else:
                    record["sizes"] = processor_sizes(self, output, len(record["images"]))
            raise Observed

        watch("processor call", cls, "__call__", call, "observe: processor call")

    def stop(*args: Any, **kwargs: Any) -> Any:
        record.setdefault("generate", True)
        raise Observed

    def engine_stop(engine: Any, method: str) -> Callable[..., Any]:
        def stop_engine(*args: Any, **kwargs: Any) -> Any:  # vLLM's LLM.chat / LLM.generate: what the engine is asked to render
            record.setdefault("engine", (engine, method, args, kwargs))
            raise Observed

        return stop_engine

    watch("generate", GenerationMixin, "generate", lambda rest, self, *a, **k: stop(), "observe: generate")
    for model in models:
        if is_engine(model):
            replace(model, "chat", engine_stop(model, "chat"), "observe: engine chat")
            replace(model, "generate", engine_stop(model, "generate"), "observe: engine generate")
        else:
            replace(model, "generate", stop, "observe: model generate")
    try:
        yield
    finally:
        for step in reversed(undo):
            step()


def message_images(messages: Any) -> list[Any]:
    """The images of OpenAI-style messages in order (``image_url`` data URLs, ``image_pil``, ``image``)."""
    out = []
    for message in messages or []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "image_url":
                url = part.get("image_url")
                out.append(url.get("url") if isinstance(url, dict) else url)
            elif kind in ("image_pil", "image"):
                out.append(part.get(kind) or part.get("url"))
    return out


def engine_observation(engine: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Observation:
    """What a vLLM engine makes of the request a class asked it for: ``LLM.chat``'s messages rendered by the
    engine's own code (``LLM._preprocess_chat``: its tokenizer, the chat template the class passes or the
    model's, the content format it detects, ``interleave_mm_strings``), nothing generated; ``LLM.generate``'s
    prompt as the class built it. The image token is the engine tokenizer's."""
    tokenizer = engine.get_tokenizer()
    markers = image_markers(_HasTokenizer(tokenizer))
    if method == "chat":
        messages = kwargs.get("messages", args[0] if args else None)
        conversation = messages[0] if messages and isinstance(messages[0], list) else messages
        keys = ("chat_template", "chat_template_content_format", "chat_template_kwargs", "add_generation_prompt", "continue_final_message", "mm_processor_kwargs")
        try:
            rendered = engine._preprocess_chat([conversation], **{k: kwargs[k] for k in keys if k in kwargs})[0]
        except Exception as exc:  # the engine refuses the request: a run would fail the same way
            return Observation(error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        text = rendered.get("prompt") if isinstance(rendered, dict) else None
        if text is None and isinstance(rendered, dict) and rendered.get("prompt_token_ids"):
            text = tokenizer.decode(rendered["prompt_token_ids"])
        placeholders = (rendered.get("mm_placeholders") or {}).get("image", []) if isinstance(rendered, dict) else []
        images = message_images(conversation)
        images = images[: len(placeholders)] if len(placeholders) <= len(images) else [None] * len(placeholders)
        return Observation(text=text, images=images, markers=markers, why=None if text is not None else "the engine rendered no prompt text",
                           sizes=engine_sizes(engine, rendered, images, kwargs.get("mm_processor_kwargs")))
    prompts = kwargs.get("prompts", args[0] if args else None)
    prompt = prompts[0] if isinstance(prompts, list) and prompts else prompts
    if isinstance(prompt, dict) and isinstance(prompt.get("prompt"), str):
        images = flatten((prompt.get("multi_modal_data") or {}).get("image"))
        try:  # the engine's own rendering of the prompt (LLM._preprocess_cmpl): its placeholders per image
            rendered = engine._preprocess_cmpl([prompt])[0]
        except Exception as exc:  # the engine refuses the request: a run would fail the same way
            return Observation(error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        return Observation(text=prompt["prompt"], images=images, markers=markers, sizes=engine_sizes(engine, rendered, images))
    return Observation(why=f"{type(engine).__name__}.generate was given no text prompt the engine would render here")


#: images whose engine-side size is read by running the engine's own image processor on them when its
#: rendering kept no grid (vLLM's processor cache keeps the processed items in the engine core)
ENGINE_SIZE_IMAGES = 2


def _embeds(placeholder: Any) -> int:
    """The visual tokens of one vLLM placeholder range (its embedding positions where it marks them)."""
    mask = getattr(placeholder, "is_embed", None)
    return int(mask.sum()) if mask is not None else int(getattr(placeholder, "length", 0))


def engine_sizes(engine: Any, rendered: Any, images: Sequence[Any], mm_processor_kwargs: Any = None) -> dict[str, Any]:
    """What a vLLM engine made of the images of a rendered request: their visual tokens (its placeholder
    ranges), and their size where its multimodal inputs hold a grid, else from the engine's own HF image
    processor (its checkpoint's preprocessor config, the engine's and the request's ``mm_processor_kwargs``)
    run on them (at most :data:`ENGINE_SIZE_IMAGES`: the budget probe's one figure)."""
    try:
        placeholders = (rendered.get("mm_placeholders") or {}).get("image", [])
        per_image = [_embeds(p) for p in placeholders]
        out: dict[str, Any] = {"tokens": sum(per_image), "per_image": per_image, "reached": None}
        items = ((rendered.get("mm_kwargs") or {}).get("image") or []) if hasattr(rendered.get("mm_kwargs"), "get") else []
        grids = [item.get("image_grid_thw") for item in items if item is not None and hasattr(item, "get")]
        grids = [getattr(g, "data", g) for g in grids if g is not None]
        processor = None
        if not grids and images and len(images) <= ENGINE_SIZE_IMAGES:
            processor = _engine_processor(engine, mm_processor_kwargs)
            loaded = [load_any_image(i) for i in images]
            if processor is not None and all(i is not None for i in loaded):
                output = processor.image_processor(images=[i.convert("RGB") for i in loaded], return_tensors="pt")
                grid = output.get("image_grid_thw") if hasattr(output, "get") else None
                grids = [grid] if grid is not None else []
        rows: list[Any] = []
        for grid in grids:  # one (t, h, w) per item, or a batch of them
            values = _ints(grid)
            rows.extend(values if values and isinstance(values[0], list) else [values])
        image_processor = getattr(processor or _engine_processor(engine, mm_processor_kwargs), "image_processor", None)
        if rows:
            seen = sizes_from(None, None, rows, getattr(image_processor, "patch_size", None), getattr(image_processor, "merge_size", None), None, len(images))
            if seen["per_image"] in (None, per_image):  # the grid agrees with what the engine placed
                out["reached"] = seen["reached"]
        if image_processor is not None:
            out["settings"] = size_settings(image_processor)
        return out
    except Exception:  # an engine of another shape: its sizes are not read, the layout still is
        return {}


def _engine_processor(engine: Any, mm_processor_kwargs: Any) -> Any:
    """The HF processor a vLLM engine processes images with (its multimodal processor's, with the engine's
    ``mm_processor_kwargs`` and the request's), or None."""
    renderer = getattr(getattr(engine, "llm_engine", None), "renderer", None)
    mm = getattr(renderer, "mm_processor", None)
    info = getattr(mm, "info", None)
    if info is None or not hasattr(info, "get_hf_processor"):
        return None
    try:
        return info.get_hf_processor(**dict(mm_processor_kwargs or {}))
    except Exception:
        return None


class _HasTokenizer:
    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer


def request_args(simple: bool, text: str, visuals_or_messages: Any) -> tuple[Any, ...]:
    """lmms-eval's request tuple for the probe: ``(ctx, gen_kwargs, doc_to_visual, doc_id, task, split)`` on
    the simple route, ``(ctx, doc_to_messages, gen_kwargs, doc_id, task, split)`` on the chat route."""
    def give(_doc: Any) -> Any:
        return visuals_or_messages

    if simple:
        return (text, dict(GEN_KWARGS, until=[]), give, PROBE_DOC, PROBE_TASK, PROBE_SPLIT)
    return (text, give, dict(GEN_KWARGS, until=[]), PROBE_DOC, PROBE_TASK, PROBE_SPLIT)


def observe(lm: Any, arguments: tuple[Any, ...]) -> Observation:
    """Send one request with ``arguments`` (lmms-eval's request tuple, naming :data:`PROBE_TASK`,
    :data:`PROBE_SPLIT` and :data:`PROBE_DOC`: :func:`request_args`) through ``lm.generate_until`` and return what reached its processor."""
    processors, models = observable(lm)
    if not processors and not models:
        return Observation(why=f"{type(lm).__name__} holds no transformers processor or model: what it sends cannot be observed here")
    from lmms_eval.api.instance import Instance  # noqa: PLC0415 - lmms-eval's request type, only when a run probes

    request = Instance(request_type="generate_until", arguments=arguments, idx=0, metadata={"task": PROBE_TASK, "doc_id": PROBE_DOC, "repeats": 1})
    record: dict[str, Any] = {}
    restore = []
    if not isinstance(getattr(lm, "task_dict", None), dict):
        restore.append(patch(lm, "task_dict", {}, entry=ENTRIES["observe: probe doc"]))
    # the request's functions ignore the doc
    restore.append(patch_item(lm, "task_dict", PROBE_TASK, {PROBE_SPLIT: [{}] * (PROBE_DOC + 1)}, entry=ENTRIES["observe: probe doc"]))
    sink = io.StringIO()
    rt = current()
    with rt.lock:
        rt.probing += 1
    try:
        with _watching(processors, models, record), contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink):
            lm.generate_until([request])
    except Observed:
        if "engine" in record:  # rendered by the engine's own code while the probe is still under way
            return engine_observation(*record["engine"])
    except Exception as exc:  # the class failed on the request before its processor: say so, never raise
        return Observation(why=f"{type(lm).__name__}.generate_until raised {type(exc).__name__}: {exc}")
    finally:
        for undo in reversed(restore):
            undo()
        with rt.lock:
            rt.probing -= 1
    if "text" in record:
        return Observation(text=record["text"], images=record["images"], markers=record["markers"], error=record.get("error"),
                           why=None if record["text"] is not None else "the processor call had no text", sizes=record.get("sizes") or {})
    if record.get("generate"):
        return Observation(why=f"{type(lm).__name__} reached generate without a transformers processor call: its input cannot be read here")
    return Observation(why=f"{type(lm).__name__} answered the probe request without a transformers processor call or generate")
