"""Scoring: pure functions over model output and per-doc records; imports nothing of lmms-eval.

- :mod:`.extraction`  reading answers out of model output (each extractor says which rule fired)
- :mod:`.metrics`     accuracy with breakdowns, precision/recall/F1, calibration; the aggregations our YAMLs name
- :mod:`.textmetrics` text overlap (BLEU, ROUGE, METEOR, ...) as Hugging Face ``evaluate`` computes it, offline
- :mod:`.similarity`  sentence-embedding choice matching (all-MiniLM-L6-v2, loaded once per process)
- :mod:`.stats`       bootstrap intervals and paired comparisons (``report``)
- :mod:`.circular`    circular variants of multiple-choice tasks: position bias, measured
- :mod:`.papers`      one model, one name across the papers' tables
"""
