"""MAC: "MAC: A Live Benchmark for Multimodal Large Language Models in Scientific Understanding" (Jiang,
Gao, Zhan, Wang; COLM 2025; arXiv 2508.15802). Journal cover <-> cover story, four-way choice, answered
as a probability JSON and scored for accuracy and calibration.

- :mod:`.tasks`: the four MAC-2025 tasks (Image2Text / Text2Image x info / option distractor domain):
  the authors' system and user prompts, the CSV rows and the covers they name (repo files), messages for
  chat and simple backends, per-doc records.
- :mod:`.scoring`: the official probability parser and the accuracy / ECE / NLL / RMS metrics.
- :mod:`.dad`: DAD (description by the model under test, deduction by a text-only reasoner).
- The live snapshot builder, ``lmms-eval-earthsci mac build``: :mod:`.builder` (the command and the
  writing), :mod:`.collection` (input, cleaning, window), :mod:`.embedders` (model specs, encoders, the
  embedding cache), :mod:`.distractors` (ranking, the distractor rule, letters, self-validation stats),
  :mod:`.ocr` (text-free covers).
"""
