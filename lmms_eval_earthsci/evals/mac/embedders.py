"""Embedding models for the MAC snapshot builder (spec §1.3, §3.3), each from its own library, and a
per-file embedding cache.

A model SPEC names the library and a Hub name or a local path:

- ``st:<name|path>`` — sentence-transformers (text-text, the option domain of Image2Text). A ``#cls``
  suffix takes the first token's hidden state ([CLS] pooling, 512 tokens) instead of the model's own
  pooling: that is how the authors embedded all-mpnet-base-v2 (``utils/bert.BERTEmbedding``).
- ``open_clip:<arch>:<pretrained tag | checkpoint path>`` — OpenCLIP (image-text and image-image);
  ``<arch>`` may be a local architecture config (``<Name>.json``, OpenCLIP's ``model_configs`` format).
- ``hf:<name|path>`` — a transformers CLIP / SigLIP / SigLIP2 checkpoint (``AutoModel`` with
  ``get_image_features`` / ``get_text_features``).

Every similarity is cosine (embeddings L2-normalised), the multi-qa "dot" model included, as the
authors did. Text towers truncate as their tokenizers do (CLIP: 77 tokens; OpenCLIP's tokenizer: its
context length), so cross-modal similarities see the start of a story, as the originals did.

The cache: one SQLite file per model (``<cache>/<model id>.sqlite``) keyed by the sha256 of the file's
content (cover bytes, story text), so a yearly rebuild embeds only what is new, whatever the files are
called or wherever they live.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

# bump when the way an embedding is computed changes (pooling, normalisation, truncation)
EMBED_VERSION = 1

DEFAULT_TEXT_MODELS = (
    "st:sentence-transformers/multi-qa-mpnet-base-dot-v1",
    "st:sentence-transformers/all-mpnet-base-v2#cls",
    "st:sentence-transformers/paraphrase-MiniLM-L6-v2",
)
DEFAULT_IMAGE_MODELS = (
    "hf:openai/clip-vit-large-patch14-336",
    "open_clip:ViT-g-14:laion2b_s34b_b88k",
    "open_clip:ViT-H-14-quickgelu:metaclip_fullcc",
)
# the "2025 embeddings" setting's open-weight model (the other two are paid APIs)
SIGLIP2 = "hf:google/siglip2-so400m-patch16-naflex"
# the keys the authors' CSVs carry in option_X_embedding_name (spec §2.3)
KNOWN_KEYS = MappingProxyType({
    "sentence-transformers/multi-qa-mpnet-base-dot-v1": "multiBv1",
    "sentence-transformers/all-mpnet-base-v2": "allv2",
    "sentence-transformers/paraphrase-MiniLM-L6-v2": "sbert",
    "openai/clip-vit-large-patch14-336": "clip",
    "ViT-g-14": "vitg",
    "ViT-H-14-quickgelu": "vith",
    "google/siglip2-so400m-patch16-naflex": "siglip",
})
LIBRARIES = ("st", "open_clip", "hf")
CLS_MAX_LENGTH = 512


class ModelSpecError(ValueError):
    pass


@dataclass(frozen=True)
class ModelSpec:
    text: str  # as given
    library: str
    name: str  # Hub name, local path, or OpenCLIP architecture
    pretrained: str | None = None  # OpenCLIP pretrained tag or checkpoint path
    pooling: str | None = None  # "cls" for st:...#cls
    key: str = ""  # the CSV's option_X_embedding_name

    @property
    def local_paths(self) -> list[str]:
        return [p for p in (self.name, self.pretrained) if p and os.path.exists(p)]


def _default_key(library: str, name: str, pretrained: str | None) -> str:
    bare = name.rstrip("/")
    if bare in KNOWN_KEYS:
        return KNOWN_KEYS[bare]
    if library == "st" and f"sentence-transformers/{bare}" in KNOWN_KEYS:
        return KNOWN_KEYS[f"sentence-transformers/{bare}"]
    return re.sub(r"[^0-9a-z]+", "-", os.path.basename(bare).lower()).strip("-") or library


def parse_spec(text: str) -> ModelSpec:
    raw = (text or "").strip()
    library, sep, rest = raw.partition(":")
    if not sep or library not in LIBRARIES or not rest:
        raise ModelSpecError(f"model spec {text!r}: expected st:<name|path>[#cls], open_clip:<arch>:<pretrained tag|checkpoint>, or hf:<name|path>")
    if library == "st":
        name, _, pooling = rest.partition("#")
        if pooling not in ("", "cls"):
            raise ModelSpecError(f"model spec {text!r}: the only pooling suffix is #cls")
        return ModelSpec(raw, "st", name, None, pooling or None, _default_key("st", name, None))
    if library == "open_clip":
        arch, sep, pretrained = rest.partition(":")
        if not sep or not arch or not pretrained:
            raise ModelSpecError(f"model spec {text!r}: open_clip needs <arch>:<pretrained tag or checkpoint path>, e.g. open_clip:ViT-g-14:laion2b_s34b_b88k")
        return ModelSpec(raw, "open_clip", arch, pretrained, None, _default_key("open_clip", arch, pretrained))
    return ModelSpec(raw, "hf", rest, None, None, _default_key("hf", rest, None))


def parse_specs(texts: Sequence[str]) -> list[ModelSpec]:
    """Specs with unique keys (a repeated key gets ``-2``, ``-3``...); a repeated spec is an error."""
    specs, keys = [], set()
    for t in texts:
        spec = parse_spec(t)
        if any(s.text == spec.text for s in specs):
            raise ModelSpecError(f"model spec {t!r} is given twice")
        key, n = spec.key, 2
        while key in keys:
            key, n = f"{spec.key}-{n}", n + 1
        keys.add(key)
        specs.append(ModelSpec(spec.text, spec.library, spec.name, spec.pretrained, spec.pooling, key))
    return specs


def model_id(spec: ModelSpec) -> str:
    """What identifies a model's embeddings in the cache: the spec, our embedding version, and for local
    files their names, sizes and modification times (a retrained checkpoint at the same path is new)."""
    h = hashlib.sha256(f"{spec.library}\0{spec.name}\0{spec.pretrained}\0{spec.pooling}\0{EMBED_VERSION}".encode())
    for path in spec.local_paths:
        for root, dirs, files in os.walk(path) if os.path.isdir(path) else [(os.path.dirname(path), [], [os.path.basename(path)])]:
            dirs.sort()
            for name in sorted(files):
                st = os.stat(os.path.join(root, name))
                h.update(f"\0{os.path.relpath(os.path.join(root, name), path)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return f"{spec.key}-{h.hexdigest()[:16]}"


# --------------------------------------------------------------------------- encoders


def _normalise(x) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)


def _features(out):
    """transformers < 5 returns the projected features; 5.x a model output with them as ``pooler_output``."""
    return out if hasattr(out, "shape") else out.pooler_output


def _load_rgb(path: str):
    from PIL import Image  # noqa: PLC0415 - PIL, only when covers are embedded

    with Image.open(path) as img:
        return img.convert("RGB")


class Encoder:
    """``texts(list[str])`` and, for image-text models, ``images(list[path])``: L2-normalised float32 rows."""

    spec: ModelSpec

    def texts(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def images(self, paths: list[str]) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


class SentenceTransformerEncoder(Encoder):
    def __init__(self, spec: ModelSpec, device: str):
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415 - heavy (sentence-transformers, seconds), only for an st: model

        self.spec = spec
        self.model = SentenceTransformer(spec.name, device=device)
        if spec.pooling == "cls":
            self.model.max_seq_length = CLS_MAX_LENGTH

    def texts(self, texts: list[str]) -> np.ndarray:
        if self.spec.pooling == "cls":
            tokens = self.model.encode(texts, output_value="token_embeddings", convert_to_numpy=False, show_progress_bar=False)
            return _normalise(np.stack([t[0].float().cpu().numpy() for t in tokens]))
        return _normalise(self.model.encode(texts, convert_to_numpy=True, show_progress_bar=False))


class HFEncoder(Encoder):
    """transformers CLIP-family: ``AutoModel`` + ``AutoTokenizer`` + ``AutoImageProcessor`` from the
    checkpoint. Text: truncated to the text tower's positions (77 for CLIP, 64 for SigLIP, padded to
    ``max_length`` as SigLIP was trained)."""

    def __init__(self, spec: ModelSpec, device: str):
        import torch  # noqa: PLC0415 - heavy (torch, ~0.8 s), only for an hf: model
        from transformers import AutoImageProcessor, AutoModel, AutoTokenizer  # noqa: PLC0415 - heavy (transformers, ~0.5 s), only for an hf: model

        self.spec, self.device, self.torch = spec, device, torch
        self.model = AutoModel.from_pretrained(spec.name).to(device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(spec.name)
        self.processor = AutoImageProcessor.from_pretrained(spec.name)
        text_config = getattr(self.model.config, "text_config", self.model.config)
        self.max_length = int(getattr(text_config, "max_position_embeddings", 77))
        self.siglip = "siglip" in str(getattr(self.model.config, "model_type", ""))

    def texts(self, texts: list[str]) -> np.ndarray:
        padding = "max_length" if self.siglip else True
        enc = self.tokenizer(texts, padding=padding, truncation=True, max_length=self.max_length, return_tensors="pt")
        keep = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "position_ids")}
        if self.siglip:
            keep.pop("attention_mask", None)  # SigLIP's text tower attends to the padding, as trained
        with self.torch.no_grad():
            return _normalise(_features(self.model.get_text_features(**keep)).float().cpu().numpy())

    def images(self, paths: list[str]) -> np.ndarray:
        inputs = self.processor(images=[_load_rgb(p) for p in paths], return_tensors="pt")
        with self.torch.no_grad():
            out = self.model.get_image_features(**{k: v.to(self.device) for k, v in inputs.items()})
        return _normalise(_features(out).float().cpu().numpy())


class OpenClipEncoder(Encoder):
    def __init__(self, spec: ModelSpec, device: str):
        import open_clip  # noqa: PLC0415 - optional (OpenCLIP may be absent), only for an open_clip: model
        import torch  # noqa: PLC0415 - heavy (torch, ~0.8 s), only for an open_clip: model

        self.spec, self.device, self.torch = spec, device, torch
        arch = spec.name
        if arch.endswith(".json") and os.path.isfile(arch):  # a local architecture config (OpenCLIP's model_configs format)
            open_clip.add_model_config(arch)
            arch = os.path.splitext(os.path.basename(arch))[0]
        self.model, _, self.preprocess = open_clip.create_model_and_transforms(arch, pretrained=spec.pretrained, device=device)
        self.model.eval()
        self.tokenizer = open_clip.get_tokenizer(arch)

    def texts(self, texts: list[str]) -> np.ndarray:
        with self.torch.no_grad():
            return _normalise(self.model.encode_text(self.tokenizer(texts).to(self.device)).float().cpu().numpy())

    def images(self, paths: list[str]) -> np.ndarray:
        batch = self.torch.stack([self.preprocess(_load_rgb(p)) for p in paths]).to(self.device)
        with self.torch.no_grad():
            return _normalise(self.model.encode_image(batch).float().cpu().numpy())


_ENCODERS: Mapping[str, type[Encoder]] = MappingProxyType({"st": SentenceTransformerEncoder, "hf": HFEncoder, "open_clip": OpenClipEncoder})
_INSTALL = MappingProxyType({"st": "sentence-transformers", "hf": "transformers", "open_clip": "open_clip_torch (and torchvision)"})


def load_encoder(spec: ModelSpec, device: str) -> Encoder:
    try:
        return _ENCODERS[spec.library](spec, device)
    except ImportError as exc:
        raise ModelSpecError(f"model {spec.text}: its library is not importable ({exc}); install {_INSTALL[spec.library]}") from exc
    except OSError as exc:
        raise ModelSpecError(f"model {spec.text}: cannot be loaded ({exc})") from exc


def default_device() -> str:
    try:
        import torch  # noqa: PLC0415 - heavy (torch, ~0.8 s), only to pick the device

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover
        return "cpu"


# --------------------------------------------------------------------------- the cache


class EmbeddingCache:
    """``{content sha256: vector}`` for one model, in ``<folder>/<model id>.sqlite``."""

    def __init__(self, folder: str, mid: str):
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, f"{mid}.sqlite")
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        self._conn.execute("CREATE TABLE IF NOT EXISTS emb (sha TEXT PRIMARY KEY, kind TEXT, dim INTEGER, vec BLOB)")
        self._lock = threading.Lock()

    def get_many(self, kind: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        out = {}
        with self._lock:
            for i in range(0, len(shas), 500):
                chunk = list(shas[i : i + 500])
                q = f"SELECT sha, dim, vec FROM emb WHERE kind=? AND sha IN ({','.join('?' * len(chunk))})"
                for sha, dim, vec in self._conn.execute(q, [kind, *chunk]):
                    out[sha] = np.frombuffer(vec, dtype=np.float32, count=dim)
        return out

    def put_many(self, kind: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with self._lock, self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?)", [(sha, kind, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for sha, v in items])

    def close(self) -> None:
        self._conn.close()


def embed(encode: Callable[[list], np.ndarray], kind: str, items: Sequence[tuple[str, object]], cache: EmbeddingCache | None, batch_size: int, progress: str | None = None) -> tuple[np.ndarray, int]:
    """Embeddings of ``items`` (``(content sha, payload)``: a text or an image path), in order; cached
    ones are read, the rest encoded in batches (each distinct content once) and stored. Returns
    (matrix, number encoded now)."""
    shas = [sha for sha, _ in items]
    have = cache.get_many(kind, list(dict.fromkeys(shas))) if cache is not None else {}
    todo = list({sha: payload for sha, payload in items if sha not in have}.items())
    if todo:
        bar = None
        if progress:
            from tqdm import tqdm  # noqa: PLC0415 - tqdm (~30 ms), only for a progress bar

            bar = tqdm(total=len(todo), desc=progress, unit=kind)
        for i in range(0, len(todo), batch_size):
            chunk = todo[i : i + batch_size]
            vecs = encode([p for _, p in chunk])
            got = list(zip([s for s, _ in chunk], vecs))
            have.update(got)
            if cache is not None:
                cache.put_many(kind, got)
            if bar is not None:
                bar.update(len(chunk))
        if bar is not None:
            bar.close()
    if not shas:
        return np.zeros((0, 0), dtype=np.float32), 0
    return np.stack([have[s] for s in shas]), len(todo)


def describe_models(specs: Sequence[ModelSpec]) -> list[dict]:
    return [{"spec": s.text, "key": s.key, "library": s.library, "pooling": s.pooling or ("model default" if s.library == "st" else "projection")} for s in specs]

