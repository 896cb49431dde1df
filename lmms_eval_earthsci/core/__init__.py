"""Shared concerns, one module each: every benchmark module uses these and none re-implements them.

- :mod:`.messages`   prompt + images -> lmms-eval chat messages / simple-backend visuals and text
- :mod:`.extraction` reading answers out of model output (each extractor says which rule fired)
- :mod:`.similarity` sentence-embedding choice matching (all-MiniLM-L6-v2, loaded once per process)
- :mod:`.metrics`    accuracy with breakdowns, precision/recall/F1, calibration
- :mod:`.judge`      the one LLM-judge client for OpenAI-compatible endpoints
- :mod:`.data`       Hub/mirror dataset resolution, record validation, image decoding
"""
