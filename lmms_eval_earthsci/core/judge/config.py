"""Judge settings (:class:`JudgeConfig`) and the result of one request (:class:`JudgeResult`).

Configuration (environment; a task's ``metadata.judge`` dict overrides per task):

=============================  ======================================================  ==========
variable                        meaning                                                 default
=============================  ======================================================  ==========
``EARTHSCI_JUDGE_BASE_URL``     endpoint base, e.g. ``http://judge-node:8000/v1``       ``OPENAI_API_URL`` if ``API_TYPE=openai``
``EARTHSCI_JUDGE_MODEL``        model name the server knows                             ``MODEL_VERSION``
``EARTHSCI_JUDGE_API_KEY``      bearer key (never logged)                               ``OPENAI_API_KEY`` / ``AZURE_API_KEY``
``EARTHSCI_JUDGE_API_TYPE``     ``openai`` or ``azure``                                 ``API_TYPE`` or ``openai``
``EARTHSCI_JUDGE_CONCURRENCY``  requests in flight                                      32
``EARTHSCI_JUDGE_TIMEOUT``      seconds per request                                     120
``EARTHSCI_JUDGE_MAX_RETRIES``  retries after the first attempt                         5
``EARTHSCI_JUDGE_CACHE``        verdict cache directory (``off`` disables)              ``$EARTHSCI_CACHE_DIR/judge``
``EARTHSCI_JUDGE_CACHE_JOURNAL`` SQLite journal: ``wal`` or ``delete``                  ``wal``; ``delete`` on NFS/CIFS/Lustre...
``EARTHSCI_JUDGE_BREAKER``      consecutive failed docs (after retries) that stop a pass 5 (0: never)
``EARTHSCI_JUDGE_CA_BUNDLE``    PEM bundle of the judge's private CA (the judge only)   the system's (``SSL_CERT_FILE``)
=============================  ======================================================  ==========

Azure: ``API_TYPE=azure`` with ``AZURE_ENDPOINT``, ``AZURE_API_KEY``, ``API_VERSION``; the model is
the deployment name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from lmms_eval_earthsci.core.settings import cache_dir, read_setting


def default_cache_dir() -> str:
    return cache_dir("judge")



JUDGE_ENV = "EARTHSCI_JUDGE"


def _env(*names: str, default: str | None = None) -> str | None:
    for n in names:
        v = read_setting(n)
        if v:
            return v
    return default


@dataclass
class JudgeConfig:
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_type: str = "openai"
    api_version: str | None = None
    concurrency: int = 32
    timeout: float = 120.0
    max_retries: int = 5
    temperature: float = 0.0
    max_tokens: int | None = None
    cache_dir: str | None = field(default_factory=default_cache_dir)
    cache_journal: str | None = None  # None: WAL on local disks, DELETE on network filesystems
    # 0.5 s doubling over 5 retries: at most 15.5 s of waiting per request (jittered down to half)
    backoff_base: float = 0.5
    backoff_max: float = 60.0
    breaker: int = 5
    reasoning_effort: str | None = None  # sent as is (e.g. "high" for o3-mini) when set
    ca_bundle: str | None = None  # PEM file of the CA(s) the judge's TLS certificate is trusted by (judge only)
    # "chat": OpenAI chat completions (a reply's text); "pooling": vLLM's /pooling (a reward model's score, as text)
    api: str = "chat"

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)

    def missing(self, prefix: str = JUDGE_ENV) -> str:
        """The settings that would complete this judge, in words: both when neither is set, else the
        one missing ("EARTHSCI_JUDGE_MODEL: EARTHSCI_JUDGE_BASE_URL is set")."""
        if not self.base_url and not self.model:
            return f"{prefix}_BASE_URL and {prefix}_MODEL"
        if not self.model:
            return f"{prefix}_MODEL ({prefix}_BASE_URL is set: the model name its server knows)"
        return f"{prefix}_BASE_URL ({prefix}_MODEL is set: the server's base URL)"

    @classmethod
    def from_env(cls, overrides: Mapping[str, Any] | None = None, prefix: str = JUDGE_ENV, endpoint_fallback: bool = True) -> JudgeConfig:
        """Settings from ``<prefix>_*`` variables; a prefix other than the judge's (e.g. ``EARTHSCI_DAD``
        for MAC's stage-2 reasoner) falls back to ``EARTHSCI_JUDGE_*`` for each setting it does not set;
        with ``endpoint_fallback=False`` (a scalar reward model: no chat judge can stand in) its base URL,
        model and key are its own alone."""
        prefixes = [prefix] if prefix == JUDGE_ENV else [prefix, JUDGE_ENV]

        def var(suffix: str, *legacy: str, default: str | None = None) -> str | None:
            if not endpoint_fallback and suffix in ("BASE_URL", "MODEL", "API_KEY", "API_TYPE"):
                return _env(f"{prefix}_{suffix}", default=default)
            return _env(*(f"{p}_{suffix}" for p in prefixes), *legacy, default=default)

        api_type = (var("API_TYPE", "API_TYPE", default="openai") or "openai").lower()
        if api_type == "azure":
            base_url = var("BASE_URL", "AZURE_ENDPOINT")
            key = var("API_KEY", "AZURE_API_KEY")
        else:
            base_url = var("BASE_URL", "OPENAI_API_URL")
            key = var("API_KEY", "OPENAI_API_KEY")
        cache = cast(str, var("CACHE", default=default_cache_dir()))
        max_tokens = var("MAX_TOKENS")
        cfg = cls(
            base_url=base_url,
            model=var("MODEL", "MODEL_VERSION", "DEPLOYMENT_NAME"),
            api_key=key,
            api_type=api_type,
            api_version=_env("API_VERSION", default="2024-02-15-preview") if api_type == "azure" else None,
            concurrency=int(cast(str, var("CONCURRENCY", default="32"))),
            timeout=float(cast(str, var("TIMEOUT", default="120"))),
            max_retries=int(cast(str, var("MAX_RETRIES", default="5"))),
            max_tokens=int(max_tokens) if max_tokens else None,
            cache_dir=None if cache.lower() in ("off", "none", "0", "") else os.path.expanduser(cache),
            cache_journal=var("CACHE_JOURNAL"),
            breaker=int(cast(str, var("BREAKER", default="5"))),
            reasoning_effort=var("REASONING_EFFORT"),
            ca_bundle=(lambda v: os.path.expanduser(v) if v else None)(var("CA_BUNDLE")),
        )
        for k, v in (overrides or {}).items():
            if not hasattr(cfg, k):
                raise ValueError(f"unknown judge setting {k!r} in task metadata")
            setattr(cfg, k, v)
        return cfg

    def public(self) -> dict:
        """Settings safe to log (no key)."""
        return {"base_url": self.base_url, "model": self.model, "api_type": self.api_type, "concurrency": self.concurrency, "temperature": self.temperature, "api": self.api}


@dataclass
class JudgeResult:
    content: str | None
    error: str | None = None
    cached: bool = False
    usage: dict = field(default_factory=dict)
    attempts: int = 0
    # short failure class for summaries ("HTTP 401", "ConnectionRefusedError", "malformed reply", ...)
    cause: str | None = None
    # a reasoning model's `reasoning_content`, kept apart from the answer `content` (never parsed)
    reasoning: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.content is not None

