"""The one LLM-judge engine for OpenAI-compatible chat-completions endpoints (vLLM, SGLang, OpenAI,
Azure OpenAI), one module a concern:

- :mod:`.config`    settings from ``EARTHSCI_JUDGE_*`` (table there) and the result of one request
- :mod:`.cache`     the SQLite verdict cache (WAL locally, rollback journal on network filesystems)
- :mod:`.transport` the HTTP exchange (one event loop and one aiohttp session per process)
- :mod:`.client`    retries, backoff, circuit breaker, concurrency, token accounting, :func:`get_judge`
- :mod:`.task_pass` a task's judged docs in one concurrent pass, verdicts looked up by ``process_results``,
  the judged metrics' aggregations (lmms-eval's side of it: :mod:`..adapter.judge_hook`)
- :mod:`.failures`  the lines a run whose judge failed ends with

Never constructed at import and never needed to load a task or compute rule-based metrics:
:func:`get_judge` returns ``None`` (after one warning) when no judge is configured.
"""

from lmms_eval_earthsci.core.judge.cache import VerdictCache, filesystem_type, journal_mode_for
from lmms_eval_earthsci.core.judge.client import JudgeClient, JudgeStats, close_all, encode_payload, encode_plain, get_judge, request_key, to_openai_messages
from lmms_eval_earthsci.core.judge.config import JUDGE_ENV, JudgeConfig, JudgeResult

__all__ = [
    "JUDGE_ENV", "JudgeClient", "JudgeConfig", "JudgeResult", "JudgeStats", "VerdictCache",
    "close_all", "encode_payload", "encode_plain", "filesystem_type", "get_judge", "journal_mode_for", "request_key", "to_openai_messages",
]
