"""Prompts: what a task hands lmms-eval and whether it reaches the model as written; imports nothing of
lmms-eval's internals (the messages are the documented ``doc_to_messages`` format).

- :mod:`.messages` prompt text with image placeholders -> chat messages and simple-backend visuals and text
- :mod:`.layout`   does a prompt reach the model in the layout the task wrote (a verdict from what it received)
"""
