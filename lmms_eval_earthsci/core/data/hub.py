"""Is the Hugging Face Hub there? Asked once per process before anything would wait on Hub retries
(rescore's data, BERTScore's model): ``HF_HUB_OFFLINE`` is respected, and otherwise a TCP connection to
``HF_ENDPOINT`` within a few seconds tells an absent Hub (refused, unresolvable) from a slow one (no
answer in time), so that each can be said as it is."""

from __future__ import annotations

import functools
import glob
import os
import socket
import threading
import urllib.parse

from lmms_eval_earthsci.core.settings import flag

PROBE_SECONDS = 3.0


def offline() -> bool:
    return flag(os.environ.get("HF_HUB_OFFLINE"), False)


def endpoint() -> tuple[str, int]:
    url = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)


@functools.lru_cache(maxsize=8)
def _probe(host: str, port: int, timeout: float) -> tuple[str, str]:
    result: list[tuple[str, str]] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result.append(("up", f"{host}:{port} answers"))
        except TimeoutError:
            result.append(("slow", f"{host}:{port} did not answer within {timeout:g} s"))
        except OSError as exc:
            result.append(("absent", f"{host}:{port} cannot be reached ({type(exc).__name__}: {exc})"))

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(timeout + 0.5)
    return result[0] if result else ("slow", f"{host}:{port} did not answer within {timeout:g} s (name resolution included)")


def state(timeout: float = PROBE_SECONDS) -> tuple[str, str]:
    """("offline" | "up" | "absent" | "slow", what was found), the probe made once per endpoint."""
    if offline():
        return "offline", "HF_HUB_OFFLINE is set"
    host, port = endpoint()
    return _probe(host, port, timeout)


def dataset_cached(repo: str, revision: str | None = None) -> str | None:
    """Where a Hub dataset could be read without the Hub (None: nowhere): the Hub cache holding its
    snapshot (at ``revision`` when one is pinned), or ``datasets``' own cache of a build of it (the
    folder ``datasets`` itself falls back to, ``<namespace>___<name>/<config>/<version>/<hash>``)."""
    from huggingface_hub import constants  # noqa: PLC0415 - huggingface_hub, only when the Hub cannot be reached

    hub_repo = os.path.join(constants.HF_HUB_CACHE, "datasets--" + repo.replace("/", "--"))
    if revision:
        if os.path.isdir(os.path.join(hub_repo, "snapshots", revision)) or os.path.isfile(os.path.join(hub_repo, "refs", revision)):
            return hub_repo
    elif glob.glob(os.path.join(hub_repo, "snapshots", "*")):
        return hub_repo
    try:  # lazy, as above
        import datasets  # noqa: PLC0415 - heavy (datasets, ~0.5 s), only when the Hub cannot be reached
        from datasets.naming import camelcase_to_snakecase  # noqa: PLC0415 - with datasets above

        parts = repo.split("/")
        parts[-1] = camelcase_to_snakecase(parts[-1])
        built = os.path.join(os.path.expanduser(str(datasets.config.HF_DATASETS_CACHE)), "___".join(parts))
    except Exception:  # pragma: no cover - datasets' internals moved: only the Hub cache counts
        return None
    return built if any(os.path.isdir(p) for p in glob.glob(os.path.join(built, "*", "*", "*"))) else None
