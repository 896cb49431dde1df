"""Server routes (``openai``, ``async_openai``, ``vllm`` / ``sglang`` chat classes) send each image as a
base64 data URL, which lmms-eval makes by re-encoding the decoded image (PNG unless
``LMMS_IMAGE_ENCODE_FORMAT`` says otherwise): 55-270 ms of CPU per doc on real-size figures, 75-93 % of
what a doc costs on that route, in the one event loop that also sends the requests
(``benchmarks/server_route.py``). An image our hooks decoded from a dataset cell and returned untouched
(same size and mode as stored: no conversion, no shrink) is sent as the dataset's own stored bytes when
they are already in the format lmms-eval would send: the same pixels (PNG is lossless: the server
decodes what our hook decoded), the same MIME label, no encode. Anything else (a converted or shrunk
image, another format, another task's image) goes through lmms-eval's encode as before.
``core.activation.INVENTORY``: "image pass-through".
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from lmms_eval_earthsci.core.data.loading import stored_bytes
from lmms_eval_earthsci.core.hardening.inventory import ENTRIES
from lmms_eval_earthsci.core.upstream.patching import wrap_method


def _format_requested(args: tuple, kwargs: dict) -> str:
    # lmms-eval >= 0.7: encode_image(image, cache, image_format, quality); 0.6.1: encode_image(image), PNG
    if "image_format" in kwargs:
        return str(kwargs["image_format"] or "PNG")
    return str(args[1]) if len(args) > 1 and args[1] else "PNG"


def install_passthrough() -> bool:
    """Wrap lmms-eval's ``ChatMessages.encode_image`` (see the module docstring). Idempotent."""
    try:
        from lmms_eval.protocol import ChatMessages  # noqa: PLC0415 - lmms-eval's protocol module, loaded by the run anyway
    except Exception:  # pragma: no cover - lmms-eval layout changed (the inventory test says so)
        return False

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def encode_image(self: Any, image: Any, *args: Any, **kwargs: Any) -> Any:
            raw = stored_bytes(image, _format_requested(args, kwargs))
            if raw is not None:
                return base64.b64encode(raw).decode("ascii")
            return original(self, image, *args, **kwargs)

        return encode_image

    return wrap_method(ChatMessages, "encode_image", make, entry=ENTRIES["image pass-through"])
