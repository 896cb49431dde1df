"""MAC: "MAC: A Live Benchmark for Multimodal Large Language Models in Scientific Understanding" (Jiang,
Gao, Zhan, Wang; COLM 2025; arXiv 2508.15802). Journal cover <-> cover story, four-way choice, answered
as a probability JSON and scored for accuracy and calibration.

- :mod:`.tasks`: the four MAC-2025 tasks (Image2Text / Text2Image x info / option distractor domain):
  the authors' system and user prompts, the CSV rows and the covers they name (repo files), messages for
  chat and simple backends, per-doc records.
- :mod:`.scoring`: the official probability parser and the accuracy / ECE / NLL / RMS metrics.
"""
