"""Server routes send an image of ours as the dataset's stored bytes when it reached the model unchanged
and they are in the format lmms-eval would send (core.hardening.passthrough); otherwise lmms-eval's own encode."""

import base64
import io

import pytest
from PIL import Image

from lmms_eval_earthsci.core.data import load_image
from lmms_eval_earthsci.core.hardening.passthrough import install_passthrough
from lmms_eval_earthsci.evals.msearth import tasks as msearth
from lmms_eval_earthsci.evals.msearth.fixtures import msearth_rows

ChatMessages = pytest.importorskip("lmms_eval.protocol").ChatMessages


def _png(mode="RGB", size=(64, 48)):
    buf = io.BytesIO()
    img = Image.new(mode, size, (10, 200, 30) if mode == "RGB" else (10, 200, 30, 128))
    for x in range(0, size[0], 3):
        img.putpixel((x, x % size[1]), (255, 0, 0) if mode == "RGB" else (255, 0, 0, 255))
    img.save(buf, format="PNG")
    return buf.getvalue()


def _sent(messages):
    """The base64 payloads of the images lmms-eval's openai protocol sends for ``messages``."""
    out = ChatMessages(messages=messages).to_openai_messages()
    urls = [p["image_url"]["url"] for m in out for p in m["content"] if p["type"] == "image_url"]
    return [u.split(",", 1)[1] for u in urls], [u.split(";", 1)[0] for u in urls]


@pytest.fixture(autouse=True)
def _installed():
    assert install_passthrough()


def _as_stored_elsewhere(png: bytes) -> bytes:
    """The same pixels in other PNG bytes than PIL's default encode would give (another compression
    level, a text chunk), as a dataset made by another tool has them."""
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "not PIL's defaults")
    out = io.BytesIO()
    Image.open(io.BytesIO(png)).save(out, format="PNG", compress_level=1, pnginfo=info)
    return out.getvalue()


def test_a_dataset_figure_is_sent_as_its_stored_bytes_with_the_same_pixels():
    doc = dict(msearth_rows("mcq")[0])
    doc["image"] = {"bytes": _as_stored_elsewhere(doc["image"]["bytes"]), "path": None}
    messages = msearth.doc_to_messages(doc, {"kind": "mcq"})
    (payload,), (mime,) = _sent(messages)
    stored = doc["image"]["bytes"]
    assert base64.b64decode(payload) == stored and mime == "data:image/png"
    shown = next(p["url"] for p in messages[0]["content"] if p["type"] == "image")
    assert Image.open(io.BytesIO(base64.b64decode(payload))).convert("RGB").tobytes() == shown.tobytes()


def _messages(img):
    return [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image", "url": img}]}]


def test_a_converted_or_shrunk_image_or_another_format_goes_through_lmms_evals_encode(monkeypatch):
    rgba = _png("RGBA")
    img = load_image({"bytes": rgba, "path": None}, dataset="d", record_id=1, field="image")  # converted to RGB
    (payload,), _ = _sent(_messages(img))
    assert base64.b64decode(payload) != rgba and Image.open(io.BytesIO(base64.b64decode(payload))).mode == "RGB"

    rgb = _png("RGB", (400, 300))
    img = load_image(rgb, dataset="d", record_id=1, field="image")
    img.thumbnail((100, 100))  # changed in place after decoding
    (payload,), _ = _sent(_messages(img))
    assert base64.b64decode(payload) != rgb and Image.open(io.BytesIO(base64.b64decode(payload))).size == img.size

    jpeg = io.BytesIO()
    Image.new("RGB", (32, 32), (1, 2, 3)).save(jpeg, format="JPEG")
    img = load_image(jpeg.getvalue(), dataset="d", record_id=1, field="image")
    (payload,), (mime,) = _sent(_messages(img))
    assert base64.b64decode(payload)[:8] == b"\x89PNG\r\n\x1a\n" and mime == "data:image/png"  # lmms-eval's PNG, labelled so

    import inspect

    if "image_format" not in inspect.signature(ChatMessages.encode_image).parameters:
        return  # lmms-eval 0.6.1 sends PNG only (no LMMS_IMAGE_ENCODE_FORMAT)
    monkeypatch.setenv("LMMS_IMAGE_ENCODE_FORMAT", "JPEG")  # the user asked for JPEG: lmms-eval's JPEG
    img = load_image(rgb, dataset="d", record_id=1, field="image")
    (payload,), (mime,) = _sent(_messages(img))
    assert base64.b64decode(payload)[:3] == b"\xff\xd8\xff" and mime == "data:image/jpeg"
